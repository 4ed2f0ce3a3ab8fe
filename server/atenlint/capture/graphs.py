"""The graph each export toolchain itself consumes, produced by that toolchain's own front
end, on fake tensors (no memory, whatever the parameter count).

A device backend (MPS, CUDA) sees the dispatcher, which `trace.py` records. A toolchain
that converts a *graph* sees something else, and judging it on dispatcher-level names
is wrong both ways (`nn.Linear` on a 3-D input reaches `_unsafe_view` at the
dispatcher, but the TorchScript ONNX exporter converts `aten::linear`):

- view "jit": `torch.jit.trace`'s graph after coremltools' own passes (inlining takes each
  scripted function's optimised graph, so its constant branches are gone; `chunk` ->
  `prim::ConstantChunk`) — what coremltools' TorchScript frontend converts;
- view "onnx-jit": the TorchScript ONNX exporter's own trace (a second one: it substitutes
  scripted functions as compiled, constant branches kept) after the passes of its
  `_optimize_graph` that rename or remove nodes, in its order (inline, `chunk` ->
  `prim::ConstantChunk`, in-place ops made functional, number types erased, dead nodes —
  random parameters frozen into constants — removed);
- view "export": `torch.export.export(...).run_decompositions()` with the core-ATen
  table, in eval mode — what ExecuTorch's `to_edge` and Torch-TensorRT see;
- view "onnx-export": `torch.export` then the dynamo ONNX exporter's decomposition table
  (every op its registry implements is kept);
- view "executorch-export": `torch.export` then ExecuTorch's own `to_edge` table (the
  core-ATen table with ExecuTorch's changes, e.g. `linalg_vector_norm` decomposed);
- view "coreml-export": `torch.export` then `run_decompositions({})`, coremltools'
  ExportedProgram frontend (the `coreml-frontend = "export"` setting).

Every node is located through the positions the graph itself records: a traced node's
`sourceRange()` (the Python stack, file and line per frame) and an FX node's
`meta["stack_trace"]`, plus the names the graph keeps (`scopeName()`, `torch_fn`,
`nn_module_stack`) so the parent can pick the right expression on a line.

Runs inside the worker: standard library and torch only (torch.onnx is part of torch).
"""

from __future__ import annotations

import contextlib
import os
import re
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from .. import torchcompat

# The view names both sides use (the ExecuTorch delegate views included), defined there once.
from ..worker.vocabulary import (
    EXPORT_VIEWS,
    JIT_VIEWS,
    VIEW_COREML_EXPORT,
    VIEW_EXECUTORCH,
    VIEW_EXPORT,
    VIEW_JIT,
    VIEW_ONNX_JIT,
)
from .decompose import canonical_name
from .delegate_view import DELEGATE_VIEWS, DelegateUnavailable, PlainDecomposition, delegate_name, delegate_nodes
from .paths import TORCH_PLUMBING as _PLUMBING
from .paths import is_library_file
from .script import Site
from .trace import _fake_mode, _first_line, _user_site_of

_ATENLINT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
# The frames that start a capture: everything outside them is the caller, not the model.
_ENTRY = (
    _ATENLINT_DIR,
    os.path.join(_TORCH_DIR, "jit/"),
    os.path.join(_TORCH_DIR, "export/"),
    os.path.join(_TORCH_DIR, "onnx/"),
)
_JIT_FRAME = re.compile(r"^(?P<file>.+?)\((?P<line>\d+)\): (?P<func>.+)$")
# torch lists a data-dependent guard's symbols in the order of a set of sympy symbols, whose
# hashes (of their names) Python randomises per process: "(Size-like symbols: u1, u0)" in one
# run, "u0, u1" in the next. A finding quoting it must read the same in every run.
_SIZE_LIKE_SYMBOLS = re.compile(r"\(Size-like symbols: (?P<names>[^)]*)\)")
_FX_FRAME = re.compile(r'^\s*File "(?P<file>.+)", line (?P<line>\d+), in (?P<func>.+)$')
_NOT_OPS = ("prim::", "onnx::", "profiler::")
# Runtime checks export records and both consumers erase before converting (the dynamo
# ONNX exporter's `remove_assertion_nodes`, ExecuTorch's RemoveGraphAssertsPass).
_EXPORT_ASSERTIONS = frozenset(
    {
        "aten::_assert_async",
        "aten::_assert_async.msg",
        "aten::_assert_scalar",
        "aten::_assert_tensor_metadata",
        "aten::sym_constrain_range",
        "aten::sym_constrain_range_for_size",
        "aten::_functional_assert_async.msg",
        "aten::_functional_assert_scalar",
        "aten::_functional_sym_constrain_range",
        "aten::_functional_sym_constrain_range_for_size",
    }
)


class GivingWay(BaseException):
    """The worker's idle warm-up of its own sample model stops for a request that came in
    meanwhile (worker/main.py): raised by `give_way` between front-end calls only, where it
    unwinds like any failed capture. A BaseException, so the capture's handlers of its own
    failures (`except Exception`: that view falls back) never take it for one."""


# Set only while the worker warms its sample (`giving_way`): raises GivingWay when a request
# waits. Never set during the analysis of a user's file, whose capture it cannot change.
_give_way_check: Callable[[], None] | None = None


def give_way() -> None:
    """A point between two front-end calls where the sample's warm-up may stop."""
    if _give_way_check is not None:
        _give_way_check()


@contextlib.contextmanager
def giving_way(check: Callable[[], None]) -> Iterator[None]:
    """Within the block, `give_way` calls `check` (which raises GivingWay to stop)."""
    global _give_way_check
    previous, _give_way_check = _give_way_check, check
    try:
        yield
    finally:
        _give_way_check = previous


class GraphFailure(Exception):
    """The toolchain's front end could not capture the class (the real one would not either,
    or a gap of fake tensors): the caller falls back to another capture for that view."""

    def __init__(self, view: str, message: str, site: Site | None = None, toolchain_fails: bool = False):
        super().__init__(message)
        self.view = view
        self.message = message
        self.site = site
        # True when the real toolchain fails the same way on the user's code (not a gap of
        # atenlint's fake tensors): see `_export_itself_fails`.
        self.toolchain_fails = toolchain_fails

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "view": self.view,
            "message": self.message,
            "site": self.site.as_json() if self.site else None,
        }
        if self.toolchain_fails:
            out["toolchain_fails"] = True
        return out


class GraphFailures(Exception):
    """Some views failed, others were captured (`found`)."""

    def __init__(self, failures: list[Any], found: list[Any]):
        super().__init__("; ".join(f.message for f in failures))
        self.failures = failures
        self.found = found


@dataclass
class GraphOp:
    """One op node of a toolchain's graph, with the source sites of the call that made it."""

    op: str  # jit views: the node kind (`aten::linear`); export views: the overload (`aten::add.Tensor`)
    view: str
    sites: tuple[Any, ...]  # Site, outermost first (user frames and the library frames leading to the op)
    library: dict[str, Any] = field(default_factory=dict)  # non-aten ops: the registrations the library made
    delegate: dict[str, Any] = field(default_factory=dict)  # delegate views: the partitioner's decision


# -- fake CPU tensors ------------------------------------------------------------------


def _to_fake(mode: Any, value: Any, device: str) -> Any:
    if isinstance(value, torch.nn.Parameter):
        return torch.nn.Parameter(_to_fake(mode, value.data, device), requires_grad=value.requires_grad)
    if isinstance(value, torch.Tensor):
        if value.is_sparse or value.layout != torch.strided:
            return value
        with mode:
            return torch.empty_strided(tuple(value.shape), tuple(value.stride()), dtype=value.dtype, device=device)
    if isinstance(value, tuple):
        return tuple(_to_fake(mode, v, device) for v in value)
    if isinstance(value, list):
        return [_to_fake(mode, v, device) for v in value]
    if isinstance(value, dict):
        return {k: _to_fake(mode, v, device) for k, v in value.items()}
    return value


# Plain tensor attributes (not parameters or buffers) made real on the CPU for torch.export,
# up to this many bytes in all (beyond, they stay fake and export falls back, as before).
CONSTANT_TENSOR_LIMIT_BYTES = 256 * 1024 * 1024


@contextlib.contextmanager
def on_fake_cpu(instance: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Iterator[tuple[Any, ...]]:
    """The module's parameters and buffers swapped for fake CPU tensors of the same shapes
    (restored afterwards), the inputs made fake CPU too, and plain tensor attributes made
    real CPU tensors.

    CPU, not meta: the real exporters run on CPU tensors, and library code decides by
    device (MultiheadAttention takes its `_native_multi_head_attention` fast path on CPU
    under no_grad, which the TorchScript ONNX exporter cannot export); tensors `forward`
    makes with `device="cpu"` mix with them as they would for real.

    Plain attributes real, not fake: non-strict torch.export fakifies parameters, buffers
    and inputs with a fake mode of its own, but a plain attribute (`self.pos =
    posemb_sincos_2d(...)`, vit-pytorch's SimpleViT) is a constant it lifts as it finds
    it, so a fake tensor of our mode there fails with "fake mode ... doesn't match mode"
    where the real export, given a real tensor, succeeds. Real ones are what export is
    given for real (their values are noise: export never reads values)."""
    mode = _fake_mode()
    saved: list[tuple[dict[str, Any], str, Any]] = []
    constant_bytes = 0
    try:
        for module in instance.modules():
            for store in torchcompat.tensor_stores(module):
                for name, value in list(store.items()):
                    if isinstance(value, torch.Tensor):
                        saved.append((store, name, value))
                        store[name] = _to_fake(mode, value, "cpu")
            for name, value in list(vars(module).items()):
                if isinstance(value, torch.Tensor) and not name.startswith("_"):
                    if value.device.type != "meta":
                        continue  # already real (on the CPU): as the real export gets it
                    size = value.numel() * value.element_size()
                    saved.append((vars(module), name, value))
                    if constant_bytes + size <= CONSTANT_TENSOR_LIMIT_BYTES:
                        constant_bytes += size
                        with torch.no_grad():
                            vars(module)[name] = _real_like(value, name)
                    else:
                        vars(module)[name] = _to_fake(mode, value, "cpu")
        yield mode, _to_fake(mode, args, "cpu"), _to_fake(mode, kwargs, "cpu")
    finally:
        for store, name, value in reversed(saved):
            store[name] = value


# Real CPU tensors for the jit views, up to this many bytes of weights, buffers and inputs.
REAL_TENSOR_LIMIT_BYTES = 768 * 1024 * 1024


@contextlib.contextmanager
def on_real_cpu(
    instance: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], real_inputs: tuple[Any, ...] | None = None
) -> Iterator[tuple[Any, ...]]:
    """The module's meta tensors swapped for real CPU ones (restored afterwards), freshly
    initialised, with real inputs (`real_inputs`, the user's expression evaluated on the
    CPU, else zeros and normal noise of the same shapes).

    Why real: `torch.jit.trace` cannot run over meta or fake tensors — under the tracer, a
    Python meta kernel's size reads are themselves traced (a Tensor where the conv meta
    kernel wants an int). So the jit views cost memory: past a limit the caller falls back
    to the scripted graph for them (`_real_size_problem`; the export views stay fake)."""
    saved: list[tuple[dict[str, Any], str, Any]] = []
    try:
        with torch.no_grad():
            for module in instance.modules():
                for store in torchcompat.tensor_stores(module):
                    for name, value in list(store.items()):
                        if isinstance(value, torch.Tensor) and value.device.type == "meta":
                            saved.append((store, name, value))
                            store[name] = _real_like(value, name)
                for name, value in list(vars(module).items()):
                    if isinstance(value, torch.Tensor) and value.device.type == "meta" and not name.startswith("_"):
                        saved.append((vars(module), name, value))
                        vars(module)[name] = _real_like(value, name)
            for module in instance.modules():
                for reset in ("reset_parameters", "reset_running_stats"):
                    function = getattr(module, reset, None)
                    if callable(function) and type(module).__module__.startswith("torch."):
                        with contextlib.suppress(Exception):  # the normal noise stays
                            function()  # torch's own layers: their own initialisation
        if real_inputs is not None:
            real_args, real_kwargs = real_inputs
        else:
            real_args, real_kwargs = _real_like(args, "input"), _real_like(kwargs, "input")
        yield real_args, real_kwargs
    finally:
        for store, name, value in reversed(saved):
            store[name] = value


def _real_size_problem(
    instance: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], limit_bytes: int = REAL_TENSOR_LIMIT_BYTES
) -> str | None:
    """Why the module is too large for real tensors, or None."""
    tensors = [
        v
        for m in instance.modules()
        for store in torchcompat.tensor_stores(m)
        for v in store.values()
        if isinstance(v, torch.Tensor)
    ]
    total = sum(t.numel() * t.element_size() for t in tensors + _tensors_in((args, kwargs)))
    if total <= limit_bytes:
        return None
    return (
        f"torch.jit.trace needs real tensors and this model's weights and inputs take {total / 2**30:.1f} GiB "
        f"(atenlint's limit: {limit_bytes / 2**30:.2f} GiB)"
    )


def _real_like(value: Any, name: str) -> Any:
    if isinstance(value, torch.nn.Parameter):
        return torch.nn.Parameter(_real_like(value.data, name), requires_grad=value.requires_grad)
    if isinstance(value, torch.Tensor):
        if value.device.type != "meta":
            return value
        if value.is_floating_point() or value.is_complex():
            out = torch.empty(value.shape, dtype=value.dtype).normal_(0.0, 0.02)
            if "var" in name:  # running variances must stay positive
                out = out.abs_().add_(1.0)
            return out
        if value.dtype == torch.bool:
            return torch.ones(value.shape, dtype=torch.bool)
        return torch.zeros(value.shape, dtype=value.dtype)  # indices and counts: 0 is always in range
    if isinstance(value, tuple):
        return tuple(_real_like(v, name) for v in value)
    if isinstance(value, list):
        return [_real_like(v, name) for v in value]
    if isinstance(value, dict):
        return {k: _real_like(v, name) for k, v in value.items()}
    return value


def _tensors_in(value: Any) -> list[Any]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors_in(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors_in(v)]
    return []


# -- sites -------------------------------------------------------------------------------


def _is_plumbing(path: str) -> bool:
    return path.startswith((*_PLUMBING, _ATENLINT_DIR))


def _frames_to_sites(frames: list[tuple[str, int, str]], hints: tuple[str, ...]) -> tuple[Any, ...]:
    """Frames innermost first -> sites outermost first, from the model's entry down to the
    op; the innermost user frame carries `hints` (names the op's call may have on its line)
    and the name of the library function it called."""
    kept: list[tuple[str, int, str]] = []
    for path, line, func in frames:
        if path.startswith(_ENTRY) and kept and not is_library_file(kept[-1][0]):
            break  # the capture's own caller: outside the model
        if _is_plumbing(path) or path.startswith("<"):
            continue
        kept.append((path, line, func))
    sites = []
    inner_library: str | None = None
    hinted = False
    for path, line, func in kept:  # innermost first
        library = is_library_file(path)
        names: tuple[Any, ...] = ()
        if not library and not hinted:
            names = tuple(dict.fromkeys(n for n in (*hints, inner_library) if n))
            hinted = True
        if library:
            inner_library = func.strip()
        sites.append(Site(path, line, -1, 1, None, hint=names))
    return tuple(reversed(sites))


def _jit_frames(node: Any) -> list[tuple[str, int, str]]:
    try:
        text = str(node.sourceRange())
    except Exception:  # noqa: BLE001 - a node without a range
        return []
    frames = []
    for entry in text.splitlines():
        match = _JIT_FRAME.match(entry.strip())
        if match:
            frames.append((match["file"], int(match["line"]), match["func"]))
    return frames


def _fx_frames(node: Any, origins: dict[str, Any] | None = None, depth: int = 0) -> list[tuple[str, int, str]]:
    """The node's recorded frames, innermost first. `origins` (the exported program's own
    graphs, `_generated_code_origins`) puts back what `run_decompositions` loses: a
    higher-order op's body (`torch.no_grad()` in forward becomes `wrap_with_set_grad_enabled`)
    is inlined by running its generated code, so its nodes record a frame of that code
    (`<eval_with_key>.N`) instead of the user's; the exported node that line made has them."""
    text = node.meta.get("stack_trace") or ""
    frames = [(m["file"], int(m["line"]), m["func"]) for m in map(_FX_FRAME.match, text.splitlines()) if m]
    if origins and depth < 4 and any(f[0].startswith(_GENERATED) for f in frames):
        frames = [
            frame
            for file, line, func in frames
            for frame in (
                reversed(_generated_origin(file, line, origins, depth))
                if file.startswith(_GENERATED)
                else [(file, line, func)]
            )
        ]
    return list(reversed(frames))  # FX keeps them outermost first


_GENERATED = "<eval_with_key>"  # the file name FX gives the code it generates for a graph


def _generated_code_origins(graph_module: Any) -> dict[str, Any]:
    """The code FX generated for each graph of an exported program (its higher-order ops'
    bodies included) -> that graph: where a frame in generated code came from."""
    return {
        module.code.strip(): module for module in graph_module.modules() if isinstance(module, torch.fx.GraphModule)
    }


def _generated_origin(file: str, line: int, origins: dict[str, Any], depth: int) -> list[tuple[str, int, str]]:
    """The frames of the exported node that line `line` of generated code `file` makes (FX
    writes one statement per node, `name = target(...)`), innermost first; none when the
    code is not one of the program's graphs."""
    import linecache

    lines = linecache.getlines(file)
    graph_module = origins.get("".join(lines).strip())
    if graph_module is None or not 0 < line <= len(lines):
        return []
    name = lines[line - 1].strip().split(" = ", 1)[0].split(",")[0].strip()
    for node in graph_module.graph.nodes:
        if node.name == name:
            return _fx_frames(node, origins, depth + 1)
    return []


def _base(op: str) -> str:
    return op.partition("::")[2].split(".", 1)[0] if "::" in op else op


def _jit_hints(node: Any, op: str) -> tuple[str, ...]:
    scope = ""
    with contextlib.suppress(Exception):  # a node without a scope
        scope = node.scopeName()
    attribute = scope.rsplit(".", 1)[-1] if scope and "." in scope else ""
    return tuple(n for n in (_base(op), attribute) if n)


def _fx_hints(node: Any, op: str) -> tuple[str, ...]:
    names = [_base(op)]
    torch_fn = node.meta.get("torch_fn")
    if isinstance(torch_fn, tuple) and len(torch_fn) == 2:
        names.append(str(torch_fn[1]).rsplit(".", 1)[-1])
    stack = node.meta.get("nn_module_stack") or {}
    if stack:
        path = list(stack.values())[-1][0]
        if isinstance(path, str) and path:
            names.append(re.split(r"[.\[\]]", path.rstrip("]"))[-1] or path)
    return tuple(n for n in names if n)


# -- library (non-aten) ops --------------------------------------------------------------

_KERNEL_KEYS = ("CPU", "CUDA", "MPS", "Meta", "CompositeImplicitAutograd", "CompositeExplicitAutograd")


def library_facts(op: str) -> dict[str, Any]:
    """What an installed library registered for one of its ops, asked of the dispatcher
    and of the ONNX symbolic registry in this process (the user's imports ran here, so a
    library's `register_custom_op_symbolic` calls did too)."""
    import sys

    name = op.split(".", 1)[0]
    # The platform the library was built for decides which device kernels it could have.
    facts: dict[str, Any] = {"kernels": [], "platform": sys.platform, "cuda_build": torch.version.cuda is not None}
    for key in _KERNEL_KEYS:
        try:
            if torchcompat.has_kernel(name, key):
                facts["kernels"].append(key)
        except Exception:  # noqa: BLE001 - not a dispatcher op
            break
    facts["onnx_opsets"] = torchcompat.onnx_symbolic_opsets(name)  # None: the registry cannot be read
    return facts


# -- the jit views -------------------------------------------------------------------------


def _jit_ops(graph: Any, view: str) -> list[GraphOp]:
    out: list[GraphOp] = []
    for node in graph.nodes():
        _collect_jit(node, view, out)
    return out


def _collect_jit(node: Any, view: str, out: list[Any]) -> None:
    kind = node.kind()
    if "::" in kind and not kind.startswith(_NOT_OPS):
        sites = _frames_to_sites(_jit_frames(node), _jit_hints(node, kind))
        out.append(GraphOp(kind, view, sites, library_facts(kind) if not kind.startswith("aten::") else {}))
    for block in node.blocks():
        for inner in block.nodes():
            _collect_jit(inner, view, out)


def jit_graph_ops(
    instance: torch.nn.Module,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    views: tuple[str, ...],
    real_inputs: tuple[tuple[Any, ...], dict[str, Any]] | None = None,
    limit_bytes: int | None = None,
) -> list[GraphOp]:
    """The class as each TorchScript-based converter traces it, in eval mode under no_grad,
    on real CPU tensors (see `on_real_cpu`; at most `limit_bytes` of them,
    REAL_TENSOR_LIMIT_BYTES by default): `torch.jit.trace` for coremltools (view "jit"),
    the TorchScript ONNX exporter's own tracing entry for it (view "onnx-jit"). The two
    traces differ where the model calls scripted code (`@torch.jit._script_if_tracing`,
    torchvision's `batched_nms`): the exporter substitutes each scripted function's graph
    as compiled, while coremltools' inlining takes the function's optimised graph, whose
    constant branches (`if not _has_ops(): raise`) are already folded away. Raises
    GraphFailure(s) when tracing fails; GraphFailures keeps the views that were traced."""
    wanted = [v for v in views if v in JIT_VIEWS]
    if not wanted:
        return []
    instance.eval()
    too_large = _real_size_problem(instance, args, kwargs, limit_bytes or REAL_TENSOR_LIMIT_BYTES)
    if too_large:
        raise GraphFailure(wanted[0], too_large)
    found: list[GraphOp] = []
    failures: list[GraphFailure] = []
    # Both traces failing at one line: the untraced forward that decides whether the
    # toolchain itself fails there runs once, not once per view.
    itself_fails: dict[tuple[str, int] | None, bool] = {}
    with on_real_cpu(instance, args, kwargs, real_inputs) as (real_args, real_kwargs), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for view in wanted:
            try:
                with torch.no_grad():
                    graph = _JIT_FRONT_ENDS[view](instance, real_args, real_kwargs)
            except Exception as error:  # noqa: BLE001 - the trace failed: the caller falls back
                cause = error.__cause__ if isinstance(error, _ExporterFrontEndError) and error.__cause__ else error
                site = _user_site_of(cause)
                key = (site.file, site.line) if site is not None else None
                if key not in itself_fails:
                    itself_fails[key] = _trace_itself_fails(instance, real_args, real_kwargs, site)
                failures.append(
                    GraphFailure(
                        view, f"{type(cause).__name__}: {_first_line(cause)}", site, toolchain_fails=itself_fails[key]
                    )
                )
                continue
            finally:
                instance.eval()
            found += _jit_ops(graph, view)
    if failures:
        raise GraphFailures(failures, found)
    return found


def _trace_itself_fails(
    instance: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], site: Site | None
) -> bool:
    """Whether the real toolchain's trace fails the same way: the error was raised in the
    user's own code, and the same forward on the same real tensors runs when not traced.
    Then it is torch.jit.trace's own doing (a size it records as a tensor, passed where a
    bool is required: Whisper's `is_causal=n_ctx > 1`), which the TorchScript ONNX
    exporter and coremltools meet with any inputs of these shapes. An error the untraced
    forward raises too belongs to the inputs, not to the toolchain: not claimed."""
    if site is None or site.file.startswith("<") or is_library_file(site.file):
        return False
    try:
        with torch.no_grad():
            instance(*args, **kwargs)
    except Exception:  # noqa: BLE001 - the forward itself fails on these inputs
        return False
    finally:
        instance.eval()
    return True


class _ExporterFrontEndError(Exception):
    """The TorchScript ONNX exporter's own tracing step raised (its error is the cause)."""


def _onnx_exporter_graph(instance: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The graph the TorchScript ONNX exporter's symbolics see: its own tracing entry
    (`_create_jit_graph` under its `exporter_context`, inputs laid out by
    `_decide_input_format`, scripted functions substituted as compiled), then the passes
    of its `_optimize_graph` that rename or remove nodes. Where this torch has no such
    exporter, `torch.jit.trace`'s graph, inlined."""
    onnx_args = tuple(args) + ((dict(kwargs),) if kwargs else ())
    try:
        graph = torchcompat.onnx_exporter_traced_graph(instance, onnx_args)
    except torchcompat.Unavailable:  # no TorchScript ONNX exporter entry in this torch
        graph = _jit_traced_graph(instance, args, kwargs)
    except Exception as error:
        raise _ExporterFrontEndError(str(error)) from error
    return _onnx_front_end(graph)


def _coreml_graph(instance: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The graph coremltools' TorchScript frontend converts: the module traced as its
    documentation asks (`torch.jit.trace(model, example_inputs)`), after its own passes."""
    return _coreml_front_end(_jit_traced_graph(instance, args, kwargs))


def _jit_traced_graph(instance: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """`torch.jit.trace`'s forward graph, calls to submodules and scripted functions not
    yet inlined (each front end inlines it its own way)."""
    trace: Any = torch.jit.trace  # untyped in torch
    extra = {"example_kwarg_inputs": kwargs} if kwargs else {}
    traced = trace(instance, args, check_trace=False, strict=False, **extra)
    return traced.forward.graph


def _coreml_front_end(graph: Any) -> Any:
    """The graph coremltools' TorchScript frontend converts: the torch passes its
    `_expand_and_optimize_ir` applies to the traced forward (inline — each scripted
    function's optimised graph —, fork/wait inline, dead-code removal, the fuser
    canonicalisation that turns `aten::chunk` into `prim::ConstantChunk`, renumbering)."""
    for name in ("inline", "inline_fork_wait", "dce", "canonicalize_graph_fuser_ops"):
        torchcompat.run_pass(name, graph)  # a pass this torch lacks is skipped (noted)
    canonical = torchcompat.run_pass("canonicalize", graph)
    return canonical if canonical is not None else graph


def _onnx_front_end(graph: Any) -> Any:
    """The graph the TorchScript ONNX exporter hands to its symbolics, as far as op names
    go: the passes of its `_optimize_graph` that rename or remove nodes, in its order
    (inline, fork/wait inline, constant propagation — a scripted function's constant
    branch, `if not _has_ops(): raise`, is folded away — dead nodes removed, the fuser
    canonicalisation that turns an unpacked `aten::chunk` into `prim::ConstantChunk` —
    which has an opset-9 symbolic where `aten::chunk` needs opset 11 — in-place ops made
    functional, number types erased, dead nodes removed again: random parameters the
    trace froze into constants disappear)."""
    for name, pass_args in (
        ("inline", ()),
        ("inline_fork_wait", ()),
        ("constant_propagation", ()),
        ("dce", ()),
        ("canonicalize_graph_fuser_ops", ()),
        ("onnx_remove_inplace_ops_for_onnx", (None,)),
        ("erase_number_types", ()),
        ("dce_allow_deleting_nodes_with_side_effects", ()),
    ):
        torchcompat.run_pass(name, graph, *pass_args)  # a pass this torch lacks is skipped (noted)
    return graph


# The trace each TorchScript-based converter makes, after its own passes, per view.
_JIT_FRONT_ENDS = {VIEW_JIT: _coreml_graph, VIEW_ONNX_JIT: _onnx_exporter_graph}


# -- the export views -------------------------------------------------------------------------


def export_graph_ops(
    instance: torch.nn.Module,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    views: tuple[Any, ...],
    options: dict[str, Any] | None = None,
) -> list[GraphOp]:
    """The class as `torch.export.export` captures it in eval mode, decomposed the way each
    consumer decomposes it (`options`: "onnx_export_ops", the overloads the dynamo ONNX
    registry implements; "executorch_decompositions", ExecuTorch's changes to the core
    table, both read from the installed packages). Raises GraphFailure when export fails."""
    options = options or {}
    wanted = [v for v in views if v in EXPORT_VIEWS]
    found: list[GraphOp] = []
    instance.eval()
    with on_fake_cpu(instance, args, kwargs) as (_mode, fake_args, fake_kwargs), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            exported = torch.export.export(instance, tuple(fake_args), kwargs=fake_kwargs or None, strict=False)
        except Exception as error:  # noqa: BLE001
            site = _user_site_of(error)
            raise GraphFailure(
                wanted[0] if wanted else VIEW_EXPORT,
                _in_stable_order(f"{type(error).__name__}: {_first_line(error)}"),
                site,
                toolchain_fails=_export_itself_fails(error, site),
            ) from None
        delegate_failures: list[GraphFailure] = []
        give_way()
        origins = _generated_code_origins(exported.graph_module)
        plain = PlainDecomposition(wanted)  # the delegate views may start from the plain view's program
        by_view: dict[str, list[GraphOp]] = {}
        # torch.export asks which ops are CompositeImplicitAutograd on every run_decompositions;
        # the answer depends only on the op registry's state, so it is asked once per state.
        with torchcompat.cia_ops_cached():
            for view in sorted(wanted, key=lambda v: v in DELEGATE_VIEWS):  # the delegate views last
                give_way()
                if view in DELEGATE_VIEWS:  # one delegate that cannot run must not cost the other views
                    try:
                        by_view[view] = _delegate_graph_ops(exported, view, plain)
                    except GraphFailure as failure:
                        delegate_failures.append(failure)
                    continue
                try:
                    if view == VIEW_EXPORT:
                        # = run_decompositions(): torch's default table, built once per process.
                        decomposed = exported.run_decompositions(torchcompat.export_default_decompositions())
                    elif view == VIEW_COREML_EXPORT:
                        decomposed = exported.run_decompositions({})  # what coremltools' docs ask for
                    elif view == VIEW_EXECUTORCH:
                        table = _executorch_decomposition_table(options.get("executorch_decompositions") or {})
                        decomposed = exported.run_decompositions(plain.watching(table))
                        plain.keep(decomposed)
                    else:
                        decomposed = exported.run_decompositions(
                            _onnx_decomposition_table(options.get("onnx_export_ops") or [])
                        )
                except Exception as error:  # noqa: BLE001
                    raise GraphFailure(
                        view, f"run_decompositions: {type(error).__name__}: {_first_line(error)}", _user_site_of(error)
                    ) from None
                by_view[view] = _fx_ops(decomposed.graph_module, view, origins)
        found = [op for view in wanted for op in by_view.get(view, ())]
    instance.eval()
    if delegate_failures:
        raise GraphFailures(delegate_failures, found)
    return found


def _delegate_graph_ops(exported: Any, view: str, plain: PlainDecomposition | None = None) -> list[GraphOp]:
    """One delegate view's nodes (capture/delegate_view.py) as graph ops, each located by
    the stack the edge node keeps, with the partitioner's decision as `delegate` facts.
    Raises GraphFailure when the partitioner cannot run or to_edge fails."""

    try:
        nodes = delegate_nodes(exported, delegate_name(view), plain)
    except DelegateUnavailable as error:
        raise GraphFailure(view, f"the {delegate_name(view)} partitioner cannot run here: {error}") from None
    except Exception as error:  # noqa: BLE001 - to_edge or the partitioner failed on this program
        raise GraphFailure(
            view, f"to_edge_transform_and_lower: {type(error).__name__}: {_first_line(error)}", _user_site_of(error)
        ) from None
    out = []
    for found in nodes:
        sites = _frames_to_sites(_fx_frames(found.node), _fx_hints(found.node, found.op))
        out.append(GraphOp(found.op, view, sites, delegate=found.facts()))
    return out


def _export_itself_fails(error: BaseException, site: Site | None) -> bool:
    """Whether the real torch.export fails the same way: a guard on a data-dependent value
    (`if x.sum() > 0`, a size read from tensor values) raised in the user's own code.
    torch.export traces with fake tensors whatever it is given — real inputs are fakified
    first, weights and buffers too — so values never reach the trace, and such a guard
    fails for the real export exactly as for ours. Any other error may be a gap of
    atenlint's own (the meta build, the fake weights it swaps in): not claimed."""
    try:
        from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode
    except ImportError:
        return False
    cause: BaseException | None = error
    for _ in range(8):  # the guard may be wrapped (UserError, TorchRuntimeError)
        if cause is None:
            return False
        if isinstance(cause, GuardOnDataDependentSymNode):
            return site is not None and not site.file.startswith("<") and not is_library_file(site.file)
        cause = cause.__cause__ or cause.__context__
    return False


def _fx_ops(graph_module: Any, view: str, origins: dict[str, Any] | None = None) -> list[GraphOp]:
    out = []
    modules = [graph_module] + [
        m for m in graph_module.modules() if m is not graph_module and isinstance(m, torch.fx.GraphModule)
    ]
    for module in modules:  # control flow (cond, map) keeps its branches in submodules
        for node in module.graph.nodes:
            if node.op != "call_function" or not torchcompat.is_op_overload(node.target):
                continue
            name = canonical_name(node.target)
            if name in _EXPORT_ASSERTIONS:
                continue
            sites = _frames_to_sites(_fx_frames(node, origins), _fx_hints(node, name))
            out.append(GraphOp(name, view, sites, library_facts(name) if node.target.namespace != "aten" else {}))
    return out


def _executorch_decomposition_table(changes: dict[str, Any]) -> dict[Any, Any]:
    """`to_edge`'s table: torch.export's default one plus the ops ExecuTorch also
    decomposes, minus those it keeps (its quantisation primitives)."""
    table = torchcompat.export_default_decompositions()
    extra = [op for op in map(_resolve, changes.get("extra") or ()) if op is not None]
    table.update(torchcompat.decompositions_for(extra))
    for op in map(_resolve, changes.get("removed") or ()):
        table.pop(op, None)
    return table


def _resolve(name: str) -> Any:
    from .decompose import resolve_overload

    qualified, _, overload = name.partition(".")
    return resolve_overload(qualified, overload)


def _onnx_decomposition_table(names: list[Any]) -> dict[Any, Any]:
    """The dynamo ONNX exporter's decomposition table for the overloads its registry
    implements at the target opset (`names`, from onnxscript's torchlib, read apart)."""
    return torchcompat.onnx_friendly_decompositions(_resolved(tuple(names)))


_RESOLVED: dict[tuple[Any, ...], frozenset[Any]] = {}


def _resolved(names: tuple[Any, ...]) -> frozenset[Any]:
    """The overloads of these names, resolved once per process (every class of a request
    and every request asks for the same few hundred)."""
    found = _RESOLVED.get(names)
    if found is None:
        found = _RESOLVED[names] = frozenset(op for op in map(_resolve, names) if op is not None)
    return found


def _in_stable_order(message: str) -> str:
    """`message` with the symbol lists torch prints in set order sorted (`_SIZE_LIKE_SYMBOLS`)."""
    return _SIZE_LIKE_SYMBOLS.sub(
        lambda match: f"(Size-like symbols: {', '.join(sorted(match['names'].split(', ')))})", message
    )
