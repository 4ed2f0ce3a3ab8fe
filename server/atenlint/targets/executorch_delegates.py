"""ExecuTorch with a delegate (`executorch:xnnpack`, `executorch:coreml`,
`executorch:vulkan`): judged on the program `to_edge_transform_and_lower` builds with the
delegate's partitioner, as that partitioner itself splits it (capture/delegate_view.py).

- A node the partitioner leaves to the CPU is a warning (the model runs, on the portable
  kernels, slower, with a copy across the delegate boundary), worded with the
  partitioner's own reason where it gives one.
- A node left to the CPU whose op has no kernel in the installed portable library is an
  error: the program does not load against that library ("Missing operator").
- A node the partitioner takes that the delegate's backend cannot convert (Core ML:
  coremltools' conversion in the backend's `preprocess`) is an error: the lowering itself
  raises there, with the backend's own words.
"""

from __future__ import annotations

from typing import Any

from ..worker.protocol import CallTree, ClassAnswer
from ..worker.vocabulary import CAPTURE_SCRIPT, CAPTURE_STATIC, CAPTURE_TRACE, CAPTURES, STATUS_OK, STATUS_STATIC
from .base import ClassResult, Problem, Support, Target, TargetStatus, Verdict, join_ops
from .walk import eval_only

LEFT = "cpu"  # left to the CPU; the kind carries the partitioner's reason after LEFT_REASON
LEFT_REASON = "cpu:"
QUANTIZED_ONLY = "quantized-only"
NO_KERNEL = "no-portable-kernel"
NOT_CONVERTED = "not-converted:"  # the backend's reason follows

DELEGATE_CODE = "ET010"
NO_KERNEL_CODE = "ET002"
UNAVAILABLE_CODE = "ET011"
NOT_JUDGED_CODE = "ET012"
NOT_CONVERTED_CODE = "ET013"

LABELS = {"xnnpack": "XNNPACK", "coreml": "Core ML", "vulkan": "Vulkan"}
# What converts a delegate's partitions, where atenlint runs it (capture/delegate_view.py's
# BACKEND_CHECKS), in the words of an ET013 message.
BACKEND_CONVERSION = {"coreml": "CoreMLBackend.preprocess, coremltools' conversion of the partition"}


def delegate_of(name: str) -> str | None:
    """`executorch:xnnpack` -> `xnnpack`; None for any other target name."""
    family, _, delegate = name.partition(":")
    return delegate if family == "executorch" and delegate in LABELS else None


def no_kernel_message(ops: list[str], version: str | None, where: str = "") -> str:
    """The load verdict's words, shared with the plain `executorch` target."""
    library = f"ExecuTorch {version}'s portable kernel library" if version else "ExecuTorch's portable kernel library"
    return (
        f"reaches {join_ops(ops)}{where}, which has no kernel in {library} (kernels/portable/functions.yaml, "
        f'assumed as the runtime\'s kernels): the program will not load there ("Missing operator"); link a kernel '
        f"library that has it (the optimized kernels, optimized_native_cpu_ops) or register a custom kernel"
    )


def _capture_of(cls: ClassAnswer) -> str | None:
    """How the worker analysed the class: its `capture`, or for a plain answer what its
    status implies (a class built and scripted, or read from source)."""
    capture = cls.get("capture")
    if capture in CAPTURES:
        return capture
    return {STATUS_OK: CAPTURE_SCRIPT, STATUS_STATIC: CAPTURE_STATIC}.get(cls.get("status", ""))


class DelegateTarget(Target):
    device = "cpu"

    def __init__(self, name: str, executorch: dict[str, Any], torch_version: str) -> None:
        delegate = delegate_of(name)
        if delegate is None:
            raise ValueError(f"not an ExecuTorch delegate target: {name!r}")
        self.name = name
        self.delegate = delegate
        self.label = LABELS[delegate]
        self.tree_view = name  # capture/delegate_view.py names each view as its target
        self.torch_version = torch_version
        self.executorch = executorch
        info = dict((executorch.get("delegates") or {}).get(delegate) or {})
        self.reason: str | None = None
        if not executorch.get("available"):
            self.reason = str(executorch.get("reason") or "executorch is not installed")
        elif not info:
            self.reason = f"executorch {executorch.get('version')} has no {self.label} partitioner atenlint knows"
        elif not info.get("available"):
            self.reason = str(info.get("reason"))
        self.partitioner = str(info.get("partitioner") or "")
        self.no_portable: set[str] = set(executorch.get("no_portable_kernel", ()))
        self.description = (
            f"ExecuTorch with the {self.label} delegate: ops its partitioner leaves to the CPU "
            f"(to_edge_transform_and_lower), and ops no portable kernel runs"
        )

    @property
    def available(self) -> bool:
        return self.reason is None

    def problems(self, tree: CallTree, phases: tuple[str, ...]) -> list[Problem]:
        facts = tree.get("delegate")
        if facts is None or eval_only(phases):
            return []  # no delegate view (the scripted graph stood in)
        op = tree["op"]
        if facts.get("not_converted"):
            return [Problem(op, NOT_CONVERTED + str(facts["not_converted"]))]
        if facts.get("delegated"):
            return []  # the delegate takes it
        reasons = facts.get("reasons") or []
        if facts.get("quantized_only"):
            found = [Problem(op, QUANTIZED_ONLY)]
        else:
            found = [Problem(op, LEFT_REASON + reasons[0] if reasons else LEFT)]
        if op in self.no_portable:
            found.append(Problem(op, NO_KERNEL))
        return found

    def verdict(self, problems: list[Problem]) -> Verdict:
        not_converted = [p for p in problems if p.kind.startswith(NOT_CONVERTED)]
        if not_converted:
            ops = list(dict.fromkeys(p.op for p in not_converted))
            why = "; ".join(dict.fromkeys(p.kind.removeprefix(NOT_CONVERTED) for p in not_converted))
            return Verdict(
                "error",
                NOT_CONVERTED_CODE,
                f"reaches {join_ops(ops)}, which {self.label}'s partitioner takes but its backend cannot convert "
                f"({BACKEND_CONVERSION.get(self.delegate, 'preprocess')}: {why}): to_edge_transform_and_lower fails",
            )
        no_kernel = list(dict.fromkeys(p.op for p in problems if p.kind == NO_KERNEL))
        if no_kernel:
            where = f" (left to the CPU by {self.label})"
            return Verdict("error", NO_KERNEL_CODE, no_kernel_message(no_kernel, self.executorch.get("version"), where))
        left = list(dict.fromkeys(p.op for p in problems if p.kind != QUANTIZED_ONLY))
        quantized = list(dict.fromkeys(p.op for p in problems if p.kind == QUANTIZED_ONLY))
        reasons = list(
            dict.fromkeys(p.kind.removeprefix(LEFT_REASON) for p in problems if p.kind.startswith(LEFT_REASON))
        )
        parts = []
        if left:
            why = f" ({'; '.join(reasons)})" if reasons else ""
            parts.append(
                f"reaches {join_ops(left)}, which {self.label}'s partitioner leaves to the portable CPU kernels{why}"
            )
        if quantized:
            parts.append(
                f"{'also ' if left else ''}reaches {join_ops(quantized)}, which {self.label} takes only in a "
                f"quantized pattern (fp32 stays on the CPU; quantized flows are not analysed by atenlint)"
            )
        message = "; ".join(parts) + ": the model runs, slower, with a copy across the delegate boundary each time"
        return Verdict("warning", DELEGATE_CODE, message)

    def support(self, op: str) -> Support:
        # The partitioners decide per node (dtype, rank, arguments), never per op name alone.
        return {"verdict": "unknown", "reason": f"{self.label} decides per node: run `atenlint check` with inputs"}

    def class_results(self, cls: ClassAnswer) -> list[ClassResult]:
        if not self.available:
            return [ClassResult("information", UNAVAILABLE_CODE, f"{self.name} was not judged: {self.reason}")]
        capture = _capture_of(cls)
        if capture is None or self.tree_view in (cls.get("covered") or ()):
            return []  # not analysed at all (its own finding says so), or the partitioner judged it
        if cls.get("trace_error") or cls.get("graph_errors"):
            return []  # its inputs or a front end failed: ATL011 / ATL020 say so, with what stood in
        if capture == CAPTURE_TRACE:
            why = "its trace gave no torch.export program for it"
        else:
            how = "read from its source" if capture == CAPTURE_STATIC else "scripted"
            why = f"this class was {how} (no example inputs were given, and none were inferred for it)"
        return [
            ClassResult(
                "information",
                NOT_JUDGED_CODE,
                f"`{cls['name']}` was not judged for {self.name}: {self.label}'s partitioner decides per node of the "
                f"program torch.export makes from example inputs, and {why}. Its calls are judged where a traced "
                f"class uses it; to judge it on its own, give it inputs (`# atenlint: inputs=...` on its class line)",
            )
        ]

    def status(self) -> TargetStatus:
        data: dict[str, Any] = {
            "partitioner": f"executorch {self.executorch.get('version')}: {self.partitioner}"
            if self.available
            else self.reason,
            "graph": "to_edge_transform_and_lower's edge program, partitioned (needs example inputs)",
            "portable kernels": f"{self.executorch.get('portable_kernels', 0)} operators",
        }
        return {"target": self.name, "available": self.available, "description": self.description, "data": data}
