"""What an exporter sees of one call: the call after export-style decomposition, for the
targets that judge the decomposed graph (ExecuTorch, ONNX's dynamo exporter, TensorRT).

`torch.export(...).run_decompositions()` applies `torch.export.default_decompositions()`
(the core-ATen table plus every CompositeImplicitAutograd kernel); ONNX's exporter applies
that table *and* `torch._decomp.decomposition_table`, minus the ops its registry
implements. So each node records how it decomposes and by which table:

    {"op": "aten::name.overload", "calls": [nodes] | None, "via": "default" | "extra"}

`via` "default": `run_decompositions()` replaces the op by `calls`; "extra": only a
table that also takes `torch._decomp.decomposition_table` does (a target decides
whether it would). `calls` None: nothing decomposes it (a kernel of its own). In-place
ops are judged as their functional variants, at every depth (export functionalises the
graph before it decomposes, so `pad_sequence`'s inner `copy_` is a `copy`). For the dynamo
ONNX exporter (`onnx_export_tree`), a leaf its own decomposition table replaces is marked
decomposable: it becomes ops this capture cannot see (no shapes), so it is not judged.
Same tree shape as `decompose.call_tree` otherwise. Runs inside the worker.
"""

from __future__ import annotations

import functools
from typing import Any

import torch

from .. import torchcompat
from ..torchcompat import TorchDispatchMode
from .decompose import Node, _candidate_calls, canonical_name, resolve_overload

_MAX_DEPTH = 12


_EXECUTORCH_CHANGES: dict[str, Any] = {}


def set_executorch_changes(changes: dict[str, Any]) -> None:
    """ExecuTorch's changes to the default table (`to_edge` also decomposes
    `linalg_vector_norm`), read from the installed executorch by the parent."""
    global _EXECUTORCH_CHANGES
    changes = {k: tuple(v) for k, v in (changes or {}).items()}
    if changes != _EXECUTORCH_CHANGES:
        _EXECUTORCH_CHANGES = changes
        tables.cache_clear()


def executorch_changes() -> tuple[tuple[str, tuple[Any, ...]], ...]:
    """The changes `tables(executorch=True)` applies now, as a hashable key: a tree cached
    for to_edge's table belongs to the changes it was built with (a tree built before the
    parent sent them, for a warm-up, must not answer after)."""
    return tuple(sorted(_EXECUTORCH_CHANGES.items()))


@functools.lru_cache(maxsize=2)
def tables(executorch: bool = False) -> tuple[dict[Any, Any], dict[Any, Any]]:
    """(default table of run_decompositions() — or to_edge's, for ExecuTorch — and the extra
    ops only decomposition_table has)."""
    from .decompose import resolve_overload

    default = torchcompat.export_default_decompositions()
    if executorch:

        def resolved(names: Any) -> list[Any]:
            return [op for op in (resolve_overload(*n.partition(".")[::2]) for n in names) if op is not None]

        default.update(torchcompat.decompositions_for(resolved(_EXECUTORCH_CHANGES.get("extra", ()))))
        for op in resolved(_EXECUTORCH_CHANGES.get("removed", ())):
            default.pop(op, None)
    extra = {
        op: fn
        for op, fn in torchcompat.decomposition_table().items()
        if op not in default and torchcompat.is_op_overload(op)
    }
    return default, extra


def _has_cia(func: Any) -> bool:
    try:
        return torchcompat.op_has_kernel(func, "CompositeImplicitAutograd")
    except Exception:  # noqa: BLE001
        return False


class _ExportRecorder(TorchDispatchMode):  # type: ignore[no-untyped-call]  # torch's TorchDispatchMode is untyped
    def __init__(self, default: dict[Any, Any], extra: dict[Any, Any]):
        super().__init__()  # type: ignore[no-untyped-call]  # torch's TorchDispatchMode is untyped
        self.default = default
        self.extra = extra
        self.roots: list[Node] = []
        self._open: list[list[Node]] = [self.roots]
        self._in_extra = False

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        return self.record(func, args, kwargs or {})

    def record(self, func: Any, args: Any, kwargs: dict[str, Any]) -> Any:
        """Append `func`'s node, as the exported program holds it, to the innermost open list
        and return what `func` returns. Called with the mode not active (from dispatch, or by
        `export_tree` for a root call the mode would not see)."""
        # Export functionalises first: an in-place call is its functional variant, which the
        # tables then decompose. That variant returns a new tensor where the caller expects
        # `func`'s own result (the mutated argument), so `func` still runs, unrecorded.
        exported = functional_variant(func)
        node: Node = {"op": canonical_name(exported), "calls": None}
        self._open[-1].append(node)
        if len(self._open) <= _MAX_DEPTH:
            for via, decomposition in self._decompositions(exported):
                calls: list[Node] = []
                self._open.append(calls)
                outer = self._in_extra
                self._in_extra = outer or via == "extra"
                try:
                    with self:
                        result = decomposition(*args, **kwargs)
                except Exception:  # noqa: BLE001, S112 - keep the op itself when its decomposition fails on meta
                    continue
                else:
                    node["calls"] = calls
                    node["via"] = via
                    return result if exported is func else func(*args, **kwargs)
                finally:
                    self._open.pop()
                    self._in_extra = outer
        return func(*args, **kwargs)

    def _decompositions(self, func: Any) -> Any:
        if func in self.default:
            yield "default", self.default[func]
        elif torch.Tag.core not in func.tags and _has_cia(func):
            # Export traces through CompositeImplicitAutograd kernels it does not preserve.
            yield "default", func.decompose
        if func in self.extra and not self._in_extra:
            # ONNX decomposes even a core op it lacks (`var.correction`) with this table; one
            # level is enough to judge it (deeper, the references reach prims).
            yield "extra", self.extra[func]


@functools.cache
def functional_variant(op: Any) -> Any:
    """`aten::relu_` -> `aten::relu`, `aten::add_.Tensor` -> `aten::add.Tensor`: export
    functionalises in-place calls before any decomposition. Once per overload (asked at
    every dispatch of a recorded call)."""
    schema = torchcompat.op_schema(op)
    base = schema.name.split("::", 1)[1]
    if not schema.is_mutable or not base.endswith("_") or base.startswith("_"):
        return op
    functional = resolve_overload(f"aten::{base[:-1]}", schema.overload_name)
    return functional if functional is not None else op


def export_tree(op: Any, known: dict[str, Any], executorch: bool = False) -> Node:
    """The call as the exported, decomposed program holds it (`executorch`: after to_edge's
    own table)."""
    default, extra = tables(executorch)
    op = functional_variant(op)
    name = canonical_name(op)
    for args, kwargs in _candidate_calls(op, known):
        recorder = _ExportRecorder(default, extra)
        try:
            with torch.no_grad():
                if _has_cia(op):
                    # A CompositeImplicitAutograd kernel runs above a dispatch mode, where the
                    # mode sees only what the C++ kernel calls; export applies its table's
                    # entry instead, which may differ (`pad_sequence`'s Python decomposition
                    # pads and scatters, its kernel copies into slices).
                    recorder.record(op, args, kwargs)
                if not recorder.roots or recorder.roots[0]["calls"] is None:
                    # No entry, or one that fails on these meta values: the kernel's own
                    # expansion is the closest view of what export decomposes it into.
                    recorder = _ExportRecorder(default, extra)
                    with recorder:
                        op(*args, **kwargs)
        except Exception:  # noqa: BLE001, S112 - try the next shape guess
            continue
        if len(recorder.roots) == 1 and recorder.roots[0]["op"] == name:
            return recorder.roots[0]
        # An op the mode did not see as one call (a kernel that ran above the mode).
        return {"op": name, "calls": recorder.roots, "via": "default"}
    # No synthesised call ran (shapes the call site does not fix): say whether export
    # would decompose the op at all, so targets do not judge a composite by its name.
    decomposable = op in default or (torch.Tag.core not in op.tags and _has_cia(op))
    return {"op": name, "calls": None, "undecomposed": True, "decomposable": bool(decomposable)}


def functional_name(op_name: str) -> str:
    """The name of `op_name`'s functional variant (itself when it is not an aten op), for
    the views that read the exported program undecomposed (Core ML's export frontend, the
    ExecuTorch delegates)."""
    op = _resolved_name(op_name)
    return canonical_name(functional_variant(op)) if op is not None else op_name


def onnx_export_tree(tree: Node) -> Node:
    """`tree` (torch.export's, shared with the other export views: not changed) as the
    dynamo ONNX exporter holds it: a leaf its decomposition table replaces is marked
    decomposable, as `export_tree` marks a leaf the default table replaces."""
    replaced = onnx_decomposed_ops()
    out: Node = dict(tree)
    calls = tree.get("calls")
    if calls is not None:
        out["calls"] = [onnx_export_tree(child) for child in calls]
    elif _resolved_name(tree["op"]) in replaced:
        out["undecomposed"] = True
        out["decomposable"] = True
    return out


def _resolved_name(op_name: str) -> Any | None:
    qualified, _, overload = op_name.partition(".")
    if not qualified.startswith("aten::"):
        return None
    return resolve_overload(qualified, overload)


@functools.cache
def onnx_decomposed_ops() -> frozenset[Any]:
    """Every overload the dynamo ONNX exporter's decomposition table can replace (its table
    for no registered op: an op the registry implements is judged supported before this
    matters), or nothing when this torch has no such exporter. Once per process."""
    try:
        return frozenset(torchcompat.onnx_friendly_decompositions(()))
    except torchcompat.Unavailable:
        return frozenset()
