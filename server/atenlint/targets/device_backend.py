"""CUDA and XLA: device backends judged like MPS, by torchgen's rules for their dispatch key
(`native_backend.NativeBackend`)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any

from ..worker.protocol import CallTree
from .base import Problem, Support, Target, TargetStatus, Verdict, join_ops
from .native_backend import NativeBackend
from .native_table import NativeTable

MISSING = "missing"
XLA_DATA = os.path.join(os.path.dirname(__file__), "data", "xla_native_functions.json")


class DispatchKeyTarget(Target):
    """A device backend judged on the dispatcher's view by the kernels of one dispatch key;
    every phase counts (such devices train too)."""

    tree_view = "dispatch"

    def __init__(self, table: NativeTable, key: str, extra_kernels: Iterable[str] = ()) -> None:
        self.table = table
        self.key = key
        self.backend = NativeBackend(table, key, extra_kernels)

    def problems(self, tree: CallTree, phases: tuple[str, ...]) -> list[Problem]:
        return [Problem(op, MISSING) for op in self.backend.gaps(tree).missing]

    def support(self, op: str) -> Support:
        return native_support(self.backend, op, self.key)


class CudaTarget(DispatchKeyTarget):
    name = "cuda"
    description = "NVIDIA GPUs through PyTorch's CUDA backend"
    device = "cuda"

    def __init__(self, table: NativeTable, python_kernels: Iterable[str] = ()) -> None:
        super().__init__(table, "CUDA", python_kernels)

    def verdict(self, problems: list[Problem]) -> Verdict:
        return Verdict(
            "error",
            "CUDA001",
            f"reaches {join_ops([p.op for p in problems])}, which has no CUDA kernel in torch "
            f'{self.table.torch_version}: it raises NotImplementedError ("Could not run ... with '
            f"arguments from the 'CUDA' backend\") on a CUDA tensor",
        )

    def status(self) -> TargetStatus:
        return {
            "target": self.name,
            "available": True,
            "description": self.description,
            "data": {
                "native_functions.yaml": f"torch {self.table.torch_version} (sha256 {self.table.yaml_sha[:12]})",
                "python-registered kernels": len(self.backend.extra_kernels),
            },
        }


def xla_lowerings(path: str = XLA_DATA) -> tuple[frozenset[str], dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        data: dict[str, Any] = json.load(handle)
    names: set[str] = set()
    for ops in data["sections"].values():
        names.update(ops)
    return frozenset(names), data


class XlaTarget(DispatchKeyTarget):
    name = "xla"
    description = "TPUs and other XLA devices through torch_xla"
    device = "xla"

    def __init__(self, table: NativeTable, path: str = XLA_DATA) -> None:
        lowered, self.data = xla_lowerings(path)
        super().__init__(table, "XLA", lowered)

    def verdict(self, problems: list[Problem]) -> Verdict:
        return Verdict(
            "warning",
            "XLA001",
            f"reaches {join_ops([p.op for p in problems])}, which torch_xla does not lower "
            f"({self.data['source']}): it falls back to the CPU (a device-to-host copy and a graph "
            f"break; counted as aten::* in torch_xla's metrics report)",
        )

    def status(self) -> TargetStatus:
        return {
            "target": self.name,
            "available": True,
            "description": self.description,
            "data": {
                "lowerings": f"{self.data['source']} ({len(self.backend.extra_kernels)} overloads; "
                f"data/xla_native_functions.json)",
                "native_functions.yaml": f"torch {self.table.torch_version}",
            },
        }


def native_support(backend: NativeBackend, op: str, key: str) -> Support:
    entry = backend.table.get(op)
    if entry is None:
        return {"verdict": "unknown", "reason": f"not an aten overload of torch {backend.table.torch_version}"}
    if backend.has_own_kernel(op):
        return {"verdict": "supported", "reason": f"{key} kernel"}
    if entry.delegate is not None:
        if backend.has_own_kernel(entry.delegate):
            return {"verdict": "supported", "reason": f"structured: {entry.delegate} has a {key} kernel"}
        return {"verdict": "unsupported", "reason": f"structured: {entry.delegate} has no {key} kernel"}
    if entry.implicit:
        return {"verdict": "composite", "reason": "CompositeImplicitAutograd: judged by what it calls"}
    if entry.explicit:
        return {"verdict": "composite", "reason": "CompositeExplicitAutograd: judged by what it calls"}
    return {"verdict": "unsupported", "reason": f"no {key} kernel"}
