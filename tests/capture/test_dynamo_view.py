"""The compile view against torch._dynamo.explain and torch.compile(fullgraph=True), run here
on the same modules with the same real CPU tensors: an agreement test, not a recorded list."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import warnings

import pytest
import torch

from atenlint.capture.compile_static import source_breaks
from atenlint.capture.dynamo_view import dynamo_breaks
from atenlint.capture.paths import is_library_file
from support import TESTS

CASES_PATH = os.path.join(TESTS, "data", "compile", "compile_cases.py")
KINDS = ["Branch", "Item", "ToList", "Print", "Logging", "CExtension", "ThirdParty", "Disabled", "Helper", "Clean"]
# Kinds whose break the source shows for certain (the others need Dynamo's own run).
SOURCE_CERTAIN = {"Branch", "Item", "ToList", "Print", "Disabled", "Helper", "Clean"}


@pytest.fixture(scope="module")
def cases():
    spec = importlib.util.spec_from_file_location("compile_cases", CASES_PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules["compile_cases"] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("compile_cases", None)


def _explain(model, x):
    """`explain`'s breaks as (headline, innermost user line): its stack walked up out of
    library files, as atenlint reports a break at the user's line."""
    out = torch._dynamo.explain(model)(x)
    found = []
    for reason in out.break_reasons:
        user = [frame for frame in reason.user_stack if not is_library_file(frame.filename)]
        found.append((reason.reason.strip().splitlines()[0], user[-1].lineno if user else None))
    return found


def _fullgraph_compiles(model, x):
    torch._dynamo.reset()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.compile(model, fullgraph=True, backend="eager")(x)
    except Exception:  # noqa: BLE001 - Dynamo's Unsupported: the verdict
        return False
    finally:
        torch._dynamo.reset()
    return True


@pytest.mark.parametrize("kind", KINDS)
def test_breaks_agree_with_explain_and_fullgraph(cases, kind, capsys):
    model, x = getattr(cases, kind)().eval(), torch.ones(2, 3)
    answer = dynamo_breaks(model, (x,), {}, fullgraph=True)
    assert "error" not in answer
    ours = [(b["reason"], b["site"]["line"] if b.get("site") else None) for b in answer["breaks"]]
    assert ours == _explain(model, x)
    assert all(b["site"]["file"] == CASES_PATH for b in answer["breaks"])
    assert (kind != "Clean") == bool(ours)
    # The fullgraph verdict: Dynamo's own nopython run, as torch.compile(fullgraph=True) decides.
    expected = _fullgraph_compiles(model, x)
    assert answer.get("fullgraph", True) is expected
    if not expected:
        assert answer["fullgraph_error"]["site"]["line"] in {line for _, line in ours}
    if kind in SOURCE_CERTAIN:
        # Without inputs, the source pass finds the same lines (never more).
        read = source_breaks(getattr(cases, kind))
        assert read["source"] is True
        assert sorted(b["site"]["line"] for b in read["breaks"]) == sorted(line for _, line in ours)


def test_each_break_kind_has_dynamos_reason(cases):
    model = cases.Print().eval()
    answer = dynamo_breaks(model, (torch.ones(2, 3),), {})
    (found,) = answer["breaks"]
    assert "print" in found["details"] and "Developer debug context" not in found["details"]
    assert found["stack"][-1] == found["site"]


def test_the_compile_view_comes_after_the_partial_answer(tmp_path, monkeypatch):
    """The fast targets' diagnostics never wait for Dynamo: the partial answer is handed
    over before the compile view runs, and only the final answer carries it."""
    from atenlint.capture import dynamo_view, file_capture

    events: list[str] = []
    original = dynamo_view.compile_view

    def recording(*args, **kwargs):
        events.append("compile")
        return original(*args, **kwargs)

    monkeypatch.setattr(dynamo_view, "compile_view", recording)
    shutil.copy(CASES_PATH, tmp_path / "compile_partial.py")
    request = {
        "path": str(tmp_path / "compile_partial.py"),
        "module": "compile_partial",
        "roots": [str(tmp_path)],
        "overlays": {},
        "classes": {"Print": {"inputs": "torch.ones(2, 3)"}, "Item": {}},
        "candidates": [],
        "devices": ["cpu", "mps"],
        "views": ["compile", "dispatch"],
        "infer_inputs": False,
    }
    final = file_capture.capture_file(request, on_partial=lambda answer: events.append("partial"))
    assert events == ["partial", "compile"]
    by_name = {c["qualname"]: c for c in final["classes"]}
    assert [b["site"]["line"] for b in by_name["Print"]["compile"]["breaks"]] == [_line_of('print("y"')]
    assert by_name["Item"]["compile"]["source"] is True  # no inputs: read from source
    assert [b["site"]["line"] for b in by_name["Item"]["compile"]["breaks"]] == [_line_of("y.sum().item()")]


def _line_of(text):
    with open(CASES_PATH, encoding="utf-8") as handle:
        return next(number for number, line in enumerate(handle, 1) if text in line)


class _Scaled(torch.nn.Module):
    def forward(self, x, scale=0.5, steps=2, flag=True):
        y = x * scale
        for _ in range(steps):
            y = y + 1
        return y if flag else -y


def test_scalar_arguments_dynamo_specialises_on_are_recompile_notes():
    x = torch.ones(2, 3)
    answer = dynamo_breaks(_Scaled(), (x, 0.25, 3), {}, inductor=False)
    found = {hazard["name"]: hazard for hazard in answer.get("recompiles", [])}
    assert set(found) == {"scale", "steps"}  # a bool flag or a tensor is not a number argument
    assert "CONSTANT_MATCH" in found["scale"]["guard"] and found["scale"]["value"] == "0.25"
    first = _Scaled.forward.__code__.co_firstlineno
    assert found["scale"]["site"]["line"] == first + 1 and found["steps"]["site"]["line"] == first + 2
    # What Dynamo really does: a call with another value of each compiles again.
    compiled: list[int] = []

    def backend(graph_module, example_inputs):
        compiled.append(1)
        return graph_module.forward

    torch._dynamo.reset()
    try:
        run = torch.compile(_Scaled(), backend=backend)
        run(x, 0.25, 3)
        assert len(compiled) == 1
        run(x, 0.75, 3)
        assert len(compiled) == 2
        run(x, 0.75, 4)
        assert len(compiled) == 3
    finally:
        torch._dynamo.reset()


TWO_BREAKS_ON_ONE_LINE = """import torch


class TwoOnOneLine(torch.nn.Module):
    def forward(self, x):
        y = x * 2
        values = y.tolist() + [(y + 1).sum().item()]
        return y + len(values)
"""


def test_two_breaks_on_one_line_are_both_reported(engine, tmp_path):
    """Dynamo splits `values = y.tolist() + [(y + 1).sum().item()]` twice on one line; the
    report keeps one diagnostic per line and code, so the one finding there names both."""
    from atenlint.targets.compile import BREAK
    from support import check_json

    (tmp_path / "two_breaks.py").write_text(TWO_BREAKS_ON_ONE_LINE)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.atenlint]\ntargets = ["compile"]\ninfer-inputs = false\n'
        '[tool.atenlint.modules."two_breaks.TwoOnOneLine"]\ninputs = "torch.ones(2, 3)"\n'
    )
    found = [f for f in check_json(engine, str(tmp_path)) if f["target"] == "compile" and f["code"] == BREAK]
    namespace: dict = {}
    exec(compile(TWO_BREAKS_ON_ONE_LINE, str(tmp_path / "two_breaks.py"), "exec"), namespace)  # noqa: S102
    real = torch._dynamo.explain(namespace["TwoOnOneLine"]())(torch.ones(2, 3))
    torch._dynamo.reset()
    lines = {reason.user_stack[-1].lineno for reason in real.break_reasons}
    assert len(real.break_reasons) == 2 and lines == {7}
    (finding,) = found
    assert finding["range"]["start"]["line"] + 1 == 7
    for reason in real.break_reasons:
        assert reason.reason.strip().splitlines()[0] in finding["message"]


class _Selected(torch.nn.Module):
    def forward(self, x):
        y = x * 2
        kept = torch.nonzero(y > 1)
        return kept.float().sum() + y.sum()


def test_an_op_with_a_value_dependent_size_is_said_as_such():
    """Dynamo's "Dynamic shape operator" (nonzero, masks, unique): the words say which
    config keeps it in the graph, from Dynamo's own hint, at explain's line."""
    from atenlint.targets.compile import user_words

    x = torch.tensor([[0.0, 1.0, 2.0]])
    answer = dynamo_breaks(_Selected(), (x,), {}, inductor=False)
    ours = [(b["reason"], b["site"]["line"]) for b in answer["breaks"]]
    assert ours == _explain(_Selected(), x)
    ((reason, _),) = ours
    (found,) = answer["breaks"]
    assert "capture_dynamic_output_shape_ops" in found["details"]
    assert "capture_dynamic_output_shape_ops" in user_words(f"{reason}\n{found['details']}")


LOOP_CASES = """
import torch


class LoopBranch(torch.nn.Module):
    def forward(self, x):
        y = x * 2
        for _ in range(3):
            if x.sum() > 0:
                x = x + 1
            else:
                x = x - 1
        return x + y


class Step(torch.nn.Module):
    def forward(self, x):
        if x.max() > 0:
            return x.relu()
        return x


class LoopOverSteps(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.steps = torch.nn.ModuleList([Step(), Step()])

    def forward(self, x):
        for step in self.steps:
            x = step(x)
        return x
"""


def _line_in(path, text):
    with open(path, encoding="utf-8") as handle:
        return next(number for number, line in enumerate(handle, 1) if text in line)


def test_a_break_in_a_loop_that_makes_dynamo_skip_the_frame_is_reported(tmp_path):
    """A break inside a for loop: Dynamo cannot resume there, skips the whole frame and runs
    it eagerly; `explain` then counts no graph and no break, yet fullgraph=True raises. The
    view reports the break where fullgraph=True raises, and the fullgraph verdict."""
    path = tmp_path / "loop_cases.py"
    path.write_text(LOOP_CASES, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("loop_cases", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x = torch.ones(2, 3)
    model = module.LoopBranch().eval()
    assert _explain(model, x) == []  # what explain says on the installed torch: nothing
    assert _fullgraph_compiles(model, x) is False
    branch = _line_in(path, "if x.sum() > 0:")
    answer = dynamo_breaks(model, (x,), {})
    assert "error" not in answer
    (found,) = answer["breaks"]
    assert (found["site"]["file"], found["site"]["line"]) == (str(path), branch)
    assert "skips the whole frame" in found["details"] and found["skipped_frame"] is True
    assert "fullgraph" not in answer  # asked only by the fullgraph setting
    strict = dynamo_breaks(model, (x,), {}, fullgraph=True)
    assert strict["fullgraph"] is False and strict["fullgraph_error"]["site"]["line"] == branch
    # The break is in a submodule called from the loop: Dynamo records it in the submodule's
    # own frame; the skipped loop frame adds no second report of the same line.
    steps = module.LoopOverSteps().eval()
    lines = [b["site"]["line"] for b in dynamo_breaks(steps, (x,), {})["breaks"]]
    assert set(lines) == {_line_in(path, "if x.max() > 0:")}
    assert set(lines) == {line for _, line in _explain(steps, x)}
