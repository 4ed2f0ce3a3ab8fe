"""Core ML through coremltools' PyTorch frontend: an op converts iff coremltools' op
registry has a translation for it (looked up with its own name normalisation, in the
worker). Conversion stops at the first op it lacks, so a missing op is an error."""

from __future__ import annotations

from typing import Any

from ..worker.protocol import CallTree, ClassAnswer
from .base import ClassResult, Problem, Support, Target, TargetStatus, Verdict, join_ops
from .walk import base_name, eval_only, traced_instead, unsupported

MISSING = "missing"


class CoreMLTarget(Target):
    name = "coreml"
    description = "Core ML through coremltools.convert"
    device = "cpu"

    def __init__(self, data: dict[str, Any], torch_version: str, frontend: str = "torchscript"):
        # coremltools' default PyTorch frontend converts a torch.jit.trace graph: judged on
        # the names that trace records (capture/graphs.py), not on what the dispatcher later
        # runs; `coreml-frontend = "export"` judges its ExportedProgram frontend instead.
        self.frontend = frontend
        self.tree_view = "jit" if frontend == "torchscript" else "coreml-export"
        self.data = data
        self.ops = set(data.get("ops", ())) | set(data.get("library_ops", ()))
        self.torch_version = torch_version

    @property
    def available(self) -> bool:
        return bool(self.data.get("available"))

    def _supported(self, op: str) -> bool:
        name = base_name(op)
        if name in self.ops:
            return True
        namespace, _, short = name.partition("::")
        # coremltools spells some library ops both ways (`torchvision::nms`, `torchvision_nms`).
        return namespace not in ("aten", "") and f"{namespace}_{short}" in self.ops

    def problems(self, tree: CallTree, phases: tuple[str, ...]) -> list[Problem]:
        if not self.available or eval_only(phases):
            return []
        # coremltools converts the torch.jit.trace graph, which records the call itself
        # (`adaptive_avg_pool3d`, not the `mean` or `_adaptive_avg_pool3d` it becomes),
        # except where the trace holds other nodes instead (`via: "trace"`: `conv_transpose2d`
        # is recorded as the `_convolution` it calls, an unpacked `chunk` canonicalised).
        return [Problem(base_name(op), MISSING) for op in unsupported(tree, self._supported, traced_instead)]

    def verdict(self, problems: list[Problem]) -> Verdict:
        return Verdict(
            "error",
            "COREML001",
            f"reaches {join_ops([p.op for p in problems])}, which coremltools {self.data.get('version')} "
            f"cannot convert (no translation in its PyTorch op registry): coremltools.convert fails",
        )

    def support(self, op: str) -> Support:
        if self._supported(op):
            return {"verdict": "supported", "reason": f"coremltools {self.data.get('version')} translates it"}
        return {"verdict": "unsupported", "reason": "no translation in coremltools' op registry"}

    def class_results(self, cls: ClassAnswer) -> list[ClassResult]:
        if self.available:
            return []
        # The same words for every class: said once per run (findings.once_per_run) and in
        # the editor's status item, not once per class.
        reason = str(self.data.get("reason"))
        # The install hint only where coremltools really is missing, never for an installed one.
        hint = " (pip install coremltools)" if "not installed" in reason else ""
        return [ClassResult("information", "COREML000", f"coreml was not judged: {reason}{hint}")]

    def status(self) -> TargetStatus:
        data = {
            "op registry": f"coremltools {self.data.get('version')}: {len(self.ops)} aten op names"
            if self.available
            else self.data.get("reason"),
            "frontend": "torch.jit.trace graph"
            if self.frontend == "torchscript"
            else "torch.export ExportedProgram (run_decompositions({}))",
        }
        return {"target": self.name, "available": self.available, "description": self.description, "data": data}
