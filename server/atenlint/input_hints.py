"""Example inputs read off a `forward` signature (what `# atenlint: inputs=...` would say).

Pure standard library (no torch, no user code, no project files): the source text says
what forward takes. Both sides read it: the parent writes the suggestions as comments
(`inputs_suggest.py`: `--add-inputs`, the editor's code action), the worker traces with
them when no inputs are configured (`capture/infer_inputs.py`); so it imports nothing of
either side.
Only classes whose forward parameters all say what they are — a tensor type hint
(`x: Tensor`, `torch.LongTensor`, jaxtyping's `Float[Tensor, "b c h w"]`), a tensor
default (`mask=torch.ones(1, 8)`), or a plain `int`/`float`/`bool` hint — get one.
Shapes come from what the class itself says: jaxtyping dims, a docstring line such as
`x: (B, C, H, W)`, `b, c, h, w = x.shape` in forward, and the layer that first consumes
the input (`nn.Conv2d(3, ...)` gives 3 channels, `nn.Embedding(vocab, d)` integer ids).
The rest are guesses the user is asked to check.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from .python_parse import parse_expression, parse_module

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
# A layer `__init__` builds: its class name ("Conv2d") and its first two arguments when
# they are integers (in and out sizes), None where the source does not say.
Layer = tuple[str, list[int | None]]

_TENSOR_HINTS = {
    "Tensor",
    "torch.Tensor",
    "FloatTensor",
    "torch.FloatTensor",
    "torch.cuda.FloatTensor",
    "HalfTensor",
    "torch.HalfTensor",
    "DoubleTensor",
    "torch.DoubleTensor",
}
_INT_TENSOR_HINTS = {
    "LongTensor",
    "torch.LongTensor",
    "IntTensor",
    "torch.IntTensor",
    "BoolTensor",
    "torch.BoolTensor",
    "torch.cuda.LongTensor",
}
_JAXTYPING_FLOAT = {"Float", "Float32", "Float16", "BFloat16", "Shaped", "Num", "Real", "Inexact"}
_JAXTYPING_INT = {"Int", "Int64", "Int32", "Integer", "Long", "UInt8", "Bool"}
_LAYER_RANKS = {
    "Conv1d": 3,
    "Conv2d": 4,
    "Conv3d": 5,
    "ConvTranspose1d": 3,
    "ConvTranspose2d": 4,
    "ConvTranspose3d": 5,
    "BatchNorm1d": 3,
    "BatchNorm2d": 4,
    "BatchNorm3d": 5,
    "Linear": 2,
    "LayerNorm": 3,
    "Embedding": 2,
    "MultiheadAttention": 3,
    "LSTM": 3,
    "GRU": 3,
    "RNN": 3,
}
# Dimension names and the size a guess gives them.
_DIM_SIZES = (
    ({"b", "bs", "batch", "batch_size", "n_batch"}, 1),
    ({"c", "ch", "channels", "in_channels"}, 3),
    ({"h", "height", "w", "width", "img", "image", "hw"}, 32),
    ({"t", "seq", "seq_len", "l", "len", "length", "n", "tokens"}, 16),
    ({"d", "dim", "hidden", "embed", "features", "e", "k"}, 64),
)


@dataclass(frozen=True)
class InputsSuggestion:
    qualname: str
    class_line: int  # 0-based line of the `class` keyword
    insert_line: int  # 0-based line the comment goes above (the first decorator, or the class line)
    indent: str
    expression: str  # what `inputs=` gets
    kwargs: str | None = None  # keyword-only tensor parameters, as a dict display
    guessed: bool = True  # some size was not written anywhere in the class

    def comment(self) -> str:
        text = f"{self.indent}# atenlint: inputs={self.expression}"
        if self.kwargs:
            text += f"; kwargs={self.kwargs}"
        return text + "\n"


def suggest_inputs(text: str, skip: Iterable[str] = ()) -> list[InputsSuggestion]:
    """A suggestion for every class whose forward signature says what it takes."""
    try:
        tree = parse_module(text)
    except (SyntaxError, ValueError):
        return []
    skipped = set(skip)
    out: list[InputsSuggestion] = []
    for qualname, cls in classes_in(tree, ""):
        if qualname in skipped:
            continue
        forward = next(
            (n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "forward"),
            None,
        )
        if forward is None:
            continue
        suggestion = _suggest(qualname, cls, forward, text)
        if suggestion is not None:
            out.append(suggestion)
    return out


def classes_in(node: ast.AST, prefix: str) -> Iterator[tuple[str, ast.ClassDef]]:
    """(qualname, class) for every class in `node`, nested ones too."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.ClassDef):
            qualname = prefix + child.name
            yield qualname, child
            yield from classes_in(child, qualname + ".")


def _suggest(qualname: str, cls: ast.ClassDef, forward: FunctionNode, text: str) -> InputsSuggestion | None:
    arguments = forward.args
    positional = list(arguments.posonlyargs) + list(arguments.args)
    if positional and positional[0].arg in ("self", "cls"):
        positional = positional[1:]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(arguments.defaults))
    defaults += arguments.defaults
    layers = _layers(cls)
    docs = documented_shapes(ast.get_docstring(forward) or "", ast.get_docstring(cls) or "")
    values: list[str] = []
    guessed = False
    for parameter, default in zip(positional, defaults):
        value = _value_for(parameter, default, forward, layers, docs)
        if value is None:
            if default is not None:
                break  # the rest keep their defaults
            return None  # says nothing about what it is: no suggestion
        expression, was_guessed = value
        if expression is None:  # a defaulted non-tensor parameter: keep its default
            break
        values.append(expression)
        guessed = guessed or was_guessed
    keywords: list[str] = []
    for parameter, default in zip(arguments.kwonlyargs, arguments.kw_defaults):
        value = _value_for(parameter, default, forward, layers, docs)
        if value is None or value[0] is None:
            if default is None:
                return None
            continue
        keywords.append(f"{parameter.arg!r}: {value[0]}")
        guessed = guessed or value[1]
    if not values and not keywords and not positional:
        return None  # forward takes nothing: nothing to suggest
    expression = ", ".join(values) if len(values) != 1 else values[0]
    if not values:
        expression = "()"
    lines = text.splitlines()
    class_line = cls.lineno - 1
    first = min([d.lineno - 1 for d in cls.decorator_list] + [class_line])
    line_text = lines[class_line] if class_line < len(lines) else ""
    indent = line_text[: len(line_text) - len(line_text.lstrip())]
    return InputsSuggestion(
        qualname, class_line, first, indent, expression, "{" + ", ".join(keywords) + "}" if keywords else None, guessed
    )


def _value_for(
    parameter: ast.arg,
    default: ast.expr | None,
    forward: FunctionNode,
    layers: dict[str, Layer],
    docs: dict[str, list[str]],
) -> tuple[str | None, bool] | None:
    """(expression, guessed) for one parameter; (None, False) to keep its default; None
    when nothing says what it is."""
    if default is not None and _is_tensor_call(default):
        return ast.unparse(default), False
    kind, dims = annotation_kind(parameter.annotation)
    if kind in ("int", "float", "bool", "optional", "other") and default is not None:
        return None, False
    if kind == "int":
        return "1", True
    if kind == "float":
        return "1.0", True
    if kind == "bool":
        return "False", True
    if kind == "optional":
        return "None", False
    if kind not in ("tensor", "int_tensor"):
        return (None, False) if default is not None else None
    name = parameter.arg
    documented = dims or docs.get(name)
    rank = len(documented) if documented else unpacked_rank(forward, name)
    layer = _first_layer(forward, name, layers)
    if layer is not None and layer[0] == "Embedding":
        kind = "int_tensor"
    if kind == "int_tensor":
        high = layer[1][0] if layer is not None and layer[0] == "Embedding" and layer[1] else None
        sizes, sizes_guessed = _shape(documented, rank or 2, layer)
        listed = ", ".join(map(str, sizes))
        size_tuple = f"({listed},)" if len(sizes) == 1 else f"({listed})"
        return f"torch.randint(0, {high or 10}, {size_tuple})", sizes_guessed or high is None
    shape, guessed = _shape(documented, rank, layer)
    return f"torch.randn({', '.join(map(str, shape))})", guessed


def annotation_kind(hint: ast.expr | None) -> tuple[str | None, list[str] | None]:
    """What a parameter's annotation (perhaps a string) says it is: "tensor", "int_tensor",
    "int", "float", "bool", "optional", "other", or None without one; with jaxtyping dims."""
    if isinstance(hint, ast.Constant) and isinstance(hint.value, str):  # a string annotation
        try:
            hint = parse_expression(hint.value).body
        except SyntaxError:
            return None, None
    return hint_kind(hint) if hint is not None else (None, None)


def hint_kind(hint: ast.expr) -> tuple[str | None, list[str] | None]:
    text = ast.unparse(hint).replace(" ", "")
    if text in _TENSOR_HINTS:
        return "tensor", None
    if text in _INT_TENSOR_HINTS:
        return "int_tensor", None
    if text in ("int", "float", "bool"):
        return text, None
    if isinstance(hint, ast.Subscript):
        head = ast.unparse(hint.value).split(".")[-1]
        if head in _JAXTYPING_FLOAT | _JAXTYPING_INT:
            parts = hint.slice.elts if isinstance(hint.slice, ast.Tuple) else [hint.slice]
            dims = None
            if len(parts) >= 2 and isinstance(parts[1], ast.Constant) and isinstance(parts[1].value, str):
                dims = [d for d in parts[1].value.split() if d not in ("...", "*batch", "#batch")]
            return ("int_tensor" if head in _JAXTYPING_INT else "tensor"), dims
        if head == "Optional" or text.startswith("Union[") and "None" in text:
            return "optional", None
    if isinstance(hint, ast.BinOp) and "None" in text:
        return "optional", None
    return "other", None


def _is_tensor_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    name = ast.unparse(node.func)
    return name.startswith("torch.") and name.split(".")[-1] in {
        "randn",
        "rand",
        "zeros",
        "ones",
        "empty",
        "full",
        "randint",
        "arange",
        "tensor",
        "eye",
    }


_DOC_SHAPE_RE = re.compile(r"^\s*`?(?P<name>\w+)`?\s*(?:\([^)]*\))?\s*[:\-]\s*.*?[\(\[](?P<dims>[\w\s,*]+)[\)\]]")


def documented_shapes(*docstrings: str) -> dict[str, list[str]]:
    """`x: (B, C, H, W)` or `x (Tensor): shape [batch, seq, dim]` lines -> {"x": dims}."""
    found: dict[str, list[str]] = {}
    for docstring in docstrings:
        for line in docstring.splitlines():
            match = _DOC_SHAPE_RE.match(line)
            if match is None:
                continue
            dims = [d.strip() for d in match["dims"].split(",") if d.strip()]
            if len(dims) >= 2 and all(re.fullmatch(r"\w+", d) for d in dims):
                found.setdefault(match["name"], dims)
    return found


def unpacked_rank(forward: FunctionNode, name: str) -> int | None:
    """`b, c, h, w = x.shape` (or `x.size()`) in forward says x has 4 dimensions; so does
    an einsum or einops pattern x is an operand of (`einsum("b h i d, b h j d -> b h i j",
    q, k)`, `rearrange(x, "b c h w -> b (h w) c")`)."""
    return _unpacked_rank(forward, name) or _pattern_rank(forward, name)


# einops' functions: the tensor first, the pattern second; einsum: torch's takes the
# equation first, einops' last.
_EINOPS_PATTERNS = {"rearrange", "reduce", "repeat"}


def _pattern_rank(forward: FunctionNode, name: str) -> int | None:
    calls = sorted((n for n in ast.walk(forward) if isinstance(n, ast.Call)), key=lambda n: (n.lineno, n.col_offset))
    for call in calls:
        function = ast.unparse(call.func).split(".")[-1]
        arguments = call.args
        if function in _EINOPS_PATTERNS and len(arguments) >= 2:
            operands, pattern = arguments[:1], arguments[1]
        elif function == "einsum" and len(arguments) >= 2:
            first = arguments[0]
            is_torch = _pattern_text(first) is not None
            operands, pattern = (arguments[1:], first) if is_torch else (arguments[:-1], arguments[-1])
        else:
            continue
        text = _pattern_text(pattern)
        if text is None or "->" not in text:
            continue
        specs = text.split("->")[0].split(",")
        for operand, spec in zip(operands, specs):
            if isinstance(operand, ast.Name) and operand.id == name:
                return _spec_rank(spec)
    return None


def _pattern_text(node: ast.expr) -> str | None:
    """A pattern literal, f-strings with only literal parts included."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and all(isinstance(v, ast.Constant) for v in node.values):
        return "".join(str(v.value) for v in node.values if isinstance(v, ast.Constant))
    return None


def _spec_rank(spec: str) -> int | None:
    """`b (h c) x y` -> 4 (a parenthesised group is one dimension); `bhid` -> 4; None with
    an ellipsis (any rank)."""
    if "..." in spec or "…" in spec:
        return None
    depth, rank, in_name = 0, 0, False
    spaced = " " in spec.strip() or "(" in spec
    for character in spec.strip():
        if character == "(":
            if depth == 0:
                rank += 1
            depth += 1
            in_name = False
        elif character == ")":
            depth -= 1
        elif depth == 0 and (character.isalnum() or character == "_"):
            if not spaced:
                rank += 1  # torch's einsum: one letter a dimension
            elif not in_name:
                rank += 1
            in_name = True
        else:
            in_name = False
    return rank or None


def _unpacked_rank(forward: FunctionNode, name: str) -> int | None:
    for node in ast.walk(forward):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Tuple):
            value = node.value
            if (
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Attribute)
                and value.func.attr == "size"
                and not value.args
            ):
                value = value.func.value
            elif isinstance(value, ast.Attribute) and value.attr == "shape":
                value = value.value
            else:
                continue
            if (
                isinstance(value, ast.Name)
                and value.id == name
                and not any(isinstance(e, ast.Starred) for e in node.targets[0].elts)
            ):
                return len(node.targets[0].elts)
    return None


def _layers(cls: ast.ClassDef) -> dict[str, Layer]:
    """`self.name = nn.Conv2d(3, 64, ...)` in __init__ -> {"name": ("Conv2d", [3, 64])}, with
    names resolved through __init__'s defaults (`in_chans=3`)."""
    init = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    if init is None:
        return {}
    defaults: dict[str, int] = {}
    arguments = init.args.args[1:]
    for parameter, default in zip(arguments[len(arguments) - len(init.args.defaults) :], init.args.defaults):
        if isinstance(default, ast.Constant) and isinstance(default.value, int):
            defaults[parameter.arg] = default.value
    found: dict[str, Layer] = {}
    for node in ast.walk(init):
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
            continue
        layer = ast.unparse(node.value.func).split(".")[-1]
        if layer not in _LAYER_RANKS:
            continue
        sizes: list[int | None] = []
        for argument in node.value.args[:2]:
            if isinstance(argument, ast.Constant) and isinstance(argument.value, int):
                sizes.append(argument.value)
            elif isinstance(argument, ast.Name) and argument.id in defaults:
                sizes.append(defaults[argument.id])
            else:
                sizes.append(None)
        for target in node.targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                found.setdefault(target.attr, (layer, sizes))
    return found


def _first_layer(forward: FunctionNode, name: str, layers: dict[str, Layer]) -> Layer | None:
    """The layer forward first calls on the parameter itself: `self.conv(x)`."""
    calls = sorted((n for n in ast.walk(forward) if isinstance(n, ast.Call)), key=lambda n: (n.lineno, n.col_offset))
    for call in calls:
        func = call.func
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "self"
            and func.attr in layers
            and call.args
            and isinstance(call.args[0], ast.Name)
            and call.args[0].id == name
        ):
            return layers[func.attr]
    return None


def _shape(dims: list[str] | None, rank: int | None, layer: Layer | None) -> tuple[list[int], bool]:
    """Sizes for each dimension, and whether any was guessed."""
    layer_rank = _LAYER_RANKS.get(layer[0]) if layer else None
    rank = rank or (len(dims) if dims else None) or layer_rank or 2
    sizes: list[int] = []
    guessed = False
    for index in range(rank):
        name = dims[index] if dims and index < len(dims) else None
        size = int(name) if name and name.isdigit() else None
        if size is None and layer is not None and layer[1]:
            kind, arguments = layer
            if (
                kind.startswith(("Conv", "BatchNorm"))
                and index == 1
                or kind in ("Linear", "LayerNorm", "MultiheadAttention", "LSTM", "GRU", "RNN")
                and index == rank - 1
            ):
                size = arguments[0]
        if size is None:
            guessed = True
            size = _dim_size(name, index, rank)
        sizes.append(size)
    return sizes, guessed


def _dim_size(name: str | None, index: int, rank: int) -> int:
    if name:
        lowered = name.lower()
        for names, size in _DIM_SIZES:
            if lowered in names:
                return size
    if index == 0:
        return 1
    if rank == 4 and index == 1:
        return 3
    return 32 if rank >= 4 else 16
