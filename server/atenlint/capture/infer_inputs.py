"""Example inputs for a class nobody gave any: candidates built from what atenlint knows.

Runs inside the worker, on a class already built on meta. The candidates come, in a fixed
order, from:

1. the suggestion `--add-inputs` would write (`input_hints.py`: type hints, jaxtyping
   dimensions, documented shapes, the first layer's literal sizes), when the signature
   says what forward takes;
2. the built instance: the layer `forward` first hands each parameter to (`self.conv(x)`,
   `self.transformer.wte(idx)`, through `Sequential`s to their first layer, else the
   instance's first layer), read at run time (`in_channels`, `in_features`,
   `num_embeddings`, `normalized_shape`, `batch_first`), with sizes the instance itself
   declares (`block_size`, `context_length`, `image_size`, `input_resolution`) before
   common ones (32, 224 pixels; 16 tokens);
3. conventions by parameter name (`idx`, `input_ids`, `text`: token ids; `t`, `time`,
   `timesteps`: one value per batch item; `mask`: None).

Each candidate is only an expression of `torch` calls (`torch.randn(2, 3, 32, 32)`), so
it evaluates the same on meta, on fake tensors and on the CPU, and it is what the answer
shows as the inputs used. No more than `MAX_CANDIDATES` per class, in a deterministic
order (no choice ever depends on time); the caller tries them cheapest first (a fake-
tensor forward) and keeps the first that runs.

A class that another class of the file runs as a submodule gets better than a guess: the
arguments the enclosing model's inferred run handed it (`recording_calls`), written as the
same kind of expression, and the submodule instance that model built, for when the class
cannot be built, or not built to fit, on its own.
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import itertools
import linecache
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from ..input_hints import annotation_kind, documented_shapes, suggest_inputs, unpacked_rank
from ..python_parse import function_node
from .trace import submodule_pre_hooks

MAX_CANDIDATES = 8
# Classes of one file traced with inferred inputs before TorchScript is tried on them (the
# widest first): each costs a trace per front end (torch.export's is the dearest, seconds on
# a loaded machine), and the file's analysis shares one time limit. Past them, only a class
# TorchScript cannot compile is traced (`file_capture.InferenceBudget`), since the source
# pass is all it would get otherwise. A request's `infer_inputs` may set another number.
INFERRED_CLASSES_PER_FILE = 3
# torch.jit.trace needs real weights; with guessed inputs, up to this many bytes (beyond,
# the jit views come from the scripted graph, as they did before inputs were inferred).
INFERRED_REAL_LIMIT_BYTES = 192 * 1024 * 1024
BATCH = 2  # not 1: a batch of one hides broadcasting mistakes and trips BatchNorm in training
_DEFAULT_SEQ = 16
_DEFAULT_SPATIAL = (32, 224, 64, 16)
_SEQ_ATTRIBUTES = (
    "block_size",
    "context_length",
    "max_seq_len",
    "max_seq_length",
    "n_ctx",
    "seq_len",
    "max_len",
    "max_position_embeddings",
    "num_positions",
)
_SPATIAL_ATTRIBUTES = ("image_size", "img_size", "input_resolution", "image_resolution", "resolution", "input_size")
_ID_NAMES = {"idx", "ids", "input_ids", "token_ids", "tokens", "text", "tokenized", "src_tokens", "token"}
_TIME_NAMES = {"t", "time", "times", "timestep", "timesteps", "noise_level", "sigma", "sigmas"}
_MASK_NAMES = {"mask", "attention_mask", "attn_mask", "key_padding_mask", "src_mask", "padding_mask"}


@dataclass(frozen=True)
class Candidate:
    """Positional inputs as one expression (`torch.randn(2, 8)`, or a tuple display)."""

    expression: str
    source: str  # "signature" (the --add-inputs suggestion) or "instance"


def candidates(cls: type, instance: torch.nn.Module, module: Any) -> list[Candidate]:
    """Up to MAX_CANDIDATES example inputs for `cls.forward`, best first; [] when forward's
    signature cannot be read or asks for what no tensor can give (required keyword-only
    parameters). A forward taking only `*args` gets one input, for the instance's first layer."""
    out: list[Candidate] = []
    suggested = _suggestion(cls, module)
    if suggested is not None:
        out.append(Candidate(suggested, "signature"))
    forward = _forward_node(cls)
    if forward is not None:
        for expression in _instance_candidates(forward, instance):
            if all(c.expression != expression for c in out):
                out.append(Candidate(expression, "instance"))
    return out[:MAX_CANDIDATES]


def evaluate(expression: str, device: str) -> tuple[Any, ...]:
    """A candidate's tensors, made on `device` ("meta" costs nothing; "cpu" for jit.trace)."""
    with torch.device(device):
        value = eval(expression, {"torch": torch, "__builtins__": {}})  # only torch calls, made here
    return value if isinstance(value, tuple) else (value,)


# -- the suggestion --add-inputs writes --------------------------------------------------------


def _suggestion(cls: type, module: Any) -> str | None:
    path = getattr(module, "__file__", None) or ""
    text = "".join(linecache.getlines(path)) if path else ""
    if not text:
        return None
    qualname = cls.__qualname__
    for suggestion in suggest_inputs(text):
        if suggestion.qualname == qualname and not suggestion.kwargs:
            return None if suggestion.expression == "()" else suggestion.expression
    return None


# -- from the built instance -------------------------------------------------------------------


def _forward_node(cls: type) -> ast.FunctionDef | None:
    forward = getattr(cls, "forward", None)
    if forward is None or forward is torch.nn.Module.forward:
        return None
    node = function_node(forward)
    return node if isinstance(node, ast.FunctionDef) else None


@dataclass(frozen=True)
class _Layer:
    """The first layer a parameter meets, as the instance built it."""

    kind: str  # "conv", "linear", "embedding", "norm" (last dims), "norm2d" (channels), "sequence"
    size: int  # channels, features, vocabulary or embedding size
    spatial_rank: int = 0  # conv: 1, 2, 3
    batch_first: bool = True
    trailing: tuple[int, ...] = ()  # LayerNorm's normalized_shape beyond the last dimension


def _instance_candidates(forward: ast.FunctionDef, instance: torch.nn.Module) -> list[str]:
    arguments = forward.args
    if any(d is None for d in arguments.kw_defaults):
        return []  # a keyword-only parameter without a default
    positional = list(arguments.posonlyargs) + list(arguments.args)
    if positional and positional[0].arg in ("self", "cls"):
        positional = positional[1:]
    required = positional[: len(positional) - len(arguments.defaults)]
    seq = _declared_size(instance, _SEQ_ATTRIBUTES)
    spatial = _declared_size(instance, _SPATIAL_ATTRIBUTES)
    if not required and arguments.vararg is not None:
        # `forward(self, *args, **kwargs)` handing its inputs on (`self.forward_features(*args)`):
        # one input, shaped for the instance's first layer.
        layer = _describe(_first_leaf(instance))
        shapes = _shapes_for(layer, None, seq, spatial) if layer is not None and layer.kind != "embedding" else []
        if layer is not None and layer.kind == "embedding":
            shapes = [f"torch.randint(0, {layer.size}, ({BATCH}, {length}))" for length in _dedupe([seq, _DEFAULT_SEQ])]
        return [f"({shape},)" for shape in shapes[:MAX_CANDIDATES]]
    if not required:
        return []
    docs = documented_shapes(ast.get_docstring(forward) or "")
    options: list[list[str]] = []
    first_tensor: list[str] | None = None
    for parameter in required:
        values = _parameter_values(parameter, forward, instance, docs, seq, spatial)
        if values is None:
            # A tensor nothing describes: shaped like the first one, else by convention.
            values = first_tensor or _generic(unpacked_rank(forward, parameter.arg), seq, spatial)
        if not values:
            return []
        if first_tensor is None and any(v.startswith("torch.") for v in values):
            first_tensor = values
        options.append(values)
    out = []
    for combination in itertools.islice(itertools.product(*options), MAX_CANDIDATES):
        out.append(f"({', '.join(combination)},)")
    return out


def _parameter_values(
    parameter: ast.arg,
    forward: ast.FunctionDef,
    instance: torch.nn.Module,
    docs: dict[str, list[str]],
    seq: int | None,
    spatial: int | None,
) -> list[str] | None:
    """Expressions to try for one required parameter, best first; None when nothing says
    what it is (the caller shapes it like the first tensor)."""
    name = parameter.arg
    kind, dims = annotation_kind(parameter.annotation)
    if kind == "int":
        return ["1"]
    if kind == "float":
        return ["1.0"]
    if kind == "bool":
        return ["False"]
    if kind == "optional":
        return ["None"]
    if kind is None and name.lower() in _MASK_NAMES:
        # Absent first; else one flag per token (`attention_mask`), as long as the sequence.
        return ["None", f"torch.ones({BATCH}, {seq or _DEFAULT_SEQ}, dtype=torch.long)"]
    if kind == "other":
        return []  # a type we cannot make: no candidate at all
    lowered = name.lower()
    layer = _first_layer(forward, name, instance)
    if kind is None and lowered in _TIME_NAMES:
        # One step per batch item, unless a layer says it is already an embedding.
        steps = [f"torch.randint(0, 1000, ({BATCH},))", f"torch.rand({BATCH})"]
        return (_shapes_for(layer, None, seq, spatial) if layer is not None else []) + steps
    documented = dims or docs.get(name)
    rank = len(documented) if documented else unpacked_rank(forward, name)
    ids = kind == "int_tensor" or (layer is not None and layer.kind == "embedding")
    ids = ids or (kind is None and layer is None and lowered in _ID_NAMES)
    if ids:
        high = layer.size if layer is not None and layer.kind == "embedding" else _vocabulary(instance)
        lengths = _dedupe([seq, _DEFAULT_SEQ])
        return [f"torch.randint(0, {high}, ({BATCH}, {length}))" for length in lengths]
    if layer is None:
        return None
    shaped = _shapes_for(layer, rank, seq, spatial)
    if parameter is _first_positional(forward):
        # Forward may reshape its input before the layer (`self.conv(wav.unsqueeze(1))`):
        # the common shapes come after the layer's two most likely ones.
        generic = [g for g in _generic(rank, seq, spatial) if g not in shaped]
        shaped = shaped[:2] + generic + shaped[2:]
    return shaped


def _first_positional(forward: ast.FunctionDef) -> ast.arg | None:
    params = [a for a in forward.args.posonlyargs + forward.args.args if a.arg not in ("self", "cls")]
    return params[0] if params else None


def _generic(rank: int | None, seq: int | None, spatial: int | None) -> list[str]:
    """Shapes for a tensor nothing describes (an activation, a residual wrapper): a
    sequence of features, then an image, then a flat batch; of `rank` when forward says."""
    shapes = [(BATCH, seq or _DEFAULT_SEQ, 64), (BATCH, 3, spatial or 32, spatial or 32), (BATCH, 64)]
    if rank is not None:
        shapes = [s for s in shapes if len(s) == rank] or [(BATCH,) + (8,) * (rank - 1)]
    return [f"torch.randn({', '.join(map(str, shape))})" for shape in shapes]


def _shapes_for(layer: _Layer, rank: int | None, seq: int | None, spatial: int | None) -> list[str]:
    shapes: list[tuple[int, ...]] = []
    if layer.kind == "conv":
        for side in _dedupe([spatial, *_DEFAULT_SPATIAL]):
            shapes.append((BATCH, layer.size) + (side,) * layer.spatial_rank)
    elif layer.kind == "norm2d":
        for side in _dedupe([spatial, *_DEFAULT_SPATIAL]):
            shapes.append((BATCH, layer.size, side, side))
    elif layer.kind == "sequence":
        for length in _dedupe([seq, _DEFAULT_SEQ]):
            shapes.append((BATCH, length, layer.size) if layer.batch_first else (length, BATCH, layer.size))
    else:  # linear, norm: the last dimension is the layer's
        lengths = _dedupe([seq, _DEFAULT_SEQ])
        if rank == 2:
            shapes.append((BATCH, layer.size))
        elif rank is not None and rank > 2:
            shapes += [(BATCH,) + (length,) * (rank - 2) + (layer.size,) + layer.trailing for length in lengths]
        else:
            shapes += [(BATCH, length, layer.size) + layer.trailing for length in lengths]
            if layer.kind == "linear":
                shapes.append((BATCH, layer.size))
    return [f"torch.randn({', '.join(map(str, shape))})" for shape in shapes]


def _first_layer(forward: ast.FunctionDef, name: str, instance: torch.nn.Module) -> _Layer | None:
    """The layer `forward` first calls on the parameter itself (`self.conv(x)`,
    `self.transformer.wte(idx)`), read from the instance; when forward hands it to no layer
    of its own first and it is forward's first parameter, the instance's first layer."""
    calls = sorted((n for n in ast.walk(forward) if isinstance(n, ast.Call)), key=lambda n: (n.lineno, n.col_offset))
    # The parameter itself, then what keeps its shape on the way (`self.act(t)`,
    # `F.silu(t)`, a layer without sizes): innermost calls come later in this order, so
    # walk it until nothing more is reached.
    carrying: list[ast.expr] = []
    for _ in range(4):
        progressed = False
        for call in calls:
            if call in carrying or not call.args or not _carries(call.args[0], name, carrying):
                continue
            path = _self_path(call.func)
            target: Any = instance
            for part in path or ():
                target = getattr(target, part, None)
            if path is not None and isinstance(target, torch.nn.Module):
                found = _describe(_first_leaf(target))
                if found is not None:
                    return found
                carrying.append(call)  # an activation, a dropout: the shape goes on
                progressed = True
            elif _is_elementwise(call.func):
                carrying.append(call)
                progressed = True
        if not progressed:
            break
    first = _first_positional(forward)
    if first is not None and first.arg == name:
        return _describe(_first_leaf(instance))
    return None


def _carries(node: ast.expr, name: str, carrying: list[ast.expr]) -> bool:
    return (isinstance(node, ast.Name) and node.id == name) or any(node is c for c in carrying)


_ELEMENTWISE = {"relu", "gelu", "silu", "sigmoid", "tanh", "mish", "leaky_relu", "elu", "softplus", "dropout"}


def _is_elementwise(func: ast.expr) -> bool:
    """`F.silu(t)`, `torch.relu(t)`: the result has the argument's shape."""
    return isinstance(func, ast.Attribute) and func.attr in _ELEMENTWISE


def _self_path(node: ast.expr) -> list[str] | None:
    """`self.a.b` -> ["a", "b"]; None for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id == "self" and parts:
        return list(reversed(parts))
    return None


def _first_leaf(module: torch.nn.Module) -> torch.nn.Module:
    """The first layer with weights, in registration order (which is how most models are
    written: the stem first)."""
    for child in module.modules():
        if _describe(child) is not None:
            return child
    return module


def _describe(layer: torch.nn.Module) -> _Layer | None:
    nn = torch.nn
    if isinstance(layer, (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d)):
        return _Layer("conv", int(layer.in_channels), spatial_rank=len(layer.kernel_size))
    if isinstance(layer, nn.Linear):
        return _Layer("linear", int(layer.in_features))
    if isinstance(layer, (nn.Embedding, nn.EmbeddingBag)):
        return _Layer("embedding", int(layer.num_embeddings))
    if isinstance(layer, nn.LayerNorm) and layer.normalized_shape:
        shape = tuple(int(s) for s in layer.normalized_shape)
        return _Layer("norm", shape[0], trailing=shape[1:])
    if isinstance(layer, (nn.BatchNorm2d, nn.InstanceNorm2d)) and layer.num_features:
        return _Layer("norm2d", int(layer.num_features))
    if isinstance(layer, nn.GroupNorm):
        return _Layer("norm2d", int(layer.num_channels))
    if isinstance(layer, nn.BatchNorm1d):
        return _Layer("linear", int(layer.num_features))
    if isinstance(layer, nn.MultiheadAttention):
        return _Layer("sequence", int(layer.embed_dim), batch_first=bool(layer.batch_first))
    if isinstance(layer, nn.RNNBase):
        return _Layer("sequence", int(layer.input_size), batch_first=bool(layer.batch_first))
    return _own_weight_layer(layer)


def _own_weight_layer(layer: torch.nn.Module) -> _Layer | None:
    """A layer of the project's own (a weight-normalised `Conv2d`, a `Linear` with a gain)
    described by the `weight` parameter it keeps in torch's own layout, which its forward
    hands to `F.conv*d` / `F.linear`: `(out, in, *kernel)` is a convolution over
    `len(kernel)` spatial dimensions, `(out, in)` a linear layer. torch's own modules are
    described above or not at all (`nn.Bilinear`'s 3-D weight is no convolution)."""
    if type(layer).__module__.split(".", 1)[0] == "torch":
        return None
    weight = dict(layer.named_parameters(recurse=False)).get("weight")
    if not isinstance(weight, torch.Tensor) or not 2 <= weight.dim() <= 5 or weight.shape[1] < 1:
        return None
    if weight.dim() == 2:
        return _Layer("linear", int(weight.shape[1]))
    return _Layer("conv", int(weight.shape[1]), spatial_rank=weight.dim() - 2)


def _declared_size(instance: torch.nn.Module, names: tuple[str, ...]) -> int | None:
    """The first of `names` an instance (or a submodule, or its `config`) sets to a
    positive int (or a square pair), in module order."""
    for module in instance.modules():
        holders = [module, getattr(module, "config", None)]
        for holder in holders:
            if holder is None:
                continue
            for name in names:
                value = getattr(holder, name, None)
                if isinstance(value, (tuple, list)) and len(value) == 2 and value[0] == value[1]:
                    value = value[0]
                if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= 4096:
                    return value
    return None


def _vocabulary(instance: torch.nn.Module) -> int:
    """Token ids must be below the first embedding's size (else any id is fine)."""
    for module in instance.modules():
        if isinstance(module, torch.nn.Embedding):
            return int(module.num_embeddings)
    return 10


def _dedupe(values: list[int | None]) -> list[int]:
    return list(dict.fromkeys(v for v in values if v is not None))


# -- the arguments an enclosing model hands a submodule ---------------------------------------


@dataclass(frozen=True)
class SeenCall:
    """A submodule's first call in an enclosing class's inferred run: the submodule as that
    class built it, where (`path`: the attribute path from the enclosing instance), and its
    arguments as a candidate expression."""

    instance: torch.nn.Module
    enclosing: str  # the enclosing class's name
    path: str
    expression: str
    guessed_build: bool  # the enclosing class was built with arguments atenlint inferred


@dataclass
class RecordedCalls:
    """What `recording_calls` saw of one run: every submodule class whose forward was called
    (`called`: the classes the run really judged; one the model holds but never calls is
    not among them), and each one's first call that an expression can write (`first`)."""

    called: set[type] = field(default_factory=set)
    first: dict[type, SeenCall] = field(default_factory=dict)


@contextlib.contextmanager
def recording_calls(instance: torch.nn.Module, enclosing: str, guessed_build: bool) -> Iterator[RecordedCalls]:
    """While `instance` runs: the classes of the submodules called, and each submodule
    type's first call whose arguments an expression can write (tensors, with their shapes
    and dtypes; numbers, bools, None, tuples of them; keywords only where they are
    positional parameters). Forward pre-hooks, removed after."""
    recorded = RecordedCalls()
    seen = recorded.first
    paths = {id(module): name for name, module in instance.named_modules() if module is not instance}

    def record(module: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if id(module) not in paths:
            return
        recorded.called.add(type(module))
        if type(module) in seen:
            return
        expression = call_expression(module, args, kwargs)
        if expression is not None:
            seen[type(module)] = SeenCall(module, enclosing, paths[id(module)], expression, guessed_build)

    with submodule_pre_hooks(instance, record, with_kwargs=True):
        yield recorded


def call_expression(module: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    """`module(*args, **kwargs)`'s arguments as one positional candidate expression, or None
    when one of them cannot be written (an object, a keyword-only parameter, a tensor of a
    dtype no expression makes)."""
    values = list(args)
    if kwargs:
        try:
            parameters = list(inspect.signature(module.forward).parameters.values())
        except (TypeError, ValueError):
            return None
        positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        if any(name not in {p.name for p in positional[len(values) :]} for name in kwargs):
            return None  # keyword-only, or given twice
        last = max(i for i, p in enumerate(positional) if p.name in kwargs)
        for parameter in positional[len(values) : last + 1]:
            if parameter.name in kwargs:
                values.append(kwargs[parameter.name])
            elif parameter.default is not inspect.Parameter.empty:
                values.append(parameter.default)
            else:
                return None
    written = [_value_expression(value) for value in values]
    if any(w is None for w in written):
        return None
    return _tuple_literal([w for w in written if w is not None])


_FLOAT_DTYPES = {
    torch.float32: "",
    torch.float16: "torch.float16",
    torch.bfloat16: "torch.bfloat16",
    torch.float64: "torch.float64",
}
_INT_DTYPES = {
    torch.int64: "",
    torch.int32: "torch.int32",
    torch.int16: "torch.int16",
    torch.int8: "torch.int8",
    torch.uint8: "torch.uint8",
}


def _value_expression(value: Any) -> str | None:
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, (int, float)):
        return repr(value) if math.isfinite(value) else None  # nan and inf are no literals
    if isinstance(value, (tuple, list)):
        items = [_value_expression(item) for item in value]
        if any(i is None for i in items):
            return None
        written = [i for i in items if i is not None]
        return f"[{', '.join(written)}]" if isinstance(value, list) else _tuple_literal(written)
    if not isinstance(value, torch.Tensor):
        return None
    shape = _tuple_literal([str(int(size)) for size in value.shape])
    if value.dtype in _FLOAT_DTYPES:
        dtype = _FLOAT_DTYPES[value.dtype]
        return f"torch.randn({shape}{', dtype=' + dtype if dtype else ''})"
    if value.dtype in _INT_DTYPES:
        # 0 and 1: an index into any table of two or more rows, a valid class label, a step.
        dtype = _INT_DTYPES[value.dtype]
        return f"torch.randint(0, 2, {shape}{', dtype=' + dtype if dtype else ''})"
    if value.dtype == torch.bool:
        return f"torch.ones({shape}, dtype=torch.bool)"
    return None


def _tuple_literal(items: list[str]) -> str:
    """Python's tuple display of `items` (a one-item tuple keeps its comma)."""
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
