"""Which of the user's statements a trace ran, to keep a stand-in graph to the inputs' path.

When a toolchain's own trace cannot give one view of a class that was traced with example
inputs (torch.jit.trace needs real weights, which a 7-billion-parameter default config does
not fit; a fake-tensor gap), that view comes from the scripted graph or the source, which
hold *both* sides of every branch. The real trace holds only the side the inputs take:
llama2.c's `Transformer.forward(tokens, targets=None)` never reaches
`F.cross_entropy(...)` under `if targets is not None:`, so coremltools converts it. The
other views' traces of the same call ran the same Python, so a stand-in call is kept only
where they ran a statement: every statement holding a site of an op they recorded.

Statements, not lines: an eager frame and TorchScript can place one call of a multi-line
statement on different lines of it. A compound statement (`if`, `for`, `with`) counts by
its header only; its body's statements count on their own. And only in functions the
traces saw inside: eager runs a `@torch.jit.script` function with no Python frames, so its
statements are never "run" though the call was.
"""

from __future__ import annotations

import ast
import functools
import linecache
from collections.abc import Iterable
from dataclasses import dataclass

from ..python_parse import parse_module
from ..worker.protocol import CapturedOp

# A statement: (file, first line, last line).
Statement = tuple[str, int, int]


@dataclass(frozen=True)
class Executed:
    """What the traces of a class ran: the statements holding a site of an op they recorded,
    and the functions holding those statements (the ones the traces saw inside)."""

    statements: frozenset[Statement]
    functions: frozenset[Statement]


def executed_statements(traced: Iterable[CapturedOp]) -> Executed | None:
    """What `traced` (the class's trace entries) ran, or None when the trace's path may not
    be the inputs' own: it ran past a tensor value it had to guess (`facts.guessed`: a real
    trace reads the real value and may branch the other way)."""
    statements: set[Statement] = set()
    for op in traced:
        if (op.get("facts") or {}).get("guessed"):
            return None
        for site in op["sites"]:
            if not site.get("library"):
                statements.add(_statement_at(site["file"], site["line"]))
    functions = {_function_at(path, first) for path, first, _ in statements}
    return Executed(frozenset(statements), frozenset(f for f in functions if f is not None))


def on_executed_statements(entries: list[CapturedOp], executed: Executed | None) -> list[CapturedOp]:
    """`entries` (a stand-in graph's calls) without those the traces show were not run: a
    call is dropped when one of its user-code sites is in a statement the traces did not
    run, inside a function they did run statements of. A site in a function the traces never
    saw inside says nothing (a `@torch.jit.script` function runs without Python frames), and
    a call with no user site is kept: nothing says where it ran."""
    if executed is None:
        return entries
    kept = []
    for entry in entries:
        for site in entry["sites"]:
            if site.get("library"):
                continue
            statement = _statement_at(site["file"], site["line"])
            if statement not in executed.statements and _function_at(site["file"], site["line"]) in executed.functions:
                break
        else:
            kept.append(entry)
    return kept


def _statement_at(path: str, line: int) -> Statement:
    """The innermost statement of `path` whose own lines hold `line` (the line alone when
    the file cannot be read or parsed: then lines are compared as they are)."""
    return _innermost(path, _spans(path)[0], line) or (path, line, line)


def _function_at(path: str, line: int) -> Statement | None:
    """The innermost function (or lambda) of `path` holding `line`; None at module level or
    when the file cannot be read."""
    return _innermost(path, _spans(path)[1], line)


def _innermost(path: str, spans: tuple[tuple[int, int], ...], line: int) -> Statement | None:
    holding = [(first, last) for first, last in spans if first <= line <= last]
    if not holding:
        return None
    first, last = min(holding, key=lambda span: span[1] - span[0])
    return (path, first, last)


@functools.lru_cache(maxsize=64)
def _spans(path: str) -> tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]:
    """Each statement's own lines in `path` (a simple statement's whole extent, a compound
    statement's header up to its first body statement), and each function's extent. Read
    through linecache: the worker already read (and imported) these files."""
    text = "".join(linecache.getlines(path))
    if not text:
        return (), ()
    try:
        tree = parse_module(text, path)
    except (SyntaxError, ValueError):
        return (), ()
    statements, functions = [], []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            functions.append((node.lineno, node.end_lineno or node.lineno))
        if not isinstance(node, ast.stmt):
            continue
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            statements.append((node.lineno, max(node.lineno, body[0].lineno - 1)))
        else:
            statements.append((node.lineno, node.end_lineno or node.lineno))
    return tuple(statements), tuple(functions)
