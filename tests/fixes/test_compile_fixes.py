"""The torch.compile quick fixes are exact: the rewritten module compiles with
`fullgraph=True` (Dynamo's own verdict) and computes what the original computes, on
random inputs; the break they answer is where Dynamo itself reports it."""

from __future__ import annotations

import contextlib
import io
import warnings

import pytest
import torch
from fixes_support import apply_text, fixes_of

from atenlint.findings import Finding
from atenlint.sourcetext import Position, Range

PATH = "/virtual/compile_case.py"
FIX = "print-when-not-compiling"

PRINTS = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        y = self.lin(x)
        print("mean", y.mean().item(), len(y),
              y.shape)
        if y.numel() > 2:
            print(f"{y.sum()}")  # why
        return torch.relu(y) * 2
"""


def _load(source: str) -> type:
    namespace: dict = {}
    exec(compile(source, PATH, "exec"), namespace)  # noqa: S102 - the test's own source
    return namespace["Model"]


def _explain_lines(cls: type, x: torch.Tensor) -> list[int]:
    torch.manual_seed(0)
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        out = torch._dynamo.explain(cls().eval())(x)
    return sorted({r.user_stack[-1].lineno for r in out.break_reasons if r.user_stack[-1].filename == PATH})


def _finding(source: str, line: int, code: str = "COMPILE001") -> Finding:
    text = source.splitlines()[line - 1]
    column = len(text) - len(text.lstrip())
    return Finding(
        "compile_case.py",
        Range(Position(line - 1, column), Position(line - 1, len(text))),
        "warning",
        code,
        "message",
        target="compile",
        ops=[],
        abs_path=PATH,
        data={"torch": torch.__version__.split("+")[0]},
    )


def _fixed(source: str, lines: list[int]) -> str:
    for line in sorted(lines, reverse=True):  # bottom up: earlier lines keep their numbers
        (fix,) = [f for f in fixes_of(source, _finding(source, line)) if f["id"] == FIX]
        assert fix["exact"] and fix["kind"] == "rewrite"
        source = apply_text(source, fix)
    return source


def test_guarded_prints_keep_one_graph_and_the_same_outputs():
    x = torch.randn(3, 4)
    lines = _explain_lines(_load(PRINTS), x)
    assert lines == [12, 15]  # Dynamo's own break lines: both prints
    fixed = _fixed(PRINTS, lines)
    assert '        if not torch.compiler.is_compiling():\n            print("mean"' in fixed
    assert "                  y.shape)" in fixed  # the continuation line moves with it
    assert '                print(f"{y.sum()}")  # why' in fixed
    original, rewritten = _load(PRINTS), _load(fixed)
    assert _explain_lines(rewritten, x) == []
    generator = torch.Generator().manual_seed(0)
    for _ in range(3):
        torch.manual_seed(1)
        before = original().eval()
        torch.manual_seed(1)
        after = rewritten().eval()
        inputs = torch.randn(3, 4, generator=generator)
        torch._dynamo.reset()
        with contextlib.redirect_stdout(io.StringIO()) as printed:
            compiled = torch.compile(after, fullgraph=True, backend="eager")(inputs)
            eager = before(inputs)
        torch._dynamo.reset()
        assert torch.equal(compiled, eager)
        assert "mean" in printed.getvalue()  # the eager run still prints


@pytest.mark.parametrize(
    "statement",
    [
        "print(y.add_(1))",  # the argument writes y: skipping it would change the result
        "z = 1; print(z)",  # not a statement of its own
        "print(helper(y))",  # a call of unknown effect
        "print((w := y.sum()))",
    ],
)
def test_not_offered_where_skipping_the_arguments_could_change_the_result(statement):
    source = f"import torch\n\n\ndef helper(t):\n    return t\n\n\ndef f(y):\n    {statement}\n    return y\n"
    assert [f for f in fixes_of(source, _finding(source, 9)) if f["id"] == FIX] == []


def test_offered_for_source_findings_and_imports_torch_when_needed():
    source = "def f(y):\n    print(y)\n    return y\n"
    (fix,) = [f for f in fixes_of(source, _finding(source, 2, "COMPILE002")) if f["id"] == FIX]
    assert apply_text(source, fix) == (
        "import torch\ndef f(y):\n    if not torch.compiler.is_compiling():\n        print(y)\n    return y\n"
    )
