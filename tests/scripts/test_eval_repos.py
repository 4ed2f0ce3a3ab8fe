"""scripts/eval_repos.py: the repository evaluation's own logic (how a finding is judged
against a toolchain's verdict, the tallies), and its toolchain run on a small module."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import textwrap
from typing import Any

import pytest

from support import REPO

_spec = importlib.util.spec_from_file_location("eval_repos", os.path.join(REPO, "scripts", "eval_repos.py"))
assert _spec is not None and _spec.loader is not None
eval_repos = importlib.util.module_from_spec(_spec)
sys.modules["eval_repos"] = eval_repos  # dataclasses look their module up
_spec.loader.exec_module(eval_repos)


def _finding(ops: list[str], target: str = "coreml", severity: str = "error") -> dict[str, Any]:
    return {"ops": ops, "target": target, "severity": severity}


def test_a_finding_is_right_when_the_toolchain_fails_on_its_op() -> None:
    verdict = {"ok": False, "error": "NotImplementedError: ...", "rejected": ["pairwise_distance"]}
    assert eval_repos.judge(_finding(["aten::pairwise_distance"]), verdict) == "right"


def test_a_toolchain_failing_on_another_op_is_told_apart() -> None:
    verdict = {"ok": False, "error": "op 'logspace' not implemented", "rejected": ["logspace"]}
    assert eval_repos.judge(_finding(["aten::chunk"]), verdict) == "right-other"


def test_a_toolchain_that_succeeds_makes_the_finding_false_and_no_verdict_is_unknown() -> None:
    assert eval_repos.judge(_finding(["aten::chunk"]), {"ok": True}) == "false"
    assert eval_repos.judge(_finding(["aten::chunk"]), {"harness_error": "timed out"}) == "unknown"


def test_precision_counts_right_against_false_per_target() -> None:
    judged = [
        {"target": "coreml", "severity": "error", "verdict": "right"},
        {"target": "coreml", "severity": "warning", "verdict": "right-other"},
        {"target": "coreml", "severity": "error", "verdict": "false"},
        {"target": "coreml", "severity": "warning", "verdict": "not traced"},
        {"target": "executorch", "severity": "warning", "verdict": "not traced"},
    ]
    table = eval_repos.precision(judged, ["coreml", "executorch"])
    assert table["coreml"]["errors"] == 2 and table["coreml"]["warnings"] == 2
    assert table["coreml"]["precision"] == round(2 / 3, 3)
    assert table["executorch"]["precision"] is None  # nothing decided by a toolchain


def test_why_a_class_was_not_traced() -> None:
    reason = eval_repos.not_traced_reason
    assert reason({"capture": "trace"}, False) is None
    assert reason({"capture": "static"}, True) == "file timed out"
    assert reason({"capture": "static", "build_error": {"kind": "arguments"}}, False) == "not built: arguments"
    assert reason({"capture": "script"}, False) == "built, no inputs ran (scripted)"


def test_the_toolchains_run_on_the_class_with_the_inputs_atenlint_used(tmp_path: Any) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "net.py").write_text(
        textwrap.dedent(
            """
            import torch
            from torch import nn

            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 3)

                def forward(self, x, *rest):
                    return self.fc(x).relu()
            """
        )
    )
    spec = {
        "file": str(tmp_path / "pkg" / "net.py"),
        "module_name": "pkg.net",
        "roots": [str(tmp_path)],
        "qualname": "Net",
        "inputs": "(torch.randn(2, 4),)",
        "targets": ["torchscript", "onnx:17"],
    }
    pytest.importorskip("onnx")
    results = json.loads(json.dumps(eval_repos.oracle(spec)))
    # `*rest` is what torch.jit.script refuses; the ONNX exporter traces it with one input.
    assert results["torchscript"]["ok"] is False and "variable number" in results["torchscript"]["error"]
    assert results["onnx:17"]["ok"] is True


def test_repositories_with_the_same_folder_name_are_told_apart() -> None:
    paths = ["/r/dinov2/dinov2/layers", "/r/detectron2/detectron2/layers", "/r/CLIP"]
    assert [eval_repos.repo_name(p, paths) for p in paths] == ["dinov2/layers", "detectron2/layers", "CLIP"]


def test_a_part_built_on_its_models_instance_is_taken_by_its_module_path(tmp_path: Any) -> None:
    """atenlint names a part it traced on the instance its model built
    (`Outer().blocks.0`); the toolchains run on that same part."""
    (tmp_path / "parts.py").write_text(
        textwrap.dedent(
            """
            import torch
            from torch import nn

            class Inner(nn.Module):
                def __init__(self, width):
                    super().__init__()
                    self.fc = nn.Linear(width, width)

                def forward(self, x, *rest):
                    return self.fc(x)

            class Outer(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.blocks = nn.ModuleList([Inner(4)])

                def forward(self, x):
                    return self.blocks[0](x)
            """
        )
    )
    spec = {
        "file": str(tmp_path / "parts.py"),
        "module_name": "parts",
        "roots": [str(tmp_path)],
        "qualname": "Inner",
        "inputs": "(torch.randn(2, 4),)",
        "arguments": "Outer().blocks.0",
        "targets": ["torchscript"],
    }
    results = json.loads(json.dumps(eval_repos.oracle(spec)))
    assert results["torchscript"]["ok"] is False and "variable number" in results["torchscript"]["error"]
