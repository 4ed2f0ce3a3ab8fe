"""Apple MPS: which calls fall back to the CPU, for the installed torch.

Verdicts come from the wheel's native_functions.yaml (key MPS), kernels registered from
Python at run time, and the ops MPSFallback.mm forces to the CPU (a data file, since
no package ships that fact).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass

from ..versions import major_minor as _major_minor
from ..versions import short as _short_version
from ..worker.protocol import CallTree
from .base import CallFacts, Problem, Support, Target, TargetStatus, Verdict, join_ops
from .native_backend import NativeBackend
from .native_table import NativeTable

FALLBACK = "fallback"  # no MPS kernel: NotImplementedError, or CPU + warning with the env var
FORCED = "forced"  # always on the CPU, always a warning
UNSUPPORTED = "unsupported"  # neither MPS nor CPU kernel
FLOAT64 = "float64"  # the call creates a float64 tensor: MPS has no float64 at all
FLOAT64_FROM_OUTSIDE = "float64-input"  # first use of float64 weights/inputs made outside forward
TOO_MANY_DIMS = "dims"  # MPS tensors have at most 16 dimensions
COMPLEX = "complex"  # the op's MPS kernel takes no complex tensors (OpInfo dtypesIfMPS)

CODES = {
    UNSUPPORTED: "MPS003",
    FALLBACK: "MPS001",
    FORCED: "MPS002",
    FLOAT64: "MPS010",
    FLOAT64_FROM_OUTSIDE: "MPS010",
    TOO_MANY_DIMS: "MPS011",
    COMPLEX: "MPS012",
}
_MPS_MAX_DIMS = 16
_FLOAT64_ERROR = (
    "TypeError: Cannot convert a MPS Tensor to float64 dtype as the MPS framework doesn't support "
    "float64. Please use float32 instead."
)
_DATA = os.path.join(os.path.dirname(__file__), "data", "mps_forced_fallbacks.json")


@dataclass(frozen=True)
class MpsOptions:
    # `mps-fallback = false`: the user does not run with PYTORCH_ENABLE_MPS_FALLBACK=1,
    # so an op without a kernel is a hard error for them.
    fallback_enabled: bool = True


def forced_fallbacks(torch_version: str) -> tuple[frozenset[str], str, bool]:
    """The forced ops for `torch_version`, the data version used, and whether it is exact: the
    entry for the installed minor release, else the newest older one (else the oldest)."""
    with open(_DATA, encoding="utf-8") as handle:
        data: dict[str, dict[str, list[str]]] = json.load(handle)["versions"]
    wanted = _major_minor(torch_version)
    known = sorted(data, key=_major_minor)
    usable = [v for v in known if _major_minor(v) <= wanted] or known[:1]
    chosen = usable[-1]
    return frozenset(data[chosen]["ops"]), chosen, _major_minor(chosen) == wanted


def _history_note() -> str:
    from .mps_history import releases

    known = releases()
    return f"MPS kernels per release {known[0]}-{known[-1]} (data/mps_history.json)"


def _newer_release(ops: list[str], installed: str) -> str:
    """ ", supported on MPS from torch 2.Y (you have 2.X)" when every op gains a kernel by a
    newer release (the history table generated from released wheels)."""
    from .mps_history import supported_from

    releases = [supported_from(op, installed) for op in ops]
    known = [r for r in releases if r is not None]
    if not releases or len(known) < len(releases):
        return ""
    latest = max(known, key=_major_minor)
    return f"; supported on MPS from torch {latest} (you have {_short_version(installed)})"


class MpsTarget(Target):
    name = "mps"
    description = "Apple GPUs through PyTorch's MPS backend"
    device = "mps"  # the device library code sees (it picks kernels and fast paths by it)
    tree_view = "dispatch"

    def __init__(self, table: NativeTable, python_kernels: Iterable[str] = (), options: MpsOptions = MpsOptions()):
        self.table = table
        self.options = options
        forced, self.forced_data_version, self.forced_data_exact = forced_fallbacks(table.torch_version)
        self.backend = NativeBackend(table, "MPS", python_kernels, forced)

    def problems(self, tree: CallTree, phases: tuple[str, ...]) -> list[Problem]:
        gaps = self.backend.gaps(tree)  # MPS trains too: every phase counts
        found = [Problem(op, FORCED) for op in gaps.forced]
        for op in gaps.missing:
            found.append(Problem(op, FALLBACK if self.backend.runs_on_cpu(op) else UNSUPPORTED))
        return found

    def facts_problems(self, op: str, facts: CallFacts) -> list[Problem]:
        """Rules on dtypes and shapes, for calls a trace saw with real example inputs."""
        found: list[Problem] = []
        if facts.get("float64_origin"):
            found.append(Problem(op, FLOAT64))
        elif facts.get("float64_first_use"):
            found.append(Problem(op, FLOAT64_FROM_OUTSIDE))
        if facts.get("max_dim", 0) > _MPS_MAX_DIMS:
            found.append(Problem(op, TOO_MANY_DIMS))
        if facts.get("complex_unsupported"):
            found.append(Problem(op, COMPLEX))
        return found

    def support(self, op: str) -> Support:
        from .device_backend import native_support
        from .mps_history import supported_from

        if op in self.backend.forced:
            return {"verdict": "forced cpu", "reason": "MPSFallback.mm always runs it on the CPU"}
        answer = native_support(self.backend, op, "MPS")
        entry = self.table.get(op)
        newer = supported_from(op, self.table.torch_version) or (
            supported_from(entry.delegate, self.table.torch_version) if entry is not None and entry.delegate else None
        )
        if answer["verdict"] == "unsupported" and newer:
            answer["since"] = newer
        return answer

    def verdict(self, problems: list[Problem]) -> Verdict:
        version = self.table.torch_version
        by_kind = {kind: [p.op for p in problems if p.kind == kind] for kind in CODES}
        parts = []
        if by_kind[UNSUPPORTED]:
            parts.append(
                f"reaches {join_ops(by_kind[UNSUPPORTED])}, which has neither an MPS nor a CPU kernel "
                f"in torch {version}: it fails on MPS even with PYTORCH_ENABLE_MPS_FALLBACK=1"
            )
        if by_kind[FALLBACK]:
            if self.options.fallback_enabled:
                consequence = (
                    "without PYTORCH_ENABLE_MPS_FALLBACK=1 it raises NotImplementedError, with it the "
                    "op runs on the CPU (a UserWarning and a copy to and from the GPU)"
                )
            else:
                consequence = "it raises NotImplementedError (this project sets mps-fallback = false)"
            parts.append(
                f"reaches {join_ops(by_kind[FALLBACK])}, which has no MPS kernel in torch {version}: "
                f"{consequence}" + _newer_release(by_kind[FALLBACK], version)
            )
        if by_kind[FORCED]:
            # The forced list is read from one release's MPSFallback.mm: for another release the
            # message names the release it was read from instead of claiming the installed one.
            which = (
                f"torch {version}"
                if self.forced_data_exact
                else f"torch {self.forced_data_version} (the nearest release whose MPSFallback.mm atenlint "
                f"has read; you have {_short_version(version)})"
            )
            parts.append(
                f"reaches {join_ops(by_kind[FORCED])}, which {which} always runs on the CPU "
                f"on MPS (a UserWarning and a copy to and from the GPU)"
            )
        if by_kind[FLOAT64]:
            parts.insert(
                0,
                f"creates a float64 tensor ({join_ops(by_kind[FLOAT64])}), and MPS has no float64: "
                f"{_FLOAT64_ERROR} Create it as float32 (or call `.float()`)",
            )
        if by_kind[FLOAT64_FROM_OUTSIDE]:
            parts.insert(
                0,
                f"is the first call to use a float64 tensor made outside forward (weights, buffers or "
                f"inputs; {join_ops(by_kind[FLOAT64_FROM_OUTSIDE])}); MPS has no float64: "
                f"moving it to MPS raises {_FLOAT64_ERROR}",
            )
        if by_kind[TOO_MANY_DIMS]:
            parts.append(
                f"works on a tensor with more than {_MPS_MAX_DIMS} dimensions "
                f"({join_ops(by_kind[TOO_MANY_DIMS])}), which MPS does not support"
            )
        if by_kind[COMPLEX]:
            parts.append(
                f"passes complex tensors to {join_ops(by_kind[COMPLEX])}, whose MPS kernel does not take "
                f"complex dtypes (PyTorch's OpInfo dtypesIfMPS)"
            )
        message = "; it also ".join(parts)
        for kind in (FLOAT64, FLOAT64_FROM_OUTSIDE, TOO_MANY_DIMS, COMPLEX):
            if by_kind[kind]:
                return Verdict("error", CODES[kind], message)
        if by_kind[UNSUPPORTED]:
            return Verdict("error", CODES[UNSUPPORTED], message)
        if by_kind[FALLBACK]:
            return Verdict("warning" if self.options.fallback_enabled else "error", CODES[FALLBACK], message)
        return Verdict("warning", CODES[FORCED], message)

    def status(self) -> TargetStatus:
        return {
            "target": self.name,
            "available": True,
            "description": self.description,
            "data": {
                "native_functions.yaml": f"torch {self.table.torch_version} (sha256 {self.table.yaml_sha[:12]})",
                "forced fallbacks": f"MPSFallback.mm for torch {self.forced_data_version}"
                + ("" if self.forced_data_exact else " (nearest known version)"),
                "python-registered kernels": len(self.backend.extra_kernels),
                "history": _history_note(),
            },
        }
