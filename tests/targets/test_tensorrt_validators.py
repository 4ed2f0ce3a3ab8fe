"""TensorRT: a converter's capability validator is reported only where the call's constant
arguments show that it declines the call (issue 13: no note on every conv, cat and pool)."""

from __future__ import annotations

from atenlint.engine import Occurrence, problems_for
from atenlint.findings import Finding
from atenlint.lsp import convert
from atenlint.sourcetext import Position, Range
from atenlint.targets.tensorrt import TensorRTTarget


def leaf(op: str) -> dict:
    return {"op": op, "calls": None}


def occurrence(op: str, args: dict, phases: tuple = ("eval",)) -> Occurrence:
    return Occurrence("m.Net", op, {"export": leaf(op)}, phases, [], "script", args)


TRT = TensorRTTarget("2.13.0")


def test_validated_converters_without_a_declining_argument_say_nothing():
    assert TRT.converter("aten::convolution")["validator"]
    for op, args in [
        ("aten::convolution", {"stride": [2, 2], "dilation": [2, 2], "transposed": True}),
        ("aten::cat", {"dim": 1}),
        ("aten::max_pool2d", {"kernel_size": [2, 2], "dilation": [1, 1], "ceil_mode": False}),
        ("aten::avg_pool2d", {"kernel_size": [2, 2], "ceil_mode": False, "divisor_override": None}),
        ("aten::topk", {"k": 5}),
    ]:
        assert TRT.problems(leaf(op), ("eval",)) == []
        assert problems_for(TRT, occurrence(op, args)) == [], op
    # Nothing known of the arguments (a traced call): nothing to act on.
    assert problems_for(TRT, occurrence("aten::max_pool2d", {})) == []


def test_a_declining_argument_is_a_graph_break_that_names_it():
    problems = problems_for(TRT, occurrence("aten::max_pool2d", {"kernel_size": [2, 2], "ceil_mode": True}))
    verdict = TRT.verdict(problems)
    assert (verdict.severity, verdict.code) == ("warning", "TRT002")
    assert verdict.message.startswith("runs `aten::max_pool2d` with `ceil_mode=True` in PyTorch: ")
    # What an editor's list shows (the first clause, at most 100 characters) keeps the reason.
    head = convert.headline(
        Finding(
            "m.py", Range(Position(0, 0), Position(0, 1)), "warning", "TRT002", f"`self.pool_ceil` {verdict.message}"
        )
    )
    assert head == "`self.pool_ceil` runs `aten::max_pool2d` with `ceil_mode=True` in PyTorch"
    dilated = TRT.verdict(problems_for(TRT, occurrence("aten::max_pool3d", {"dilation": [1, 2, 1]})))
    assert "`dilation=[1, 2, 1]`" in dilated.message
    divisor = TRT.verdict(problems_for(TRT, occurrence("aten::avg_pool2d", {"divisor_override": 3})))
    assert "`divisor_override=3`" in divisor.message
    assert "`k=5000`" in TRT.verdict(problems_for(TRT, occurrence("aten::topk", {"k": 5000}))).message


def test_training_only_calls_are_not_exported():
    assert problems_for(TRT, occurrence("aten::max_pool2d", {"ceil_mode": True}, ("train",))) == []


def test_a_graph_break_and_a_declined_call_at_one_site_are_one_verdict():
    problems = TRT.problems(leaf("aten::_linalg_svd"), ("eval",)) + TRT.argument_problems(
        "aten::avg_pool1d", {"ceil_mode": True}, ("eval",)
    )
    verdict = TRT.verdict(problems)
    assert verdict.code == "TRT001" and "declines `aten::avg_pool1d` with `ceil_mode=True`" in verdict.message
