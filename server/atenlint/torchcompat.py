"""The one module that touches torch's private API.

atenlint reads what only torch's internals know: the dispatcher's kernels per key, the
TorchScript compiler's graphs and passes, fake tensors and dispatch modes, the
decomposition tables, the ONNX exporters' registries, PyTorch's OpInfo database. None
of it is public, so any torch release may move or remove a piece. Every such use goes
through here, behind a feature check: a torch that lacks one loses that one
*capability*, with a note naming it ("the TorchScript call walk is unavailable on torch
X: classes are read from source"), never the whole analysis.

Each capability below is a `Capability` (what the user loses, in words) and the
functions that use it. A lookup that fails records a `Degradation`; `degradations()`
lists what this process has met so far (the worker sends them with its answers) and
`probe_all()` checks every cheap capability up front (the worker's `hello`).

Runs inside the worker: standard library and torch only, nothing else (not even the
rest of atenlint), so the server can import it too without pulling anything in.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import re
import sys
import threading
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

TORCH_VERSION = torch.__version__.split("+")[0]


# -- capabilities and what their loss means --------------------------------------------------


@dataclass(frozen=True)
class Capability:
    """One thing atenlint can do only through a private torch API."""

    name: str  # "the TorchScript call walk"
    consequence: str  # what happens instead, said to the user
    eager: bool = True  # cheap to check at worker start (no heavy import)


@dataclass(frozen=True)
class Degradation:
    """A capability this torch lacks, and why (the lookup that failed)."""

    capability: str
    consequence: str
    reason: str
    torch_version: str = TORCH_VERSION

    @property
    def message(self) -> str:
        return f"{self.capability} is unavailable on torch {self.torch_version}: {self.consequence}"

    def as_json(self) -> dict[str, str]:
        return {
            "capability": self.capability,
            "message": self.message,
            "reason": self.reason,
            "torch": self.torch_version,
        }


DISPATCHER = Capability(
    "the dispatcher's kernel lookup",
    "kernels are judged from native_functions.yaml only (kernels registered from Python and library ops' "
    "kernels are unknown), and TorchScript's own builtins may be taken for operators",
)
SCHEMAS = Capability(
    "TorchScript's operator schema table",
    "argument types of torch calls read from source are guessed from the dispatcher's overloads",
)
JIT_WALK = Capability("the TorchScript call walk", "classes are read from source instead of their scripted graph")
JIT_SPECIALISE = Capability(
    "TorchScript graph specialisation (constant propagation)",
    "library branches a call cannot take are reported too (possible false alarms)",
)
JIT_BUILTINS = Capability(
    "TorchScript's builtin table",
    "calls the TorchScript compiler drops as dead code (F.embedding's max_norm renorm) are not seen, and "
    "torch calls read from source are matched to operators by name only",
)
JIT_CACHES = Capability(
    "clearing TorchScript's type caches", "the worker is restarted instead after a file defines TorchScript classes"
)
JIT_FRONT_ENDS = Capability(
    "TorchScript's graph passes of the exporters' front ends",
    "the traced graph is judged as torch.jit.trace records it, before the passes coremltools and the "
    "TorchScript ONNX exporter run (ops they rename or remove may be reported)",
)
MODE_STACKS = Capability(
    "torch's mode stacks", "a mode an analysed file leaves entered is not detected, and later files may see it"
)
DISPATCH_MODE = Capability(
    "dispatch modes (TorchDispatchMode)",
    "ops are not traced with example inputs and composites are not expanded: each call is judged by its "
    "scripted op name",
)
FAKE_TENSORS = Capability(
    "fake tensors (FakeTensorMode)", "classes with example inputs are scripted instead of traced", eager=False
)  # ShapeEnv imports sympy
DECOMPOSITIONS = Capability(
    "torch's decomposition tables", "export targets judge each call by its op name, without the export decomposition"
)
ONNX_TORCHSCRIPT = Capability(
    "the TorchScript ONNX exporter's registry",
    "the onnx target cannot tell which ops the TorchScript exporter (dynamo=False) converts",
    eager=False,
)
ONNX_DYNAMO = Capability(
    "the dynamo ONNX exporter's registry",
    "the onnx target cannot judge the dynamo exporter (dynamo=True) from its registry",
    eager=False,
)
OPINFO = Capability(
    "PyTorch's OpInfo database (torch.testing._internal, needs numpy and expecttest)",
    "per-op MPS dtype limits (complex tensors) are not checked",
    eager=False,
)
DYNAMO = Capability(
    "Dynamo (torch.compile's graph capture)",
    "the compile target reports only the graph breaks it can read from source",
    eager=False,
)  # importing it loads sympy and Dynamo's own modules: only the compile view pays for it
WORKER_STATE = Capability(
    "torch's internal settings (print options, the TorchScript switch)",
    "an analysed file that changes them is not undone for later files",
)

CAPABILITIES: tuple[Capability, ...] = (
    DISPATCHER,
    SCHEMAS,
    JIT_WALK,
    JIT_SPECIALISE,
    JIT_BUILTINS,
    JIT_CACHES,
    JIT_FRONT_ENDS,
    MODE_STACKS,
    DISPATCH_MODE,
    FAKE_TENSORS,
    DECOMPOSITIONS,
    ONNX_TORCHSCRIPT,
    ONNX_DYNAMO,
    OPINFO,
    DYNAMO,
    WORKER_STATE,
)

_DEGRADED: dict[str, Degradation] = {}
_LOCK = threading.Lock()


class Unavailable(RuntimeError):
    """A capability this torch lacks: the caller takes its degraded path."""

    def __init__(self, degradation: Degradation):
        super().__init__(degradation.message)
        self.degradation = degradation


def not_for_this_object(capability: Capability, reason: str) -> Unavailable:
    """The capability exists but cannot serve this one object (a module without `forward`,
    a TorchScript class instance): that class takes the degraded path, and nothing is
    recorded — a record would make the worker take it for every later file too."""
    return Unavailable(Degradation(capability.name, capability.consequence, reason))


def degrade(capability: Capability, reason: str) -> Degradation:
    """Record that `capability` is lost (once per process) and return the record."""
    with _LOCK:
        found = _DEGRADED.get(capability.name)
        if found is None:
            found = _DEGRADED[capability.name] = Degradation(capability.name, capability.consequence, reason)
        return found


def degradations() -> list[dict[str, str]]:
    """Every capability lost so far in this process, as JSON."""
    with _LOCK:
        return [d.as_json() for d in _DEGRADED.values()]


def degradation_messages() -> list[str]:
    with _LOCK:
        return [d.message for d in _DEGRADED.values()]


def forget_degradations() -> None:
    """For tests: start over as if nothing had been looked up."""
    with _LOCK:
        _DEGRADED.clear()
    _FOUND.clear()


# -- lookups -------------------------------------------------------------------------------

_FOUND: dict[str, Any] = {}
_ABSENT = object()


def _resolve(path: str) -> Any:
    """The object a dotted path names, importing modules along it ("torch._C._jit_pass_dce",
    "torch.onnx._internal.exporter._registration.ONNXRegistry"); LookupError when absent."""
    cached = _FOUND.get(path, _ABSENT)
    if cached is not _ABSENT:
        if cached is None:
            raise LookupError(f"{path} does not exist")
        return cached
    parts = path.split(".")
    obj: Any = None
    index = 1
    # The longest prefix that imports as a module, then attributes.
    for end in range(len(parts), 0, -1):
        name = ".".join(parts[:end])
        try:
            obj = importlib.import_module(name)
        except ModuleNotFoundError as error:
            if error.name is not None and name != error.name and not name.startswith(error.name + "."):
                # A module that exists but needs a package that is not installed.
                _FOUND[path] = None
                raise LookupError(f"importing {name} failed: {error}") from None
            continue
        except Exception as error:  # noqa: BLE001 - a module that fails to import is absent too
            _FOUND[path] = None
            raise LookupError(f"importing {name} failed: {type(error).__name__}: {error}") from None
        index = end
        break
    else:
        _FOUND[path] = None
        raise LookupError(f"{parts[0]} cannot be imported")
    for part in parts[index:]:
        try:
            obj = getattr(obj, part)
        except AttributeError:
            _FOUND[path] = None
            raise LookupError(f"{path} does not exist") from None
    _FOUND[path] = obj
    return obj


def _first(capability: Capability, *paths: str) -> Any:
    """The first of `paths` this torch has (a later release may have moved it); records
    the degradation and raises Unavailable when none exists."""
    reasons = []
    for path in paths:
        try:
            return _resolve(path)
        except LookupError as error:
            reasons.append(str(error))
    raise Unavailable(degrade(capability, "; ".join(reasons)))


def _optional(capability: Capability, *paths: str) -> Any | None:
    try:
        return _first(capability, *paths)
    except Unavailable:
        return None


def available(capability: Capability) -> bool:
    """Whether every API of `capability` exists on this torch (checked now, recorded if not)."""
    for paths in _PROBES.get(capability.name, ()):
        if _optional(capability, *paths) is None:
            return False
    return capability.name not in _DEGRADED


def probe_all(heavy: bool = False) -> list[dict[str, str]]:
    """Check every capability (`heavy`: also those that import large parts of torch) and
    return what is lost."""
    for capability in CAPABILITIES:
        if capability.eager or heavy:
            available(capability)
    return degradations()


# -- the dispatcher ------------------------------------------------------------------------


def has_kernel(name: str, key: str) -> bool:
    """Whether the dispatcher has a kernel for op `name` ("aten::add.Tensor",
    "torchvision::nms") under dispatch key `key` ("MPS", "CompositeImplicitAutograd").
    Raises RuntimeError for a name that is no dispatcher op."""
    lookup = _optional(DISPATCHER, "torch._C._dispatch_has_kernel_for_dispatch_key")
    if lookup is not None:
        return bool(lookup(name, key))
    op = overload(*name.partition(".")[::2]) if "::" in name else None
    key_value = dispatch_key(key)
    if op is None or key_value is None:
        raise RuntimeError(f"cannot ask for a kernel of {name}: {DISPATCHER.name} is unavailable")
    try:
        return bool(op.has_kernel_for_dispatch_key(key_value))
    except Exception as error:  # noqa: BLE001 - the overload's own lookup is gone too
        raise RuntimeError(f"cannot ask for a kernel of {name}: {error}") from None


def op_has_kernel(op: Any, key: str) -> bool:
    """`has_kernel` for an OpOverload (False when the key does not exist on this torch)."""
    key_value = dispatch_key(key)
    if key_value is None:
        return False
    try:
        return bool(op.has_kernel_for_dispatch_key(key_value))
    except Exception:  # noqa: BLE001 - not an operator overload
        return False


def dispatch_key(name: str) -> Any | None:
    """torch's DispatchKey member of that name, or None."""
    keys = _optional(DISPATCHER, "torch._C.DispatchKey")
    return getattr(keys, name, None) if keys is not None else None


def registrations_for_key(key: str) -> list[str]:
    """Every op with a kernel registered for dispatch key `key` (including kernels
    registered from Python with torch.library); [] when unknown."""
    lookup = _optional(DISPATCHER, "torch._C._dispatch_get_registrations_for_dispatch_key")
    if lookup is None:
        return []
    try:
        return sorted(str(name) for name in lookup(key))
    except Exception:  # noqa: BLE001 - a key this build does not know
        return []


def all_op_names() -> list[str]:
    """Every dispatcher op ("aten::add", "torchvision::nms"), without overloads."""
    lookup = _optional(DISPATCHER, "torch._C._dispatch_get_all_op_names")
    if lookup is not None:
        return [str(name) for name in lookup()]
    return sorted({str(schema.name) for schema in all_schemas()})


def has_schema(qualified: str, overload_name: str) -> bool:
    """Whether `qualified.overload_name` is a dispatcher op (not a TorchScript-only builtin)."""
    lookup = _optional(DISPATCHER, "torch._C._dispatch_find_schema_or_throw")
    if lookup is not None:
        try:
            lookup(qualified, overload_name)
        except RuntimeError:
            return False
        return True
    namespace, _, name = qualified.partition("::")
    try:
        packet = getattr(getattr(torch.ops, namespace), name)
        return overload_name in (packet.overloads() if overload_name else ["default"]) or (
            not overload_name and "default" in packet.overloads()
        )
    except (AttributeError, RuntimeError):
        return False


def overload(qualified: str, overload_name: str) -> Any | None:
    """The OpOverload `qualified.overload_name` ("aten::add", "Tensor"), or None."""
    if not has_schema(qualified, overload_name):
        return None
    namespace, _, name = qualified.partition("::")
    try:
        packet = getattr(getattr(torch.ops, namespace), name)
        return getattr(packet, overload_name or "default")
    except (AttributeError, RuntimeError):
        return None


def op_schema(op: Any) -> Any:
    """An OpOverload's FunctionSchema (`.name`, `.overload_name`, `.arguments`, ...)."""
    return op._schema


def schema_or_none(op: Any) -> Any | None:
    """`op_schema` for anything that may not be an operator overload (a Python callable,
    a higher-order op): None when it has no FunctionSchema."""
    return getattr(op, "_schema", None)


def is_higher_order_op(value: Any) -> bool:
    """Whether an FX node's target is a higher-order operator (`torch.cond`, checkpoint,
    `wrap_with_set_grad_enabled`): ops that take graphs, with rules per dispatch mode."""
    kind = _optional(DISPATCHER, "torch._ops.HigherOrderOperator")
    return kind is not None and isinstance(value, kind)


def tree_map(function: Callable[[Any], Any], tree: Any) -> Any:
    """torch's pytree map over nested lists, tuples and dicts (what dispatch arguments are)."""
    return _first(FAKE_TENSORS, "torch.utils._pytree.tree_map")(function, tree)


def op_name(op: Any) -> str:
    """ "aten::name" or "aten::name.overload", the spelling torch's own warnings use."""
    schema = op._schema
    return f"{schema.name}.{schema.overload_name}" if schema.overload_name else str(schema.name)


def is_op_overload(value: Any) -> bool:
    kind = _optional(DISPATCHER, "torch._ops.OpOverload")
    if kind is not None:
        return isinstance(value, kind)
    return hasattr(value, "_schema") and hasattr(value, "overloadpacket")


def call_with_key(op: Any, key: Any, *args: Any, **kwargs: Any) -> Any:
    """Run `op` through its kernel for dispatch key `key` (a DispatchKey) only. Ask
    `op_has_kernel` first: a key without a kernel aborts the process."""
    runner = getattr(op, "_op_dk", None)
    if runner is None:
        raise Unavailable(degrade(DISPATCH_MODE, "OpOverload._op_dk does not exist"))
    return runner(key, *args, **kwargs)


# -- TorchScript schemas and builtins --------------------------------------------------------


def parse_schema(text: str) -> Any:
    """A FunctionSchema from its text ("aten::add.Tensor(Tensor self, ...) -> Tensor")."""
    parser = _optional(SCHEMAS, "torch._C.parse_schema")
    if parser is not None:
        return parser(text)
    match = re.match(r"^\s*([\w:]+)(?:\.(\w+))?\(", text)
    op = overload(match[1], match[2] or "") if match else None
    if op is None:
        raise RuntimeError(f"cannot parse the schema {text[:80]!r}: {SCHEMAS.name} is unavailable")
    return op._schema


def schemas_for_operator(qualified: str) -> list[Any]:
    """Every schema of `qualified` ("aten::add"), TorchScript builtins included."""
    lookup = _optional(SCHEMAS, "torch._C._jit_get_schemas_for_operator")
    if lookup is not None:
        return list(lookup(qualified))
    namespace, _, name = qualified.partition("::")
    try:
        packet = getattr(getattr(torch.ops, namespace), name)
        return [getattr(packet, o)._schema for o in packet.overloads()]
    except (AttributeError, RuntimeError):
        return []


def all_schemas() -> list[Any]:
    """Every schema TorchScript knows (dispatcher ops and its own builtins); [] when unknown."""
    lookup = _optional(SCHEMAS, "torch._C._jit_get_all_schemas")
    return list(lookup()) if lookup is not None else []


def builtin_name(function: Any) -> str | None:
    """The op TorchScript compiles a Python callable to (`torch.add` -> "aten::add"), or None."""
    find = _optional(JIT_BUILTINS, "torch.jit._builtins._find_builtin")
    if find is None:
        return None
    try:
        name = find(function)
    except Exception:  # noqa: BLE001 - an unhashable or odd object
        return None
    return str(name) if name else None


def builtin_table() -> dict[int, str]:
    """id(Python callable) -> the TorchScript builtin it compiles to."""
    table = _optional(JIT_BUILTINS, "torch.jit._builtins._builtin_ops")
    if table is None:
        return {}
    return {id(function): str(name) for function, name in table}


# -- the TorchScript call walk -----------------------------------------------------------------


def require_jit_walk() -> None:
    """Raise Unavailable when the call walk cannot run on this torch."""
    _first(JIT_WALK, "torch.jit._state._python_cu")
    _first(JIT_WALK, "torch.jit.RecursiveScriptModule")


def compiled_function(qualified: str) -> Any | None:
    """The compiled TorchScript function of that qualified name ("__torch__.torch.nn.
    functional.interpolate"), from the global compilation unit, or None."""
    unit = _optional(JIT_WALK, "torch.jit._state._python_cu")
    if unit is None:
        return None
    try:
        return unit.find_function(qualified)
    except Exception:  # noqa: BLE001 - a name the unit does not hold
        return None


def script_module_object(scripted: Any) -> Any:
    """The C++ ScriptModule object behind a scripted module (what graphs refer to)."""
    inner = getattr(scripted, "_c", None)
    if inner is None:
        if isinstance(scripted, torch.jit.ScriptModule):  # this torch's layout has changed
            raise Unavailable(degrade(JIT_WALK, "ScriptModule._c does not exist"))
        raise not_for_this_object(JIT_WALK, f"{type(scripted).__name__} is not a scripted module")
    return inner


def script_method_graph(module_object: Any, name: str) -> Any | None:
    """The graph of a scripted module's method (`forward`), or None when it has none."""
    has_method = getattr(module_object, "_has_method", None)
    get_method = getattr(module_object, "_get_method", None)
    if has_method is None or get_method is None:  # not a scripted module (a TorchScript class instance)
        return None
    if not has_method(name):
        return None
    return get_method(name).graph


def is_script_module_object(value: Any) -> bool:
    """A scripted module (whose methods the walk can enter), not a TorchScript class instance."""
    return getattr(value, "_has_method", None) is not None and getattr(value, "_get_method", None) is not None


def script_type_name(module_object: Any) -> str:
    """The TorchScript qualified type name of a scripted module ("__torch__.pkg.Cls")."""
    try:
        return str(module_object._type().qualified_name())
    except Exception:  # noqa: BLE001 - a layout without it: the walk just does not name it
        return ""


_PASS_CAPABILITY = {
    "_jit_pass_constant_propagation": JIT_SPECIALISE,
    "_jit_pass_dce": JIT_SPECIALISE,
    "_jit_pass_peephole": JIT_SPECIALISE,
}


def run_pass(name: str, graph: Any, *args: Any) -> Any:
    """Run the TorchScript pass `torch._C._jit_pass_<name>(graph, *args)`; returns its
    result (None for in-place passes, and for a pass this torch lacks: skipped, recorded)."""
    capability = _PASS_CAPABILITY.get(f"_jit_pass_{name}", JIT_FRONT_ENDS)
    function = _optional(capability, f"torch._C._jit_pass_{name}")
    return function(graph, *args) if function is not None else None


# -- TorchScript's caches (worker state) ---------------------------------------------------------


def reset_concrete_type_store() -> None:
    """A fresh store of module types: a failed compile leaves half-defined types behind."""
    recursive = _optional(JIT_CACHES, "torch.jit._recursive")
    if recursive is None or not hasattr(recursive, "ConcreteTypeStore"):
        return
    recursive.concrete_type_store = recursive.ConcreteTypeStore()


def concrete_types() -> dict[Any, Any]:
    """Python class -> its compiled module types (mutable: entries may be deleted)."""
    recursive = _first(JIT_CACHES, "torch.jit._recursive")
    return recursive.concrete_type_store.type_store  # type: ignore[no-any-return]  # the live dict, on purpose


def script_classes() -> dict[Any, Any]:
    """The live table of Python classes compiled as TorchScript classes."""
    return _first(JIT_CACHES, "torch.jit._state._script_classes")  # type: ignore[no-any-return]


def forget_script_classes(classes: Sequence[Any]) -> None:
    table = script_classes()
    names = _first(JIT_CACHES, "torch.jit._state._name_to_pyclass")
    for cls in classes:
        table.pop(cls, None)
    for name in [n for n, c in names.items() if c in classes]:
        del names[name]


def clear_script_state() -> None:
    """Empty TorchScript's global compilation unit and every cache keyed by it (as torch's
    own test suite does between tests)."""
    clear_registry = _first(JIT_CACHES, "torch._C._jit_clear_class_registry")
    recursive = _first(JIT_CACHES, "torch.jit._recursive")
    clear_state = _first(JIT_CACHES, "torch.jit._state._clear_class_state")
    clear_registry()
    recursive.concrete_type_store = recursive.ConcreteTypeStore()
    clear_state()


def jit_enabled_flag() -> tuple[Callable[[], Any], Callable[[Any], None]] | None:
    """(get, set) for TorchScript's global on/off switch (PYTORCH_JIT=0), or None."""
    enabled = _optional(WORKER_STATE, "torch.jit._state._enabled")
    if enabled is None:
        return None
    return (lambda: enabled.enabled), (lambda value: setattr(enabled, "enabled", value))


def print_options_flag() -> tuple[Callable[[], Any], Callable[[Any], None]] | None:
    """(get, set) for torch's print options (set_printoptions has no getter), or None."""
    options = _optional(WORKER_STATE, "torch._tensor_str.PRINT_OPTS")
    if options is None:
        return None
    return (lambda: dict(vars(options))), (lambda value: vars(options).update(value))


# -- mode stacks ---------------------------------------------------------------------------------


def mode_stack_depths() -> tuple[int, int] | None:
    """(torch function modes, dispatch modes) entered right now, or None when unknown."""
    function_depth = _optional(MODE_STACKS, "torch._C._len_torch_function_stack")
    dispatch_depth = _optional(MODE_STACKS, "torch._C._len_torch_dispatch_stack")
    if function_depth is None or dispatch_depth is None:
        return None
    return int(function_depth()), int(dispatch_depth())


def pop_modes(function_depth: int, dispatch_depth: int) -> tuple[int, int] | None:
    """Pop modes until the stacks are no deeper than given; the depths left (None: unknown)."""
    depths = mode_stack_depths()
    pop_function = _optional(MODE_STACKS, "torch._C._pop_torch_function_stack")
    pop_dispatch = _optional(MODE_STACKS, "torch._C._pop_torch_dispatch_stack")
    if depths is None or pop_function is None or pop_dispatch is None:
        return None
    functions, dispatches = depths
    while functions > function_depth:
        pop_function()
        functions -= 1
    while dispatches > dispatch_depth:
        pop_dispatch()
        dispatches -= 1
    return mode_stack_depths()


# -- dispatch modes and fake tensors -------------------------------------------------------------


def _dispatch_mode_base() -> type:
    try:
        base = _first(DISPATCH_MODE, "torch.utils._python_dispatch.TorchDispatchMode")
    except Unavailable as missing:
        degradation = missing.degradation

        class _NoDispatchMode:
            """Stands in where torch has no TorchDispatchMode: entering it says so."""

            def __init__(self, *args: Any, **kwargs: Any) -> None:
                pass

            def __enter__(self) -> Any:
                raise Unavailable(degradation)

            def __exit__(self, *exc: object) -> None:
                return None

        return _NoDispatchMode
    if not isinstance(base, type):
        raise TypeError("TorchDispatchMode is not a class")
    return base


# A base class for the recorders: torch's TorchDispatchMode, or a stand-in that raises
# Unavailable when entered (the trace then fails and the class is scripted instead).
if TYPE_CHECKING:
    from torch.utils._python_dispatch import TorchDispatchMode as TorchDispatchMode  # noqa: PLC0414 - re-exported
else:
    TorchDispatchMode = _dispatch_mode_base()


def fake_tensor_mode(allow_non_fake_inputs: bool = True) -> Any:
    """A FakeTensorMode with a symbolic shape environment (data-dependent ops such as
    `nonzero` work); raises Unavailable when this torch has none."""
    mode = _first(FAKE_TENSORS, "torch._subclasses.fake_tensor.FakeTensorMode", "torch._subclasses.FakeTensorMode")
    shape_env = _optional(FAKE_TENSORS, "torch.fx.experimental.symbolic_shapes.ShapeEnv")
    if shape_env is None:
        return mode(allow_non_fake_inputs=allow_non_fake_inputs)
    return mode(shape_env=shape_env(), allow_non_fake_inputs=allow_non_fake_inputs)


# -- decompositions ----------------------------------------------------------------------------


def decomposition_table() -> dict[Any, Any]:
    """torch._decomp's full table (every Python decomposition torch has); {} when absent."""
    table = _optional(DECOMPOSITIONS, "torch._decomp.decomposition_table")
    return dict(table) if table is not None else {}


def decompositions_for(ops: Sequence[Any]) -> dict[Any, Any]:
    """The decompositions of these ops (and of their overloads) from torch._decomp."""
    get = _optional(DECOMPOSITIONS, "torch._decomp.get_decompositions")
    return dict(get(list(ops))) if get is not None else {}


# Tables that depend only on the installed torch, built once per process (a worker builds
# them while it warms up, before it forks: every file's child then finds them built). They
# map overloads to Python callables, so they cannot go to disk; each caller gets a copy
# (they add to and remove from it).
_TABLES: dict[str, dict[Any, Any]] = {}
_TABLES_LOCK = threading.Lock()


def _table(name: str, build: Callable[[], dict[Any, Any]]) -> dict[Any, Any]:
    with _TABLES_LOCK:
        table = _TABLES.get(name)
        if table is None:
            table = _TABLES[name] = build()
    return dict(table)


def export_default_decompositions() -> dict[Any, Any]:
    """What `run_decompositions()` applies by default (core ATen table + CIA kernels); a
    fresh copy of a table built once per process (torch rebuilds it, about 0.2-0.5 s, on
    every call)."""

    def build() -> dict[Any, Any]:
        default = getattr(torch.export, "default_decompositions", None)
        if default is not None:
            return dict(default().items())
        core = _optional(DECOMPOSITIONS, "torch._decomp.core_aten_decompositions")
        return dict(core()) if core is not None else {}

    return _table("export-default", build)


# torch.export's walk over every registered op for those with a CompositeImplicitAutograd
# kernel (`_collect_all_valid_cia_ops`): torch caches the aten namespace's part only, and
# redoes every other namespace (executorch loads dozens) at each `run_decompositions` and
# each decomposition table it materialises, seconds per class. Its answer changes only when
# ops, namespaces or CIA kernels are registered, so it is kept per registry state.
_CIA_PATHS = ("torch._export.utils", "torch.export.exported_program", "torch.export.decomp_utils")
_CIA_NAME = "_collect_all_valid_cia_ops"
_CIA_LOCK = threading.RLock()
_CIA_MEMO: dict[tuple[Any, ...], frozenset[Any]] = {}
_CIA_DEPTH: list[int] = [0]


_CIA_KERNELS: list[int] = [0]  # the dispatcher's CompositeImplicitAutograd kernels, counted on entry


def _cia_kernel_count() -> int:
    lookup = _optional(DISPATCHER, "torch._C._dispatch_get_registrations_for_dispatch_key")
    try:
        return len(lookup("CompositeImplicitAutograd")) if lookup is not None else -1
    except Exception:  # noqa: BLE001 - a build without the key: the namespaces alone key the cache
        return -1


def _op_registry_state() -> tuple[Any, ...]:
    """What `_collect_all_valid_cia_ops` depends on: the op namespaces, the ops each has
    loaded, and the ops with a CompositeImplicitAutograd kernel in the dispatcher. That
    count is a walk of the dispatcher (tens of ms), taken once as the cache is entered: no
    user code runs inside it, and a new op shows in the namespaces first."""
    ops: Any = torch.ops
    namespaces = tuple(getattr(ops, "_dir", ()))
    loaded = tuple(len(getattr(getattr(ops, name, None), "_dir", ())) for name in namespaces)
    return TORCH_VERSION, namespaces, loaded, _CIA_KERNELS[0]


def _cia_modules() -> list[Any]:
    """The modules of this torch that hold `_collect_all_valid_cia_ops` (it is imported
    by name into more than one; [] where this torch has none)."""
    modules = []
    for path in _CIA_PATHS:
        try:
            module = _resolve(path)
        except LookupError:
            continue
        if callable(getattr(module, _CIA_NAME, None)):
            modules.append(module)
    return modules


@contextlib.contextmanager
def cia_ops_cached() -> Iterator[None]:
    """While active, torch.export's collection of CompositeImplicitAutograd ops answers from
    a cache keyed by the op registry's state (`_op_registry_state`). For code that runs no
    user code inside it (the export and delegate views, after torch.export). Nothing changes where this
    torch has no such function (the speed-up is lost, never a verdict)."""
    modules = _cia_modules()
    if not modules:
        yield
        return
    saved: list[tuple[Any, Any]] = []
    with _CIA_LOCK:
        if _CIA_DEPTH[0] == 0:
            _CIA_KERNELS[0] = _cia_kernel_count()
            original = getattr(modules[0], _CIA_NAME)

            def cached() -> set[Any]:
                key = _op_registry_state()
                with _CIA_LOCK:
                    found = _CIA_MEMO.get(key)
                if found is None:
                    found = frozenset(original())
                    with _CIA_LOCK:
                        _CIA_MEMO.clear()  # only the current state can be asked again
                        _CIA_MEMO[key] = found
                return set(found)  # torch's callers may keep it; each gets its own

            saved = [(module, getattr(module, _CIA_NAME)) for module in modules]
            for module in modules:
                setattr(module, _CIA_NAME, cached)
        _CIA_DEPTH[0] += 1
    try:
        yield
    finally:
        with _CIA_LOCK:
            _CIA_DEPTH[0] -= 1
            for module, function in saved:
                setattr(module, _CIA_NAME, function)


def collect_composite_ops() -> None:
    """Have torch.export collect its CompositeImplicitAutograd ops once, inside
    `cia_ops_cached`, so the cache holds them for the current op registry state (the
    delegate views' worker does it before it forks). Nothing where this torch has no such
    function."""
    modules = _cia_modules()
    if modules:
        with cia_ops_cached():
            getattr(modules[0], _CIA_NAME)()  # the cached one cia_ops_cached put in place: it fills


def fake_tensor_type() -> type:
    """torch's FakeTensor class: a fake-mode program's constants are instances of it."""
    found: type = _first(FAKE_TENSORS, "torch._subclasses.fake_tensor.FakeTensor", "torch._subclasses.FakeTensor")
    return found


def is_aten_dialect(program: Any) -> bool:
    """Whether an ExportedProgram is already in torch.export's ATen IR (functional, what
    `run_decompositions` returns), not the training IR `torch.export.export` makes."""
    try:
        return str(program.dialect) == "ATEN"
    except Exception:  # noqa: BLE001 - a torch without dialects: not known to be
        return False


@contextlib.contextmanager
def redecomposition_skipped(uses_any: Callable[[Any, Any], bool]) -> Iterator[None]:
    """While active, `ExportedProgram.run_decompositions(table)` on a program already in
    ATen IR whose graph uses none of the table's ops (`uses_any(graph_module, table)`)
    returns the program itself: retracing it would only redo the functionalisation done
    before. (ExecuTorch's own `_gen_edge_manager_for_partitioners` skips its second pass
    by that rule on one path and retraces on the other.)"""
    try:
        program_class = _resolve("torch.export.exported_program.ExportedProgram")
    except LookupError:
        yield
        return
    original = program_class.run_decompositions

    def run_decompositions(self: Any, decomp_table: Any = None, *args: Any, **kwargs: Any) -> Any:
        if decomp_table is not None and is_aten_dialect(self) and not uses_any(self.graph_module, decomp_table):
            return self
        return original(self, decomp_table, *args, **kwargs)

    program_class.run_decompositions = run_decompositions
    try:
        yield
    finally:
        program_class.run_decompositions = original


# -- the ONNX exporters ---------------------------------------------------------------------------

_TORCHSCRIPT_EXPORTER = ("torch.onnx._internal.torchscript_exporter", "torch.onnx")
_SYMBOLICS_LOADED: list[bool] = []


def onnx_torchscript_package() -> Any:
    """The package of the TorchScript ONNX exporter (its `symbolic_opsetN` modules), with
    every opset's symbolics registered; raises Unavailable when absent."""
    import pkgutil

    package = _first(ONNX_TORCHSCRIPT, *_TORCHSCRIPT_EXPORTER)
    if not _SYMBOLICS_LOADED:
        for module in pkgutil.iter_modules(getattr(package, "__path__", [])):
            if module.name.startswith("symbolic_opset"):
                # One broken opset module hides only its own symbolics.
                with contextlib.suppress(Exception):
                    importlib.import_module(f"{package.__name__}.{module.name}")
        _SYMBOLICS_LOADED.append(True)
    return package


def onnx_torchscript_registry() -> Any:
    """The TorchScript exporter's symbolic registry (every opset loaded); Unavailable when absent."""
    onnx_torchscript_package()
    registration = _first(
        ONNX_TORCHSCRIPT, "torch.onnx._internal.torchscript_exporter.registration", "torch.onnx._internal.registration"
    )
    registry = getattr(registration, "registry", None)
    if registry is None:
        raise Unavailable(degrade(ONNX_TORCHSCRIPT, "its registration module has no registry"))
    return registry


def onnx_symbolic_opsets(name: str) -> list[int] | None:
    """The opsets at which the TorchScript exporter has a symbolic for `name` ("aten::nms",
    "torchvision::nms"); [] for none; None when the registry cannot be read."""
    try:
        registry = onnx_torchscript_registry()
        group = registry.get_function_group(name)
    except Exception:  # noqa: BLE001 - the registry's layout changed: unknown
        return None
    if group is None:
        return []
    versions = getattr(group, "_functions", None)
    if versions is None:
        degrade(ONNX_TORCHSCRIPT, "a symbolic group has no per-opset table")
        return None
    return sorted(int(v) for v in versions)


def onnx_torchscript_symbolics() -> dict[str, list[int]]:
    """Every op the TorchScript exporter has a symbolic for, with its opsets."""
    registry = onnx_torchscript_registry()
    out = {}
    for name in sorted(registry.all_functions()):
        opsets = onnx_symbolic_opsets(name)
        if opsets:
            out[str(name)] = opsets
    return out


@dataclass(frozen=True)
class OnnxOpsets:
    minimum: int
    maximum: int
    default: int


def onnx_opsets() -> OnnxOpsets:
    constants = _first(ONNX_TORCHSCRIPT, "torch.onnx._constants")
    return OnnxOpsets(int(constants.ONNX_MIN_OPSET), int(constants.ONNX_MAX_OPSET), int(constants.ONNX_DEFAULT_OPSET))


_EXPORTER_ENTRY = ("exporter_context", "_decide_input_format", "_pre_trace_quant_model", "_create_jit_graph")


def onnx_exporter_traced_graph(model: torch.nn.Module, args: tuple[Any, ...]) -> Any:
    """The graph `torch.jit.trace` records through the TorchScript ONNX exporter's own entry
    (`_create_jit_graph` under its `exporter_context`, inputs laid out by
    `_decide_input_format`), exactly what that exporter starts from. Raises Unavailable
    when this torch has no such entry; the model's own errors propagate."""
    utils = _first(ONNX_TORCHSCRIPT, "torch.onnx._internal.torchscript_exporter.utils", "torch.onnx.utils")
    missing = [name for name in _EXPORTER_ENTRY if not hasattr(utils, name)]
    if missing:
        raise Unavailable(degrade(ONNX_TORCHSCRIPT, f"{utils.__name__} has no {', '.join(missing)}"))
    with utils.exporter_context(model, torch.onnx.TrainingMode.EVAL, verbose=False):
        args = utils._decide_input_format(model, args)
        traced = utils._pre_trace_quant_model(model, args)
        graph, _, _, _ = utils._create_jit_graph(traced, args)
    return graph


def onnx_dynamo_first_opsets() -> tuple[int, dict[str, int]]:
    """(torchlib's default opset, overload -> the first opset at which the dynamo exporter's
    registry implements it), built with the exporter's own registry at every opset."""
    constants = _first(ONNX_DYNAMO, "torch.onnx._internal.exporter._constants")
    registry_type = _first(ONNX_DYNAMO, "torch.onnx._internal.exporter._registration.ONNXRegistry")
    default = int(constants.TORCHLIB_OPSET)
    ops: dict[str, int] = {}
    # The registry keeps, per op, only implementations introduced at or below its opset.
    for opset in range(default, onnx_opsets().maximum + 1):
        registry = registry_type.from_torchlib(opset)
        for target, decomps in registry.functions.items():
            if isinstance(target, str) and decomps and target not in ops:
                ops[target] = opset
    return default, ops


def onnx_friendly_decompositions(registered: Collection[Any]) -> dict[Any, Any]:
    """The dynamo ONNX exporter's decomposition table given the overloads its registry
    implements (those are kept); Unavailable when this torch has no such exporter.

    The exporter's own `create_onnx_friendly_decomposition_table` builds it per export
    (about 0.3 s: it rebuilds torch's default table). Its contract is "torch's
    decompositions, minus every op in `registered`" (an op's entry never depends on the
    other ops), so its answer for no registered op is built once per process and each
    call drops `registered` from a copy; tests/capture/test_graphs_tables.py checks the
    result equals the exporter's own for the real registry, on every torch CI runs."""
    create = _first(ONNX_DYNAMO, "torch.onnx._internal.exporter._decomp.create_onnx_friendly_decomposition_table")
    everything = _table("onnx-friendly", lambda: dict(create(set())))
    for op in registered:
        everything.pop(op, None)
    return everything


# -- PyTorch's OpInfo database ---------------------------------------------------------------------


def opinfo_mps_dtypes() -> dict[str, set[Any]]:
    """Per aten op name ("aten::add"): the dtypes its MPS kernel accepts, per the wheel's
    OpInfo database (`dtypesIfMPS`); {} when it cannot be loaded (needs numpy, expecttest)."""
    database = _optional(OPINFO, "torch.testing._internal.common_methods_invocations.op_db")
    out: dict[str, set[Any]] = {}
    for opinfo in database or ():
        if getattr(opinfo, "variant_test_name", "") or getattr(opinfo, "dtypesIfMPS", None) is None:
            continue
        name = builtin_name(opinfo.op) if callable(opinfo.op) else None
        if name:
            with contextlib.suppress(Exception):  # one entry of an unexpected shape
                out.setdefault(name.split(".")[0], set()).update(opinfo.supported_dtypes("mps"))
    return out


# -- nn.Module internals ---------------------------------------------------------------------------


# The spellings of "is this TorchScript / a trace?" a model's source may test (the source
# pass decides such branches as each toolchain would see them).
SCRIPTING_TESTS = frozenset({"torch.jit.is_scripting", "torch.jit._script.is_scripting"})
TRACING_TESTS = frozenset({"torch.jit.is_tracing", "torch.jit._trace.is_tracing", "torch._C._get_tracing_state"})

# What capture loads lazily through torch (torch.export and dynamo are seconds to import):
# the warm worker imports them once, so no per-file process pays for it.
LAZY_FRONT_ENDS = (
    "torch.export",
    "torch._dynamo",
    "torch._decomp",
    "torch._refs",
    "torch._prims",
    "torch.fx.experimental.proxy_tensor",
    "torch.fx.experimental.symbolic_shapes",
    "torch._subclasses.fake_tensor",
    "torch.jit._trace",
    "torch.utils._python_dispatch",
)
# What a meta kernel's `torch._check` imports (with sympy) on its first call: the only
# one of them a file whose classes are only traced by torch.jit.trace may still need.
SYMBOLIC_SHAPES_FRONT_END = "torch.fx.experimental.symbolic_shapes"
# The one front end `torch.jit.trace` needs (the TorchScript exporters' view of a class with
# example inputs): imported at worker start, the others only when a request needs them.
JIT_TRACE_FRONT_END = "torch.jit._trace"


def fake_tensor_logger() -> logging.Logger:
    """The logger fake tensors report every meta kernel that raises to, with its stack."""
    return logging.getLogger("torch._subclasses.fake_tensor")


def tensor_stores(module: torch.nn.Module) -> tuple[dict[str, Any], dict[str, Any]]:
    """The live parameter and buffer dicts of one module (not its children), to swap
    tensors in place (`register_parameter` would refuse a meta tensor over a real one)."""
    return module._parameters, module._buffers


# The probes `available()` runs per capability: each tuple is one API (alternatives).
_PROBES: dict[str, tuple[tuple[str, ...], ...]] = {
    DISPATCHER.name: (
        ("torch._C._dispatch_has_kernel_for_dispatch_key",),
        ("torch._C._dispatch_get_registrations_for_dispatch_key",),
        ("torch._C._dispatch_get_all_op_names",),
        ("torch._C._dispatch_find_schema_or_throw",),
        ("torch._C.DispatchKey",),
        ("torch._ops.OpOverload",),
    ),
    SCHEMAS.name: (
        ("torch._C.parse_schema",),
        ("torch._C._jit_get_schemas_for_operator",),
        ("torch._C._jit_get_all_schemas",),
    ),
    JIT_WALK.name: (("torch.jit._state._python_cu",), ("torch.jit.RecursiveScriptModule",)),
    JIT_SPECIALISE.name: (
        ("torch._C._jit_pass_constant_propagation",),
        ("torch._C._jit_pass_dce",),
        ("torch._C._jit_pass_peephole",),
    ),
    JIT_BUILTINS.name: (("torch.jit._builtins._find_builtin",), ("torch.jit._builtins._builtin_ops",)),
    JIT_CACHES.name: (
        ("torch.jit._recursive.ConcreteTypeStore",),
        ("torch.jit._state._script_classes",),
        ("torch.jit._state._name_to_pyclass",),
        ("torch.jit._state._clear_class_state",),
        ("torch._C._jit_clear_class_registry",),
    ),
    JIT_FRONT_ENDS.name: (
        ("torch._C._jit_pass_inline",),
        ("torch._C._jit_pass_inline_fork_wait",),
        ("torch._C._jit_pass_canonicalize_graph_fuser_ops",),
        ("torch._C._jit_pass_canonicalize",),
        ("torch._C._jit_pass_onnx_remove_inplace_ops_for_onnx",),
        ("torch._C._jit_pass_erase_number_types",),
        ("torch._C._jit_pass_dce_allow_deleting_nodes_with_side_effects",),
    ),
    MODE_STACKS.name: (
        ("torch._C._len_torch_function_stack",),
        ("torch._C._len_torch_dispatch_stack",),
        ("torch._C._pop_torch_function_stack",),
        ("torch._C._pop_torch_dispatch_stack",),
    ),
    DISPATCH_MODE.name: (("torch.utils._python_dispatch.TorchDispatchMode",),),
    FAKE_TENSORS.name: (
        ("torch._subclasses.fake_tensor.FakeTensorMode", "torch._subclasses.FakeTensorMode"),
        ("torch.fx.experimental.symbolic_shapes.ShapeEnv",),
    ),
    DECOMPOSITIONS.name: (("torch._decomp.decomposition_table",), ("torch._decomp.get_decompositions",)),
    ONNX_TORCHSCRIPT.name: (
        _TORCHSCRIPT_EXPORTER,
        ("torch.onnx._constants",),
        ("torch.onnx._internal.torchscript_exporter.registration", "torch.onnx._internal.registration"),
        ("torch.onnx._internal.torchscript_exporter.utils.unconvertible_ops", "torch.onnx.utils.unconvertible_ops"),
    ),
    ONNX_DYNAMO.name: (
        ("torch.onnx._internal.exporter._constants",),
        ("torch.onnx._internal.exporter._registration.ONNXRegistry",),
        ("torch.onnx._internal.exporter._decomp.create_onnx_friendly_decomposition_table",),
    ),
    OPINFO.name: (("torch.testing._internal.common_methods_invocations.op_db",),),
    DYNAMO.name: (("torch._dynamo.reset",), ("torch._dynamo.optimize",), ("torch._dynamo.config",)),
    WORKER_STATE.name: (("torch.jit._state._enabled",), ("torch._tensor_str.PRINT_OPTS",)),
}


# -- Dynamo (the compile target) ----------------------------------------------------------

# Dynamo's logger: its graph-break warnings are the compile view's data, not the user's output.
DYNAMO_LOGGER = "torch._dynamo"


def dynamo() -> Any:
    """torch._dynamo, for what `torch._dynamo.explain` itself runs (`reset`, `optimize`);
    raises Unavailable when this torch has no Dynamo."""
    for path in _PROBES[DYNAMO.name]:
        _first(DYNAMO, *path)
    return _first(DYNAMO, "torch._dynamo")


def dynamo_counters() -> Any | None:
    """Dynamo's event counters (`torch._dynamo.utils.counters`: frames compiled, skipped,
    unimplemented reasons), or None when this torch has none."""
    return _optional(DYNAMO, "torch._dynamo.utils.counters")


def dynamo_config() -> Any | None:
    """Dynamo's config module (what decides whether `.item()` or `print` breaks the graph),
    or None when this torch has none."""
    return _optional(DYNAMO, "torch._dynamo.config")


# -- torch._dynamo, imported when something uses it --------------------------------------------

# torch wraps its Python dispatch modes' `__torch_dispatch__`, its Python references'
# type-promotion wrappers and more in `torch._disable_dynamo`, whose wrapper imports
# torch._dynamo on its first call (about as long as importing torch itself) only to tell
# Dynamo not to trace the function. A process that has not imported Dynamo has nothing to
# tell: no frame evaluation hook can be set without it, and the function runs as called.
# `defer_dynamo_import` makes each such wrapper call its function directly until
# torch._dynamo is imported (by anything: the user's file, an export view, fake tensors),
# and from then on be torch's own again. What the dispatcher and the meta kernels do is
# not changed: only when Dynamo's import is paid for.


class _UntilDynamoLoads:
    """What a `torch._disable_dynamo` wrapper finds as its function's `__dynamo_disable`
    (the wrapper's cache of Dynamo's disabled function): the function itself while
    torch._dynamo is not imported; once it is, it removes itself and calls torch's wrapper,
    which makes and caches Dynamo's disabled function as it always did."""

    __slots__ = ("function", "wrapper")

    def __init__(self, wrapper: Callable[..., Any], function: Callable[..., Any]):
        self.wrapper = wrapper
        self.function = function

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if "torch._dynamo" in sys.modules:
            with contextlib.suppress(AttributeError):
                delattr(self.function, _DYNAMO_DISABLE)
            return self.wrapper(*args, **kwargs)
        return self.function(*args, **kwargs)


_DYNAMO_DISABLE = "__dynamo_disable"  # the attribute torch._compile's wrapper caches its disabled function in


def _defer_wrapper(wrapper: Any, code: Any) -> bool:
    """Give one `torch._disable_dynamo` wrapper (a closure of `code` over `fn`) the deferral."""
    if getattr(wrapper, "__code__", None) is not code or not wrapper.__closure__:
        return False
    cells = dict(zip(wrapper.__code__.co_freevars, wrapper.__closure__))
    try:
        function = cells["fn"].cell_contents
    except (KeyError, ValueError):  # another torch's wrapper, or an empty cell
        return False
    if getattr(function, _DYNAMO_DISABLE, None) is not None:  # Dynamo already made it
        return False
    try:
        setattr(function, _DYNAMO_DISABLE, _UntilDynamoLoads(wrapper, function))
    except (AttributeError, TypeError):  # a builtin: it keeps importing Dynamo when called
        return False
    return True


def defer_dynamo_import() -> int:
    """In the worker, before it imports anything but torch: every `torch._disable_dynamo`
    wrapper torch has made so far, and every one made from now on, calls its function
    directly until torch._dynamo is imported. Returns how many existing wrappers were
    deferred; 0 (nothing changed, Dynamo imported on first use as before) when torch's
    wrapper is not the one this was written for, or Dynamo is already imported."""
    import gc

    compile_module = sys.modules.get("torch._compile")
    original = getattr(compile_module, "_disable_dynamo", None)
    if original is None or "torch._dynamo" in sys.modules or getattr(original, "_atenlint_deferring", False):
        return 0
    try:
        code = original(lambda: None).__code__
    except Exception:  # noqa: BLE001 - another torch's API: leave it as it is
        return 0
    if "fn" not in code.co_freevars:
        return 0
    deferred = sum(_defer_wrapper(obj, code) for obj in gc.get_objects() if type(obj) is type(original))

    def _disable_dynamo(fn: Any = None, recursive: bool = True) -> Any:
        made = original(fn, recursive)
        if fn is not None:
            _defer_wrapper(made, code)
        return made

    _disable_dynamo._atenlint_deferring = True  # type: ignore[attr-defined]  # marks the replacement
    # Both spellings torch decorates with: `@torch._disable_dynamo` and, inside
    # torch._compile, the decorator form's `functools.partial(_disable_dynamo, ...)`.
    compile_module._disable_dynamo = _disable_dynamo  # type: ignore[union-attr]
    torch._disable_dynamo = _disable_dynamo  # type: ignore[attr-defined]
    return deferred


# -- Inductor (the compile target's fallbacks) ------------------------------------------------

INDUCTOR = Capability(
    "Inductor's lowering tables (torch._inductor.lowering)",
    "the compile target does not report the ops Inductor runs eagerly (fallbacks)",
    eager=False,
)  # importing the lowerings takes seconds: only a compile view with graphs pays for it


@dataclass(frozen=True)
class InductorTables:
    """What decides whether Inductor generates code for an aten op or calls its eager
    kernel: the lowerings, the ops registered as eager fallbacks (`make_fallback`), the
    decompositions applied before lowering (`select_decomp_table()`), and per device
    the features of the code generator Inductor picks for it."""

    lowerings: dict[Any, Any]
    fallbacks: frozenset[Any]
    decompositions: dict[Any, Any]
    features: dict[str, frozenset[str]]  # device type -> BackendFeature names
    feature_names: frozenset[str]  # every BackendFeature member
    ir_module: Any  # torch._inductor.ir (its node classes decide some fallbacks per feature)


_INDUCTOR: list[InductorTables] = []


def inductor_tables(devices: Sequence[str] = ("cpu", "cuda")) -> InductorTables:
    """Inductor's tables, read once per process; raises Unavailable when this torch has no
    Inductor. A device whose code generator cannot be asked is left out of `features`."""
    with _TABLES_LOCK:
        if _INDUCTOR:
            return _INDUCTOR[0]
        lowering = _first(INDUCTOR, "torch._inductor.lowering")
        select = _first(INDUCTOR, "torch._inductor.decomposition.select_decomp_table")
        feature_type = _first(INDUCTOR, "torch._inductor.codegen.common.BackendFeature")
        init_backends = _optional(INDUCTOR, "torch._inductor.codegen.common.init_backend_registration")
        scheduling_for = _optional(INDUCTOR, "torch._inductor.codegen.common.get_scheduling_for_device")
        features: dict[str, frozenset[str]] = {}
        if init_backends is not None and scheduling_for is not None:
            init_backends()
            for device in devices:
                try:
                    scheduling = scheduling_for(device)
                    found = scheduling(None).get_backend_features(torch.device(device))
                except Exception:  # noqa: BLE001, S112 - a backend that needs a package or a device not here
                    continue
                features[device] = frozenset(feature.name for feature in found)
        tables = InductorTables(
            lowerings=dict(getattr(lowering, "lowerings", {})),
            fallbacks=frozenset(getattr(lowering, "fallbacks", ())),
            decompositions=dict(select()),
            features=features,
            feature_names=frozenset(feature_type.__members__),
            ir_module=_first(INDUCTOR, "torch._inductor.ir"),
        )
        _INDUCTOR.append(tables)
        return tables


def python_decomposition(op: Any) -> Callable[..., Any] | None:
    """The Python kernel torch registers for an op's Autograd (else CompositeImplicitAutograd)
    key (`OpOverload.py_kernels`, from `py_impl`: `upsample_bilinear2d`'s decomposition),
    which AOTAutograd's tracer runs with the Python dispatcher on; None without one (or on a
    torch without Python kernels)."""
    kernels = getattr(op, "py_kernels", None)
    if not isinstance(kernels, dict):
        return None
    by_name = {getattr(key, "name", str(key)): kernel for key, kernel in kernels.items()}
    kernel = by_name.get("Autograd") or by_name.get("CompositeImplicitAutograd")
    return kernel if callable(kernel) else None
