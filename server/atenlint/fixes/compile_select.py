"""`torch.where` for a data-dependent select: a branch on a tensor's value that only picks
one of two values.

    if x.sum() > 0:            y = torch.where(x.sum() > 0, x * 2, x - 1)
        y = x * 2        ->
    else:
        y = x - 1

and likewise `if p: y = A` alone (`y` bound before: `torch.where(p, A, y)`), `if p: return
A` + `return B`, and `A if p else B` -> `torch.where(p, A, B)`. Dynamo keeps the select in
the graph; the Python branch reads the test's value and splits it.

When the two are the same. `torch.where` computes both sides and picks elementwise, so:
- both sides must compute nothing but a value: names, attributes, arithmetic, and calls of
  torch's elementwise, random-free functions and Tensor methods (no in-place method, no
  module call - a module may keep state, such as BatchNorm's running statistics - no
  indexing, which can raise for the side the original never computed, no walrus);
- the test must be a boolean tensor (a comparison, `.any()`, `.all()`, `&`, `|` of those):
  `torch.where` takes no Python bool, and `and`/`or` short-circuit;
- the result equals the chosen side only when both sides are tensors of one shape, dtype
  and device, and the test has no more dimensions than they have (a 0-dim test: a
  whole-tensor reduction compared with a number). Then torch.where selects without
  arithmetic, every element bit for bit. The source does not show the sides' shapes and
  dtypes, so the fix is offered as right only while that holds: never preferred, and
  `--fix` applies it only with `--unsafe-fixes`.
Gradients differ in one respect the description states: the side not taken gets zero
gradient times its own derivative, which is NaN where that derivative is infinite
(`sqrt`, `log` at 0).
"""

from __future__ import annotations

import ast

from ..ast_names import dotted_name
from ..config import Settings
from ..finding_data import Fix
from ..findings import Finding
from .callsite import FileContext
from .compile_source import (
    Predicate,
    block_of,
    branch_finding,
    branches_at,
    comments_within,
    enclosing_function,
    enclosing_names,
    fix_json,
    fresh_name,
    names_read,
    parses_after,
    statement_lines,
    tensor_predicate,
    torch_spelling,
)
from .edits import TextEdit
from .model import Remedy

# Elementwise, random-free, never in place: computing them for the side not taken changes nothing.
_ELEMENTWISE = frozenset(
    {
        "abs", "neg", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt",
        "square", "sigmoid", "tanh", "relu", "sin", "cos", "tan", "sinh", "cosh", "floor", "ceil",
        "round", "trunc", "frac", "sign", "sgn", "reciprocal", "clamp", "clip", "clamp_min",
        "clamp_max", "pow", "mul", "add", "sub", "div", "maximum", "minimum", "erf", "erfc",
        "lerp", "float", "double", "half", "bfloat16", "clone", "detach", "contiguous",
        "nan_to_num", "where", "logical_not", "logical_and", "logical_or", "bitwise_not",
    }
)  # fmt: skip
_FUNCTIONAL = frozenset(
    {
        "relu", "relu6", "gelu", "silu", "mish", "elu", "selu", "celu", "leaky_relu", "hardtanh",
        "hardsigmoid", "hardswish", "softplus", "softsign", "logsigmoid", "tanhshrink", "sigmoid", "tanh",
    }
)  # fmt: skip
# Reductions a later `elif` test may compute (a value, never state).
_REDUCTIONS = frozenset(
    {"any", "all", "sum", "mean", "max", "min", "amax", "amin", "norm", "prod", "std", "var", "abs"}
)
# Operators that cannot raise for a side the original never computed (// and % raise on an
# integer tensor's zero divisor).
_OPERATORS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow, ast.MatMult, ast.BitAnd, ast.BitOr, ast.BitXor)


def select_with_where(
    remedy: Remedy, finding: Finding, file: FileContext | None, settings: Settings | None
) -> Fix | None:
    if file is None or not branch_finding(finding, remedy):
        return None
    branches = branches_at(file, finding.range.start.line + 1)
    if len(branches) != 1:
        return None  # none, or two on one line: which one Dynamo meant is not known
    (branch,) = branches
    if isinstance(branch, ast.If):
        branch = _chain_head(file, branch)  # Dynamo breaks at an `elif`'s test too: the chain is one select
    function = enclosing_function(branch)
    shadowed = enclosing_names(function)
    chain: list[ast.If] = _elif_chain(file, branch) if isinstance(branch, ast.If) else []
    tests = [link.test for link in chain] if chain else [branch.test]
    found = [tensor_predicate(file, test, shadowed) for test in tests]
    predicates = [p for p in found if p is not None]
    if len(predicates) != len(tests) or not all(_test_computes_only(file, test, shadowed) for test in tests[1:]):
        return None  # each later test is computed even where an earlier one holds: a value, nothing else
    spelling = _where_spelling(file, function, shadowed)
    if spelling is None:
        return None
    where_name, edits = spelling
    rewritten: TextEdit | None
    if isinstance(branch, ast.IfExp):
        rewritten = _expression_edit(file, branch, predicates[0], where_name, shadowed)
    elif len(chain) > 1:
        rewritten = _chain_edit(file, chain, predicates, where_name, shadowed)
    else:
        rewritten = _statement_edit(file, branch, predicates[0], where_name, shadowed)
    if rewritten is None:
        return None
    edits.append(rewritten)
    if not parses_after(file, edits):
        return None
    condition = "while both sides give tensors of one shape, dtype and device"
    if len(tests) > 1:
        condition = "while every side gives tensors of one shape, dtype and device"
    if not all(p.zero_dim for p in predicates):
        condition += ", and the test is a 0-dim tensor" if len(tests) == 1 else ", and every test is a 0-dim tensor"
    return fix_json(remedy, file, f"Select with `{where_name}`", edits, condition)


def _is_elif(file: FileContext, node: ast.If) -> bool:
    start, _ = file.index.node_offsets(node)
    return file.text.startswith("elif", start)


def _chain_head(file: FileContext, node: ast.If) -> ast.If:
    """The `if` an `elif` belongs to (the `elif` itself is its parent's only `else` statement)."""
    while _is_elif(file, node):
        parent = next(
            (n for n in ast.walk(file.tree) if isinstance(n, ast.If) and len(n.orelse) == 1 and n.orelse[0] is node),
            None,
        )
        if parent is None:
            break
        node = parent
    return node


def _elif_chain(file: FileContext, head: ast.If) -> list[ast.If]:
    """`if p1: ... elif p2: ... elif ...`: the `if` and each `elif`, in order."""
    chain = [head]
    while (
        len(chain[-1].orelse) == 1 and isinstance(chain[-1].orelse[0], ast.If) and _is_elif(file, chain[-1].orelse[0])
    ):
        chain.append(chain[-1].orelse[0])
    return chain


def _test_computes_only(file: FileContext, test: ast.expr, shadowed: set[str]) -> bool:
    """A test whose calls are tensor methods that compute a value (elementwise ones and
    reductions), never a module, another function or an in-place method: computing it where
    the original did not changes nothing."""
    for inner in ast.walk(test):
        if isinstance(inner, ast.Call):
            func = inner.func
            if not isinstance(func, ast.Attribute) or func.attr not in _ELEMENTWISE | _REDUCTIONS:
                return False
            if isinstance(func.value, ast.Name) and (
                func.value.id in ("self", "cls") or func.value.id in file.bindings.imported
            ):
                return False
        elif isinstance(inner, (ast.NamedExpr, ast.Lambda, ast.Await, ast.Yield, ast.YieldFrom)):
            return False
    return True


def _chain_edit(
    file: FileContext, chain: list[ast.If], predicates: list[Predicate], where_name: str, shadowed: set[str]
) -> TextEdit | None:
    """`if p1: a = A1 elif p2: a = A2 ... else: a = An` (the same names, once each, in every
    branch, an `else` at the end) -> `a = torch.where(p1, A1, torch.where(p2, A2, An))` per
    name; and `if p1: return A1 elif p2: return A2 ... else: return An` -> one `return`."""
    head, last = chain[0], chain[-1]
    lines = statement_lines(file, head)
    if lines is None or not last.orelse:
        return None
    blocks = [link.body for link in chain] + [last.orelse]
    newline = file.index.newline()
    out = [f"{lines.indent}{comment}" for comment in comments_within(file, lines.start, lines.end)]
    tests = [file.segment(p.node) for p in predicates]
    if all(len(b) == 1 and isinstance(b[0], ast.Return) and b[0].value is not None for b in blocks):
        values = [b[0].value for b in blocks if isinstance(b[0], ast.Return) and b[0].value is not None]
        if not all(_computes_only(file, value, shadowed) for value in values):
            return None
        out.append(f"{lines.indent}return {_nested_where(file, where_name, tests, predicates, values)}")
        return TextEdit(lines.start, lines.end, newline.join(out))
    assigned = [_assignments(block) for block in blocks]
    names = set(assigned[0] or ())
    if not names or any(a is None or set(a) != names for a in assigned):
        return None
    sides = [a for a in assigned if a is not None]
    values = [value for side in sides for value in side.values()]
    if not all(_computes_only(file, value, shadowed) for value in values):
        return None
    if len(names) > 1 and any(name.id in names for value in values for name in names_read(value)):
        return None  # a side reads a name the branch sets: one `where` per name would reorder them
    if len(names) > 1:
        # Each test computed once, before any name changes, as the branches did.
        taken = shadowed | set(file.bindings.imported) | file.bindings.other
        held = []
        for test in tests:
            name = fresh_name("take_branch", taken)
            taken.add(name)
            out.append(f"{lines.indent}{name} = ({test})" if "\n" in test else f"{lines.indent}{name} = {test}")
            held.append(name)
        tests = held
    for name in sides[0]:
        nested = _nested_where(file, where_name, tests, predicates, [side[name] for side in sides])
        out.append(f"{lines.indent}{name} = {nested}")
    return TextEdit(lines.start, lines.end, newline.join(out))


def _nested_where(
    file: FileContext, where_name: str, tests: list[str], predicates: list[Predicate], values: list[ast.expr]
) -> str:
    """`where(t1, v1, where(t2, v2, ... vn))`, each level with its test's sides in order."""
    text = _text(file, values[-1])
    for test, predicate, value in reversed(list(zip(tests, predicates, values))):
        first, second = (text, _text(file, value)) if predicate.negated else (_text(file, value), text)
        text = f"{where_name}({test}, {first}, {second})"
    return text


def _expression_edit(
    file: FileContext, node: ast.IfExp, predicate: Predicate, where_name: str, shadowed: set[str]
) -> TextEdit | None:
    start, end = file.offsets(node)
    if comments_within(file, start, end):
        return None  # the call is built from the parts' text: a comment between them would be lost
    if not (_computes_only(file, node.body, shadowed) and _computes_only(file, node.orelse, shadowed)):
        return None
    return TextEdit(
        start, end, _where(file, where_name, file.segment(predicate.node), predicate, node.body, node.orelse)
    )


def _statement_edit(
    file: FileContext, node: ast.If, predicate: Predicate, where_name: str, shadowed: set[str]
) -> TextEdit | None:
    """One of
    - `if p: a = A1 ... else: a = A2 ...` (the same names, once each) -> one
      `a = torch.where(p, A1, A2)` per name;
    - `if p: a = A` alone, `a` certainly bound before (a parameter, or set earlier in the
      same block) -> `a = torch.where(p, A, a)`;
    - `if p: return A` / `else: return B`, or `if p: return A` followed by `return B` ->
      `return torch.where(p, A, B)`."""
    lines = statement_lines(file, node)
    if lines is None:
        return None
    end = lines.end
    returned = _returned_pair(file, node)
    if returned is not None:
        chosen_value, other_value, end = returned
        if not (_computes_only(file, chosen_value, shadowed) and _computes_only(file, other_value, shadowed)):
            return None
        out = [f"{lines.indent}{comment}" for comment in comments_within(file, lines.start, end)]
        test = file.segment(predicate.node)
        out.append(f"{lines.indent}return {_where(file, where_name, test, predicate, chosen_value, other_value)}")
        return TextEdit(lines.start, end, file.index.newline().join(out))
    chosen = _assignments(node.body)
    other = _assignments(node.orelse) if node.orelse else _kept(node, chosen)
    if chosen is None or other is None or set(chosen) != set(other):
        return None
    values = [*chosen.values(), *other.values()]
    if not all(_computes_only(file, value, shadowed) for value in values):
        return None
    assigned = set(chosen)
    if len(assigned) > 1 and any(name.id in assigned for value in values for name in names_read(value)):
        return None  # a side reads a name the branch sets: one `where` per name would reorder them
    newline = file.index.newline()
    out = [f"{lines.indent}{comment}" for comment in comments_within(file, lines.start, end)]
    test = file.segment(predicate.node)
    if len(chosen) > 1:
        # One test for every name, computed once (before any name changes), as the branch did.
        taken = fresh_name("take_first", shadowed | set(file.bindings.imported) | file.bindings.other)
        out.append(f"{lines.indent}{taken} = ({test})" if "\n" in test else f"{lines.indent}{taken} = {test}")
        test = taken
    for name in chosen:
        out.append(f"{lines.indent}{name} = {_where(file, where_name, test, predicate, chosen[name], other[name])}")
    return TextEdit(lines.start, end, newline.join(out))


def _returned_pair(file: FileContext, node: ast.If) -> tuple[ast.expr, ast.expr, int] | None:
    """(A, B, where the replaced text ends) for `if p: return A` + `else: return B` or a
    `return B` right after the `if` in its block; None for any other shape."""
    body = node.body
    if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
        return None
    if node.orelse:
        orelse = node.orelse
        if len(orelse) != 1 or not isinstance(orelse[0], ast.Return) or orelse[0].value is None:
            return None
        return body[0].value, orelse[0].value, file.offsets(node)[1]
    block, position = block_of(node)
    following = block[position + 1] if position + 1 < len(block) else None
    if not isinstance(following, ast.Return) or following.value is None:
        return None
    tail = statement_lines(file, following)
    if tail is None:
        return None
    return body[0].value, following.value, tail.end


def _kept(node: ast.If, chosen: dict[str, ast.expr] | None) -> dict[str, ast.expr] | None:
    """For an `if` without `else`: each name it sets keeps its value otherwise (`a` itself),
    when that name is certainly bound before the `if`."""
    if chosen is None:
        return None
    function = enclosing_function(node)
    parameters: set[str] = set()
    if function is not None:
        spec = function.args
        parameters = {a.arg for a in [*spec.posonlyargs, *spec.args, *spec.kwonlyargs]}
    block, position = block_of(node)
    bound = set(parameters)
    for statement in block[:position]:
        if isinstance(statement, ast.Assign):
            bound |= {t.id for t in statement.targets if isinstance(t, ast.Name)}
        for inner in ast.walk(statement):
            if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Del):
                bound.discard(inner.id)
    if not set(chosen) <= bound:
        return None
    return {name: ast.Name(id=name, ctx=ast.Load()) for name in chosen}


def _where_spelling(
    file: FileContext, function: ast.AST | None, shadowed: set[str]
) -> tuple[str, list[TextEdit]] | None:
    """`where` when the file imports it from torch, else `torch.where` as the file spells
    torch (with the import where it has none)."""
    imported = sorted(n for n, path in file.bindings.imported.items() if path == "torch.where" and n not in shadowed)
    if imported:
        return imported[0], []
    spelling = torch_spelling(file, function)
    if spelling is None:
        return None
    return f"{spelling[0]}.where", spelling[1]


def _assignments(statements: list[ast.stmt]) -> dict[str, ast.expr] | None:
    """name -> value of a block of `name = value` statements, each name set once; None for
    a block that does anything else."""
    out: dict[str, ast.expr] = {}
    for statement in statements:
        if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
            return None
        target = statement.targets[0]
        if not isinstance(target, ast.Name) or target.id in out:
            return None
        out[target.id] = statement.value
    return out or None


def _where(
    file: FileContext, where_name: str, test: str, predicate: Predicate, chosen: ast.expr, other: ast.expr
) -> str:
    first, second = (other, chosen) if predicate.negated else (chosen, other)
    return f"{where_name}({test}, {_text(file, first)}, {_text(file, second)})"


def _text(file: FileContext, node: ast.expr) -> str:
    """The user's text of a side (a name the `if` keeps unchanged has none of its own)."""
    if isinstance(node, ast.Name) and not hasattr(node, "lineno"):
        return node.id
    return file.segment(node)


def _computes_only(file: FileContext, node: ast.expr, shadowed: set[str]) -> bool:
    """An expression that computes a value and nothing else, and reads at least one name
    (a bare number would become a tensor)."""
    return _pure(file, node, shadowed) and any(True for _ in names_read(node))


def _pure(file: FileContext, node: ast.expr, shadowed: set[str]) -> bool:
    if isinstance(node, ast.Name):
        return isinstance(node.ctx, ast.Load)
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float, bool)) or node.value is None
    if isinstance(node, ast.Attribute):
        return _pure(file, node.value, shadowed)
    if isinstance(node, ast.BinOp):
        return (
            isinstance(node.op, _OPERATORS) and _pure(file, node.left, shadowed) and _pure(file, node.right, shadowed)
        )
    if isinstance(node, ast.UnaryOp):
        return not isinstance(node.op, ast.Not) and _pure(file, node.operand, shadowed)
    if isinstance(node, ast.Call):
        arguments = [*node.args, *(keyword.value for keyword in node.keywords)]
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            return False
        return _pure_callee(file, node.func, shadowed) and all(_pure(file, a, shadowed) for a in arguments)
    return False


def _pure_callee(file: FileContext, func: ast.expr, shadowed: set[str]) -> bool:
    dotted = dotted_name(func)
    resolved = file.bindings.resolve(dotted, shadowed) if dotted else None
    if resolved is not None:
        module, _, name = resolved.rpartition(".")
        return (module == "torch" and name in _ELEMENTWISE) or (module == "torch.nn.functional" and name in _FUNCTIONAL)
    if not isinstance(func, ast.Attribute):
        return False
    head = dotted.split(".")[0] if dotted else None
    if head is not None and head in file.bindings.imported and head not in shadowed:
        return False  # a module's function the lists do not name
    if isinstance(func.value, ast.Name) and func.value.id in ("self", "cls"):
        return False  # a method or submodule of the class: it may keep state
    return func.attr in _ELEMENTWISE and _pure(file, func.value, shadowed)
