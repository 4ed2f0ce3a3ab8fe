"""The checks a catalog entry can put on a call, and the values it can compute from one.

Each check answers None (satisfied) or why not. A check that cannot decide from the
source text and what the capture recorded (`Finding.data["args"]`: the call's constant
arguments; `data["arg_shapes"]`: input shapes, when a trace knows them) fails: a fix is
offered only when its conditions are known to hold.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from ..finding_data import FindingData
from ..locate import dotted_name
from .callsite import Argument, CallSite

_UNKNOWN = object()

# c10::ScalarType codes the capture records for dtype arguments.
_FLOAT_SCALAR_TYPES = {5: "torch.float16", 6: "torch.float32", 7: "torch.float64", 15: "torch.bfloat16"}
_FLOAT_DTYPES = {
    "torch.float16",
    "torch.half",
    "torch.float32",
    "torch.float",
    "torch.float64",
    "torch.double",
    "torch.bfloat16",
}


@dataclass
class Context:
    site: CallSite
    bound: dict[str, Argument]  # parameter -> Argument
    data: FindingData  # the finding's data

    def value(self, name: str) -> object:
        """The argument's Python value when it is a literal in the source or a constant the
        capture recorded; `_UNKNOWN` otherwise."""
        argument: Argument | None = self.bound.get(name)
        if argument is not None:
            literal = literal_value(argument.node)
            if literal is not _UNKNOWN:
                return literal
        recorded = self.data.get("args") or {}
        if name in recorded:
            return recorded[name]
        return _UNKNOWN

    def dtype_name(self, name: str) -> str | None:
        """`torch.float64` for a dtype argument written as one (or recorded by code)."""
        argument = self.bound.get(name)
        if argument is not None and argument.given:
            dotted = dotted_name(argument.node)
            if dotted is not None:
                resolved = self.site.file.bindings.resolve(dotted, self.site.shadowed)
                if resolved is not None:
                    return resolved
        recorded = (self.data.get("args") or {}).get(name)
        if isinstance(recorded, int) and not isinstance(recorded, bool):
            return _FLOAT_SCALAR_TYPES.get(recorded, f"scalar type {recorded}")
        return None


def literal_value(node: ast.AST | None) -> object:
    if node is None:
        return _UNKNOWN
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _UNKNOWN


# -- checks ------------------------------------------------------------------------


def absent(context: Context, name: str) -> str | None:
    argument = context.bound.get(name)
    if argument is None or not argument.given:
        return None
    if literal_value(argument.node) is None:
        return None
    return f"`{name}=` is given"


def literal(context: Context, name: str, *allowed: object) -> str | None:
    value = context.value(name)
    if value is _UNKNOWN:
        return f"`{name}` is not a constant here"
    # True == 1 in Python; a flag and a count are different arguments here.
    if not any(value == a and isinstance(value, bool) == isinstance(a, bool) for a in allowed):
        return f"`{name}` is {value!r}, not {' or '.join(map(repr, allowed))}"
    return None


def float_dtype(context: Context, name: str) -> str | None:
    argument = context.bound.get(name)
    written = argument is not None and argument.given and literal_value(argument.node) is not None
    if not written and (context.data.get("args") or {}).get(name) is None:
        return None  # the default dtype, which is a floating type
    dtype = context.dtype_name(name)
    if dtype is None:
        return f"`{name}` is not known here"
    if dtype not in _FLOAT_DTYPES:
        return f"`{name}` is {dtype}, not a real floating type"
    return None


def constant_except(context: Context, *tensors: str) -> str | None:
    """Every argument but `tensors` is a constant (so none is a tensor on the device)."""
    recorded = context.data.get("args") or {}
    for name, argument in context.bound.items():
        if name in tensors or not argument.given:
            continue
        if literal_value(argument.node) is _UNKNOWN and name not in recorded and not _torch_constant(context, argument):
            return f"`{name}` may be a tensor"
    for keyword, node in context.site.extra_arguments(context.bound):
        if (
            literal_value(node) is _UNKNOWN
            and keyword not in recorded
            and not _torch_constant(context, Argument("", node, "", True))
        ):
            return f"`{keyword or ast.unparse(node)}` may be a tensor"
    return None


def _torch_constant(context: Context, argument: Argument) -> bool:
    """`torch.float32`, `torch.strided`: attributes of torch that are not tensors."""
    dotted = dotted_name(argument.node)
    if dotted is None:
        return False
    resolved = context.site.file.bindings.resolve(dotted, context.site.shadowed) or ""
    return resolved in _FLOAT_DTYPES or resolved in (
        "torch.strided",
        "torch.contiguous_format",
        "torch.preserve_format",
        "torch.channels_last",
    )


# Each check takes the context and the entry's arguments for it (names, allowed values).
CHECKS: dict[str, Callable[..., str | None]] = {
    "absent": absent,
    "literal": literal,
    "float_dtype": float_dtype,
    "constant_except": constant_except,
}


# -- derivations ---------------------------------------------------------------------


def adaptive_pool_kernel_3d(context: Context) -> str | None:
    """The window of an adaptive 3-D pool whose output size divides its input: the same
    windows as a plain pool with kernel = stride = input // output. Needs the input's
    shape (a trace capture's `arg_shapes`); None when it is not known or does not divide."""
    output = context.value("output_size")
    shapes = context.data.get("arg_shapes") or {}
    shape = shapes.get("self") or shapes.get("input")
    if output is _UNKNOWN or not isinstance(shape, (list, tuple)) or len(shape) not in (4, 5):
        return None
    spatial = list(shape[-3:])
    if not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in spatial):
        return None
    if isinstance(output, int) and not isinstance(output, bool):
        output = [output] * 3
    if not isinstance(output, (list, tuple)) or len(output) != 3:
        return None
    kernel = []
    for size, out in zip(spatial, output):
        out = size if out is None else out
        if not isinstance(out, int) or isinstance(out, bool) or out <= 0 or size % out:
            return None
        kernel.append(size // out)
    return f"({kernel[0]}, {kernel[1]}, {kernel[2]})"


def traced_spatial_size_3d(context: Context) -> str | None:
    """The input's (D, H, W) as traced, written `16×32×32`; None when it is not known."""
    shapes = context.data.get("arg_shapes") or {}
    shape = shapes.get("self") or shapes.get("input")
    if not isinstance(shape, (list, tuple)) or len(shape) not in (4, 5):
        return None
    spatial = list(shape[-3:])
    if not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in spatial):
        return None
    return "×".join(str(d) for d in spatial)


DERIVATIONS: dict[str, Callable[[Context], str | None]] = {
    "adaptive_pool_kernel_3d": adaptive_pool_kernel_3d,
    "traced_spatial_size_3d": traced_spatial_size_3d,
}
