"""judging.py: a verdict per user call site and target, placed where the call is."""

from __future__ import annotations

import pytest

from atenlint.captured import FileCapture, Occurrence
from atenlint.config import Settings, SettingsResolver
from atenlint.judging import Judge, is_device_target
from atenlint.source_cache import SourceCache
from atenlint.targets.base import Target
from support import RejectsOp

SOURCE = "import torch\n\n\ndef f(x):\n    return torch.take(x, x)\n"


def _judge(targets: list[Target]) -> Judge:
    return Judge(lambda settings: targets, SettingsResolver, lambda: "2.13.0", "/", lambda message: None)


def _capture(path: str, capture: str, views: tuple[str, ...]) -> FileCapture:
    result = FileCapture(path, "m.py", Settings(), None, None)
    site = {"file": path, "line": 5, "col": 11}
    trees = {view: {"op": "aten::take", "calls": None} for view in views}
    result.occurrences.append(Occurrence("m.Net", "aten::take", trees, ("eval",), [site], capture))
    return result


def _findings(tmp_path, target: Target, capture: str):
    path = tmp_path / "m.py"
    path.write_text(SOURCE)
    found = _judge([target]).findings([_capture(str(path), capture, (target.tree_view,))], SourceCache())
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize("view", ["export", "executorch-export", "onnx-jit", "jit", "script"])
def test_the_source_pass_never_gives_a_deployment_target_an_error(tmp_path, view):
    finding = _findings(tmp_path, RejectsOp("deploy", view), "static")
    assert finding.severity == "warning" and finding.code == "REJ001"
    assert "read from the source only" in finding.message and "example inputs" in finding.message
    assert finding.range.start.line == 4 and finding.call == "torch.take"


@pytest.mark.parametrize("capture", ["script", "trace"])
def test_an_executed_capture_keeps_the_error(tmp_path, capture):
    finding = _findings(tmp_path, RejectsOp("deploy", "export"), capture)
    assert finding.severity == "error" and "read from the source" not in finding.message


def test_a_device_target_keeps_the_error_from_the_source_pass(tmp_path):
    """A device backend's verdict on an op does not depend on a toolchain's graph: the
    dispatcher runs what the source calls."""
    target = RejectsOp("device", "dispatch")
    assert is_device_target(target)
    finding = _findings(tmp_path, target, "static")
    assert finding.severity == "error"


def test_the_built_in_targets_are_told_apart_by_their_view():
    assert is_device_target(RejectsOp("mps", "dispatch"))
    assert not is_device_target(RejectsOp("onnx", "onnx-export"))
