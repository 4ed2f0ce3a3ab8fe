"""Apple MPS: which calls fall back to the CPU, for the installed torch.

Verdicts come from the wheel's native_functions.yaml (key MPS), kernels registered from
Python at run time, and the ops MPSFallback.mm forces to the CPU (a data file, since
no package ships that fact).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from .base import Problem, Verdict, join_ops
from .native_backend import NativeBackend
from .native_table import NativeTable

FALLBACK = "fallback"  # no MPS kernel: NotImplementedError, or CPU + warning with the env var
FORCED = "forced"  # always on the CPU, always a warning
UNSUPPORTED = "unsupported"  # neither MPS nor CPU kernel

CODES = {UNSUPPORTED: "MPS003", FALLBACK: "MPS001", FORCED: "MPS002"}
_DATA = os.path.join(os.path.dirname(__file__), "data", "mps_forced_fallbacks.json")


@dataclass(frozen=True)
class MpsOptions:
    # `mps-fallback = false`: the user does not run with PYTORCH_ENABLE_MPS_FALLBACK=1,
    # so an op without a kernel is a hard error for them.
    fallback_enabled: bool = True


def forced_fallbacks(torch_version: str) -> tuple[frozenset, str, bool]:
    """The forced ops for `torch_version`, the data version used, and whether it is exact."""
    with open(_DATA, encoding="utf-8") as handle:
        data = json.load(handle)["versions"]
    wanted = _major_minor(torch_version)
    known = sorted(data, key=_major_minor)
    usable = [v for v in known if _major_minor(v) <= wanted] or known[:1]
    chosen = usable[-1]
    return frozenset(data[chosen]["ops"]), chosen, _major_minor(chosen) == wanted


def _major_minor(version: str) -> tuple[int, int]:
    parts = version.split("+")[0].split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return (0, 0)


class MpsTarget:
    name = "mps"
    description = "Apple GPUs through PyTorch's MPS backend"
    device = "mps"  # the device library code sees (it picks kernels and fast paths by it)
    tree_view = "dispatch"

    def __init__(self, table: NativeTable, python_kernels=(), options: MpsOptions = MpsOptions()):
        self.table = table
        self.options = options
        forced, self.forced_data_version, self.forced_data_exact = forced_fallbacks(table.torch_version)
        self.backend = NativeBackend(table, "MPS", python_kernels, forced)

    def problems(self, tree: dict, phases: tuple[str, ...]) -> list[Problem]:
        gaps = self.backend.gaps(tree)  # MPS trains too: every phase counts
        found = [Problem(op, FORCED) for op in gaps.forced]
        for op in gaps.missing:
            found.append(Problem(op, FALLBACK if self.backend.runs_on_cpu(op) else UNSUPPORTED))
        return found

    def verdict(self, problems: list[Problem]) -> Verdict:
        version = self.table.torch_version
        by_kind = {kind: [p.op for p in problems if p.kind == kind] for kind in CODES}
        parts = []
        if by_kind[UNSUPPORTED]:
            parts.append(f"reaches {join_ops(by_kind[UNSUPPORTED])}, which has neither an MPS nor a CPU kernel "
                         f"in torch {version}: it fails on MPS even with PYTORCH_ENABLE_MPS_FALLBACK=1")
        if by_kind[FALLBACK]:
            if self.options.fallback_enabled:
                consequence = ("without PYTORCH_ENABLE_MPS_FALLBACK=1 it raises NotImplementedError, with it the "
                               "op runs on the CPU (a UserWarning and a copy to and from the GPU)")
            else:
                consequence = "it raises NotImplementedError (this project sets mps-fallback = false)"
            parts.append(f"reaches {join_ops(by_kind[FALLBACK])}, which has no MPS kernel in torch {version}: "
                         f"{consequence}")
        if by_kind[FORCED]:
            parts.append(f"reaches {join_ops(by_kind[FORCED])}, which torch {version} always runs on the CPU "
                         f"on MPS (a UserWarning and a copy to and from the GPU)")
        message = "; it also ".join(parts)
        if by_kind[UNSUPPORTED]:
            return Verdict("error", CODES[UNSUPPORTED], message)
        if by_kind[FALLBACK]:
            return Verdict("warning" if self.options.fallback_enabled else "error", CODES[FALLBACK], message)
        return Verdict("warning", CODES[FORCED], message)

    def status(self) -> dict:
        return {
            "target": self.name,
            "available": True,
            "description": self.description,
            "data": {
                "native_functions.yaml": f"torch {self.table.torch_version} (sha256 {self.table.yaml_sha[:12]})",
                "forced fallbacks": f"MPSFallback.mm for torch {self.forced_data_version}"
                                    + ("" if self.forced_data_exact else " (nearest known version)"),
                "python-registered kernels": len(self.backend.extra_kernels),
            },
        }
