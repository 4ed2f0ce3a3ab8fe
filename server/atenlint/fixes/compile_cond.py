"""`torch.cond` for a branch on a tensor's value: each branch becomes a nested function.

    if x.sum() > 0:                     def true_branch():
        y = self.a(x)                       y = self.a(x)
    else:                        ->         return y
        y = self.b(x) * 2               def false_branch():
                                            y = self.b(x) * 2
                                            return y
                                        y = torch.cond(x.sum() > 0, true_branch, false_branch)

(or, where both branches end in `return`, `return torch.cond(...)`). What torch.cond
accepts was read off the installed torch (tests/fixes/test_compile_fixes_cond.py checks each
point): a boolean or one-element tensor predicate, or a Python bool; branches that take no
operands and read the enclosing names as closures; outputs that are tensors of one shape,
dtype and device in both branches, none an input or a view of one; no mutation of an input,
an attribute or a module buffer, no `print`, no graph break inside a branch. Run eagerly,
torch.cond traces the branches with Dynamo too, so a branch it cannot capture raises even
without torch.compile.

The branches read the enclosing names as closures rather than taking them as explicit
`operands` (`torch.cond(p, true_fn, false_fn, (x, y))`, the form torch.cond's docstring
shows): torch.cond accepts operands that are tensors only (`_validate_input` in
torch/_higher_order_ops/cond.py raises for any other leaf: torch 2.13 and 2.14 here, and the
same check in later releases), and the source does not show which names a branch reads are
tensors (`self`, a Python number, a list of modules are read the same way). Dynamo lifts the
tensors a branch closes over as inputs of both branch graphs, the same graph as explicit
operands give; the tests compile each rewrite with `fullgraph=True` on the installed torch.
An `elif` chain is not rewritten (nested torch.cond calls with their own closures: the
torch.where fix covers chains of plain selects; a `while` has no torch.cond form).

Offered only where the source shows none of what torch.cond refuses: each branch is a
block of assignments to plain names (and a final `return`), with no in-place method,
`print`, container mutation, walrus, `del`, loop or nested branch; no name is read in a
branch before the branch sets it (it would be a local of the nested function: an
UnboundLocalError); the names set by only one branch are not read after it, and the
outputs are not a bare input or attribute. Shapes, dtypes and views it cannot show from
source: the fix is right only while they hold (never preferred; `--fix` needs
`--unsafe-fixes`).
"""

from __future__ import annotations

import ast

from ..config import Settings
from ..finding_data import Fix
from ..findings import Finding
from .callsite import FileContext
from .compile_source import (
    block_of,
    branch_finding,
    branches_at,
    comments_within,
    enclosing_function,
    enclosing_names,
    fix_json,
    fresh_name,
    in_multiline_string,
    indent_unit,
    names_read,
    names_stored,
    parses_after,
    statement_lines,
    tensor_predicate,
    torch_spelling,
)
from .edits import TextEdit
from .model import Remedy

# Calls a traced branch cannot make (a side effect Dynamo refuses inside torch.cond, or one
# the rewrite would reorder).
_REFUSED_FUNCTIONS = frozenset(
    {"print", "setattr", "delattr", "exec", "eval", "open", "input", "breakpoint", "globals", "locals", "vars"}
)
_MUTATING_METHODS = frozenset(
    {
        "append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "add", "discard",
        "register_buffer", "register_parameter", "register_module", "add_module", "backward", "tolist", "numpy",
    }
)  # fmt: skip
_REFUSED_NODES = (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await, ast.Lambda, ast.Global, ast.Nonlocal)

CONDITION = (
    "while both branches give tensors of one shape, dtype and device, none an input or a view of one, "
    "and change no module state"
)


def branch_with_cond(
    remedy: Remedy, finding: Finding, file: FileContext | None, settings: Settings | None
) -> Fix | None:
    if file is None or not branch_finding(finding, remedy):
        return None
    branches = branches_at(file, finding.range.start.line + 1)
    if len(branches) != 1 or not isinstance(branches[0], ast.If):
        return None
    node = branches[0]
    function = enclosing_function(node)
    if function is None:
        return None
    orelse = node.orelse or _rest_of_block(node)
    if not orelse:
        return None
    shadowed = enclosing_names(function)
    predicate = tensor_predicate(file, node.test, shadowed)
    lines = statement_lines(file, node)
    spelling = torch_spelling(file, function)
    if predicate is None or lines is None or spelling is None:
        return None
    torch_name, edits = spelling
    chosen, other = (orelse, node.body) if predicate.negated else (node.body, orelse)
    blocks = [_Block.of(file, chosen), _Block.of(file, other)]
    if blocks[0] is None or blocks[1] is None or not all(_traceable(b) for b in (node.body, orelse)):
        return None
    first, second = blocks[0], blocks[1]
    returns = [isinstance(block[-1], ast.Return) for block in (node.body, orelse)]
    if returns == [True, True]:
        if not _returns_match(node.body[-1], orelse[-1]):
            return None
        result: list[str] | None = None
    elif returns == [False, False] and node.orelse:
        result = _set_names(node, function)
        if result is None:
            return None
    else:
        return None  # one branch returns, the other goes on: no single function shape
    taken = shadowed | set(file.bindings.imported) | file.bindings.other
    true_name = fresh_name("true_branch", taken)
    false_name = fresh_name("false_branch", taken | {true_name})
    newline = file.index.newline()
    start = lines.start
    end = max(lines.end, first.end, second.end)
    ordered = sorted([first, second], key=lambda block: block.start)
    kept = [
        *comments_within(file, start, ordered[0].start),
        *comments_within(file, ordered[0].end, ordered[1].start),
    ]
    out = [f"{lines.indent}{comment}" for comment in kept]
    for name, block in ((true_name, first), (false_name, second)):
        text = block.text(file, lines.indent)
        if text is None:
            return None
        out.append(f"{lines.indent}def {name}():")
        out.append(text)
        if result is not None:
            out.append(f"{block.indent}return {_tuple(result)}")
    call = f"{torch_name}.cond({file.segment(predicate.node)}, {true_name}, {false_name})"
    out.append(f"{lines.indent}return {call}" if result is None else f"{lines.indent}{_tuple(result)} = {call}")
    edits.append(TextEdit(start, end, newline.join(out)))
    if not parses_after(file, edits):
        return None
    return fix_json(remedy, file, f"Branch with `{torch_name}.cond`", edits, CONDITION)


def _rest_of_block(node: ast.If) -> list[ast.stmt]:
    """For `if p: ... return A` without `else`: the statements after it in its block, when
    they end in `return` (they are the branch not taken)."""
    if not node.body or not isinstance(node.body[-1], ast.Return):
        return []
    block, position = block_of(node)
    rest = block[position + 1 :]
    return rest if rest and isinstance(rest[-1], ast.Return) else []


class _Block:
    """A branch's statements as the text of whole lines, copied into the nested function:
    as they are when already indented deeper than the `if` (its body, its `else`), one
    level deeper when they follow it in its own block (`if p: return a` + the rest)."""

    def __init__(self, start: int, end: int, indent: str):
        self.start, self.end, self.indent = start, end, indent

    def text(self, file: FileContext, outer: str) -> str | None:
        """The lines to put under `def ...():` written at indentation `outer` (None: they
        would need re-indenting across a string that spans lines)."""
        text = file.text[self.start : self.end]
        if len(self.indent) > len(outer):
            return text
        if in_multiline_string(file, self.start, self.end):
            return None
        unit = indent_unit(outer)
        self.indent = outer + unit
        newline = file.index.newline()
        return newline.join(unit + line if line.strip() else line for line in text.split(newline))

    @staticmethod
    def of(file: FileContext, statements: list[ast.stmt]) -> _Block | None:
        head, tail = statement_lines(file, statements[0]), statement_lines(file, statements[-1])
        if head is None or tail is None:
            return None  # `if p: y = a` on one line, or `y = a; z = b` ending it
        last = (statements[-1].end_lineno or statements[-1].lineno) - 1
        end = file.index.starts[last] + len(file.index.line_text(last))  # with its trailing comment
        return _Block(head.start, end, head.indent)


def _traceable(statements: list[ast.stmt]) -> bool:
    """Assignments to plain names (and one final `return`) that call nothing torch.cond
    refuses, and read no name before the block sets it."""
    stored = set(names_stored(statements))
    bound: set[str] = set()
    for position, statement in enumerate(statements):
        if isinstance(statement, ast.Return):
            if position != len(statements) - 1 or statement.value is None:
                return False
        elif isinstance(statement, ast.Assign):
            if not all(_plain_target(target) for target in statement.targets):
                return False
        elif isinstance(statement, ast.AnnAssign):
            if not isinstance(statement.target, ast.Name) or statement.value is None:
                return False
        elif not isinstance(statement, ast.Pass):
            return False
        for inner in ast.walk(statement):
            if isinstance(inner, _REFUSED_NODES) or (isinstance(inner, ast.Call) and not _allowed_call(inner)):
                return False
        if any(name.id in stored and name.id not in bound for name in names_read(statement)):
            return False  # read before this branch sets it: a local of the nested function
        bound |= set(names_stored([statement]))
    return True


def _plain_target(target: ast.expr) -> bool:
    if isinstance(target, ast.Name):
        return True
    if isinstance(target, (ast.Tuple, ast.List)):
        return all(isinstance(element, ast.Name) for element in target.elts)
    return False


def _allowed_call(call: ast.Call) -> bool:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id not in _REFUSED_FUNCTIONS
    if isinstance(func, ast.Attribute):
        in_place = func.attr.endswith("_") and not func.attr.startswith("__")
        return not in_place and func.attr not in _MUTATING_METHODS
    return True


def _returns_match(first: ast.stmt, second: ast.stmt) -> bool:
    """Whether two final `return`s can be torch.cond's two branches: the same number of
    values, none a bare input or attribute (an alias torch.cond refuses) nor a constant."""
    assert isinstance(first, ast.Return) and isinstance(second, ast.Return)
    values = []
    for statement in (first, second):
        value = statement.value
        values.append(list(value.elts) if isinstance(value, ast.Tuple) else [value])
    if isinstance(first.value, ast.Tuple) != isinstance(second.value, ast.Tuple) or len(values[0]) != len(values[1]):
        return False
    return not any(
        element is None or isinstance(element, (ast.Constant, ast.Attribute, ast.Name))
        for elements in values
        for element in elements
    )  # a number, or a tensor the branch did not make (an alias)


def _set_names(node: ast.If, function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str] | None:
    """The names both branches set and the function reads elsewhere (torch.cond's outputs),
    or None where a name set by one branch only is read, none is, or an output is a bare
    alias of another value."""
    inside = {id(inner) for inner in ast.walk(node)}
    read_elsewhere = {name.id for name in names_read(function) if id(name) not in inside}
    first, second = names_stored(node.body), names_stored(node.orelse)
    if any(name in read_elsewhere for name in set(first) ^ set(second)):
        return None
    outputs = [name for name in first if name in second and name in read_elsewhere]
    if not outputs:
        return None
    for block in (node.body, node.orelse):
        for name in outputs:
            value = _last_value(block, name)
            if value is None or isinstance(value, (ast.Name, ast.Attribute, ast.Constant)):
                return None
    return outputs


def _last_value(block: list[ast.stmt], name: str) -> ast.expr | None:
    """The value the block's last assignment gives `name` (None: unpacked from a value
    that is not a tuple display)."""
    value: ast.expr | None = None
    for statement in block:
        if isinstance(statement, ast.Assign):
            given: ast.expr | None = statement.value
            targets = statement.targets
        elif isinstance(statement, ast.AnnAssign):
            given, targets = statement.value, [statement.target]
        else:
            continue
        for target in targets:
            if isinstance(target, ast.Name) and target.id == name:
                value = given
            elif isinstance(target, (ast.Tuple, ast.List)) and _names(target.elts).count(name):
                # `low, high = a, b`: each name's own value; unpacking anything else: unknown.
                paired = isinstance(given, ast.Tuple) and len(given.elts) == len(target.elts)
                elements = given.elts if paired and isinstance(given, ast.Tuple) else []
                value = elements[_names(target.elts).index(name)] if elements else None
    return value


def _names(elements: list[ast.expr]) -> list[str]:
    return [e.id if isinstance(e, ast.Name) else "" for e in elements]


def _tuple(names: list[str]) -> str:
    return ", ".join(names)
