"""answers.py reads the worker's answer as a claim (issue 21): analysed code can write to
its own answer pipe, so a forged answer goes through the real parsing (the protocol's
checks, `read_answer`, the judge) here, and may place findings only in files the parent
confirms, at positions inside their text, in bounded numbers."""

from __future__ import annotations

import json
import os

import pytest

from atenlint import answers
from atenlint.answers import read_answer, vet_answer, vetted_paths
from atenlint.captured import FileCapture
from atenlint.config import Settings, SettingsResolver
from atenlint.discover import outline
from atenlint.judging import Judge
from atenlint.source_cache import SourceCache
from atenlint.sourcetext import SourceText
from atenlint.worker.protocol import check_file_answer, check_message
from support import RejectsOp

SOURCE = (
    "import torch\nimport torch.nn as nn\n\n\nclass Net(nn.Module):\n"
    "    def forward(self, x):\n        return torch.take(x, x)\n"
)
HELPER = "import torch\n\n\ndef pick(x):\n    return torch.take(x, x)\n"


@pytest.fixture
def places(tmp_path):
    """A project (the analysed file, a helper, a FIFO, a link out), a folder outside it with
    a file, and a site-packages folder outside it with a library file."""
    project, outside, library = tmp_path / "project", tmp_path / "outside", tmp_path / "venv" / "site-packages"
    for folder in (project, outside, library / "lib"):
        folder.mkdir(parents=True)
    (project / ".git").mkdir()
    (project / "model.py").write_text(SOURCE)
    (project / "helper.py").write_text(HELPER)
    (outside / "secret.py").write_text(HELPER)
    (library / "lib" / "ops.py").write_text(HELPER)
    os.mkfifo(project / "fifo.py")
    os.symlink(outside / "secret.py", project / "link_out.py")
    return {
        "project": str(project),
        "model": str(project / "model.py"),
        "helper": str(project / "helper.py"),
        "fifo": str(project / "fifo.py"),
        "link_out": str(project / "link_out.py"),
        "outside": str(outside / "secret.py"),
        "library": str(library / "lib" / "ops.py"),
    }


def _site(file: str, line: int, col: int = 11, **extra) -> dict:
    return {"file": file, "line": line, "col": col, **extra}


def _op(*sites: dict) -> dict:
    trees = {"dispatch": {"op": "aten::take", "calls": None}}
    return {"op": "aten::take", "trees": trees, "sites": list(sites), "phases": ["eval"]}


def _class(*ops: dict, **extra) -> dict:
    return {"qualname": "Net", "name": "Net", "module": "model.Net", "status": "ok", "ops": list(ops), **extra}


def _through_the_protocol(answer: dict) -> dict:
    """What the parent makes of the line the worker wrote: the pool's JSON parse, the
    protocol's message and file-answer checks."""
    line = json.dumps({"id": 7, "result": answer})
    return dict(check_file_answer(check_message(json.loads(line))["result"]))


def _read(places: dict, answer: dict) -> FileCapture:
    source = SourceText(SOURCE, places["model"])
    result = FileCapture(
        places["model"], "model.py", Settings(targets=("rejects",), project_root=places["project"]), source, None
    )
    result.outline = outline(source)
    result.imported = list(answer.get("imported", []))
    read_answer(result, _through_the_protocol(answer), "model", result.outline, [RejectsOp()], places["project"], print)
    return result


def _findings(result: FileCapture) -> list:
    judge = Judge(lambda settings: [RejectsOp()], SettingsResolver, lambda: "2.13.0", "/", lambda message: None)
    return judge.findings([result], SourceCache())


def test_a_location_outside_the_project_is_never_a_findings_place(places):
    answer = {
        "classes": [
            _class(
                _op(_site(places["model"], 7)),  # the real call
                _op(_site(places["outside"], 5)),  # a file outside every search root
                _op(_site(places["link_out"], 5)),  # inside by name, outside by its target
                _op(_site(places["fifo"], 1)),  # not a regular file
                _op(_site("model.py", 7)),  # relative: where it points is not known
                _op(_site("/dev/zero", 1)),
                _op(_site(places["helper"], 5)),  # a helper in the project: a real place
            )
        ],
    }
    result = _read(places, answer)
    kept = [site["file"] for occurrence in result.occurrences for site in occurrence.sites]
    assert kept == [places["model"], places["helper"]]
    found = _findings(result)
    assert {f.abs_path for f in found} == {places["model"], places["helper"]}
    for finding in found:
        assert all(r["path"] in (places["model"], places["helper"]) for r in finding.related)


def test_positions_are_clamped_to_the_real_text(places):
    lines = SOURCE.count("\n")
    answer = {
        "classes": [
            _class(
                _op(_site(places["model"], 10**9, col=10**9, end_col=-5, span_lines=10**6)),
                _op(_site(places["model"], -4, col=-(10**9))),
                _op(_site(places["helper"], 10**6, col=3, end_col=10**9, span_lines=-2)),
            )
        ],
        "import_error": {"type": "E", "message": "m", "line": -3, "site": _site(places["outside"], 1)},
        "refusals": [
            {"kind": "process", "action": "run `x`", "file": places["outside"], "line": 5, "analysed_line": 10**9}
        ],
    }
    result = _read(places, answer)
    sites = [site for occurrence in result.occurrences for site in occurrence.sites]
    assert [(s["file"], s["line"]) for s in sites] == [
        (places["model"], lines),
        (places["model"], 1),
        (places["helper"], HELPER.count("\n")),
    ]
    assert sites[0]["col"] == len("        return torch.take(x, x)") and sites[0]["span_lines"] == 1
    assert sites[0]["end_col"] == 0 and sites[1]["col"] == -1
    assert sites[2]["span_lines"] == 1 and sites[2]["end_col"] == len("    return torch.take(x, x)")
    for finding in [*result.module_findings, *_findings(result)]:
        text = SOURCE if finding.abs_path == places["model"] else HELPER
        last = text.count("\n")
        for position in (finding.range.start, finding.range.end):
            assert 0 <= position.line < last and position.character >= 0, finding
        assert all(r["path"] != places["outside"] for r in finding.related), finding
    (refused,) = [f for f in result.module_findings if f.code == "ATL012"]
    assert refused.range.start.line == lines - 1  # the analysed line, clamped
    assert "secret.py" not in refused.message  # the forged file is not named as where it happened
    (failed,) = [f for f in result.module_findings if f.code == "ATL002"]
    assert failed.range.start.line == 0 and "secret.py" not in failed.message and not failed.related


def test_dependencies_are_only_files_the_parent_confirms(places):
    claimed = [
        places["helper"],
        places["helper"],  # once
        places["model"],  # the analysed file is no dependency of itself
        places["outside"],
        places["link_out"],
        places["fifo"],
        "/dev/zero",
        "helper.py",
        "/proc/self/environ",
        42,
        "x" * 10_000,
    ]
    assert vetted_paths(claimed, places["model"], [places["project"]]) == [places["helper"]]
    result = _read(places, {"classes": [], "imported": claimed})
    assert result.imported == [places["helper"]]


def test_a_library_frame_may_be_in_site_packages_a_user_frame_may_not(places):
    library = _site(places["library"], 5, library=True)
    user = _site(places["library"], 5)
    vetted = vet_answer(
        {"classes": [_class(_op(_site(places["model"], 7), library, user))]},
        places["model"],
        None,
        [places["project"]],
    )
    assert [s["file"] for s in vetted["classes"][0]["ops"][0]["sites"]] == [places["model"], places["library"]]
    assert vetted["classes"][0]["ops"][0]["sites"][1]["library"] is True


def test_counts_texts_and_nesting_are_bounded(places, monkeypatch):
    monkeypatch.setattr(answers, "MAX_CLASSES", 3)
    monkeypatch.setattr(answers, "MAX_OPS", 5)
    monkeypatch.setattr(answers, "MAX_LIST", 4)
    monkeypatch.setattr(answers, "MAX_DEPTH", 10)
    nested: dict = {}
    deep = nested
    for _ in range(50):
        deep["calls"] = {}
        deep = deep["calls"]
    one = _op(*[_site(places["model"], 7)] * 9)
    answer = {
        "classes": [_class(*[one] * 4, script_error={"message": "x" * (answers.MAX_TEXT + 100)})] * 5,
        "torch_degraded": [{"message": "m"}] * 9,
        "deep": nested,
    }
    vetted = vet_answer(answer, places["model"], None, [places["project"]])
    assert len(vetted["classes"]) == 3
    assert [len(cls["ops"]) for cls in vetted["classes"]] == [4, 1, 0]
    assert all(len(op["sites"]) == 4 for cls in vetted["classes"] for op in cls["ops"])
    message = vetted["classes"][0]["script_error"]["message"]
    assert len(message) < answers.MAX_TEXT + 20 and message.endswith("(cut)")
    assert len(vetted["torch_degraded"]) == 4
    depth, level = 0, vetted["deep"]
    while isinstance(level, dict) and level.get("calls") is not None:
        depth, level = depth + 1, level["calls"]
    assert depth < 12


def test_an_answer_sets_no_trust_setting_or_fix_target(places):
    """Nothing in an answer reaches the settings a file is checked with (trust, targets,
    where fixes may write): fields a forged answer adds are read as data, never as settings."""
    settings = Settings(targets=("rejects",), project_root=places["project"])
    answer = {
        "classes": [_class(_op(_site(places["model"], 7)))],
        "trusted": True,
        "settings": {"targets": ["onnx"], "sandbox": False},
        "fix_paths": [places["outside"]],
    }
    result = _read(places, answer)
    assert result.settings == settings
    found = _findings(result)
    assert [f.abs_path for f in found] == [places["model"]]
