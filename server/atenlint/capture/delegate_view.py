"""ExecuTorch delegate views: which nodes of the program `to_edge_transform_and_lower`
builds a delegate's partitioner takes, and why it leaves the others to the CPU.

For each delegate (XNNPACK, Core ML, Vulkan) the installed executorch's own code does all
the deciding, on the class's `torch.export` program (fake tensors, as the export views):

- `_gen_edge_manager_for_partitioners`, the first half of `to_edge_transform_and_lower`:
  the partitioner's `ops_to_not_decompose` (with its per-node filter) keeps the ops it
  fuses whole (`linear`, `conv2d` for Core ML), and to_edge decomposes the rest, so the
  edge graph is the one the partitioner really sees;
- the partitioner's own `partition()` then tags the nodes it takes (`delegation_tag`).
  Nothing is lowered: the backend's `preprocess` (serialising weights, compiling a Core ML
  model) never runs, and the tags are cleared afterwards.

The decomposition is the view's main cost, so it is made once where executorch's own
would give the same program: for a partitioner that keeps a fixed list of ops (XNNPACK,
Vulkan), the plain `executorch` view's program when no kept op was reached while it was
decomposed (`PlainDecomposition`), else the class's program decomposed in one trace with
those ops kept (`_decomposed_for`); executorch's own call then finds nothing left to
retrace. to_edge's own passes run as executorch lists them, except that consecutive ones
that each rewrite one call at a time share one retrace (`_edge_passes_fused`). What every
class asks of executorch the same way (the kept lists, to_edge's table, Vulkan's pattern
graphs) is read once per process, before the worker forks (`preload`).

Reasons are what the partitioner itself logs while it decides: `WhyNoPartition` records
(XNNPACK's configs: "invalid dtype", "mean.dim only supports keepdim=True") and the
messages other partitioners log about a node ("[Vulkan Partitioner] Due to [op args not
supported], skipping ..."). A node left by an XNNPACK config whose supported precisions
are quantized ones only (`supported_precision_types`) is marked so: that config waits for
a quantized pattern, which fp32 code never forms.

Runs inside the worker: executorch is imported only here, only when a delegate view is
asked for.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import gc
import importlib
import inspect
import logging
import re
import sys
import weakref
from dataclasses import dataclass
from typing import Any, cast

import torch

from .. import torchcompat
from ..worker.protocol import DelegateFacts
from ..worker.vocabulary import DELEGATE_VIEW_PREFIX
from .decompose import canonical_name

VIEW_PREFIX = DELEGATE_VIEW_PREFIX  # the view is named as its target

# The partitioner each delegate target runs: (module, class), as executorch documents them.
PARTITIONERS: dict[str, tuple[str, str]] = {
    "xnnpack": ("executorch.backends.xnnpack.partition.xnnpack_partitioner", "XnnpackPartitioner"),
    "coreml": ("executorch.backends.apple.coreml.partition", "CoreMLPartitioner"),
    "vulkan": ("executorch.backends.vulkan.partitioner.vulkan_partitioner", "VulkanPartitioner"),
}
DELEGATE_VIEWS = tuple(VIEW_PREFIX + name for name in PARTITIONERS)

_VULKAN_REASON = re.compile(r"Due to \[(?P<reason>.+?)\], skipping")
_REASON_LIMIT = 200


class DelegateUnavailable(Exception):
    """The installed executorch cannot run this delegate's partitioner here."""


@dataclass(frozen=True)
class DelegateNode:
    """One op node of the edge program and what the delegate's partitioner made of it."""

    op: str  # the overload (`aten::mean.dim`, `dim_order_ops::_to_dim_order_copy`)
    node: Any  # the torch.fx.Node (its stack locates it)
    delegated: bool
    reasons: tuple[str, ...]  # the partitioner's own words, first first
    quantized_only: bool  # an XNNPACK config takes this op only in a quantized pattern
    not_converted: str = ""  # taken, but the delegate's backend cannot convert it: its words

    def facts(self) -> dict[str, Any]:
        """The node's DelegateFacts (worker/protocol.py), as its call site records them."""
        facts: dict[str, Any] = {"delegated": self.delegated}
        if self.reasons:
            facts["reasons"] = list(self.reasons)
        if self.quantized_only:
            facts["quantized_only"] = True
        if self.not_converted:
            facts["not_converted"] = self.not_converted
        return facts


def delegate_name(view: str) -> str:
    return view.removeprefix(VIEW_PREFIX)


def partitioner(name: str) -> Any:
    """A fresh instance of the delegate's partitioner, with its defaults."""
    module_name, class_name = PARTITIONERS[name]
    try:
        cls = getattr(_import_executorch(module_name), class_name)
    except Exception as error:  # noqa: BLE001 - a delegate the wheel cannot load here
        raise DelegateUnavailable(f"{module_name}.{class_name}: {type(error).__name__}: {error}"[:300]) from None
    return cls()


def preload(name: str) -> None:
    """Import what the delegate's view runs (its partitioner, executorch's `to_edge`)
    without running it: most of a first delegate view's cost, which a worker pays once
    before it forks its files' children. A delegate that cannot load here says so when
    its view runs. What every class's view reads of the partitioner and of executorch
    (the ops it keeps from decomposition, to_edge's table) is read here, once. Then the
    CompositeImplicitAutograd ops are collected once, here (`_composite_ops_collected`)."""
    with _collection_paused():
        with contextlib.suppress(DelegateUnavailable, ImportError):
            chosen = partitioner(name)
            program = _import_executorch("executorch.exir.program._program")
            _no_decomposition_ops_registered(chosen, program)
            fixed_kept_ops(name)
            _edge_table()
            # A pattern that cannot be built here fails in the views, as it would without this.
            # Each pattern is exported and lowered (`to_edge`), each asking torch.export for
            # its composite ops: answered once per op registry state (`cia_ops_cached`).
            patterns = _pattern_graphs_built_once(name)
            with contextlib.suppress(Exception), _quiet(), torchcompat.cia_ops_cached(), patterns:
                _pattern_graphs(name)
        _composite_ops_collected()


@contextlib.contextmanager
def _collection_paused() -> Any:
    """Python's cyclic garbage collector off meanwhile, then as it was. Importing executorch
    and its backend (and building Vulkan's patterns) allocates some 160,000 objects that stay:
    a young collection every 700 of them, and every so often a full one over the worker's whole
    heap (torch's, not yet frozen): a quarter of the preload's time. The worker collects and
    freezes its heap once the preload is done."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _no_decomposition_ops_registered(chosen: Any, program: Any) -> None:
    """The ops `to_edge` keeps from decomposition for this partitioner, registered now as
    executorch registers them the first time a program needs them (`_register_no_decomp_op`:
    one `EDGE_DO_NOT_DECOMP::` op per kept aten op, its schema and kernel the aten op's,
    cached for the process). XNNPACK's and Vulkan's lists do not depend on the program (a
    fixed list and a per-node filter), so every child would otherwise register the same ops
    again, each registration a change of the op registry's state that makes the next
    `run_decompositions` collect its composite ops again (`_composite_ops_collected`). A
    partitioner without a per-node filter (Core ML) keeps ops without registering any."""
    with contextlib.suppress(Exception):  # a partitioner that cannot say so here: its view registers them
        kept, per_node = chosen.ops_to_not_decompose(_sample_program())
        if per_node is None:
            return
        for op in program._remove_invalid_ops_for_not_decompose(list(kept)):
            program._register_no_decomp_op(op)


def _composite_ops_collected() -> None:
    """torch.export's list of CompositeImplicitAutograd ops (every `run_decompositions` asks
    for it: each to_edge asks twice), computed here in the worker before it forks, so each
    file's child finds it in `torchcompat.cia_ops_cached`'s cache instead of walking every
    op namespace again (a quarter of a second per child once executorch's namespaces are
    loaded). That cache is keyed by the op registry's state, which includes how many ops
    each namespace has loaded, and a child's own export loads more as it meets them; so
    every op the dispatcher has is loaded first (a Python object per op, about 0.1 s, once):
    the state a child starts from is then the one it keeps, unless its code registers ops
    of its own, and then the list is collected again, as it must be."""
    for qualified in torchcompat.all_op_names():
        namespace, _, rest = qualified.partition("::")
        with contextlib.suppress(Exception):  # an op Python cannot name: nothing to load
            getattr(getattr(torch.ops, namespace), rest.split(".", 1)[0])
    with contextlib.suppress(Exception):  # a cold cache is slower, never wrong
        torchcompat.collect_composite_ops()


def delegate_nodes(exported: Any, name: str, plain: PlainDecomposition | None = None) -> list[DelegateNode]:
    """The edge program's op nodes for one delegate, each with the partitioner's decision.
    `plain`: the class's plain `executorch` view, when it was decomposed first (its program
    may be the one to_edge would decompose for this delegate too). Raises
    DelegateUnavailable when the partitioner cannot run, any other error when to_edge
    itself fails on the program (the caller reports it as the view's failure)."""
    try:
        program = _import_executorch("executorch.exir.program._program")
        config = importlib.import_module("executorch.exir").EdgeCompileConfig()
        edge_for = program._gen_edge_manager_for_partitioners
    except (ImportError, AttributeError) as error:
        raise DelegateUnavailable(f"executorch's to_edge_transform_and_lower internals: {error}") from None
    chosen = partitioner(name)
    backend_check = BACKEND_CHECKS.get(name)
    with (
        _quiet(),
        torchcompat.cia_ops_cached(),
        torchcompat.redecomposition_skipped(_uses_any_of()),
        _frames_without_source_lines(chosen),
    ):
        program = _decomposed_for(exported, name, chosen, plain) or _functional_copy(exported, chosen) or exported
        with _edge_passes_fused():
            manager = edge_for({"forward": [chosen]}, {"forward": program}, config, None, False)
        edge = manager.exported_program("forward")
        with _Reasons() as reasons, _pattern_graphs_built_once(name):
            chosen.partition(edge)
        tagged = {node for node in edge.graph_module.graph.nodes if node.meta.pop("delegation_tag", None) is not None}
        # The second half of to_edge_transform_and_lower, where the backend converts what was taken.
        not_converted = backend_check(manager) if backend_check is not None and tagged else {}
    quantized_only = _quantized_only_targets(chosen)
    out: list[DelegateNode] = []
    for node in edge.graph_module.graph.nodes:
        if node.op != "call_function":
            continue
        op = _overload_of(node.target)
        if op is None:
            continue  # getitem, executorch_call_delegate: not ops a kernel runs
        taken = node in tagged
        out.append(
            DelegateNode(
                canonical_name(op),
                node,
                taken,
                tuple(dict.fromkeys(reasons.get(node, ()))),
                not taken and _config_name(node.target) in quantized_only,
                not_converted.get(node.name, "") if taken else "",
            )
        )
    return out


class _InspectWithoutSourceLines:
    """The `inspect` module, except that `stack()` reads no source lines unless asked for
    some (its `context` defaults to 0): each frame's function and file are the same."""

    def __getattr__(self, name: str) -> Any:
        return getattr(inspect, name)

    @staticmethod
    def stack(context: int = 0) -> list[inspect.FrameInfo]:
        return inspect.getouterframes(sys._getframe(1), context)


@contextlib.contextmanager
def _frames_without_source_lines(chosen: Any) -> Any:
    """While active, the modules of the partitioner's classes see `inspect` as
    `_InspectWithoutSourceLines`. XNNPACK's and Core ML's `partition()` first look through
    `inspect.stack()` for the function that called them (to_edge_transform_and_lower, or a
    to_backend of executorch's, which gets a deprecation warning), and read only each
    frame's function and file name; with the default context each frame's source line is
    looked up as well (the file's module found among every loaded one, its lines read into
    the line cache), which in a worker's child costs more than XNNPACK's partitioning
    itself: 0.02 to 0.1 s of processor time a class, against half a millisecond without."""
    modules = {sys.modules.get(cls.__module__) for cls in type(chosen).__mro__}
    patched = [module for module in modules if module is not None and getattr(module, "inspect", None) is inspect]
    for module in patched:
        module.inspect = _InspectWithoutSourceLines()  # type: ignore[attr-defined]
    try:
        yield
    finally:
        for module in patched:
            module.inspect = inspect  # type: ignore[attr-defined]


# -- to_edge's passes, consecutive retraces as one --------------------------------------------

# What a pass class may define, besides its `call_operator`, to run inside a fused pass.
_PLAIN_CLASS_ATTRIBUTES = frozenset(
    {"__module__", "__doc__", "__qualname__", "__firstlineno__", "__static_attributes__", "__annotations__"}
    | {"__dict__", "__weakref__", "__abstractmethods__", "_abc_impl", "__parameters__", "__orig_bases__"}
)


@contextlib.contextmanager
def _edge_passes_fused() -> Any:
    """While active, to_edge's passes (`_generate_edge_program`'s list, executorch's own
    objects in executorch's order) run with each run of consecutive passes that only
    rewrite one operator call at a time (`ExportPass` subclasses defining nothing but
    `call_operator`) fused into one pass (`_fused_pass`): one retrace of the program, with
    fake values for every node, instead of one per pass. In executorch 1.5 that is
    NormalizeTransposePass with ReplaceBrokenOpsWithFunctionalOpsPass, and
    RemoveMixedTypeOperators with OpReplacePass and MemoryFormatOpsPass: 8 retraces
    become 5, about 30 % of `_generate_edge_program`'s time in a worker's child. Every other
    pass runs as executorch runs it; the edge program is the one executorch's own loop
    builds, node for node (tests/capture/test_delegate_view.py compares them)."""
    try:
        program = _import_executorch("executorch.exir.program._program")
        base = _import_executorch("executorch.exir.pass_base").ExportPass
        original = program.__dict__["_get_aten_to_edge_passes"]
        op_replace, memory_format = program.__dict__["OpReplacePass"], program.__dict__["MemoryFormatOpsPass"]
    except (ImportError, AttributeError, KeyError):  # another executorch: its passes as it runs them
        yield
        return
    listed = getattr(inspect.unwrap(program._generate_edge_program), "__code__", None)
    if listed is None or not {"_get_aten_to_edge_passes", "OpReplacePass", "MemoryFormatOpsPass"} <= set(
        listed.co_names
    ):  # a to_edge that lists its passes otherwise: run as it runs them
        yield
        return

    def passes_fused(config: Any) -> tuple[list[Any], Any]:
        before, after = original(config)
        # `_generate_edge_program` appends these two after the list; they join it here.
        tail = [op_replace()] + ([] if config._skip_dim_order else [memory_format()])
        out: list[Any] = []
        run: list[Any] = []  # consecutive passes that rewrite calls only: (as listed, the pass)
        for step in [*before, *tail]:
            if _rewrites_calls_only(_unwrapped(step), base):
                run.append(step)
                continue
            out.extend(_fused_run(run))
            out.append(step)
        out.extend(_fused_run(run))
        return out, after

    program._get_aten_to_edge_passes = passes_fused
    program.OpReplacePass = program.MemoryFormatOpsPass = _NoPass  # now in the list's last pass
    try:
        yield
    finally:
        program._get_aten_to_edge_passes = original
        program.OpReplacePass, program.MemoryFormatOpsPass = op_replace, memory_format


def _unwrapped(step: Any) -> Any:
    """The pass a pass manager's wrapper (`pass_result_wrapper`) calls."""
    while hasattr(step, "__wrapped__"):
        step = step.__wrapped__
    return step


def _rewrites_calls_only(step: Any, base: type) -> bool:
    """Whether the pass is an `ExportPass` whose classes define only `call_operator` (and
    an `__init__` without arguments) and whose object holds nothing of its own."""
    if not isinstance(step, base) or set(vars(step)) - _attributes_of(base):
        return False
    for cls in type(step).__mro__:
        if cls is base:
            return True
        defined = set(vars(cls)) - _PLAIN_CLASS_ATTRIBUTES - {"call_operator"}
        if defined - {"__init__"}:
            return False
        if "__init__" in defined and len(inspect.signature(vars(cls)["__init__"]).parameters) != 1:
            return False
    return False


@functools.cache
def _attributes_of(base: type) -> frozenset[str]:
    """What an object of the pass class holds when made."""
    return frozenset(vars(base()))


def _fused_run(run: list[Any]) -> list[Any]:
    """The run of passes as one pass (`_fused_pass`), or the one pass as listed; emptied."""
    if len(run) < 2:
        out = list(run)
    else:
        out = [_fused_pass(tuple(type(_unwrapped(step)) for step in run))()]
    run.clear()
    return out


@functools.cache
def _fused_pass(classes: tuple[type, ...]) -> type:
    """One `ExportPass` whose `call_operator` is each class's in turn: a class deriving from
    a stage per class (stage i derives from class i, in order), so class i's
    `super().call_operator` is stage i+1's, and the last one's is ExportPass's, which adds
    the node. What one pass hands the next is the call it would have added to its graph,
    and the next pass's retrace would have given it that call, in that order. A pass that
    adds calls of its own (`self.call_operator`, RemoveMixedTypeOperators' casts) gives
    them to itself first, as in its own retrace: the stage running when it calls is where
    the call enters."""
    running: list[int] = []  # the stages whose call_operator is running, innermost last

    def stage_call(index: int) -> Any:
        def call_operator(self: Any, op: Any, args: Any, kwargs: Any, meta: Any) -> Any:
            running.append(index)
            try:
                return super(stages[index], self).call_operator(op, args, kwargs, meta)
            finally:
                running.pop()

        return call_operator

    stages: list[Any] = [
        type(f"_{cls.__name__}Stage", (cls,), {"call_operator": stage_call(index)}) for index, cls in enumerate(classes)
    ]

    def call_operator(self: Any, op: Any, args: Any, kwargs: Any, meta: Any) -> Any:
        return stages[running[-1] if running else 0].call_operator(self, op, args, kwargs, meta)

    name = "Fused" + "".join(cls.__name__ for cls in classes)
    return type(name, tuple(stages), {"call_operator": call_operator})


class _NoPass:
    """A pass that leaves the graph as it is (its work is done in a fused pass). It takes
    whatever the pass it stands for was made with, should a later executorch give it any."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __call__(self, graph_module: Any) -> Any:
        return importlib.import_module("torch.fx.passes.infra.pass_base").PassResult(graph_module, False)


# -- the backend's conversion of what the partitioner took ---------------------------------


def coreml_not_converted(manager: Any) -> dict[str, str]:
    """The nodes Core ML's partitioner takes that its backend cannot convert, by node name,
    each with coremltools' own words: where the real `to_edge_transform_and_lower` raises.

    The partitioner asks coremltools only whether its op registry has the op's name
    (`is_torch_fx_node_supported`); the backend's `preprocess` then converts each delegated
    partition with `coremltools.convert`, whose translation of a node may still refuse it: an
    op of a later opset than the default deployment target (`pixel_unshuffle` needs iOS 16),
    an argument form (`topk(sorted=False)`, `avg_pool2d(divisor_override=...)`). So the real
    second half of the lowering runs here, executorch's own `to_backend` (the partitioner,
    its partitions cut into the sub-programs the backend is given), with `CoreMLBackend`'s
    `preprocess` doing the first part of its conversion only: coremltools' PyTorch frontend
    (`frontend.torch.load`, with the deployment target, precision and inputs the compile
    specs give), every node converted in order by coremltools' own translations. Not run:
    its MIL optimisation passes, serialisation and saving, which need the weights' values.

    Weights are fake in the worker: each constant a sub-program holds is given to coremltools
    as zeros of its shape and dtype (a stride-0 view, no memory); the translations read
    shapes and dtypes, rarely values. A node that fails is recorded and its results left
    out, so later nodes that do not depend on it are still converted as for real; a node
    that depends on one that failed is not judged (the real conversion stops at the first)."""
    try:
        backend = _import_executorch("executorch.backends.apple.coreml.compiler").CoreMLBackend
        preprocess_result = _import_executorch("executorch.exir.backend.backend_details").PreprocessResult
        frontend = importlib.import_module("coremltools.converters.mil.frontend.torch.load")
    except (ImportError, AttributeError) as error:
        raise DelegateUnavailable(f"Core ML's backend or coremltools' PyTorch frontend: {error}") from None
    found: dict[str, str] = {}

    def convert_front_end(program: Any, compile_specs: list[Any]) -> Any:
        _zeros_for_fake_constants(program)
        before = len(found)
        try:
            with _nodes_converted_apart(found):
                frontend.load(program, **_coreml_convert_arguments(backend, program, compile_specs))
        except Exception as error:  # noqa: BLE001 - the conversion fails outside any one node
            if len(found) == before:
                first = next((n for n in program.graph.nodes if n.op == "call_function"), None)
                if first is not None:
                    found[first.name] = _words(error)
        return preprocess_result(processed_bytes=b"")

    original = backend.__dict__["preprocess"]
    backend.preprocess = staticmethod(convert_front_end)
    try:
        manager.to_backend({"forward": partitioner("coreml")})
    except Exception:  # noqa: BLE001, S110 - executorch's own lowering steps: never claimed on fake tensors
        pass
    finally:
        backend.preprocess = original
    return found


BACKEND_CHECKS = {"coreml": coreml_not_converted}


def _coreml_convert_arguments(backend: Any, program: Any, compile_specs: list[Any]) -> dict[str, Any]:
    """What `CoreMLBackend._convert_to_mlmodel`'s `coremltools.convert` call hands its PyTorch
    frontend, read from the compile specs with the backend's own readers, defaulted as
    `coremltools.convert` defaults them for an ML program."""
    entry = importlib.import_module("coremltools.converters._converters_entry")
    target = backend.min_deployment_target_from_compile_specs(compile_specs)
    precision = backend.model_compute_precision_from_compile_specs(compile_specs)
    version = target.value if target is not None else entry._set_default_specification_version("mlprogram")
    inputs = None
    shapes = backend.enumerated_shapes_from_compile_specs(compile_specs)
    if shapes is not None:
        helpers = _import_executorch("executorch.backends.apple.coreml.compiler.enumerated_shape_utils")
        inputs = helpers._get_ct_inputs(program, shapes)
    return {
        "inputs": inputs,
        "specification_version": version,
        "use_default_fp16_io": version is not None
        and version >= entry.AvailableTarget.iOS16
        and entry._need_fp16_cast_pass(precision, "mlprogram"),
        "states": [],
    }


def _zeros_for_fake_constants(program: Any) -> None:
    """A fake (or meta) weight, buffer or lifted constant of the sub-program becomes zeros of
    its shape and dtype, a stride-0 view that costs no memory; a real one stays, and so does
    the value a fake tensor made from a literal keeps (`FakeTensor.constant`: `torch.tensor([1,
    2])` in `forward`)."""
    fake_type = torchcompat.fake_tensor_type()
    for store in (program.state_dict, program.constants):
        for key, value in list(store.items()):
            if not isinstance(value, torch.Tensor) or not (isinstance(value, fake_type) or value.device.type == "meta"):
                continue
            known = getattr(value, "constant", None)
            if isinstance(known, torch.Tensor) and not isinstance(known, fake_type) and known.device.type == "cpu":
                store[key] = known
                continue
            zero = torch.zeros((), dtype=value.dtype, device="cpu")
            store[key] = zero.expand(value.shape) if value.dim() else zero


@contextlib.contextmanager
def _nodes_converted_apart(found: dict[str, str]) -> Any:
    """coremltools' frontend with each node's conversion on its own: a node whose translation
    raises (or that coremltools cannot read) is recorded in `found` with its words, and the
    nodes that depend on it are skipped, instead of the whole conversion stopping."""
    ops = importlib.import_module("coremltools.converters.mil.frontend.torch.ops")
    internal = importlib.import_module("coremltools.converters.mil.frontend.torch.internal_graph")
    convert_one = ops.convert_single_node
    read_one = internal.InternalTorchIRNode.__dict__["from_exir_node"]
    failed: set[str] = set()

    def convert_single_node(context: Any, node: Any) -> None:
        if failed.intersection(_input_names(node)):
            failed.update(node.outputs)
            return
        try:
            convert_one(context, node)
        except Exception as error:  # noqa: BLE001 - the translation refuses this node
            found.setdefault(node.name, _words(error))
            failed.update(node.outputs)

    def from_exir_node(cls: Any, node: Any) -> Any:
        try:
            return read_one.__func__(cls, node)
        except Exception as error:
            found.setdefault(node.name, _words(error))
            raise

    setattr(ops, "convert_single_node", convert_single_node)  # noqa: B010 - a module's function, for a while
    internal.InternalTorchIRNode.from_exir_node = classmethod(from_exir_node)
    try:
        yield
    finally:
        setattr(ops, "convert_single_node", convert_one)  # noqa: B010
        internal.InternalTorchIRNode.from_exir_node = read_one


def _input_names(node: Any) -> set[str]:
    """Every name a coremltools node reads (its inputs and keyword inputs, nested tuples)."""
    out: set[str] = set()
    stack: list[Any] = [node.inputs, list((node.kwinputs or {}).values())]
    while stack:
        value = stack.pop()
        if isinstance(value, (list, tuple)):
            stack.extend(value)
        elif isinstance(value, str):
            out.add(value)
    return out


def _words(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}".rstrip(": ")[:_REASON_LIMIT]


# A class's program functionalised (`run_decompositions({})`), kept while the program lives:
# every delegate view of the class starts from it.
_FUNCTIONAL: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def _functional_copy(exported: Any, chosen: Any) -> Any | None:
    """A copy of the class's program functionalised, which `_gen_edge_manager_for_partitioners`
    makes first of all (`run_decompositions({})`, a full retrace), made once per program for
    all the delegate views asked for it; given that, executorch's own call functionalises an
    already functional program, which `torchcompat.redecomposition_skipped` skips. A copy
    each time: to_edge's passes change the graph they are given. None (executorch does it
    all itself) for a partitioner that transforms the program before decomposition, where
    the order matters, or when it fails here (executorch's own call says why)."""
    if not _decomposes_as_given(chosen):
        return None
    try:
        functional = _FUNCTIONAL.get(exported)
        if functional is None:
            functional = exported.run_decompositions({})
            _FUNCTIONAL[exported] = functional
        return copy.deepcopy(functional)
    except Exception:  # noqa: BLE001 - executorch functionalises it itself, and reports
        return None


# -- one decomposition for the plain view and the delegates that keep a fixed list ----------

# Per process, filled before the worker forks (`preload`): for each delegate whose partitioner
# keeps a fixed list of ops from decomposition, that list as to_edge uses it; None for one
# whose list depends on the program (Core ML's: the supported ops among its nodes).
_FIXED_KEPT: dict[str, frozenset[Any] | None] = {}
_FIXED_LISTED: dict[str, frozenset[Any]] = {}  # the same, as `ops_to_not_decompose` lists them
# ExecuTorch's own decomposition table (`_default_decomposition_table`), materialised once.
_EDGE_TABLE: list[dict[Any, Any]] = []


@functools.cache
def _sample_program() -> Any:
    """The program a partitioner is shown when asked which ops it keeps from decomposition
    for every class (`ops_to_not_decompose` takes one; a fixed list does not depend on it):
    an identity, exported once per process."""
    return torch.export.export(torch.nn.Identity(), (torch.zeros(1),), strict=False)


def fixed_kept_ops(name: str) -> frozenset[Any] | None:
    """The ops `_gen_edge_manager_for_partitioners` keeps from decomposition for this
    delegate, when they are the same for every program: a partitioner that filters its kept
    ops node by node (`ops_to_not_decompose` gives a per-node check: XNNPACK's configs,
    Vulkan's list) takes to_edge's EDGE_DO_NOT_DECOMP path, whose list executorch prunes
    (`_remove_invalid_ops_for_not_decompose`) and which a program's nodes do not change.
    None for a partitioner without a per-node check (its list is read off the program's
    nodes), one that transforms the program before decomposing, or one that cannot run."""
    if name not in _FIXED_KEPT:
        found: frozenset[Any] | None = None
        with contextlib.suppress(Exception):  # None: the view decomposes as executorch does, unaided
            chosen = partitioner(name)
            if _decomposes_as_given(chosen):
                program = _import_executorch("executorch.exir.program._program")
                kept, per_node = chosen.ops_to_not_decompose(_sample_program())
                if per_node is not None:
                    found = frozenset(program._remove_invalid_ops_for_not_decompose(list(kept)))
                    _FIXED_LISTED[name] = frozenset(kept)
        _FIXED_KEPT[name] = found
    return _FIXED_KEPT[name]


def _edge_table() -> dict[Any, Any]:
    """A fresh copy of ExecuTorch's decomposition table, as `to_edge` builds it (torch.export's
    default one, plus `linalg_vector_norm`, minus the quantisation primitives)."""
    if not _EDGE_TABLE:
        program = _import_executorch("executorch.exir.program._program")
        _EDGE_TABLE.append(dict(program._default_decomposition_table().items()))
    return dict(_EDGE_TABLE[0])


def _decomposes_as_given(chosen: Any) -> bool:
    """Whether the partitioner leaves the program as it is before decomposition (it does not
    override `transform_for_pre_decomposition`)."""
    base = importlib.import_module("executorch.exir.backend.partitioner").Partitioner
    return getattr(type(chosen), "transform_for_pre_decomposition", None) is base.transform_for_pre_decomposition


class PlainDecomposition:
    """The plain `executorch` view's decomposition of one class (its program through
    to_edge's table), made first and offered to the class's delegate views.

    A delegate that keeps ops from decomposition changes what to_edge does with a program
    only where one of those ops is reached while it decomposes: a kept op in the graph, or
    one that another op's decomposition calls (an LSTM's `linear`). So while the plain view
    decomposes, the table's entry for every op a requested delegate keeps is its own
    decomposition, noted as it runs (`watching`). Where none ran, the trace with those ops
    kept is the same trace, and the plain view's program is the one
    `_gen_edge_manager_for_partitioners` would decompose for that delegate."""

    def __init__(self, views: tuple[str, ...] | list[str]) -> None:
        watched: set[Any] = set()
        for view in views:
            if view in DELEGATE_VIEWS:
                watched |= fixed_kept_ops(delegate_name(view)) or frozenset()
        self.watched = frozenset(watched)
        self.reached: set[Any] = set()
        self.program: Any = None
        self._table_ops: frozenset[Any] = frozenset()

    def watching(self, table: dict[Any, Any]) -> dict[Any, Any]:
        """`table` (the plain view's own), each watched op's entry noting that it ran."""
        out = dict(table)
        for op in self.watched.intersection(out):
            out[op] = _noting(op, out[op], self.reached)
        self._table_ops = frozenset(table)
        return out

    def keep(self, program: Any) -> None:
        self.program = program

    def program_for(self, kept: frozenset[Any]) -> Any | None:
        """A copy of the plain view's program (to_edge's passes change the graph they are
        given) where it is the one to_edge would decompose with `kept` kept: the plain
        view's table is executorch's own, every kept op was watched, none was reached."""
        if self.program is None or not kept <= self.watched or kept & self.reached:
            return None
        if self._table_ops != frozenset(_edge_table()):
            return None
        return copy.deepcopy(self.program)


def _noting(op: Any, decomposition: Any, reached: set[Any]) -> Any:
    def noted(*args: Any, **kwargs: Any) -> Any:
        reached.add(op)
        return decomposition(*args, **kwargs)

    return noted


def _decomposed_for(exported: Any, name: str, chosen: Any, plain: PlainDecomposition | None) -> Any | None:
    """The program `_gen_edge_manager_for_partitioners` would hand to_edge's passes, for a
    delegate with a fixed kept list (`fixed_kept_ops`), made here in one trace: the plain
    view's program where it is that one (`PlainDecomposition.program_for`), else the class's
    program decomposed with executorch's table less the kept ops (its functionalisation and
    decomposition in one `run_decompositions`, as `to_edge` itself makes them). executorch's
    own call then finds both its retraces of that program unchanged
    (`torchcompat.redecomposition_skipped`); the kept nodes its per-node check declines are
    still decomposed by its second pass, as they must be. None: executorch does it all."""
    kept = fixed_kept_ops(name)
    if kept is None:
        return None
    listed, per_node = chosen.ops_to_not_decompose(exported)
    if per_node is None or frozenset(listed) != _FIXED_LISTED.get(name):
        return None  # not the list this process read: executorch decides it all itself
    shared = plain.program_for(kept) if plain is not None else None
    if shared is not None:
        return shared
    table = _edge_table()
    for op in kept:
        table.pop(op, None)
    try:
        return exported.run_decompositions(table)
    except Exception:  # noqa: BLE001 - executorch decomposes it itself, and reports
        return None


# -- a partitioner's pattern graphs, built once per process -----------------------------------

# The registry of graph patterns a delegate's partitioner matches on every program it
# partitions (Vulkan's fusable patterns: RoPE, SDPA, quantised linear...), by delegate.
PATTERN_REGISTRIES = {"vulkan": "executorch.backends.vulkan.patterns"}
_PATTERN_GRAPHS: dict[tuple[str, str], list[Any]] = {}


def _pattern_graphs(name: str) -> list[Any]:
    """Every pattern graph of the delegate's registry (none for a delegate without one)."""
    module_name = PATTERN_REGISTRIES.get(name)
    if module_name is None:
        return []
    found: list[Any] = _import_executorch(module_name).all_fusable_graph_patterns()
    return found


@contextlib.contextmanager
def _pattern_graphs_built_once(name: str) -> Any:
    """While active, each pattern of the delegate's registry gives the graphs it built the
    first time in this process (the worker builds them before it forks: `preload`).
    Vulkan's partitioner asks every pattern for its graphs on each `partition()`, and each
    builds them anew: it exports and lowers a sample module per pattern (a RoPE block, an
    SDPA...), seconds per program for the same graphs, whose sample weights matching ignores
    (placeholders, `ignore_literals`). The first build of a pattern that fails is left to
    fail as it does without this."""
    module_name = PATTERN_REGISTRIES.get(name)
    entries: dict[str, Any] = {}
    with contextlib.suppress(ImportError, AttributeError):  # no registry here: nothing to keep
        if module_name is not None:
            entries = dict(_import_executorch(module_name).fusable_patterns)
    saved = {key: entry.get_graphs_fn for key, entry in entries.items() if entry.get_graphs_fn is not None}
    for key, build in saved.items():
        entries[key].get_graphs_fn = _built_once((name, key), build)
    try:
        yield
    finally:
        for key, build in saved.items():
            entries[key].get_graphs_fn = build


def _built_once(key: tuple[str, str], build: Any) -> Any:
    def graphs() -> list[Any]:
        if key not in _PATTERN_GRAPHS:
            _PATTERN_GRAPHS[key] = list(build())
        return list(_PATTERN_GRAPHS[key])

    return graphs


# The module whose import parses executorch's edge dialect table (exir/dialects/edge/edge.yaml).
_EDGE_OPS = "executorch.exir.dialects.edge._ops"


def _import_executorch(module_name: str) -> Any:
    """`importlib.import_module` of an executorch module; the first one that loads the edge
    dialect parses its table with libyaml where that gives what executorch's own parser
    gives (`_edge_table_parsed_by_libyaml`)."""
    if _EDGE_OPS in sys.modules:
        return importlib.import_module(module_name)
    with _edge_table_parsed_by_libyaml():
        return importlib.import_module(module_name)


@contextlib.contextmanager
def _edge_table_parsed_by_libyaml() -> Any:
    """While executorch imports its edge dialect, its `ruamel.yaml` safe load of a text is
    answered by PyYAML's C loader, when that is installed and its result is one the YAML 1.2
    parser reads the same (`_reads_alike_in_yaml_1_2`); anything else goes to ruamel.yaml
    itself. The edge table (140 KB) is the largest part of importing executorch's exir on
    each worker start (1.2 s on 2 loaded cores in ruamel.yaml's pure-Python parser, a
    quarter of that in libyaml); the result is the same data, from the same file."""
    try:  # optional packages without type information: imported by name, used as Any
        yaml = importlib.import_module("yaml")
        parser_class = importlib.import_module("ruamel.yaml").YAML
        fast_loader = yaml.CSafeLoader
    except (ImportError, AttributeError):
        yield
        return
    original = parser_class.load

    def load(self: Any, stream: Any) -> Any:
        if isinstance(stream, str) and list(getattr(self, "typ", None) or ()) == ["safe"]:
            try:
                data = yaml.load(stream, Loader=fast_loader)  # the C *safe* loader
            except yaml.YAMLError:
                data = None
            else:
                if _reads_alike_in_yaml_1_2(data):
                    return data
        return original(self, stream)

    parser_class.load = load
    try:
        yield
    finally:
        parser_class.load = original


# Plain scalars YAML 1.2's core schema (ruamel.yaml's) reads as something other than a string,
# where YAML 1.1 (PyYAML's) may read a string: `0o17`, `1e3`, `.5`.
_YAML_1_2_NOT_STRING = re.compile(
    r"null|Null|NULL|~|true|True|TRUE|false|False|FALSE"
    r"|[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+"
    r"|[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?"
    r"|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN)"
)


def _reads_alike_in_yaml_1_2(data: Any) -> bool:
    """Whether both YAML versions read the document as `data`: mappings, lists and strings
    only (any other scalar may be typed differently: `on` is a bool in 1.1, a string in
    1.2), none of which 1.2 would type (a string that was quoted is refused too: fine)."""
    stack = [data]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif not isinstance(value, str) or _YAML_1_2_NOT_STRING.fullmatch(value):
            return False
    return True


def _uses_any_of() -> Any:
    """ExecuTorch's own test of whether a graph (or a control-flow branch of it) calls any
    op of a decomposition table: where it says none, `_gen_edge_manager_for_partitioners`'
    last `run_decompositions` (the partitioner's kept ops that its check declined, decomposed
    after all) would retrace an unchanged graph, and is skipped. Without it nothing is."""
    try:
        return importlib.import_module("executorch.exir.graph_module").contains_any_call_fn_target_op
    except (ImportError, AttributeError):
        return lambda _graph_module, _ops: True


def _overload_of(target: Any) -> Any:
    """The OpOverload behind an edge dialect op (EdgeOpOverload keeps it as `_op`)."""
    if torchcompat.is_op_overload(target):
        return target
    inner = getattr(target, "_op", None)
    return inner if torchcompat.is_op_overload(inner) else None


def _config_name(target: Any) -> str:
    """The name XNNPACK's configs are keyed by (executorch's `format_target_name`)."""
    names = str(getattr(target, "__name__", "")).split(".")
    if len(names) > 2:
        names.pop(0)
    return ".".join(names)


def _quantized_only_targets(chosen: Any) -> set[str]:
    """The op names whose partitioner config supports quantized precisions only
    (XNNPACK's `supported_precision_types` without FP32)."""
    configs = getattr(chosen, "target_partitioner_configs", None)
    if not isinstance(configs, dict):
        return set()
    out = set()
    for target_name, config in configs.items():
        with contextlib.suppress(Exception):  # a config without precisions: not quantized-only
            precisions = [getattr(p, "name", str(p)) for p in config.supported_precision_types()]
            if precisions and "FP32" not in precisions:
                out.add(target_name)
    return out


class _Reasons(logging.Handler):
    """What a partitioner logs about each node while it decides, keyed by the node: a
    `WhyNoPartition` record names its node; any other record is attributed to the
    innermost frame that holds a `node` of the graph (Vulkan's `log_skip(node, reason)`)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.found: dict[Any, list[str]] = {}
        self._saved: tuple[int, list[logging.Handler]] = (logging.NOTSET, [])

    def __enter__(self) -> dict[Any, list[str]]:
        # The only handler meanwhile: debug records must not reach the worker's own ones.
        root = logging.getLogger()
        self._saved = (root.level, list(root.handlers))
        root.handlers = [self]
        root.setLevel(logging.DEBUG)
        return self.found

    def __exit__(self, *exc: object) -> None:
        root = logging.getLogger()
        root.setLevel(self._saved[0])
        root.handlers = self._saved[1]

    def emit(self, record: logging.LogRecord) -> None:
        node, reason = _node_and_reason(record)
        if node is not None and reason:
            self.found.setdefault(node, []).append(reason[:_REASON_LIMIT])


def _node_and_reason(record: logging.LogRecord) -> tuple[Any, str]:
    message: Any = record.msg
    node = getattr(message, "node", None)
    reason = getattr(message, "reason", None)
    if isinstance(node, torch.fx.Node) and isinstance(reason, str):
        return node, reason
    try:
        text = record.getMessage()
    except Exception:  # noqa: BLE001 - a record that cannot be formatted says nothing
        return None, ""
    match = _VULKAN_REASON.search(text)
    if match is None:
        return None, ""
    frame = sys._getframe(2)
    while frame is not None:
        candidate = frame.f_locals.get("node")
        if isinstance(candidate, torch.fx.Node):
            return candidate, match["reason"]
        frame = frame.f_back  # type: ignore[assignment]
    return None, ""


@contextlib.contextmanager
def _quiet() -> Any:
    """The partitioners and coremltools log at INFO and print progress bars: none of it
    may reach the worker's protocol stream."""
    logging.getLogger("coremltools").setLevel(logging.ERROR)
    with contextlib.redirect_stdout(sys.stderr):
        yield


def merged_delegate(earlier: Any, facts: dict[str, Any]) -> DelegateFacts:
    """One call site's decision when several nodes of the same op come from it (a loop, a
    repeated block): taken only if every one of them is, with all their reasons."""
    before = (earlier or {}).get("delegate") if isinstance(earlier, dict) else None
    if not before:
        return cast(DelegateFacts, dict(facts))
    out: DelegateFacts = {"delegated": bool(before.get("delegated")) and bool(facts.get("delegated"))}
    reasons = list(dict.fromkeys([*(before.get("reasons") or ()), *(facts.get("reasons") or ())]))
    if reasons:
        out["reasons"] = reasons
    not_converted = before.get("not_converted") or facts.get("not_converted")
    if not_converted:  # one node the backend cannot convert fails the lowering: the site keeps it
        out["not_converted"] = str(not_converted)
    if not out["delegated"]:
        # Quantized-only stands when every node left at the site was left for that reason.
        left = [f for f in (before, facts) if not f.get("delegated")]
        if all(f.get("quantized_only") for f in left):
            out["quantized_only"] = True
    counts = int(before.get("nodes", 1)) + int(facts.get("nodes", 1))
    out["nodes"] = counts
    out["taken"] = int(before.get("taken", int(bool(before.get("delegated"))))) + int(
        facts.get("taken", int(bool(facts.get("delegated"))))
    )
    return out
