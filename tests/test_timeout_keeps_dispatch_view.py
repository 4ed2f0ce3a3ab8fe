"""A file that runs out of its time limit after the dispatcher view's answer (the editor asks
for it first) keeps that answer: the device targets' verdicts come from the traced
dispatcher view, and only the export targets' views fall back to the source pass; the
ATL005 says which (pipeline.py `_static_after_failure`, engine.py `_partial_handler`)."""

from __future__ import annotations

import textwrap

from atenlint.config import SettingsResolver
from atenlint.pipeline import FileSnapshot, check_file
from torch_facts import with_mps_missing

# torch.export runs forward with `is_exporting()` true: this one then never returns, so the
# export views run out of the limit after the dispatcher view has been answered.
SOURCE = """
    import torch
    from torch import nn


    class Net(nn.Module):  # atenlint: inputs=torch.randn(4, 8)
        def forward(self, x):
            if torch.compiler.is_exporting():
                while True:
                    pass
            return MISSING(x) + torch.max(x)
"""


def test_the_dispatcher_view_answered_before_a_time_limit_keeps_the_device_verdicts(engine, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.atenlint]\ntargets = ["mps", "core-aten"]\ntimeout = 5\n')
    path = tmp_path / "slow_export.py"
    path.write_text(with_mps_missing(textwrap.dedent(SOURCE).lstrip()))
    engine.resolver = SettingsResolver()
    early = []
    result = check_file(engine, FileSnapshot.of(str(path), resolver=engine.resolver), on_partial=early.append)
    assert len(early) == 1 and early[0].partial
    codes = {(f.code, f.target, f.capture) for f in result.findings}
    # MPS: the traced dispatcher view, as in the partial result (not the source pass).
    assert ("MPS001", "mps", "trace") in codes, codes
    assert [f.range for f in result.findings if f.code == "MPS001"] == [
        f.range for f in early[0].findings if f.code == "MPS001"
    ]
    # core-aten: its export view never finished, so it was read from source (at most a warning).
    core = [f for f in result.findings if f.target == "core-aten"]
    assert core and all(f.capture == "static" and f.severity != "error" for f in core), core
    (timeout,) = [f for f in result.findings if f.code == "ATL005"]
    assert "mps judged the dispatcher view traced before the limit" in timeout.message
    assert "its module class `Net` was analysed from source only" in timeout.message
    assert not result.partial and [cls["capture"] for cls in result.capture.classes] == ["static"]


def test_the_cli_keeps_the_same_device_verdicts_after_the_limit(engine, tmp_path):
    """No one waits for a partial result on the command line, but the file's findings are
    the editor's: the CLI's check keeps the dispatcher view's answer for a file that fails
    after it, too (one pipeline, issue 19)."""
    (tmp_path / "pyproject.toml").write_text('[tool.atenlint]\ntargets = ["mps", "core-aten"]\ntimeout = 5\n')
    path = tmp_path / "slow_export.py"
    path.write_text(with_mps_missing(textwrap.dedent(SOURCE).lstrip()))
    engine.resolver = SettingsResolver()
    cli = check_file(engine, FileSnapshot.of(str(path), resolver=engine.resolver))
    editor = check_file(engine, FileSnapshot.of(str(path), resolver=engine.resolver), on_partial=lambda _: None)
    shown = sorted((f.code, f.target, f.capture, f.range.start.line, f.message) for f in cli.findings)
    assert shown == sorted((f.code, f.target, f.capture, f.range.start.line, f.message) for f in editor.findings)
    assert ("MPS001", "mps", "trace") in {(f.code, f.target, f.capture) for f in cli.findings}
