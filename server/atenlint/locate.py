"""From a source site a capture engine recorded (line, UTF-8 column, its own idea of the
extent) to the user's expression: the LSP range to underline and the call's name.

TorchScript's range for a call covers only the callee (`torch.take` in
`torch.take(x, i)`), and for an operator expression it ends where its right operand's
range ends. Several expressions can start at one column (`f(x)` and `f(x).g()`); the
recorded extent tells them apart.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .ast_names import dotted_name
from .sourcetext import Position, Range, SourceText

__all__ = ["dotted_name"]  # capture/static.py imports it from here until it uses ast_names.py

_OPERATOR_SYMBOLS = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.MatMult: "@",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.USub: "-",
    ast.Invert: "~",
    ast.Not: "not",
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
}
_PREFERRED = (ast.Call, ast.BinOp, ast.UnaryOp, ast.Compare, ast.Subscript, ast.BoolOp, ast.AugAssign)
# What a recorded site can be: an expression, or `x += y` (a statement the op comes from).
Expression = ast.expr | ast.AugAssign


@dataclass(frozen=True)
class Located:
    range: Range
    call: str
    node: ast.AST | None = None


def call_label(node: ast.AST, source: SourceText) -> str:
    """How a finding names the user's expression."""
    if isinstance(node, ast.Call):
        name = dotted_name(node.func)
        if name is not None:
            return name
        if isinstance(node.func, ast.Attribute):
            return f".{node.func.attr}()"
        return source.segment(node.func) or "call"
    if isinstance(node, (ast.BinOp, ast.AugAssign)):
        return f"operator {_OPERATOR_SYMBOLS.get(type(node.op), type(node.op).__name__)}"
    if isinstance(node, ast.UnaryOp):
        return f"operator {_OPERATOR_SYMBOLS.get(type(node.op), type(node.op).__name__)}"
    if isinstance(node, ast.Compare):
        return f"operator {_OPERATOR_SYMBOLS.get(type(node.ops[0]), 'comparison')}"
    if isinstance(node, ast.Subscript):
        return "indexing"
    return source.segment(node).split("\n", 1)[0][:60]


class ExpressionLocator:
    def __init__(self, source: SourceText):
        self.source = source
        self._by_start: dict[tuple[int, int], list[Expression]] = {}
        tree = source.tree
        if tree is not None:
            for node in ast.walk(tree):
                if isinstance(node, (ast.expr, ast.AugAssign)) and hasattr(node, "lineno"):
                    self._by_start.setdefault((node.lineno, node.col_offset), []).append(node)
                    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                        # `(x + 1).take(i)`: the Call starts at the parenthesis, a capture's
                        # range at the receiver inside it.
                        receiver = node.func.value
                        if (receiver.lineno, receiver.col_offset) != (node.lineno, node.col_offset):
                            self._by_start.setdefault((receiver.lineno, receiver.col_offset), []).append(node)

    def locate(
        self,
        line: int,
        col: int,
        span_lines: int = 1,
        end_col: int | None = None,
        exact: bool = False,
        hint: tuple[str, ...] = (),
    ) -> Located:
        """`line` 1-based, `col` and `end_col` UTF-8 byte columns, as the capture recorded
        them; `exact`: the extent covers the whole expression (Python's own positions).
        A negative `col` means only the line is known (a graph's recorded stack, Python
        3.10 frames); `hint` then names what the call may be called (the op, the library
        function or the submodule attribute it went through)."""
        if col < 0:
            chosen = self._on_line(line, hint)
            if chosen is not None:
                return Located(self.source.node_range(chosen), call_label(chosen, self.source), chosen)
            return Located(self.source.line_range(line - 1), self.source.line_text(line - 1).strip()[:60])
        candidates = self._by_start.get((line, col), [])
        chosen = None
        if end_col is not None:
            end = (line + span_lines - 1, end_col)
            measure = _end if exact else _recorded_end
            matching = [n for n in candidates if measure(n) == end]
            chosen = _best(matching)
        if chosen is None:
            chosen = _best(candidates)
        if chosen is None:
            return Located(self._fallback_range(line - 1, col), self.source.line_text(line - 1).strip()[:60])
        return Located(self.source.node_range(chosen), call_label(chosen, self.source), chosen)

    def _on_line(self, line: int, hint: tuple[str, ...]) -> Expression | None:
        """The expression on `line` a line-only site means: the one the hint names (a call
        of that name, or the operator an op like `aten::add` or `aten::__and__` is), else
        the smallest call on the line."""
        on_line = [n for (ln, _), nodes in self._by_start.items() if ln == line for n in nodes]
        calls: list[Expression] = [n for n in on_line if isinstance(n, ast.Call)]

        def smallest(node: Expression) -> tuple[int, int, int]:
            end_line, end_col = _end(node)
            return (end_line - node.lineno, end_col - node.col_offset, node.col_offset)

        for name in hint:  # most specific first: the op, then what it went through
            named: list[Expression] = [n for n in calls if isinstance(n, ast.Call) and _callee_name(n) == name]
            if not named:
                symbol = _OP_SYMBOLS.get(name.strip("_"))
                named = [n for n in on_line if symbol is not None and _operator_symbol(n) in symbol]
            if named:
                return min(named, key=smallest)
        return min(calls, key=smallest) if calls else None

    def _fallback_range(self, line0: int, col: int) -> Range:
        text = self.source.line_text(line0)
        start = self.source.utf16_from_byte(line0, col)
        return Range(Position(line0, start), Position(line0, self.source.utf16_from_char(line0, len(text))))


# The Python operators an aten op name is spelled as in source.
_OP_SYMBOLS = {
    "add": ("+",),
    "sub": ("-",),
    "rsub": ("-",),
    "mul": ("*",),
    "div": ("/", "//"),
    "true_divide": ("/",),
    "floor_divide": ("//",),
    "remainder": ("%",),
    "fmod": ("%",),
    "pow": ("**",),
    "matmul": ("@",),
    "and": ("&", "and"),
    "bitwise_and": ("&",),
    "logical_and": ("&", "and"),
    "or": ("|", "or"),
    "bitwise_or": ("|",),
    "xor": ("^",),
    "bitwise_xor": ("^",),
    "lshift": ("<<",),
    "rshift": (">>",),
    "bitwise_left_shift": ("<<",),
    "bitwise_right_shift": (">>",),
    "neg": ("-",),
    "bitwise_not": ("~",),
    "invert": ("~",),
    "logical_not": ("not", "~"),
    "eq": ("==",),
    "ne": ("!=",),
    "lt": ("<",),
    "le": ("<=",),
    "gt": (">",),
    "ge": (">=",),
    "index": ("[]",),
    "slice": ("[]",),
    "select": ("[]",),
    "getitem": ("[]",),
    "index_put": ("[]",),
    "iand": ("&",),
    "ior": ("|",),
    "iadd": ("+",),
    "isub": ("-",),
    "imul": ("*",),
}


def _callee_name(node: ast.Call) -> str | None:
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


def _operator_symbol(node: ast.AST) -> str | None:
    if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.AugAssign)):
        return _OPERATOR_SYMBOLS.get(type(node.op))
    if isinstance(node, ast.Compare):
        return _OPERATOR_SYMBOLS.get(type(node.ops[0]))
    if isinstance(node, ast.Subscript):
        return "[]"
    return None


def _end(node: Expression) -> tuple[int, int]:
    """Where Python's own positions say `node` ends (a parsed tree always has them)."""
    return (
        node.end_lineno if node.end_lineno is not None else node.lineno,
        node.end_col_offset if node.end_col_offset is not None else node.col_offset,
    )


def _recorded_end(node: Expression) -> tuple[int, int]:
    """Where a capture engine's range for `node` ends (see the module docstring)."""
    if isinstance(node, ast.Call):
        return _end(node.func)
    if isinstance(node, ast.BinOp):
        return _recorded_end(node.right)
    if isinstance(node, ast.BoolOp):
        return _recorded_end(node.values[-1])
    if isinstance(node, ast.Compare):
        return _recorded_end(node.comparators[-1])
    if isinstance(node, ast.UnaryOp):
        return _recorded_end(node.operand)
    return _end(node)


def _best(nodes: list[Expression]) -> Expression | None:
    if not nodes:
        return None
    for kind in _PREFERRED:
        of_kind = [n for n in nodes if isinstance(n, kind)]
        if of_kind:
            # Innermost first: the smallest expression that starts here.
            return min(of_kind, key=_end)
    return min(nodes, key=_end)
