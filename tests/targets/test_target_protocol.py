"""`Target` is the one type every caller uses: a target implements what it must answer,
and inherits a neutral answer for what only some targets have (no probing for methods)."""

from __future__ import annotations

import pytest

from atenlint.engine import Occurrence, _graph_options, problems_for
from atenlint.targets.base import Problem, Support, Target, TargetStatus, Verdict
from atenlint.targets.site_verdict import CONDITIONAL, PROBLEM, SUPPORTED, SiteVerdict, VerdictAggregate


class Minimal(Target):
    """Only the abstract methods: everything optional comes from the base class."""

    name = "minimal"
    description = "a target that rejects aten::take"
    device = "cpu"

    def problems(self, tree, phases):
        return [Problem(tree["op"], "missing")] if tree["op"] == "aten::take" else []

    def verdict(self, problems):
        ops = ", ".join(p.op for p in problems)
        return Verdict("warning" if all(p.kind == "soft" for p in problems) else "error", "MIN001", f"reaches {ops}")

    def status(self) -> TargetStatus:
        return {"target": self.name, "available": True, "description": self.description, "data": {}}

    def support(self, op: str) -> Support:
        return {"verdict": "unsupported" if op == "aten::take" else "supported", "reason": "by name"}


def occurrence(op: str, **extra) -> Occurrence:
    return Occurrence(
        "m.Net",
        op,
        {"dispatch": {"op": op, "calls": None}},
        ("eval",),
        [{"file": "/w/m.py", "line": 3, "col": 4}],
        "script",
        **extra,
    )


def test_optional_parts_have_neutral_defaults():
    target = Minimal()
    assert target.available and target.tree_view == "dispatch"
    assert target.facts_problems("aten::take", {"float64_origin": True}) == []
    assert target.class_results({"name": "Net", "qualname": "Net", "module": "m.Net", "status": "ok", "ops": []}) == []
    assert target.implemented_overloads() == [] and target.decomposition_changes() == {}


def test_the_engine_judges_a_minimal_target_without_probing():
    target = Minimal()
    assert problems_for(target, occurrence("aten::take", facts={"max_dim": 20})) == [Problem("aten::take", "missing")]
    assert problems_for(target, occurrence("aten::add.Tensor")) == []
    assert problems_for(target, occurrence("aten::take", devices=("mps",))) is None  # captured for another device
    assert _graph_options([target]) == {}


def test_a_target_must_answer_the_required_questions():
    class Incomplete(Target):
        name, description, device = "incomplete", "", "cpu"

        def problems(self, tree, phases):
            return []

    with pytest.raises(TypeError):
        Incomplete()  # type: ignore[abstract]


def test_every_built_in_target_is_a_target():
    import inspect

    from atenlint.targets import coreml, device_backend, executorch, mps, onnx, tensorrt, torchscript

    classes = [
        cls
        for module in (coreml, device_backend, executorch, mps, onnx, tensorrt, torchscript)
        for _, cls in inspect.getmembers(module, inspect.isclass)
        if cls.__module__ == module.__name__ and cls.__name__.endswith("Target") and not inspect.isabstract(cls)
    ]
    assert len(classes) >= 8  # mps, cuda, xla, onnx, executorch/core-aten, coreml, tensorrt, torchscript
    assert all(issubclass(cls, Target) for cls in classes)


def test_one_aggregator_says_supported_conditional_or_problem():
    target = Minimal()
    empty = VerdictAggregate(target)
    empty.add([], conditional=False)
    assert empty.verdict() == SiteVerdict(SUPPORTED)

    maybe = VerdictAggregate(target)
    maybe.add([Problem("aten::take", "missing")], conditional=True)
    assert (maybe.verdict().status, maybe.verdict().ops) == (CONDITIONAL, ("aten::take",))

    # A definite problem outranks a conditional one, and problems merge before the wording.
    both = VerdictAggregate(target)
    both.add([Problem("aten::nonzero", "soft")], conditional=True)
    both.add([Problem("aten::take", "missing")], conditional=False)
    both.add([Problem("aten::take", "missing"), Problem("aten::kthvalue", "missing")], conditional=False)
    verdict = both.verdict()
    assert verdict.status == PROBLEM and verdict.ops == ("aten::take", "aten::kthvalue")
    assert (verdict.severity, verdict.code, verdict.message) == (
        "error",
        "MIN001",
        "reaches aten::take, aten::kthvalue",
    )
    assert verdict.as_json()["status"] == PROBLEM


def test_both_markdown_reports_word_a_verdict_alike():
    from atenlint.report_markdown import section, verdict_cell, verdict_table

    problem = SiteVerdict(PROBLEM, ("aten::take",), "error", "MPS003", "reaches `aten::take`")
    assert verdict_cell(SiteVerdict(SUPPORTED)) == "✅ supported"
    assert verdict_cell(problem) == "❌ unsupported: aten::take (MPS003)"
    assert verdict_cell(SiteVerdict(CONDITIONAL, ("aten::take",), "warning", "MPS001")).startswith("❔ may fall back")
    assert verdict_cell(None) == ""
    table = verdict_table(["op"], ["mps", "onnx"], [(["`a|b`"], {"mps": problem})])
    assert table == ["| op | mps | onnx |", "|---|---|---|", "| `a\\|b` | ❌ unsupported: aten::take (MPS003) |  |"]
    assert section("Suggestions", []) == [] and section("Notes", ["x"], level=3) == ["", "### Notes", "", "- x"]


def test_ignored_problems_leave_the_choice_to_what_remains():
    both = VerdictAggregate(Minimal())
    both.add([Problem("aten::take", "missing")], conditional=False)
    both.add([Problem("aten::nonzero", "soft")], conditional=True)
    assert both.chosen() == ([Problem("aten::take", "missing")], False)
    # The user ignores the definite one: the finding is the conditional one, as such.
    not_take = both.chosen(lambda p: p.op != "aten::take")
    assert not_take == ([Problem("aten::nonzero", "soft")], True)
    assert both.verdict(lambda p: False) == SiteVerdict(SUPPORTED)
