"""The executorch:<delegate> targets' verdicts, and the load verdict (ET002) of every
ExecuTorch target checked against the real `to_executorch()` program and the installed
portable kernel list."""

from __future__ import annotations

import importlib
import warnings
from typing import Any, cast

import pytest
import torch
from torch import nn

from atenlint.config import Settings, SettingsResolver
from atenlint.targets.executorch_delegates import (
    DELEGATE_CODE,
    NO_KERNEL_CODE,
    NOT_CONVERTED_CODE,
    NOT_JUDGED_CODE,
    UNAVAILABLE_CODE,
    DelegateTarget,
    delegate_of,
)
from atenlint.worker.protocol import CallTree, ClassAnswer


def _table(**delegates: Any) -> dict[str, Any]:
    return {
        "available": True,
        "version": "1.5.1",
        "portable_kernels": 200,
        "no_portable_kernel": ["aten::sort"],
        "delegates": delegates
        or {"xnnpack": {"available": True, "partitioner": "executorch.backends.xnnpack.XnnpackPartitioner"}},
    }


def _leaf(op: str, **delegate: Any) -> CallTree:
    return {"op": op, "calls": None, "graph": True, "delegate": delegate}  # type: ignore[typeddict-item]


def test_delegate_names() -> None:
    assert delegate_of("executorch:xnnpack") == "xnnpack"
    assert delegate_of("executorch") is None
    assert delegate_of("executorch:nothing") is None


def test_a_node_left_to_the_cpu_is_a_warning_with_the_partitioners_reason() -> None:
    target = DelegateTarget("executorch:xnnpack", _table(), "2.13.0")
    assert target.tree_view == "executorch:xnnpack"
    assert target.problems(_leaf("aten::relu", delegated=True), ("eval",)) == []
    problems = target.problems(
        _leaf("aten::mean.dim", delegated=False, reasons=["mean.dim only supports keepdim=True"]), ("eval",)
    )
    verdict = target.verdict(problems)
    assert (verdict.severity, verdict.code) == ("warning", DELEGATE_CODE)
    assert "`aten::mean.dim`" in verdict.message and "keepdim=True" in verdict.message
    assert "XNNPACK" in verdict.message


def test_a_quantized_only_op_says_so() -> None:
    target = DelegateTarget("executorch:xnnpack", _table(), "2.13.0")
    problems = target.problems(_leaf("aten::mm", delegated=False, quantized_only=True), ("eval",))
    verdict = target.verdict(problems)
    assert verdict.severity == "warning"
    assert "quantized pattern" in verdict.message


def test_a_node_left_to_the_cpu_without_a_portable_kernel_will_not_load() -> None:
    target = DelegateTarget("executorch:xnnpack", _table(), "2.13.0")
    verdict = target.verdict(target.problems(_leaf("aten::sort", delegated=False), ("eval",)))
    assert (verdict.severity, verdict.code) == ("error", NO_KERNEL_CODE)
    assert "portable kernel library" in verdict.message and "optimized" in verdict.message
    # The delegate takes it: no kernel needed on the CPU.
    assert target.problems(_leaf("aten::sort", delegated=True), ("eval",)) == []


def test_a_node_taken_that_the_backend_cannot_convert_is_an_error_with_its_words() -> None:
    target = DelegateTarget("executorch:coreml", _table(coreml={"available": True, "partitioner": "p"}), "2.13.0")
    words = "ValueError: No available version for pixel_unshuffle in the coremltools.target.iOS15 opset"
    problems = target.problems(_leaf("aten::pixel_unshuffle", delegated=True, not_converted=words), ("eval",))
    verdict = target.verdict(problems)
    assert (verdict.severity, verdict.code) == ("error", NOT_CONVERTED_CODE)
    assert words in verdict.message and "`aten::pixel_unshuffle`" in verdict.message
    assert "to_edge_transform_and_lower fails" in verdict.message and "CoreMLBackend.preprocess" in verdict.message
    # The lowering fails before any program loads: it stands over a missing kernel at the same site.
    also = target.problems(_leaf("aten::sort", delegated=False), ("eval",))
    assert target.verdict(problems + also).code == NOT_CONVERTED_CODE


def test_a_scripted_stand_in_judges_nothing() -> None:
    """Without a delegate view (the scripted graph stood in), no claim about the partitioner."""
    target = DelegateTarget("executorch:xnnpack", _table(), "2.13.0")
    assert target.problems({"op": "aten::sort", "calls": None}, ("eval",)) == []


def test_an_unavailable_partitioner_says_why_once() -> None:
    target = DelegateTarget(
        "executorch:xnnpack", _table(xnnpack={"available": False, "reason": "ImportError: no module"}), "2.13.0"
    )
    assert not target.available
    results = target.class_results({})  # type: ignore[typeddict-item]
    assert [r.code for r in results] == [UNAVAILABLE_CODE]
    assert "ImportError" in results[0].message
    assert not DelegateTarget("executorch:coreml", {"available": False, "reason": "not installed"}, "2").available


def test_a_class_without_a_delegate_graph_says_it_was_not_judged_once() -> None:
    target = DelegateTarget("executorch:xnnpack", _table(), "2.13.0")
    scripted: dict[str, Any] = {"name": "Block", "status": "ok", "covered": []}

    def results(**changes: Any) -> list[Any]:
        return target.class_results(cast(ClassAnswer, {**scripted, **changes}))

    (note,) = results()
    assert (note.severity, note.code) == ("information", NOT_JUDGED_CODE)
    assert "`Block`" in note.message and "executorch:xnnpack" in note.message and "inputs=" in note.message
    # Judged: the view is among those the trace gave. A failed front end or trace already
    # has its own note (ATL020, ATL011); a class not captured at all, its own finding.
    assert results(capture="trace", covered=["executorch:xnnpack"]) == []
    assert results(graph_errors=[{"view": "executorch:xnnpack", "message": "x"}]) == []
    assert results(trace_error={"message": "x"}) == []
    assert results(capture="static")[0].code == NOT_JUDGED_CODE
    assert results(status="build_failed") == []


INFERRED = """import torch
from torch import nn


class Pooled(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)

    def forward(self, x):
        y = self.conv(x).mean((2, 3))
        return torch.cumsum(y, 1)
"""


def test_inferred_inputs_give_delegate_verdicts_and_no_inputs_one_note(engine: Any, tmp_path: Any) -> None:
    """No `# atenlint: inputs=`: with inferred inputs (the default) the partitioner judges
    the class; with inference off the class is only scripted, and one note says the
    delegate did not judge it (never silence)."""
    pytest.importorskip("executorch.backends.xnnpack.partition.xnnpack_partitioner")
    (tmp_path / "pooled.py").write_text(INFERRED, encoding="utf-8")

    def findings(**settings: Any) -> list[Any]:
        engine.resolver = SettingsResolver(None, dict({"targets": ("executorch:xnnpack",)}, **settings))
        return [f for f in engine.check_paths([str(tmp_path)], jobs=1).findings if f.target == "executorch:xnnpack"]

    inferred = findings()
    assert {(f.code, f.range.start.line) for f in inferred} >= {(DELEGATE_CODE, 11)}  # cumsum: no XNNPACK config
    assert any("aten::cumsum" in f.ops for f in inferred)
    assert NOT_JUDGED_CODE not in {f.code for f in inferred}

    scripted = findings(infer_inputs=False)
    assert [(f.code, f.severity) for f in scripted] == [(NOT_JUDGED_CODE, "information")]
    assert "`Pooled`" in scripted[0].message


class Sorts(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sort(x, 1)[0] + torch.relu(x)


def test_load_verdict_agrees_with_to_executorch_and_the_portable_list(engine: Any) -> None:
    """Every operator of the real `to_executorch()` program with no portable kernel is one
    the executorch target reports (ET002), and no other."""
    pytest.importorskip("executorch.exir")
    to_edge = importlib.import_module("executorch.exir").to_edge
    from atenlint.probe.registries import _portable_kernels

    portable = _portable_kernels()
    assert portable, "the installed executorch ships kernels/portable/functions.yaml"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = to_edge(torch.export.export(Sorts(), (torch.randn(2, 5),))).to_executorch()
    operators = program.executorch_program.execution_plan[0].operators
    missing = {f"{o.name}.{o.overload}" if o.overload else o.name for o in operators}
    missing = {name for name in missing if name.removeprefix("aten::") not in portable}
    assert missing == {"aten::sort.values"}

    (target,) = engine.targets_for(Settings(targets=("executorch",)))
    tree: CallTree = {"op": "aten::sort", "calls": None, "graph": True}
    verdict = target.verdict(target.problems(tree, ("eval",)))
    assert (verdict.severity, verdict.code) == ("error", NO_KERNEL_CODE)
    relu: CallTree = {"op": "aten::relu", "calls": None, "graph": True}
    assert target.problems(relu, ("eval",)) == []


def test_report_counts_each_delegates_share_of_nodes_and_of_flop_heavy_ones() -> None:
    from atenlint.commands.report import DelegateCoverage, _count_delegated, coverage_line, flop_heavy

    target = DelegateTarget("executorch:xnnpack", _table(), "2.13.0")
    plain = DelegateTarget("executorch:coreml", _table(coreml={"available": True}), "2.13.0")
    into: dict[str, DelegateCoverage] = {}
    calls = [
        ("aten::convolution", {"delegated": True}),
        ("aten::linear", {"delegated": False, "nodes": 2, "taken": 1}),
        ("aten::sort", {"delegated": False}),
        ("aten::relu", {"delegated": True}),
    ]
    for op, facts in calls:
        _count_delegated(into, [target], op, {"executorch:xnnpack": _leaf(op, **facts)})
    _count_delegated(
        into, [plain], "aten::relu", {"script": {"op": "aten::relu", "calls": None}}
    )  # no view: not counted
    assert into == {"executorch:xnnpack": {"nodes": 5, "taken": 3, "heavy_nodes": 3, "heavy_taken": 2}}
    assert coverage_line("executorch:xnnpack", into["executorch:xnnpack"]) == (
        "executorch:xnnpack takes 3 of 5 nodes (60%); FLOP-heavy (conv, linear, matmul, attention): 2 of 3 (67%)"
    )
    assert flop_heavy("aten::_scaled_dot_product_flash_attention_for_cpu") and flop_heavy("aten::conv2d")
    assert not flop_heavy("aten::cumsum")


def test_an_executorch_error_names_every_op_it_lists() -> None:
    """At one call, an op to_edge rejects, one without a portable kernel and a library's own
    op: the error is about the first, and its text names the other two as well (every op
    the finding lists is in its message)."""
    from atenlint.targets.base import Problem
    from atenlint.targets.executorch import CUSTOM, NO_PORTABLE, NOT_CORE, CoreAtenTarget

    target = CoreAtenTarget("executorch", {"core": ["aten::sort"]}, _table(), "2.13.0")
    problems = [
        Problem("aten::histc", NOT_CORE),
        Problem("aten::sort", NO_PORTABLE),
        Problem("transformers::grouped_mm_fallback", CUSTOM),
    ]
    verdict = target.verdict(problems)
    assert (verdict.severity, verdict.code) == ("error", "ET001")
    assert "`aten::histc`" in verdict.message and "to_edge rejects" in verdict.message
    assert "`aten::sort` also has no portable kernel" in verdict.message
    assert "`transformers::grouped_mm_fallback`, a library's own operator, which to_edge keeps" in verdict.message
