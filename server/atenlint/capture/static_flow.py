"""What the static pass knows about the user's code without running it: which names are
tensors, and which calls `forward` reaches in eval, in training, or only when an optional
argument is given.

Reads `ast` only (no user code; torch is consulted to tell its functions from its classes). Two questions, answered conservatively:

* Is the receiver of `obj.method(...)` a tensor? Only then is the call a tensor op. A name is
  a tensor when the source says so — a `Tensor` annotation or docstring, an assignment from
  a torch call, tensor arithmetic, `isinstance(x, torch.Tensor)`, or a use only tensors
  have (passed to a torch function or layer, `.view()`, `.size()`) — and not when it is
  annotated otherwise, narrowed by `isinstance` to another class, assigned a literal, a
  numpy or builtin result, or is a module. Otherwise the pass is silent.
* Which branch runs? `if self.training` / `if not self.training: return x` split train and
  eval (export targets only judge eval), also where a helper is passed `self.training`;
  `torch.jit.is_scripting()` is false (every toolchain that judges ops converts a graph
  Python produced), `torch.jit.is_tracing()` true only for the toolchains that convert a
  trace, a tensor's `is_quantized` false (float models); a branch forward takes only when
  an optional argument (`return_loss=False`, `mask=None`) is given is marked optional
  (information).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from .. import torchcompat
from ..python_parse import parse_expression

TENSOR, OTHER = "tensor", "other"

_TENSOR_ANNOTATIONS = {
    "Tensor",
    "FloatTensor",
    "LongTensor",
    "IntTensor",
    "BoolTensor",
    "HalfTensor",
    "DoubleTensor",
    "ByteTensor",
    "Parameter",
}
_JAXTYPING = {
    "Float",
    "Float32",
    "Float16",
    "BFloat16",
    "Shaped",
    "Num",
    "Real",
    "Inexact",
    "Int",
    "Int64",
    "Int32",
    "Integer",
    "Long",
    "UInt8",
    "Bool",
}
# Tensor methods no dict, list, str, numpy array or typical user class has: calling one
# says the receiver is a tensor.
_TENSOR_ONLY_METHODS = {
    "view",
    "view_as",
    "permute",
    "unsqueeze",
    "unsqueeze_",
    "contiguous",
    "size",
    "dim",
    "masked_fill",
    "masked_fill_",
    "expand",
    "expand_as",
    "unflatten",
    "type_as",
    "new_zeros",
    "new_ones",
    "new_empty",
    "new_full",
    "new_tensor",
    "softmax",
    "log_softmax",
    "bmm",
    "chunk",
    "narrow",
    "unfold",
    "repeat_interleave",
    "clamp",
    "clamp_",
    "masked_select",
    "index_select",
    "scatter",
    "scatter_",
    "scatter_add",
    "index_add",
    "index_fill",
    "detach",
    "requires_grad_",
    "numel",
    "element_size",
    "sigmoid",
    "tanh",
    "relu",
    "softplus",
    "exp",
    "log",
    "sqrt",
    "rsqrt",
    "pow",
    "norm",
    "matmul",
    "float",
    "double",
    "half",
    "long",
    "bool",
    "bfloat16",
    "is_contiguous",
    "masked_scatter",
    "triu",
    "tril",
    "addmm",
    "baddbmm",
    "flip",
    "roll",
    "movedim",
    "einsum",
    "gelu",
    "silu",
    "mul",
    "add",
    "sub",
    "div",
    "addcmul",
    "lerp",
    "neg",
    "reciprocal",
    "abs",
}
# Tensor methods whose result is not one tensor.
_NON_TENSOR_RESULTS = {
    "item",
    "tolist",
    "size",
    "dim",
    "numel",
    "numpy",
    "stride",
    "data_ptr",
    "element_size",
    "nelement",
    "is_contiguous",
    "is_floating_point",
    "is_complex",
    "get_device",
    "unbind",
    "split",
    "chunk",
    "tensor_split",
    "max",
    "min",
    "sort",
    "topk",
    "kthvalue",
    "mode",
    "median",
    "aminmax",
    "storage",
    "untyped_storage",
    "type",
    "__len__",
    "all",
    "any",
    "equal",
}
# "outputs: dict of tensors" documents a container, not a tensor.
_CONTAINER_WORDS = ("dict", "list", "tuple", "sequence", "iterable", "mapping", "tensors", "array", "numpy")
# Methods only containers have: a name calling one is not a tensor.
_CONTAINER_METHODS = {
    "items",
    "keys",
    "get",
    "append",
    "extend",
    "update",
    "setdefault",
    "pop",
    "popitem",
    "insert",
    "remove",
    "startswith",
    "endswith",
    "join",
    "format",
    "lower",
    "upper",
}
_TENSOR_ATTRIBUTES = {"T", "mT", "H", "mH", "data", "grad", "real", "imag"}
_OTHER_ATTRIBUTES = {"shape", "dtype", "device", "ndim", "is_cuda", "requires_grad", "layout"}
_BUILTIN_OTHER = {
    "len",
    "int",
    "float",
    "bool",
    "str",
    "range",
    "list",
    "dict",
    "tuple",
    "set",
    "sorted",
    "zip",
    "enumerate",
    "isinstance",
    "hasattr",
    "repr",
    "type",
    "id",
    "map",
    "filter",
    "reversed",
    "iter",
    "frozenset",
    "round",
    "divmod",
    "print",
    "format",
    "open",
    "vars",
    "dir",
    "callable",
}
# Torch functions that do not return one tensor.
_TORCH_NON_TENSOR = {
    "is_tensor",
    "is_floating_point",
    "is_complex",
    "numel",
    "split",
    "chunk",
    "unbind",
    "meshgrid",
    "broadcast_tensors",
    "broadcast_shapes",
    "Size",
    "device",
    "dtype",
    "get_default_dtype",
    "is_grad_enabled",
    "no_grad",
    "enable_grad",
    "tensor_split",
    "sort",
    "topk",
    "max",
    "min",
    "std_mean",
    "var_mean",
    "lu",
    "qr",
    "svd",
    "eig",
    "slogdet",
    "histogram",
    "unique_consecutive",
    "is_nonzero",
    "result_type",
    "promote_types",
    "can_cast",
    "finfo",
    "iinfo",
    "jit",
    "compile",
    "manual_seed",
    "set_grad_enabled",
    "inference_mode",
    "autocast",
    "load",
    "save",
}
_NUMPY_ROOTS = {
    "numpy",
    "np",
    "math",
    "random",
    "cv2",
    "PIL",
    "scipy",
    "pandas",
    "json",
    "os",
    "re",
    "sys",
    "collections",
    "itertools",
    "functools",
}
# Torch layers whose call does not return one tensor.
_TUPLE_LAYERS = {
    "LSTM",
    "GRU",
    "RNN",
    "LSTMCell",
    "MultiheadAttention",
    "ModuleList",
    "ModuleDict",
    "Sequential",
    "ParameterList",
    "ParameterDict",
}

_UNKNOWN = object()


@dataclass(frozen=True)
class Context:
    """Where in forward a call sits."""

    training: bool | None = None  # True: reached only in training; False: only in eval
    optional: bool = False  # only when an optional argument is given (information)
    narrowed: tuple[tuple[str, str | None], ...] = ()  # ((name, kind), ...) from an enclosing isinstance test
    # True: reached only under `torch.jit.is_tracing()` (the toolchains that convert a
    # trace); False: only when not tracing (eager, torch.export).
    tracing: bool | None = None
    # This function's parameters that the caller passed `self.training` (`drop_path(x, p,
    # self.training)`): a test on them is a test on the mode.
    training_names: tuple[str, ...] = ()

    def narrow(self, name: str, kind: str | None) -> Context:
        rest = tuple(item for item in self.narrowed if item[0] != name)
        return replace(self, narrowed=rest + ((name, kind),))

    def key(self) -> tuple[Any, ...]:
        return (self.training, self.optional, self.tracing, self.training_names)


ROOT = Context()


@dataclass
class Facts:
    """What the file says that the flow needs: torch aliases, other modules, the class's
    attributes, helper functions (for `exists(x)`), and how to tell a torch path."""

    torch_path: Any  # callable(node) -> dotted torch path or None
    resolve_torch: Any  # callable(path) -> torch object or None
    module_names: dict[str, str] = field(default_factory=dict)  # local name -> non-torch module (np -> numpy)
    project_names: set[Any] = field(default_factory=set)  # the project's classes and functions imported here
    # module-level functions (`exists`, `default`)
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = field(default_factory=dict)
    attributes: dict[str, str] = field(default_factory=dict)  # self.<name> -> kind, from __init__
    layers: dict[str, str] = field(default_factory=dict)  # self.<name> -> torch layer class name
    # self.<name> -> the literal default of the constructor parameter __init__ stores in it
    # (`self.immiscible = immiscible`, `immiscible=False`): a branch on it that the default
    # does not take runs only when the model is built with another value (information).
    settings: dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------------------
# Kinds of names


def annotation_kind(annotation: ast.AST | None) -> str | None:
    if annotation is None:
        return None
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = parse_expression(annotation.value).body
        except SyntaxError:
            return None
    if isinstance(annotation, ast.Constant) and annotation.value is None:
        return OTHER
    if isinstance(annotation, (ast.Name, ast.Attribute)):
        last = ast.unparse(annotation).split(".")[-1]
        if last in _TENSOR_ANNOTATIONS:
            return TENSOR
        return OTHER  # dict, int, a class of the project: not a tensor
    if isinstance(annotation, ast.Subscript):
        head = ast.unparse(annotation.value).split(".")[-1]
        if head in _JAXTYPING:
            return TENSOR
        inner = annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else [annotation.slice]
        if head == "Optional":
            return annotation_kind(inner[0])
        if head == "Union":
            kinds = {annotation_kind(i) for i in inner if not (isinstance(i, ast.Constant) and i.value is None)}
            return kinds.pop() if len(kinds) == 1 else None
        return OTHER  # Dict[...], List[...], Tuple[...]
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):  # `Tensor | None`
        kinds = {
            annotation_kind(side)
            for side in (annotation.left, annotation.right)
            if not (isinstance(side, ast.Constant) and side.value is None)
        }
        return kinds.pop() if len(kinds) == 1 else None
    return None


def documented_tensors(function: ast.FunctionDef) -> set[Any]:
    """Parameters a docstring calls tensors: `x (Tensor): ...`, `x: torch.Tensor of shape ...`,
    `:param x: ... tensor` / `:type x: Tensor`."""
    doc = ast.get_docstring(function) or ""
    found = set()
    names = {a.arg for a in function.args.args + function.args.kwonlyargs + function.args.posonlyargs}
    for line in doc.splitlines():
        stripped = line.strip().lstrip("`*")
        for name in names:
            if not stripped.startswith(name):
                continue
            rest = stripped[len(name) :].lstrip("`* ")
            head = rest[:60].lower()
            described = (
                head.split(")")[0] if rest.startswith("(") else head.split(".")[0] if rest.startswith(":") else ""
            )
            if "tensor" in described and not any(word in described for word in _CONTAINER_WORDS):
                found.add(name)
        if stripped.startswith(":type ") and "tensor" in stripped.lower():
            name = stripped[6:].split(":")[0].strip()
            found.add(name)
    return found


class Kinds:
    """Tensor or not, for the names of one function (flow-insensitive, evidence-based)."""

    def __init__(self, function: ast.AST, facts: Facts):
        self.facts = facts
        self.names: dict[str, str | None] = {}
        arguments = getattr(function, "args", None)
        votes: dict[str, set[str]] = {}
        if arguments is not None:
            documented = documented_tensors(function) if isinstance(function, ast.FunctionDef) else set()
            for argument in arguments.posonlyargs + arguments.args + arguments.kwonlyargs:
                kind = annotation_kind(argument.annotation)
                if kind is None and argument.arg in documented:
                    kind = TENSOR
                if argument.arg in ("self", "cls"):
                    kind = OTHER
                if kind is not None:
                    votes.setdefault(argument.arg, set()).add(kind)
            for extra in (arguments.vararg, arguments.kwarg):
                if extra is not None:
                    votes.setdefault(extra.arg, set()).add(OTHER)
        body = getattr(function, "body", [])
        if not isinstance(body, list):
            body = [ast.Expr(body)]  # a lambda
        self.names = _resolve(votes)
        for _ in range(2):  # twice: `y = x * 2` after `x = torch.ones(3)` sees x as a tensor
            round_votes = {name: set(kinds) for name, kinds in votes.items()}
            for node in _walk_body(body):
                self._bind(node, round_votes)
            for name in self._evidence(body):
                round_votes.setdefault(name, set()).add(TENSOR)
            for name in _container_evidence(body):
                round_votes.setdefault(name, set()).add(OTHER)
            self.names = _resolve(round_votes)

    def _bind(self, node: ast.AST, votes: dict[str, set[str]]) -> None:
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            value = node.value
            if value is None:
                return
            if isinstance(node, ast.AnnAssign):
                kind = annotation_kind(node.annotation) or self.of(value)
            elif isinstance(node, ast.AugAssign):
                kind = self.of(ast.BinOp(left=node.target, op=node.op, right=value))
            else:
                kind = self.of(value)
            for target in targets:
                if isinstance(target, ast.Name):
                    if kind is not None:
                        votes.setdefault(target.id, set()).add(kind)
                elif isinstance(target, (ast.Tuple, ast.List)):
                    element = self._unpacked(value)
                    for item in target.elts:
                        if isinstance(item, ast.Name) and element is not None:
                            votes.setdefault(item.id, set()).add(element)
        elif (
            isinstance(node, (ast.For, ast.comprehension))
            and isinstance(node.target, ast.Name)
            and isinstance(node.iter, ast.Call)
            and isinstance(node.iter.func, ast.Name)
            and node.iter.func.id == "range"
        ):
            votes.setdefault(node.target.id, set()).add(OTHER)

    def _unpacked(self, value: ast.AST) -> str | None:
        """The kind of each name in `a, b = value`."""
        if isinstance(value, ast.Attribute) and value.attr == "shape":
            return OTHER
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
            if value.func.attr == "size":
                return OTHER
            if value.func.attr in ("chunk", "split", "unbind", "tensor_split") and self.of(value.func.value) == TENSOR:
                return TENSOR
        if isinstance(value, ast.Call):
            path = self.facts.torch_path(value.func)
            if path and path.split(".")[-1] in ("chunk", "split", "unbind", "meshgrid", "broadcast_tensors"):
                return TENSOR
        if isinstance(value, (ast.Tuple, ast.List)):
            kinds = {self.of(e) for e in value.elts}
            return kinds.pop() if len(kinds) == 1 else None
        return None

    def _evidence(self, body: list[Any]) -> set[Any]:
        """Names used the way only tensors are."""
        found = set()
        for node in _walk_body(body):
            if isinstance(node, ast.Call):
                func = node.func
                if (
                    isinstance(func, ast.Attribute)
                    and isinstance(func.value, ast.Name)
                    and func.attr in _TENSOR_ONLY_METHODS
                ):
                    found.add(func.value.id)
                path = self.facts.torch_path(func)
                if path is not None and _takes_tensors(path, self.facts):
                    for argument in node.args[:1]:
                        for name in _names_in_first(argument):
                            found.add(name)
                layer = _self_attribute(func)
                if layer is not None and layer in self.facts.layers and node.args:
                    for name in _names_in_first(node.args[0]):
                        found.add(name)
            elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
                for side in (node.left, node.right):
                    if isinstance(side, ast.Name):
                        found.add(side.id)
        return {name for name in found if self.names.get(name) != OTHER}

    def of(self, node: ast.AST, context: Context = ROOT) -> str | None:
        """TENSOR, OTHER, or None (unsure) for an expression."""
        if isinstance(node, ast.Name):
            for name, kind in context.narrowed:
                if name == node.id:
                    return kind
            if node.id in self.names:
                known: str | None = self.names[node.id]
                return known
            if node.id in self.facts.module_names or node.id in self.facts.project_names:
                return OTHER
            if self.facts.torch_path(node) is not None:
                return OTHER  # torch itself, F, nn: a module, not a tensor
            return None
        if isinstance(
            node,
            (
                ast.Constant,
                ast.List,
                ast.Dict,
                ast.Set,
                ast.ListComp,
                ast.DictComp,
                ast.SetComp,
                ast.JoinedStr,
                ast.GeneratorExp,
                ast.Lambda,
                ast.Compare,
            ),
        ):
            if isinstance(node, ast.Compare):
                return TENSOR if any(self.of(s, context) == TENSOR for s in [node.left] + node.comparators) else None
            return OTHER
        if isinstance(node, ast.Tuple):
            return OTHER
        if isinstance(node, ast.Attribute):
            owner = node.value
            if isinstance(owner, ast.Name) and owner.id == "self":
                return self.facts.attributes.get(node.attr)
            if self.facts.torch_path(node) is not None:
                value = self.facts.resolve_torch(self.facts.torch_path(node))
                return None if value is None else OTHER
            kind = self.of(owner, context)
            if kind == TENSOR:
                if node.attr in _TENSOR_ATTRIBUTES:
                    return TENSOR
                if node.attr in _OTHER_ATTRIBUTES:
                    return OTHER
            return None
        if isinstance(node, ast.Subscript):
            return TENSOR if self.of(node.value, context) == TENSOR else None
        if isinstance(node, ast.BinOp):
            kinds = {self.of(node.left, context), self.of(node.right, context)}
            return TENSOR if TENSOR in kinds else (OTHER if kinds == {OTHER} else None)
        if isinstance(node, ast.UnaryOp):
            return self.of(node.operand, context)
        if isinstance(node, ast.IfExp):
            kinds = {self.of(node.body, context), self.of(node.orelse, context)}
            return kinds.pop() if len(kinds) == 1 else None
        if isinstance(node, ast.Call):
            return self._call(node, context)
        return None

    def _call(self, node: ast.Call, context: Context) -> str | None:
        func = node.func
        path = self.facts.torch_path(func)
        if path is not None:
            target = self.facts.resolve_torch(path)
            last = path.split(".")[-1]
            if isinstance(target, type):
                return TENSOR if _is_tensor_class(target) else OTHER
            if last in _TORCH_NON_TENSOR or target is None:
                return None
            return TENSOR
        if isinstance(func, ast.Name):
            if func.id in _BUILTIN_OTHER:
                return OTHER
            return None
        if isinstance(func, ast.Attribute):
            root = _root_name(func)
            if root in self.facts.module_names and root not in self.names:
                module = self.facts.module_names[root].split(".")[0]
                return OTHER if module in _NUMPY_ROOTS else None
            layer = _self_attribute(func)
            if layer is not None and layer in self.facts.layers:
                return None if self.facts.layers[layer] in _TUPLE_LAYERS else TENSOR
            if self.of(func.value, context) == TENSOR:
                return None if func.attr in _NON_TENSOR_RESULTS else TENSOR
        return None


def _container_evidence(body: list[Any]) -> set[Any]:
    """Names used the way only dicts, lists and strings are: `.items()`, `x["key"]`."""
    found = set()
    for node in _walk_body(body):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.attr in _CONTAINER_METHODS
        ):
            found.add(node.func.value.id)
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, str)
        ):
            found.add(node.value.id)
    return found


def _resolve(votes: dict[str, set[str]]) -> dict[str, str | None]:
    """One kind per name where every piece of evidence agrees; unsure (None) otherwise."""
    return {name: (next(iter(kinds)) if len(kinds) == 1 else None) for name, kinds in votes.items()}


def _takes_tensors(path: str, facts: Facts) -> bool:
    """A torch function whose first argument is a tensor (F.relu, torch.cat's list), not a
    size (torch.zeros(n))."""
    import torch  # the worker's torch; this module is only used there

    last = path.split(".")[-1]
    if ".functional." in path or path.startswith("torch.nn.functional"):
        return True
    if last.endswith("_like") or last in (
        "cat",
        "stack",
        "concat",
        "concatenate",
        "hstack",
        "vstack",
        "where",
        "einsum",
    ):
        return True
    return hasattr(torch.Tensor, last) and last not in ("zero_", "new_zeros", "new_ones", "new_empty")


def _names_in_first(node: ast.AST) -> list[Any]:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, (ast.List, ast.Tuple)):
        return [e.id for e in node.elts if isinstance(e, ast.Name)]
    return []


def _is_tensor_class(cls: type) -> bool:
    import torch

    try:
        return issubclass(cls, torch.Tensor)
    except TypeError:
        return False


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _self_attribute(func: ast.AST) -> str | None:
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
        return func.attr
    return None


def _walk_body(body: list[Any]) -> Iterator[ast.AST]:
    for statement in body:
        yield from ast.walk(statement)


def class_attributes(
    init: ast.FunctionDef | ast.AsyncFunctionDef | None, facts: Facts
) -> tuple[dict[str, str], dict[str, str]]:
    """From __init__: self.<name> -> TENSOR/OTHER, and self.<name> -> torch layer class name."""
    kinds: dict[str, set[str]] = {}
    layers: dict[str, str] = {}
    if init is None:
        return {}, {}
    local = Kinds(init, facts)
    for node in ast.walk(init):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                name = _self_attribute(target)
                if name is None:
                    continue
                value = node.value
                if isinstance(value, ast.Call):
                    path = facts.torch_path(value.func)
                    obj = facts.resolve_torch(path) if path else None
                    if isinstance(obj, type) and not _is_tensor_class(obj):
                        layers[name] = obj.__name__
                        kinds.setdefault(name, set()).add(OTHER)
                        continue
                kind = local.of(value)
                if (
                    kind is None
                    and isinstance(value, ast.Call)
                    and isinstance(value.func, ast.Name)
                    and value.func.id in facts.project_names
                    and value.func.id[:1].isupper()
                ):
                    kind = OTHER  # an instance of one of the project's classes
                if kind is not None:
                    kinds.setdefault(name, set()).add(kind)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("register_buffer", "register_parameter")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            kinds.setdefault(node.args[0].value, set()).add(TENSOR)
    return {name: values.pop() for name, values in kinds.items() if len(values) == 1}, layers


def constructor_settings(
    init: ast.FunctionDef | ast.AsyncFunctionDef | None, methods: list[ast.FunctionDef | ast.AsyncFunctionDef]
) -> dict[str, tuple[str, Any]]:
    """self.<name> -> (the __init__ parameter stored in it, that parameter's literal
    default), for an attribute __init__ assigns once, straight from that parameter, and no
    other method of the class (`methods`) assigns."""
    if init is None:
        return {}
    arguments = init.args
    positional = arguments.posonlyargs + arguments.args
    defaults: dict[str, Any] = {}
    for argument, default in zip(positional[len(positional) - len(arguments.defaults) :], arguments.defaults):
        defaults[argument.arg] = _constant(default)
    for argument, keyword_default in zip(arguments.kwonlyargs, arguments.kw_defaults):
        if keyword_default is not None:
            defaults[argument.arg] = _constant(keyword_default)
    reassigned = {name for name in defaults if _assigned_names(init.body, name)}
    stored: dict[str, list[Any]] = {}
    for function in [init, *methods]:
        for node in ast.walk(function):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = list(node.targets)
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            for target in targets:
                for element in target.elts if isinstance(target, ast.Tuple) else [target]:
                    name = _self_attribute(element)
                    if name is None:
                        continue
                    value = getattr(node, "value", None)
                    source = (
                        value.id
                        if function is init and isinstance(node, ast.Assign) and isinstance(value, ast.Name)
                        else None
                    )
                    stored.setdefault(name, []).append(source)
    out: dict[str, tuple[str, Any]] = {}
    for name, sources in stored.items():
        source = sources[0]
        if len(sources) != 1 or source is None or source in reassigned or source not in defaults:
            continue
        value = defaults[source]
        if value is not _UNKNOWN and (value is None or isinstance(value, (bool, int, float, str))):
            out[name] = (source, value)
    return out


def init_parameters(init: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    arguments = init.args
    return {a.arg for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs}


def assigned_attributes(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """self.<name> that `function` assigns."""
    out = set()
    for node in ast.walk(function):
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        for target in targets:
            for element in target.elts if isinstance(target, ast.Tuple) else [target]:
                name = _self_attribute(element) if element is not None else None
                if name is not None:
                    out.add(name)
    return out


def _assigned_names(body: list[Any], name: str) -> bool:
    """Whether `name` is rebound in `body` (`immiscible = immiscible and x`)."""
    for node in _walk_body(body):
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store):
            return True
    return False


# ---------------------------------------------------------------------------
# Which calls run, and when


class Flow:
    """Every call in a function, with the context it runs in."""

    def __init__(self, function: ast.AST, facts: Facts, context: Context, entry: bool):
        self.facts = facts
        self.kinds = Kinds(function, facts)
        # forward's defaulted parameters: the default path is what inference runs.
        self.defaults: dict[str, Any] = {}
        arguments = getattr(function, "args", None)
        if entry and arguments is not None:
            positional = arguments.posonlyargs + arguments.args
            for argument, default in zip(positional[len(positional) - len(arguments.defaults) :], arguments.defaults):
                self.defaults[argument.arg] = _constant(default)
            for argument, default in zip(arguments.kwonlyargs, arguments.kw_defaults):
                if default is not None:
                    self.defaults[argument.arg] = _constant(default)
        self.function = function
        self.context = context

    def calls(self) -> Iterator[tuple[ast.Call, Context]]:
        body = getattr(self.function, "body", [])
        if isinstance(body, list):
            yield from self._block(body, self.context, dict(self.defaults))
        else:  # a lambda
            yield from self._expression(body, self.context)

    def _block(
        self, statements: list[Any], start: Context, values: dict[str, Any]
    ) -> Iterator[tuple[ast.Call, Context]]:
        context: Context | None = start
        for statement in statements:
            if context is None:
                return  # unreachable in every mode
            if isinstance(statement, ast.If):
                yield from self._expression(statement.test, context)
                body_context, else_context = self._branches(statement.test, context, values)
                if body_context is not None:
                    yield from self._block(statement.body, body_context, dict(values))
                if else_context is not None:
                    yield from self._block(statement.orelse, else_context, dict(values))
                body_exits, else_exits = _exits(statement.body), bool(statement.orelse) and _exits(statement.orelse)
                if body_exits and not else_exits:
                    context = else_context  # what follows runs only when the test was false
                elif else_exits and not body_exits:
                    context = body_context
                elif body_exits and else_exits:
                    context = None
                continue
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = statement.body
                yield from self._block(inner, context, dict(values))
                continue
            if (
                isinstance(statement, ast.Assign)
                and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)
            ):
                # `return_loss = exists(labels)`: a local that follows an optional argument.
                name = statement.targets[0].id
                value = self._value(statement.value, values, None)
                if value is not _UNKNOWN and self._mentions_optional(statement.value, values):
                    values[name] = value
                else:
                    values.pop(name, None)
            for child_block, expressions in _parts(statement):
                for expression in expressions:
                    yield from self._expression(expression, context)
                if child_block:
                    yield from self._block(child_block, context, dict(values))

    def _expression(self, node: ast.AST | None, context: Context) -> Iterator[tuple[ast.Call, Context]]:
        if node is None:
            return
        if isinstance(node, ast.IfExp):
            yield from self._expression(node.test, context)
            body_context, else_context = self._branches(node.test, context, dict(self.defaults))
            if body_context is not None:
                yield from self._expression(node.body, body_context)
            if else_context is not None:
                yield from self._expression(node.orelse, else_context)
            return
        if isinstance(node, ast.Call):
            yield node, context
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.AST) and not isinstance(child, (ast.expr_context,)):
                if isinstance(child, ast.Lambda):
                    yield from self._expression(child.body, context)
                else:
                    yield from self._expression(child, context)

    def _branches(
        self, test: ast.AST, context: Context, values: dict[str, Any]
    ) -> tuple[Context | None, Context | None]:
        """The contexts of the if-body and the else-branch (None: never runs)."""
        outcomes = {
            (training, tracing): self._value(test, values, training, defaults=False, tracing=tracing)
            for training in (False, True)
            for tracing in (False, True)
        }
        body = _with_modes(context, {mode for mode, value in outcomes.items() if _may_be(value, True)})
        orelse = _with_modes(context, {mode for mode, value in outcomes.items() if _may_be(value, False)})
        if self.defaults or self.facts.settings:
            by_default = self._value(test, values, None)
            if by_default is not _UNKNOWN and self._mentions_optional(test, values):
                if by_default:
                    orelse = replace(orelse, optional=True) if orelse is not None else None
                else:
                    body = replace(body, optional=True) if body is not None else None
        narrowed = _isinstance_test(test)
        if narrowed is not None and body is not None:
            name, classes = narrowed
            body = body.narrow(name, self._class_kind(classes))
        return body, orelse

    def _mentions_optional(self, test: ast.AST, values: dict[str, Any]) -> bool:
        names = {n.id for n in ast.walk(test) if isinstance(n, ast.Name)}
        settings = {_self_attribute(n) for n in ast.walk(test)} & set(self.facts.settings)
        return bool(names & (set(self.defaults) | set(values))) or bool(settings)

    def _class_kind(self, classes: ast.AST) -> str | None:
        items = classes.elts if isinstance(classes, ast.Tuple) else [classes]
        kinds = set()
        for item in items:
            path = self.facts.torch_path(item)
            target = self.facts.resolve_torch(path) if path else None
            if isinstance(target, type) and _is_tensor_class(target):
                kinds.add(TENSOR)
            else:
                kinds.add(OTHER)
        return kinds.pop() if len(kinds) == 1 else None

    def value(self, node: ast.AST, training: bool) -> Any:
        """A test's value in one mode (the replay of `dropout_p=p if self.training else 0`
        picks its argument by it); _UNKNOWN when unsure."""
        return self._value(node, {}, training, defaults=False)

    def _value(
        self,
        node: ast.AST,
        values: dict[str, Any],
        training: bool | None,
        defaults: bool = True,
        tracing: bool | None = None,
    ) -> Any:
        """The value of a test when `self.training` is `training`, `torch.jit.is_tracing()`
        is `tracing` and optional arguments keep their defaults (`defaults=False`: they are
        unknown); _UNKNOWN when unsure."""
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Attribute) and _self_attribute(node) == "training":
            return _UNKNOWN if training is None else training
        setting = _self_attribute(node)
        if setting is not None and setting in self.facts.settings:
            return self.facts.settings[setting] if defaults else _UNKNOWN
        if isinstance(node, ast.Attribute) and node.attr == "is_quantized" and _self_attribute(node) is None:
            # A tensor's flag (not a module's own `self.is_quantized` setting): atenlint judges
            # float models (it builds them so), so a quantized-tensor branch (torchvision
            # nms's `int_repr`) is never taken.
            return False
        if isinstance(node, ast.Call) and not node.args and not node.keywords:
            path = self.facts.torch_path(node.func)
            if path in _SCRIPTING_TESTS:
                # Every toolchain that judges ops converts a graph Python produced (eager,
                # a trace, torch.export); the torchscript target judges the compile itself.
                return False
            if path in _TRACING_TESTS:
                return _UNKNOWN if tracing is None else tracing
        if isinstance(node, ast.Name):
            if node.id in self.context.training_names:
                return _UNKNOWN if training is None else training
            if defaults and node.id in values:
                return values[node.id]
            return _UNKNOWN
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            value = self._value(node.operand, values, training, defaults, tracing)
            return _UNKNOWN if value is _UNKNOWN else not value
        if isinstance(node, ast.BoolOp):
            results = [self._value(v, values, training, defaults, tracing) for v in node.values]
            if isinstance(node.op, ast.And):
                if any(r is not _UNKNOWN and not r for r in results):
                    return False
                return True if all(r is not _UNKNOWN for r in results) else _UNKNOWN
            if any(r is not _UNKNOWN and r for r in results):
                return True
            return False if all(r is not _UNKNOWN for r in results) else _UNKNOWN
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left = self._value(node.left, values, training, defaults, tracing)
            right = self._value(node.comparators[0], values, training, defaults, tracing)
            if left is _UNKNOWN or right is _UNKNOWN:
                return _UNKNOWN
            op = node.ops[0]
            try:
                if isinstance(op, ast.Is):
                    return left is right
                if isinstance(op, ast.IsNot):
                    return left is not right
                if isinstance(op, ast.Eq):
                    return left == right
                if isinstance(op, ast.NotEq):
                    return left != right
            except Exception:  # noqa: BLE001 - odd constants: unsure
                return _UNKNOWN
            return _UNKNOWN
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) == 1:
            helper = self.facts.functions.get(node.func.id)
            if helper is not None and _is_not_none_helper(helper):
                value = self._value(node.args[0], values, training, defaults)
                return _UNKNOWN if value is _UNKNOWN else value is not None
        return _UNKNOWN


def _may_be(value: Any, truth: bool) -> bool:
    if value is _UNKNOWN:
        return True
    try:
        return bool(value) == truth
    except Exception:  # noqa: BLE001 - a constant without truth: unsure
        return True


_SCRIPTING_TESTS = torchcompat.SCRIPTING_TESTS
_TRACING_TESTS = torchcompat.TRACING_TESTS


def _with_modes(context: Context | None, modes: set[tuple[bool, bool]]) -> Context | None:
    """`context` narrowed to the (training, tracing) modes a branch runs in; None: none."""
    if context is None:
        return None
    modes = {
        (training, tracing)
        for training, tracing in modes
        if context.training in (None, training) and context.tracing in (None, tracing)
    }
    if not modes:
        return None
    trainings, tracings = {mode[0] for mode in modes}, {mode[1] for mode in modes}
    return replace(
        context,
        training=trainings.pop() if len(trainings) == 1 else context.training,
        tracing=tracings.pop() if len(tracings) == 1 else context.tracing,
    )


def _constant(node: ast.AST) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _UNKNOWN


def _is_not_none_helper(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """`def exists(val): return val is not None`."""
    body = [s for s in function.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Return) or len(function.args.args) != 1:
        return False
    value = body[0].value
    return (
        isinstance(value, ast.Compare)
        and len(value.ops) == 1
        and isinstance(value.ops[0], ast.IsNot)
        and isinstance(value.left, ast.Name)
        and value.left.id == function.args.args[0].arg
        and isinstance(value.comparators[0], ast.Constant)
        and value.comparators[0].value is None
    )


def _isinstance_test(test: ast.AST) -> tuple[str, ast.AST] | None:
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        for value in test.values:
            found = _isinstance_test(value)
            if found is not None:
                return found
        return None
    if (
        isinstance(test, ast.Call)
        and isinstance(test.func, ast.Name)
        and test.func.id == "isinstance"
        and len(test.args) == 2
        and isinstance(test.args[0], ast.Name)
    ):
        return test.args[0].id, test.args[1]
    return None


def _exits(block: list[Any]) -> bool:
    return bool(block) and isinstance(block[-1], (ast.Return, ast.Raise))


def _parts(statement: ast.stmt) -> list[tuple[list[Any], list[Any]]]:
    """(nested statements, expressions) of a statement other than `if`, in order."""
    if isinstance(statement, (ast.For, ast.AsyncFor)):
        return [([], [statement.iter]), (statement.body, []), (statement.orelse, [])]
    if isinstance(statement, ast.While):
        return [([], [statement.test]), (statement.body, []), (statement.orelse, [])]
    if isinstance(statement, (ast.With, ast.AsyncWith)):
        return [([], [item.context_expr for item in statement.items]), (statement.body, [])]
    if isinstance(statement, ast.Try) or type(statement).__name__ == "TryStar":
        tried: Any = statement  # ast.Try, or ast.TryStar (3.11+) of the same fields
        parts: list[tuple[list[Any], list[Any]]] = [(tried.body, [])]
        parts += [(handler.body, [handler.type] if handler.type else []) for handler in tried.handlers]
        return parts + [(tried.orelse, []), (tried.finalbody, [])]
    if type(statement).__name__ == "Match":
        match: Any = statement  # ast.Match (3.10+)
        return [([], [match.subject])] + [(case.body, [case.guard] if case.guard else []) for case in match.cases]
    return [([], [child for child in ast.iter_child_nodes(statement) if isinstance(child, ast.expr)])]
