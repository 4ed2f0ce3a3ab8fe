"""TorchScript's one typing rule Python does not have: an `int` is not a `float`.

`F.interpolate(x, scale_factor=2)` runs in Python (PEP 484's numeric tower: an int is
accepted where `float` is annotated) and in every exporter, but `torch.jit.script`
rejects it ("Expected a value of type 'Optional[float]' for argument 'scale_factor' but
instead found type 'int'"). Two consequences, both handled here as pure functions:

- the static pass replays such a call with the literal written as a float (`2.0`), which
  is what the call means, instead of losing the call (`widen_int_literals`);
- a class TorchScript rejects only for this reason loses nothing a note should warn
  about: its calls are read from source with the same replay (`only_int_for_float`).
"""

from __future__ import annotations

import ast
import inspect
import re
from typing import Any

_EXPECTED = re.compile(r"Expected a value of type '([^']*)' for argument '[^']*' but instead found type '([^']*)'")


def only_int_for_float(details: str) -> bool:
    """Whether every argument TorchScript refused (in each overload it tried) is an int
    given where a float is expected: Python's own rule accepts the call."""
    refusals = _EXPECTED.findall(details or "")
    return bool(refusals) and all("float" in expected and _ints_only(found) for expected, found in refusals)


def _ints_only(type_text: str) -> bool:
    """'int', 'Tuple[int, int]', 'List[int]': nothing but ints."""
    atoms = [a for a in re.split(r"[\[\],\s]+", type_text) if a and a not in ("Tuple", "List")]
    return bool(atoms) and all(a == "int" for a in atoms)


def _wants_float(annotation: Any) -> bool:
    if annotation is inspect.Parameter.empty:
        return False
    text = annotation if isinstance(annotation, str) else repr(annotation)
    return annotation is float or "float" in text


def widen_int_literals(call: ast.Call, function: Any) -> ast.Call | None:
    """`call` with each int literal passed to a float-annotated parameter of `function`
    written as a float; None when there is none (or the signature cannot be read)."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return None
    parameters = signature.parameters
    ordered = [
        p
        for p in parameters.values()
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    return _widened_call(
        call,
        [_wants_float(p.annotation) for p in ordered],
        {name: _wants_float(p.annotation) for name, p in parameters.items()},
    )


def widen_int_literals_by_types(
    call: ast.Call, positional_types: list[str | None], keyword_types: dict[str, str | None]
) -> ast.Call | None:
    """Like `widen_int_literals`, for a builtin (no Python signature: `F.scaled_dot_product_attention`)
    typed by one of its schemas (TorchScript annotations, "float", "Optional[float]")."""
    return _widened_call(
        call,
        [kind is not None and "float" in kind for kind in positional_types],
        {name: kind is not None and "float" in kind for name, kind in keyword_types.items()},
    )


def _widened_call(call: ast.Call, positional: list[bool], by_name: dict[str, bool]) -> ast.Call | None:
    changed = False

    def widened(node: ast.expr, wants_float: bool) -> ast.expr:
        nonlocal changed
        if not wants_float:
            return node
        if isinstance(node, ast.Constant) and type(node.value) is int:
            changed = True
            return ast.copy_location(ast.Constant(float(node.value)), node)
        if isinstance(node, (ast.Tuple, ast.List)) and any(
            isinstance(e, ast.Constant) and type(e.value) is int for e in node.elts
        ):
            changed = True
            elements = [
                ast.copy_location(ast.Constant(float(e.value)), e)
                if isinstance(e, ast.Constant) and type(e.value) is int
                else e
                for e in node.elts
            ]
            return ast.copy_location(type(node)(elts=elements, ctx=node.ctx), node)
        return node

    args = [widened(a, i < len(positional) and positional[i]) for i, a in enumerate(call.args)]
    keywords = [
        ast.copy_location(ast.keyword(arg=k.arg, value=widened(k.value, by_name.get(k.arg or "", False))), k)
        for k in call.keywords
    ]
    if not changed:
        return None
    return ast.copy_location(ast.Call(func=call.func, args=args, keywords=keywords), call)
