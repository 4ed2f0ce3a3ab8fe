"""Inductor fallbacks: the aten ops of a Dynamo graph that the installed Inductor would not
generate code for, but run as their eager kernel (a kernel boundary and a copy), per device.

Inductor lowers what AOTAutograd hands it: the graph after Inductor's own decomposition
table (`select_decomp_table()`) and the CompositeImplicitAutograd kernels, functionalised.
Tracing that with AOTAutograd costs several times Dynamo's own run, so this module gets
the same leaves from the run Dynamo already does: each graph Dynamo compiles runs (once,
on the real CPU tensors the view uses) under a dispatch mode that sees its aten ops below
the composite kernels; each op is then decomposed through Inductor's table on fake tensors
until an op without a decomposition is left, once per op and argument signature per process.
Each leaf is judged from Inductor's own tables (`torch._inductor.lowering`):

- no lowering at all: `GraphLowering` makes an implicit fallback (any device);
- a lowering that is a fallback handler (`make_fallback`; Inductor marks them
  `_is_fallback_handler`): the eager kernel on any device;
- a lowering that falls back when the device's code generator lacks a feature
  (`BackendFeature.SCAN` for cumsum, `SORT`, `BUCKETIZE`): the eager kernel on the
  devices whose backend (cpp for cpu, Triton for cuda) does not have it. The feature is
  read from the lowering's own code (its `has_feature` test, or an IR node whose `create`
  is declared to return no node without it) and the device's features from its backend.

A lowering can still decide at lowering time to call the eager kernel for some
arguments (a dtype, a size); those are not reported: only what the tables say for certain.
Runs inside the worker.
"""

from __future__ import annotations

import inspect
import re
import types
from collections.abc import Callable
from typing import Any

import torch

from .. import torchcompat
from ..worker.protocol import InductorFallback, Site
from .paths import is_library_file

DEVICES = ("cpu", "cuda")
_FRAME = re.compile(r'\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>.+)$')

# Why an op runs eagerly (the record's `why`).
IMPLICIT = "no lowering"  # GraphLowering makes an implicit fallback
REGISTERED = "registered fallback"  # make_fallback


class _Judge:
    """Inductor's verdict per aten op, cached for the process."""

    def __init__(self, tables: torchcompat.InductorTables) -> None:
        self.tables = tables
        self.verdicts: dict[Any, tuple[tuple[str, ...], str]] = {}
        self.leaves: dict[Any, tuple[Any, ...]] = {}

    def verdict(self, op: Any) -> tuple[tuple[str, ...], str]:
        """(devices where `op` runs its eager kernel, why); no devices: Inductor lowers it."""
        known = self.verdicts.get(op)
        if known is None:
            known = self.verdicts[op] = self._verdict(op)
        return known

    def _verdict(self, op: Any) -> tuple[tuple[str, ...], str]:
        lowering = self.tables.lowerings.get(op)
        if lowering is None:
            return DEVICES, IMPLICIT
        if getattr(lowering, "_is_fallback_handler", False):
            return DEVICES, REGISTERED
        needed = _features_that_decide_fallback(lowering, self.tables)
        lacking = tuple(
            device
            for device in DEVICES
            if device in self.tables.features and not needed <= self.tables.features[device]
        )
        if lacking:
            missing = sorted(needed - frozenset.intersection(*(self.tables.features[d] for d in lacking)))
            return lacking, f"the {'/'.join(lacking)} code generator lacks {', '.join(missing)}"
        return (), ""


def _own_names(code: types.CodeType) -> set[str]:
    names: set[str] = set()
    stack = [code]
    while stack:
        current = stack.pop()
        names.update(current.co_names)
        stack.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
    return names


def _features_that_decide_fallback(
    lowering: Callable[..., Any], tables: torchcompat.InductorTables, depth: int = 2
) -> frozenset[str]:
    """The BackendFeatures without which this lowering calls the eager kernel: named by a
    lowering that also names a fallback handler, in its own code (`has_feature` tests) or
    in the `create` of an IR node it builds that Inductor declares may build nothing
    (`ir.Scan.create -> Sequence[TensorBox | None]`: no node without SCAN); and those of
    the lowering functions of the same module it calls (`sort` calls `sort_stable`)."""
    function = inspect.unwrap(lowering)
    code = getattr(function, "__code__", None)
    if code is None:
        return frozenset()
    names = _own_names(code)
    found: frozenset[str] = frozenset()
    if depth > 0:
        scope = getattr(function, "__globals__", {})
        for name in names:
            callee = scope.get(name)
            if (
                isinstance(callee, types.FunctionType)
                and callee.__module__ == function.__module__
                and callee is not function
            ):
                found |= _features_that_decide_fallback(callee, tables, depth - 1)
    if not any("fallback" in name for name in names):
        return found
    found |= names & tables.feature_names
    for name in names:
        node = getattr(tables.ir_module, name, None)
        create = getattr(node, "create", None) if isinstance(node, type) else None
        create_code = getattr(create, "__code__", None)
        if create is None or create_code is None:
            continue
        try:
            returns = str(inspect.signature(create).return_annotation)
        except (TypeError, ValueError):
            continue
        if "None" in returns or "Optional" in returns:
            found |= _own_names(create_code) & tables.feature_names
    return frozenset(found)


_JUDGE: list[_Judge] = []


def judge() -> _Judge:
    """The process's judge (Inductor's tables read on first use); raises
    torchcompat.Unavailable when this torch has no Inductor."""
    if not _JUDGE:
        _JUDGE.append(_Judge(torchcompat.inductor_tables(DEVICES)))
    return _JUDGE[0]


def _functional(op: Any) -> Any:
    """The functional op AOTAutograd's functionalisation puts in place of an in-place one
    (`relu_` -> `relu`, same overload)."""
    schema = torchcompat.schema_or_none(op)
    if schema is None or not getattr(schema, "is_mutable", False):
        return op
    packet_name = schema.name.split("::")[-1]  # "relu_" (the schema names the packet)
    if not packet_name.endswith("_") or packet_name.startswith("_"):
        return op
    packet = getattr(torch.ops.aten, packet_name[:-1], None)
    functional = getattr(packet, schema.overload_name or "default", None) if packet is not None else None
    return functional if functional is not None else op


class _Leaves(torchcompat.TorchDispatchMode):  # type: ignore[no-untyped-call]  # torch's TorchDispatchMode is untyped
    """On fake tensors: the ops left once Inductor's decomposition table (and the
    composite kernels) have been applied, as AOTAutograd's tracer applies them."""

    def __init__(self, decompositions: dict[Any, Any]) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # torch's TorchDispatchMode is untyped
        self.decompositions = decompositions
        self.found: list[Any] = []
        self.in_python_kernel: set[Any] = set()

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        target = func if func in self.decompositions else _functional(func)
        decomposition = self.decompositions.get(target)
        if decomposition is not None:
            with self:
                out = decomposition(*args, **kwargs)
            if out is not NotImplemented:
                return out if target is func else func(*args, **kwargs)
        # AOTAutograd traces with the Python dispatcher on, so an op's Python Autograd kernel
        # (`upsample_bilinear2d`'s) decomposes it before Inductor sees it; a mode runs below
        # the Autograd key, so that kernel is called here (once per op on the stack: a kernel
        # that redispatches to its own op leaves it as it is).
        python_kernel = torchcompat.python_decomposition(func) if func not in self.in_python_kernel else None
        if python_kernel is not None:
            self.in_python_kernel.add(func)
            try:
                with self:
                    out = python_kernel(*args, **kwargs)
            finally:
                self.in_python_kernel.discard(func)
            if out is not NotImplemented:
                return out
        if torchcompat.op_has_kernel(func, "CompositeImplicitAutograd"):
            with self:
                out = func.decompose(*args, **kwargs)
            if out is not NotImplemented:
                return out
        if _returns_tensor(target):  # not `prim.device`, `aten.sym_size`: no kernel in the graph
            self.found.append(target)
        return func(*args, **kwargs)


def _returns_tensor(op: Any) -> bool:
    """Whether an op makes tensors (a node Inductor lowers), not metadata (`prim.device`,
    `aten.sym_size`: answered while tracing, no node in the graph)."""
    schema = torchcompat.schema_or_none(op)
    if schema is None:
        return False
    return any("Tensor" in str(ret.type) for ret in schema.returns)


def _signature(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return ("tensor", tuple(value.shape), value.dtype, value.device.type, value.requires_grad)
    if isinstance(value, (list, tuple)):
        return tuple(_signature(v) for v in value)
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value


def leaves(op: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """The ops Inductor would lower for one call of `op` (real tensors in, only their
    metadata used), cached per op and argument signature."""
    found = judge()
    key: tuple[Any, ...] | None = (op, _signature(args), _signature(sorted(kwargs.items())))
    try:
        known = found.leaves.get(key)
    except TypeError:  # an argument that hashes nowhere: not cached
        known, key = None, None
    if known is not None:
        return known
    known = _decompose(op, args, kwargs, found.tables.decompositions)
    if key is not None:
        found.leaves[key] = known
    return known


def _decompose(op: Any, args: tuple[Any, ...], kwargs: dict[str, Any], table: dict[Any, Any]) -> tuple[Any, ...]:
    if (
        op not in table
        and _functional(op) not in table
        and not torchcompat.op_has_kernel(op, "CompositeImplicitAutograd")
        and torchcompat.python_decomposition(op) is None
    ):
        leaf = _functional(op)  # nothing decomposes it: the op itself is the leaf
        return (leaf,) if _returns_tensor(leaf) else ()
    try:
        fake = torchcompat.fake_tensor_mode()
        with fake:
            fake_args, fake_kwargs = torchcompat.tree_map(
                lambda v: fake.from_tensor(v) if isinstance(v, torch.Tensor) else v, (args, kwargs)
            )
            recorder = _Leaves(table)
            with recorder:
                op(*fake_args, **fake_kwargs)
    except Exception:  # noqa: BLE001 - a decomposition that fake tensors cannot run: the op as called
        leaf = _functional(op)
        return (leaf,) if _returns_tensor(leaf) else ()
    return tuple(dict.fromkeys(recorder.found))


class FallbackRecorder(torchcompat.TorchDispatchMode):  # type: ignore[no-untyped-call]  # torch's TorchDispatchMode is untyped
    """Records, per FX node of a Dynamo graph being run, the aten ops it dispatches whose
    Inductor leaves run eagerly. Entered around one run of the graph."""

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # torch's TorchDispatchMode is untyped
        self.node: Any = None
        self.found: dict[tuple[str, str], InductorFallback] = {}

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if self.node is not None and torchcompat.is_op_overload(func):
            self._note(func, args, kwargs)
        return func(*args, **kwargs)

    def _note(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        found = judge()
        for leaf in leaves(func, args, kwargs):
            devices, why = found.verdict(leaf)
            if not devices:
                continue
            site = node_site(self.node)
            key = (str(leaf), f"{site['file']}:{site['line']}" if site else "")
            if key not in self.found:
                self.found[key] = {
                    "op": str(leaf),
                    "called": str(func),
                    "devices": list(devices),
                    "why": why,
                    "site": site,
                }


def run_recording(graph_module: torch.fx.GraphModule, recorder: FallbackRecorder) -> Callable[..., Any]:
    """A callable that runs `graph_module` node by node the first time (so each op is
    known by its node, hence its user line) under `recorder`, then its compiled code."""
    if any(torchcompat.is_higher_order_op(node.target) for node in graph_module.graph.nodes):
        # torch.cond, checkpoint: a higher-order op has rules per dispatch mode and none for
        # this one; the graph runs as Dynamo compiled it, its fallbacks unreported.
        return graph_module.forward
    ran = False

    class _Interpreter(torch.fx.Interpreter):
        def run_node(self, n: torch.fx.Node) -> Any:
            recorder.node = n if n.op in ("call_function", "call_method", "call_module") else None
            try:
                return super().run_node(n)
            finally:
                recorder.node = None

    def run(*args: Any) -> Any:
        nonlocal ran
        if ran:
            return graph_module.forward(*args)
        ran = True
        with recorder:
            return _Interpreter(graph_module).run(*args)

    return run


def node_site(node: Any) -> Site | None:
    """The innermost frame of the user's code on an FX node's recorded stack."""
    text = node.meta.get("stack_trace") or "" if node is not None else ""
    frames = [m for m in map(_FRAME.match, text.splitlines()) if m]
    user = [m for m in frames if not is_library_file(m["file"])]
    if not user:
        return None
    last = user[-1]
    return {"file": last["file"], "line": int(last["line"]), "col": -1, "span_lines": 1, "end_col": None}
