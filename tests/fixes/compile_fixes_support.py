"""Shared by the torch.compile fix tests: Dynamo's own break lines for a module's source, a
finding worded as the compile target words it, and the check every rewrite must pass (it
compiles with `fullgraph=True` and gives the original's outputs on the given inputs)."""

from __future__ import annotations

import contextlib
import io
import warnings

import torch
from fixes_support import apply_text, fixes_of

from atenlint.findings import Finding
from atenlint.sourcetext import Position, Range
from atenlint.targets.compile import user_words

PATH = "/virtual/compile_case.py"
SOURCE_BRANCH = "a Python `if`/`while` on a tensor's value (data-dependent control flow)"


def load(source: str, name: str = "Model") -> type:
    namespace: dict = {}
    exec(compile(source, PATH, "exec"), namespace)  # noqa: S102 - the test's own source
    return namespace[name]


def dynamo_breaks(source: str, inputs: tuple) -> list[tuple[int, str]]:
    """(line, Dynamo's reason headline) of every break of the source's `Model` on `inputs`."""
    torch.manual_seed(0)
    torch._dynamo.reset()
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        out = torch._dynamo.explain(load(source)().eval())(*inputs)
    torch._dynamo.reset()
    return sorted(
        {
            (r.user_stack[-1].lineno, r.reason.strip().splitlines()[0])
            for r in out.break_reasons
            if r.user_stack and r.user_stack[-1].filename == PATH
        }
    )


def finding(source: str, line: int, reason: str | None = None, code: str | None = None) -> Finding:
    """A compile finding on `line` (1-based): with Dynamo's `reason`, worded as COMPILE001
    words it; without, as the source reader words a branch (COMPILE002)."""
    text = source.splitlines()[line - 1]
    column = len(text) - len(text.lstrip())
    if reason is None:
        message = f"torch.compile splits the graph of `Model` here: {SOURCE_BRANCH}. Read from the source"
    else:
        message = f"torch.compile splits the graph here in `Model`: {user_words(reason)}. Dynamo: {reason}"
    return Finding(
        "compile_case.py",
        Range(Position(line - 1, column), Position(line - 1, len(text))),
        "warning",
        code or ("COMPILE002" if reason is None else "COMPILE001"),
        message,
        target="compile",
        ops=[],
        abs_path=PATH,
        data={"torch": torch.__version__.split("+")[0]},
    )


def offered(source: str, line: int, fix_id: str, reason: str | None = None) -> list[dict]:
    return [f for f in fixes_of(source, finding(source, line, reason)) if f["id"] == fix_id]


def rewritten(source: str, line: int, fix_id: str, reason: str | None = None) -> tuple[str, dict]:
    (fix,) = offered(source, line, fix_id, reason)
    return apply_text(source, fix), fix


def assert_same_and_one_graph(original: str, fixed: str, inputs: list[tuple], backend: str = "eager") -> None:
    """The rewritten `Model` compiles with fullgraph=True (`backend`: "eager", or
    "aot_eager" to go through AOTAutograd too) and gives exactly the original's outputs,
    eagerly and compiled, on every input."""
    for args in inputs:
        torch.manual_seed(1)
        before = load(original)().eval()
        torch.manual_seed(1)
        after = load(fixed)().eval()
        expected = before(*args)
        torch._dynamo.reset()
        try:
            eager = after(*args)
            compiled = torch.compile(after, fullgraph=True, backend=backend)(*args)
        finally:
            torch._dynamo.reset()
        for got in (eager, compiled):
            assert _same(got, expected), (got, expected)


def _same(a: object, b: object) -> bool:
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
    return a == b
