"""What the torch.compile fixes share: where a break's statement is in the file, how it is
indented, how the file spells `torch`, whether a branch's test is a boolean tensor (and
certainly 0-dim), and the JSON of a fix.

The compile findings point at the user's line (Dynamo's innermost user frame, or the node
the source reader found), not at one call: each fix finds the statement it rewrites from
that line, and refuses whenever the place is ambiguous.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass

from ..ast_names import dotted_name
from ..finding_data import Fix
from ..findings import Finding
from ..python_parse import parse_module
from .callsite import FileContext, parent
from .edits import TextEdit, apply_edits
from .imports import module_spelling, scope_names
from .model import Remedy

# The target's words for a break on a tensor's value (`if x.sum() > 0:`): from the source
# reader ("on a tensor's value"), or Dynamo's own reason (`generic_jump TensorVariable()`,
# "Data-dependent branching").
_BRANCH_REASON = re.compile(r"tensor's value|generic_jump|data-dependent branching", re.IGNORECASE)


@dataclass(frozen=True)
class Lines:
    """A statement standing on lines of its own: the offset its first line starts at, the
    offset it ends at, and its first line's indentation."""

    start: int
    end: int
    indent: str


def statement_lines(file: FileContext, statement: ast.stmt) -> Lines | None:
    """Where `statement` is, when nothing else shares its lines (re-indenting or replacing
    them then changes that statement only), else None."""
    start, end = file.index.node_offsets(statement)
    first, last = statement.lineno - 1, (statement.end_lineno or statement.lineno) - 1
    line_start = file.index.starts[first]
    indent = file.text[line_start:start]
    if indent.strip():
        return None  # another statement before it on its line (`a = 1; print(a)`)
    if isinstance(statement, ast.If) and re.match(r"elif\b", file.text[start:end]):
        return None  # an `elif`: part of the `if` above it, not a statement of its own
    rest = file.index.line_text(last)[len(file.text[file.index.starts[last] : end]) :]
    if rest.strip() and not rest.strip().startswith("#"):
        return None  # another statement after it on its line
    return Lines(line_start, end, indent)


def indent_unit(indent: str) -> str:
    """One more level of indentation, in the kind the line already uses."""
    return "\t" if indent.startswith("\t") else "    "


def in_multiline_string(file: FileContext, start: int, end: int) -> bool:
    return any(start <= s < end for s, _ in file.multiline_strings)


def comments_within(file: FileContext, start: int, end: int) -> list[str]:
    """The comments in [start, end), in order (a rewrite that drops their lines keeps them)."""
    return [file.text[s:e] for s, e in file.comments if start <= s < end]


def torch_spelling(file: FileContext, function: ast.AST | None) -> tuple[str, list[TextEdit]] | None:
    """How the file names `torch` at module level, with the import to add where it has none;
    None when the name is bound to something else, or the enclosing functions rebind it."""
    spelling = module_spelling(file.bindings, file.tree, file.index, "torch")
    if spelling is None:
        return None
    name = spelling[0].split(".")[0]
    if name in enclosing_names(function):
        return None
    return spelling


def enclosing_function(node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    current = parent(node)
    while current is not None:
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return current
        if isinstance(current, (ast.Lambda, ast.ClassDef)):
            return None
        current = parent(current)
    return None


def enclosing_names(node: ast.AST | None) -> set[str]:
    """Every name the functions around `node` (and `node`, when it is one) bind locally."""
    names: set[str] = set()
    current = node
    while current is not None:
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            names |= scope_names(current)
        current = parent(current)
    return names


def fresh_name(base: str, taken: set[str]) -> str:
    """`base`, or `base_2`, `base_3`, ... : the first one nothing in `taken` uses."""
    if base not in taken:
        return base
    number = 2
    while f"{base}_{number}" in taken:
        number += 1
    return f"{base}_{number}"


def branch_finding(finding: Finding, remedy: Remedy) -> bool:
    """A finding about a Python branch on a tensor's value (what the torch.where and
    torch.cond fixes answer)."""
    return finding.code in remedy.codes and bool(_BRANCH_REASON.search(finding.message))


def branches_at(file: FileContext, line: int) -> list[ast.If | ast.IfExp]:
    """The `if` statements and conditional expressions whose test is on `line` (1-based)."""
    found: list[ast.If | ast.IfExp] = []
    for node in ast.walk(file.tree):
        if isinstance(node, (ast.If, ast.IfExp)):
            test = node.test
            if test.lineno <= line <= (test.end_lineno or test.lineno):
                found.append(node)
    return found


def names_read(node: ast.AST) -> Iterator[ast.Name]:
    for inner in ast.walk(node):
        if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Load):
            yield inner


def names_stored(nodes: list[ast.stmt]) -> list[str]:
    """The names the statements bind, in order of their first binding."""
    out: list[str] = []
    for statement in nodes:
        for inner in ast.walk(statement):
            if isinstance(inner, ast.Name) and isinstance(inner.ctx, (ast.Store, ast.Del)) and inner.id not in out:
                out.append(inner.id)
    return out


def parses_after(file: FileContext, edits: list[TextEdit]) -> bool:
    """Whether the file still parses with the edits applied (a last guard on the text built)."""
    try:
        parse_module(apply_edits(file.text, edits))
    except (SyntaxError, ValueError):
        return False
    return True


def fix_json(
    remedy: Remedy,
    file: FileContext,
    title: str,
    edits: list[TextEdit],
    condition: str | None = None,
) -> Fix:
    """A rewrite fix; with `condition`, one that is right only while it holds (never
    preferred, and `--fix` applies it only with `--unsafe-fixes`)."""
    description = f"{remedy.why[0].upper()}{remedy.why[1:]}."
    fix: Fix = {
        "id": remedy.id,
        "title": f"{title} ({condition})" if condition else title,
        "kind": remedy.kind,
        "exact": True,
        "approximation": None,
        "edits": [edit.as_json(file.index) for edit in edits],
        "description": description + (f" Only right {condition}." if condition else ""),
    }
    if condition:
        fix["safe"] = False
        fix["condition"] = condition
    return fix


def block_of(node: ast.stmt) -> tuple[list[ast.stmt], int]:
    """The statement list that holds `node`, and its position there."""
    owner = parent(node)
    for field in ("body", "orelse", "finalbody"):
        block = getattr(owner, field, None)
        if isinstance(block, list) and any(statement is node for statement in block):
            return block, next(i for i, statement in enumerate(block) if statement is node)
    return [node], 0


# Tensor methods (and torch functions) that reduce every element to one: a 0-dim tensor.
_WHOLE_REDUCTIONS = frozenset(
    {"sum", "mean", "max", "min", "amax", "amin", "norm", "prod", "std", "var", "any", "all", "median", "nansum"}
)
_BOOLEAN_REDUCTIONS = frozenset({"any", "all"})
_COMPARISONS = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)
# Calls whose value is a Python number, never a tensor: a test with one is not a tensor's.
_PYTHON_VALUES = frozenset({"item", "tolist", "numpy", "int", "float", "bool", "len", "numel", "dim", "size"})


@dataclass(frozen=True)
class Predicate:
    """A branch's test as a boolean tensor: the expression to pass on, whether the branch
    negated it (`if not p:` swaps the sides), and whether it is certainly 0-dim."""

    node: ast.expr
    negated: bool
    zero_dim: bool


def tensor_predicate(file: FileContext, test: ast.expr, shadowed: set[str]) -> Predicate | None:
    """The test of a branch on a tensor's value when it is a boolean tensor (a comparison,
    `.any()` / `.all()`, `&` / `|` of those): what `bool(test)` reads is then its one
    element, as torch.where and torch.cond read it. None for anything else (`and` / `or`
    short-circuit in Python; a Python number is no tensor)."""
    negated = False
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        negated, test = not negated, test.operand
    if any(_called_name(call) in _PYTHON_VALUES for call in ast.walk(test) if isinstance(call, ast.Call)):
        return None
    zero_dim = _boolean_tensor(file, test, shadowed)
    if zero_dim is None:
        return None
    return Predicate(test, negated, zero_dim)


def _boolean_tensor(file: FileContext, node: ast.expr, shadowed: set[str]) -> bool | None:
    """None: not certainly a boolean tensor; else whether it is certainly 0-dim."""
    if isinstance(node, ast.Compare):
        if len(node.ops) != 1 or not isinstance(node.ops[0], _COMPARISONS):
            return None
        sides = [_zero_dim(file, side, shadowed) for side in (node.left, node.comparators[0])]
        if not any(isinstance(inner, (ast.Call, ast.Subscript)) for inner in ast.walk(node)):
            return None  # `n > 0` of names alone: as likely Python numbers as tensors
        return all(side in ("zero_dim", "number") for side in sides)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.BitAnd, ast.BitOr)):
        left, right = _boolean_tensor(file, node.left, shadowed), _boolean_tensor(file, node.right, shadowed)
        return None if left is None or right is None else left and right
    if isinstance(node, ast.Call) and _called_name(node) in _BOOLEAN_REDUCTIONS:
        return _zero_dim(file, node, shadowed) == "zero_dim"
    return None


def _zero_dim(file: FileContext, node: ast.expr, shadowed: set[str]) -> str:
    """ "number" (a Python number literal), "zero_dim" (certainly a 0-dim tensor: a
    reduction of every element, or arithmetic of those) or "unknown"."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return "number"
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _zero_dim(file, node.operand, shadowed)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
        sides = {_zero_dim(file, node.left, shadowed), _zero_dim(file, node.right, shadowed)}
        if "unknown" in sides:
            return "unknown"
        return "zero_dim" if "zero_dim" in sides else "number"
    if isinstance(node, ast.Call) and not node.keywords:
        func = node.func
        if not isinstance(func, ast.Attribute) or func.attr not in _WHOLE_REDUCTIONS:
            return "unknown"
        dotted = dotted_name(func)
        resolved = file.bindings.resolve(dotted, shadowed) if dotted else None
        if resolved is not None:  # torch.sum(x): one argument, every element
            return "zero_dim" if resolved == f"torch.{func.attr}" and len(node.args) == 1 else "unknown"
        head = dotted.split(".")[0] if dotted else None
        if head is not None and head in file.bindings.imported and head not in shadowed:
            return "unknown"  # a module's function (numpy's, math's), not a tensor method
        return "zero_dim" if not node.args else "unknown"
    return "unknown"


def _called_name(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return ""
