"""What an exporter sees of one call: the call after export-style decomposition to the
core ATen opset (`torch._decomp.core_aten_decompositions()`), for the targets that
judge the decomposed graph (ExecuTorch, ONNX's dynamo exporter, Core ML).

Same tree shape as `decompose.call_tree`: {"op": name, "calls": [...] | None}; a node
with calls was decomposed by torch's own table. Runs inside the worker.
"""

from __future__ import annotations

import functools
from typing import Any, Optional

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .decompose import Node, _candidate_calls, canonical_name, is_composite_implicit

_MAX_DEPTH = 12


@functools.lru_cache(maxsize=1)
def core_decompositions() -> dict:
    from torch._decomp import core_aten_decompositions

    return dict(core_aten_decompositions())


class _ExportRecorder(TorchDispatchMode):
    def __init__(self, table: dict):
        super().__init__()
        self.table = table
        self.roots: list[Node] = []
        self._open: list[list[Node]] = [self.roots]

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        node: Node = {"op": canonical_name(func), "calls": None}
        self._open[-1].append(node)
        decomposition = self.table.get(func)
        if decomposition is not None and torch.Tag.core not in func.tags and len(self._open) <= _MAX_DEPTH:
            calls: list[Node] = []
            self._open.append(calls)
            try:
                with self:
                    result = decomposition(*args, **kwargs)
            except Exception:  # noqa: BLE001 - keep the op itself when its decomposition fails on meta
                pass
            else:
                node["calls"] = calls
                return result
            finally:
                self._open.pop()
        return func(*args, **kwargs)


def export_tree(op: Any, known: dict[str, Any]) -> Optional[Node]:
    """The call as core ATen sees it, or None when no synthesised call ran."""
    table = core_decompositions()
    name = canonical_name(op)
    for args, kwargs in _candidate_calls(op, known):
        recorder = _ExportRecorder(table)
        try:
            with torch.no_grad(), recorder:
                op(*args, **kwargs)
        except Exception:  # noqa: BLE001 - try the next shape guess
            continue
        if not is_composite_implicit(op) and len(recorder.roots) == 1 and recorder.roots[0]["op"] == name:
            return recorder.roots[0]
        return {"op": name, "calls": recorder.roots}
    return None
