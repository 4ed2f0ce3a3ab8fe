"""Render a replacement from a template over the user's own argument text, and prove it
parses to what was meant.

Arguments are pasted as the user wrote them (comments and line breaks inside them
included) and put in parentheses only where the surrounding template needs it
(`(a + b).reshape(-1)`, not `a + b.reshape(-1)`). Every rendering is checked: the
rendered text must parse to the template's tree with each argument's own tree in its
slot. A rendering that does not is retried with every argument parenthesised, and
otherwise refused — a fix is never offered on a guess about precedence.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass

from ..python_parse import parse_expression
from .model import optional_groups, placeholders

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z_0-9]*)\}")
_OPTIONAL = re.compile(r"\[\?(.*?)\?\]", re.DOTALL)
_SLOT = "_atenlint_slot_{}_"


class RenderError(Exception):
    """The replacement cannot be written safely; the message says why."""


@dataclass(frozen=True)
class Value:
    """What a placeholder stands for: source text, and its parsed tree (None: a plain
    dotted module name, pasted as is)."""

    text: str
    node: ast.expr | None = None


def expand_optional(template: str, given: set[str]) -> str:
    """Keep `[?...?]` groups whose argument placeholders were all written in the call."""

    def keep(match: re.Match[str]) -> str:
        inner = match.group(1)
        names = placeholders(inner)
        return inner if names and all(n in given for n in names) else ""

    return _OPTIONAL.sub(keep, template)


def render(template: str, values: dict[str, Value]) -> str:
    """The template with every placeholder replaced (see the module docstring)."""
    if optional_groups(template):
        raise RenderError("optional groups must be expanded before rendering")
    slots: list[tuple[str, Value]] = []

    def slot(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in values:
            raise RenderError(f"no value for {{{name}}}")
        value = values[name]
        if value.node is None:
            return value.text
        slots.append((name, value))
        return _SLOT.format(len(slots) - 1)

    skeleton_text = _PLACEHOLDER.sub(slot, template)
    skeleton = _parse_expression(skeleton_text)
    if skeleton is None:
        raise RenderError(f"the template does not parse: {template}")
    contexts = _slot_contexts(skeleton)
    # A second parse of the same text: the substitution changes the tree it is given.
    expected = _substitute(_parse_expression(skeleton_text) or skeleton, [v.node for _, v in slots])
    for parenthesise_all in (False, True):
        pieces: list[str] = []
        for index, (_, value) in enumerate(slots):
            context = contexts.get(index)
            wrap = _needs_parentheses(value, context) or (parenthesise_all and not _is_name(value.node))
            pieces.append(f"({value.text})" if wrap else value.text)
        rendered = re.sub(r"_atenlint_slot_(\d+)_", _slot_filler(pieces), skeleton_text)
        parsed = _parse_expression(rendered)
        if parsed is not None and ast.dump(parsed) == ast.dump(expected):
            return rendered
    raise RenderError("the arguments cannot be placed in the template without changing their meaning")


def _slot_filler(pieces: list[str]) -> Callable[[re.Match[str]], str]:
    def fill(match: re.Match[str]) -> str:
        return pieces[int(match.group(1))]

    return fill


def _parse_expression(text: str) -> ast.expr | None:
    try:
        # Parenthesised, so line breaks inside the text are legal wherever it ends up
        # (the caller checks the real context in the file).
        return parse_expression(f"({text}\n)").body
    except SyntaxError:
        return None


def parse_value(text: str) -> ast.expr | None:
    return _parse_expression(text)


SlotContext = tuple[ast.AST, str]  # (parent node, field name)


def _slot_contexts(tree: ast.AST) -> dict[int, SlotContext]:
    """Slot index -> (parent node, field name) where the slot sits in the template."""
    contexts: dict[int, SlotContext] = {}
    for node in ast.walk(tree):
        for name, value in ast.iter_fields(node):
            children = value if isinstance(value, list) else [value]
            for child in children:
                if isinstance(child, ast.Name):
                    match = re.fullmatch(r"_atenlint_slot_(\d+)_", child.id)
                    if match:
                        contexts[int(match.group(1))] = (node, name)
    return contexts


def _substitute(tree: ast.AST, nodes: list[ast.expr | None]) -> ast.AST:
    class Substitute(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST | None:
            match = re.fullmatch(r"_atenlint_slot_(\d+)_", node.id)
            return nodes[int(match.group(1))] if match else node

    substituted: ast.AST = Substitute().visit(tree)
    return substituted


_ATOMS = (
    ast.Name,
    ast.Attribute,
    ast.Subscript,
    ast.Call,
    ast.List,
    ast.Dict,
    ast.Set,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.JoinedStr,
)
_FREE_PARENTS = (ast.Call, ast.keyword, ast.List, ast.Tuple, ast.Set, ast.Dict)


def _is_name(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Name)


def _needs_parentheses(value: Value, context: SlotContext | None) -> bool:
    node = value.node
    if context is None:
        return False  # the whole template is this value
    parent, field = context
    if isinstance(node, ast.Constant):
        # `2.real` does not lex; a number before an attribute needs parentheses.
        return (
            isinstance(parent, ast.Attribute)
            and isinstance(node.value, (int, float, complex))
            and not isinstance(node.value, bool)
        )
    if isinstance(node, ast.Tuple):
        parenthesised = value.text.startswith("(") and value.text.endswith(")")
        return not parenthesised
    if isinstance(node, _ATOMS):
        return False
    if isinstance(node, (ast.GeneratorExp, ast.Starred, ast.NamedExpr, ast.Lambda, ast.Yield, ast.YieldFrom)):
        return True
    if isinstance(parent, ast.Call) and field == "args":
        return False
    if isinstance(parent, ast.Subscript) and field == "slice":
        return False
    return not (isinstance(parent, _FREE_PARENTS) and not isinstance(parent, ast.Call))


def trimmed_edit(old: str, new: str) -> tuple[int, int, str]:
    """The smallest (start, end, text) turning `old` into `new`: the common head and tail
    are kept, never splitting a name or number."""
    limit = min(len(old), len(new))
    head = 0
    while head < limit and old[head] == new[head]:
        head += 1
    while head > 0 and _word(old, head - 1) and (_word(old, head) or _word(new, head)):
        head -= 1
    tail = 0
    while tail < limit - head and old[len(old) - 1 - tail] == new[len(new) - 1 - tail]:
        tail += 1
    while (
        tail > 0
        and _word(old, len(old) - tail)
        and (_word(old, len(old) - tail - 1) or _word(new, len(new) - tail - 1))
    ):
        tail -= 1
    return head, len(old) - tail, new[head : len(new) - tail]


def _word(text: str, index: int) -> bool:
    return 0 <= index < len(text) and (text[index].isalnum() or text[index] == "_")
