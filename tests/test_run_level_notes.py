"""`COREML000 coremltools is not installed` once per run in the CLI (it was once per class:
14 for one file), in the same words for every class so the editor's status item says it once."""

from __future__ import annotations

import textwrap

from atenlint.config import Settings
from atenlint.findings import Finding, once_per_run
from atenlint.sourcetext import Position, Range
from atenlint.targets import build_target
from ci_support import run_check

MISSING = {"available": False, "reason": "coremltools is not installed"}


def test_the_note_has_the_same_words_for_every_class(engine):
    coreml = build_target("coreml", Settings(targets=("coreml",)), engine.native, engine.hello, {"coreml": MISSING})
    [first] = coreml.class_results({"name": "Net"})
    [second] = coreml.class_results({"name": "Head"})
    assert first.message == second.message and "pip install coremltools" in first.message


def test_once_per_run_keeps_the_first_note_and_every_other_finding():
    def at(line, code, message):
        return Finding("m.py", Range(Position(line, 0), Position(line, 3)), "information", code, message)

    findings = [at(1, "COREML000", "a"), at(2, "MPS001", "x"), at(5, "COREML000", "a"), at(6, "MPS001", "x")]
    assert [(f.range.start.line, f.code) for f in once_per_run(findings)] == [
        (1, "COREML000"),
        (2, "MPS001"),
        (6, "MPS001"),
    ]


def test_the_cli_says_it_once_for_many_classes_in_many_files(pool, monkeypatch, capsys, tmp_path):
    from atenlint.targets import registry_data

    real_load = registry_data.load
    monkeypatch.setattr(registry_data, "load", lambda *a, **k: dict(real_load(*a, **k), coreml=MISSING))
    for name in ("a", "b"):
        (tmp_path / f"{name}.py").write_text(
            textwrap.dedent(f"""\
            import torch.nn as nn


            class {name.upper()}One(nn.Module):
                def forward(self, x):
                    return x.relu()


            class {name.upper()}Two(nn.Module):
                def forward(self, x):
                    return x.tanh()
            """)
        )
    status, out, err = run_check(pool, monkeypatch, capsys, str(tmp_path), ".", "--target", "coreml", "--no-exec")
    assert out.count("COREML000") == 1, out
    assert "1 note" in out and status == 0, (out, err)
