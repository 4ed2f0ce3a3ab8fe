"""Quick fixes for torch.compile graph breaks (COMPILE001 / COMPILE002) that are exact.

`print(...)` under `if not torch.compiler.is_compiling():` — Dynamo takes the branch it
is tracing (the condition is False while it compiles) and never sees the call, so the
graph is not split; run eagerly, the condition is True and the print runs as before.
What the module computes is the same either way. It is offered only where nothing in
the printed arguments can change what the module computes (no call of an in-place
method, no assignment expression, no call of anything but a known side-effect-free
builtin or a tensor method without a trailing underscore), for a statement that stands
on lines of its own (re-indenting it must change nothing but its indentation).
"""

from __future__ import annotations

import ast

from ..config import Settings
from ..finding_data import Fix
from ..findings import Finding
from .callsite import FileContext
from .compile_source import enclosing_function, in_multiline_string, indent_unit, statement_lines, torch_spelling
from .edits import TextEdit
from .model import Remedy

# Calls an argument of `print` may make without changing anything the module computes.
_PURE_BUILTINS = frozenset({"len", "str", "repr", "format", "type", "id", "int", "float", "bool", "round", "abs"})


def guard_print(remedy: Remedy, finding: Finding, file: FileContext | None, settings: Settings | None) -> Fix | None:
    if file is None or finding.code not in remedy.codes:
        return None
    statement = _print_statement(file, finding.range.start.line + 1)
    if statement is None or "print" in file.bindings.other or "print" in file.bindings.imported:
        return None
    spelling = torch_spelling(file, enclosing_function(statement))
    if spelling is None:
        return None
    torch_name, edits = spelling
    replaced = _guarded(file, statement, torch_name)
    if replaced is None:
        return None
    edits.append(replaced)
    return {
        "id": remedy.id,
        "title": f"Print only when not compiling: `if not {torch_name}.compiler.is_compiling():`",
        "kind": remedy.kind,
        "exact": True,
        "approximation": None,
        "edits": [edit.as_json(file.index) for edit in edits],
        "description": f"{remedy.why[0].upper()}{remedy.why[1:]}.",
    }


def _print_statement(file: FileContext, line: int) -> ast.Expr | None:
    """The `print(...)` expression statement that starts on `line` (1-based), if its
    arguments cannot change what the code computes."""
    for node in ast.walk(file.tree):
        if not (isinstance(node, ast.Expr) and node.lineno == line and isinstance(node.value, ast.Call)):
            continue
        call = node.value
        if isinstance(call.func, ast.Name) and call.func.id == "print" and _harmless(call):
            return node
    return None


def _harmless(call: ast.Call) -> bool:
    arguments = [*call.args, *(keyword.value for keyword in call.keywords)]
    for argument in arguments:
        for inner in ast.walk(argument):
            if isinstance(inner, (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await, ast.Lambda)):
                return False
            if isinstance(inner, ast.Call) and not _pure_call(inner):
                return False
    return True


def _pure_call(call: ast.Call) -> bool:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id in _PURE_BUILTINS
    if isinstance(func, ast.Attribute):
        # A method without a trailing underscore does not write its receiver (torch's
        # convention for in-place methods); `.item()`, `.shape`, `.sum()` are reads.
        return not func.attr.endswith("_") or func.attr.startswith("__")
    return False


def _guarded(file: FileContext, statement: ast.Expr, torch_name: str) -> TextEdit | None:
    lines = statement_lines(file, statement)
    if lines is None or in_multiline_string(file, lines.start, lines.end):
        return None  # shares its line with another statement, or re-indenting would change a string
    unit = indent_unit(lines.indent)
    newline = file.index.newline()
    body = file.text[lines.start : lines.end].split(newline)
    indented = newline.join(unit + text if text.strip() else text for text in body)
    guarded = f"{lines.indent}if not {torch_name}.compiler.is_compiling():{newline}{indented}"
    return TextEdit(lines.start, lines.end, guarded)
