"""pipeline.py: one file's snapshot -> its FileResult, the one path the CLI and the editor take."""

from __future__ import annotations

import json
import os
import textwrap

from atenlint.config import SettingsResolver
from atenlint.pipeline import FileSnapshot, check_file, check_paths, findings_in, merge_results

ENCODER = textwrap.dedent("""
    import torch
    import torch.nn as nn


    class Encoder(nn.Module):
        def __init__(self, width):
            super().__init__()
            self.width = width

        def forward(self, x):
            return torch.special.ndtri(x)
""").lstrip()

MODEL = textwrap.dedent("""
    import torch.nn as nn
    from a import Encoder


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = Encoder(8)

        def forward(self, x):
            return self.enc(x)
""").lstrip()


def _workspace(tmp_path, config: str = ""):
    (tmp_path / "pyproject.toml").write_text('[tool.atenlint]\ntargets = ["mps"]\n' + config)
    (tmp_path / "a.py").write_text(ENCODER)
    (tmp_path / "b.py").write_text(MODEL)
    return str(tmp_path / "a.py"), str(tmp_path / "b.py")


def _check(engine, path, text=None):
    engine.resolver = SettingsResolver()
    return check_file(engine, FileSnapshot.of(path, text=text, resolver=engine.resolver))


def test_a_finding_the_model_reaches_in_another_file_is_kept_there(engine, tmp_path):
    """b.py's model reaches the op through `self.enc`: the finding is in a.py, and b.py's
    result carries it, tagged with a.py, so an editor with only b.py open can show it."""
    a, b = _workspace(tmp_path)
    result = _check(engine, b)
    assert [(os.path.basename(f.abs_path), f.code) for f in result.findings] == [("a.py", "MPS001")]
    assert result.placed_in(b) == [] and [f.code for f in result.placed_in(a)] == ["MPS001"]
    assert result.places() == [b, a] and a in result.imported and a in result.dependencies


def test_the_editor_buffer_is_what_is_checked(engine, tmp_path):
    a, _ = _workspace(tmp_path)
    fixed = ENCODER.replace("torch.special.ndtri", "torch.erfinv")
    assert [f.code for f in _check(engine, a).findings if f.code == "MPS001"] == ["MPS001"]
    assert [f.code for f in _check(engine, a, text=fixed).findings if f.code == "MPS001"] == []


def test_an_unbuildable_class_analysed_inside_another_files_model_is_said_once(engine, tmp_path):
    """a.py alone cannot build `Encoder` (ATL003: no inferred arguments here); b.py's model
    builds it. Shown together (the CLI over both, or the editor with both results) the note
    is dropped, the op stays."""
    a, b = _workspace(tmp_path, "infer-inputs = false\n")
    alone = _check(engine, a)
    assert "ATL003" in [f.code for f in alone.findings]
    both = merge_results([alone, _check(engine, b)])
    assert [(os.path.basename(f.abs_path), f.code) for f in both] == [("a.py", "MPS001")]
    assert findings_in(a, [alone]) == [f for f in alone.findings if f.abs_path == a]


def test_a_misspelled_module_key_is_reported_by_the_file_it_names(engine, tmp_path):
    a, b = _workspace(tmp_path, '\n[tool.atenlint.modules."a.Encodr"]\ninit = "Encoder(width=8)"\n')
    config = str(tmp_path / "pyproject.toml")
    (warning,) = [f for f in _check(engine, a).findings if f.code == "ATL010"]
    assert warning.abs_path == config and '"a.Encoder"' in warning.message and warning.range.start.line == 3
    assert [f for f in _check(engine, b).findings if f.code == "ATL010"] == []  # b.py is not module `a`


def test_merged_findings_keep_the_most_severe_and_do_not_change_the_results(engine, tmp_path):
    _, b = _workspace(tmp_path)
    first, second = _check(engine, b), _check(engine, b)
    before = [f.modules for f in first.findings]
    (merged,) = merge_results([first, second])
    assert [f.modules for f in first.findings] == before
    assert merged.code == "MPS001"


def test_a_notebook_on_disk_is_reported_in_its_cells(engine, tmp_path):
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# model"]},
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": ENCODER},
    ]
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    (tmp_path / "pyproject.toml").write_text('[tool.atenlint]\ntargets = ["mps"]\n')
    result = _check(engine, str(path))
    (finding,) = [f for f in result.findings if f.code == "MPS001"]
    assert finding.data["notebook"]["cell"] == 1 and finding.range.start.line == 10


def test_a_check_without_a_result_cache_stores_nothing(engine, tmp_path, monkeypatch):
    """--incremental is opt-in: a plain run neither reads nor writes stored results."""
    monkeypatch.setenv("ATENLINT_CACHE_DIR", str(tmp_path / "cache"))
    _, b = _workspace(tmp_path)
    engine.resolver = SettingsResolver()
    report = check_paths(engine, [b])
    assert [f.code for f in report.findings] == ["MPS001"] and report.files == 1
    assert not os.path.exists(tmp_path / "cache" / "results")


def test_a_support_table_that_cannot_be_read_is_atenlints_error_not_verdicts(pool, tmp_path, monkeypatch):
    """The exporter-registry probe failed (twice): one ATL099 error naming the cause — exit 3
    in the CLI — never every op judged against an empty allow-list, never "not installed"."""
    from atenlint.engine import Engine
    from atenlint.targets import registry_data

    def unreadable(pool, log=None):
        raise registry_data.RegistryUnavailable("executorch", "the probe process exited with status 1")

    monkeypatch.setattr(registry_data, "load", unreadable)
    (tmp_path / "pyproject.toml").write_text('[tool.atenlint]\ntargets = ["mps", "executorch"]\n')
    (tmp_path / "model.py").write_text(MODEL.replace("from a import Encoder", "from torch.nn import Linear as Encoder"))
    engine = Engine(pool, SettingsResolver(), cwd=str(tmp_path))
    engine.start()
    result = check_file(engine, FileSnapshot.of(str(tmp_path / "model.py"), resolver=engine.resolver))
    assert [(f.code, f.severity) for f in result.findings] == [("ATL099", "error")]
    assert "support table for executorch" in result.findings[0].message
    assert "probe process exited" in result.findings[0].message


def test_a_file_past_its_time_limit_says_which_classes_were_read_from_source(engine, tmp_path):
    """The limit counts processor time; when it is still hit, the ATL005 text names the
    classes read from source instead, and the run's summary and JSON count them."""
    from atenlint.output import classes_json, classes_summary

    path = tmp_path / "loops.py"
    path.write_text(
        "import torch\nimport torch.nn as nn\nwhile True:\n    pass\n\n\n"
        "class Encoder(nn.Module):\n    def forward(self, x):\n        return torch.special.ndtri(x)\n\n\n"
        "class Decoder(nn.Module):\n    def forward(self, x):\n        return x.relu()\n"
    )
    engine.resolver = SettingsResolver(overrides={"timeout": 2.0, "targets": ("mps",)})
    report = check_paths(engine, [str(path)])
    (timeout,) = [f for f in report.findings if f.code == "ATL005"]
    assert "more than 2 s of processor time" in timeout.message, timeout.message
    assert "its 2 module classes (`Encoder`, `Decoder`) were analysed from source only" in timeout.message
    assert classes_json(report)["static"] == 2 and classes_json(report)["static_after_timeout"] == 2
    assert classes_summary(report) == "2 module classes: 2 from source only (2 of them after their file's time limit)"
    assert any(f.code == "MPS001" for f in report.findings)  # the source pass still judged them
