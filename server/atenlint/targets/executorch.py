"""ExecuTorch (and plain core ATen): after `torch.export(...).run_decompositions()`, every
overload must be in the core ATen opset (`torch.Tag.core`) or in ExecuTorch's verifier
exceptions, or `to_edge` rejects it. Tables from the installed torch and executorch."""

from __future__ import annotations

from typing import Any

from ..worker.protocol import CallTree
from .base import Problem, Support, Target, TargetStatus, Verdict, join_ops
from .executorch_delegates import NO_KERNEL_CODE, no_kernel_message
from .walk import eval_only, unsupported

NOT_CORE = "not-core"
NO_PORTABLE = "no-portable-kernel"
CUSTOM = "custom-op"  # a library's own op (torchvision::nms): to_edge keeps it, the runtime needs a kernel


class CoreAtenTarget(Target):
    device = "cpu"

    def __init__(self, name: str, core: dict[str, Any], executorch: dict[str, Any] | None, torch_version: str) -> None:
        self.name = name
        self.torch_version = torch_version
        self.executorch: dict[str, Any] | None = executorch if executorch and executorch.get("available") else None
        self.wants_executorch = executorch is not None
        self.allowed: set[str] = set(core.get("core", ())) | set(core.get("view_copy", ()))
        if self.executorch:
            self.allowed |= set(self.executorch.get("exceptions", ()))
        self.no_portable: set[str] = set(self.executorch.get("no_portable_kernel", ())) if self.executorch else set()
        self.code = "ET001" if self.wants_executorch else "CORE001"
        # Judged on the exported program after the decomposition its consumer runs:
        # ExecuTorch's own to_edge table where executorch is installed, else export's.
        self.tree_view = "executorch-export" if self.executorch else "export"
        self.description = (
            "ExecuTorch: core ATen after torch.export, as to_edge verifies it"
            if self.wants_executorch
            else "the core ATen opset after torch.export decomposition"
        )

    def decomposition_changes(self) -> dict[str, str]:
        """ExecuTorch's changes to torch.export's default decomposition table."""
        return dict((self.executorch or {}).get("decompositions") or {})

    def _supported(self, op: str) -> bool:
        return op in self.allowed or not op.startswith("aten::")  # other namespaces: judged apart (CUSTOM)

    def problems(self, tree: CallTree, phases: tuple[str, ...]) -> list[Problem]:
        if eval_only(phases):
            return []
        found = [
            Problem(op, NOT_CORE)
            for op in unsupported(tree, self._supported, lambda node: node.get("via") == "default")
        ]
        found += [Problem(op, CUSTOM) for op in _custom_ops(tree)]
        if self.no_portable:
            found += [Problem(op, NO_PORTABLE) for op in _leaves_in(tree, self.allowed) if op in self.no_portable]
        return found

    def verdict(self, problems: list[Problem]) -> Verdict:
        not_core = [p.op for p in problems if p.kind == NOT_CORE]
        no_portable = [p.op for p in problems if p.kind == NO_PORTABLE]
        custom = [p.op for p in problems if p.kind == CUSTOM]
        if custom and not not_core:
            runtime = "ExecuTorch" if self.wants_executorch else "a core-ATen runtime"
            return Verdict(
                "warning",
                "ET003" if self.wants_executorch else "CORE003",
                f"reaches {join_ops(custom)}, a library's own operator, not core ATen: to_edge keeps it, "
                f"but {runtime} has no kernel for it unless you register one (a custom kernel library) "
                f"or a delegate (XNNPACK, Core ML, ...) takes it",
            )
        if not_core:
            if self.wants_executorch:
                where: str = (
                    f"ExecuTorch {self.executorch['version']}'s to_edge rejects it"
                    if self.executorch
                    else "ExecuTorch's to_edge rejects it (install executorch for its exact allow-list)"
                )
            else:
                where = "it is not in the core ATen opset"
            message = (
                f"reaches {join_ops(not_core)}, which torch {self.torch_version}'s export decomposition keeps "
                f"and is not core ATen: {where}"
            )
            if no_portable:
                message += f"; {join_ops(no_portable)} also has no portable kernel"
            if custom:  # every op the finding lists is named in its text
                message += f"; it also reaches {join_ops(custom)}, a library's own operator, which to_edge keeps"
            return Verdict("error", self.code, message)
        # Core ATen that to_edge keeps and no portable kernel runs: to_executorch writes the
        # program, which then fails to load against that library. A delegate may take the
        # op: the executorch:<delegate> targets judge that on the partitioned program.
        version = (self.executorch or {}).get("version")
        return Verdict(
            "error",
            NO_KERNEL_CODE,
            no_kernel_message(no_portable, version)
            + " (or lower it to a delegate that takes it: the executorch:xnnpack, executorch:coreml and "
            "executorch:vulkan targets say which)",
        )

    def support(self, op: str) -> Support:
        if op in self.allowed:
            note = " (no portable kernel)" if op in self.no_portable else ""
            return {"verdict": "supported", "reason": "core ATen" + note}
        return {"verdict": "unsupported", "reason": "not core ATen: decomposed by export if it can be, else rejected"}

    def status(self) -> TargetStatus:
        data: dict[str, Any] = {
            "core ATen": f"torch {self.torch_version}: {len(self.allowed)} overloads allowed",
            "graph": "torch.export + "
            + ("to_edge's decomposition table" if self.tree_view == "executorch-export" else "run_decompositions()"),
        }
        if self.wants_executorch:
            data["executorch"] = (
                f"{self.executorch['version']}: verifier exceptions and portable kernels"
                if self.executorch
                else "not installed: core ATen only"
            )
        return {"target": self.name, "available": True, "description": self.description, "data": data}


def _custom_ops(tree: CallTree) -> list[str]:
    """Ops of other namespaces than aten that export keeps (a library's `torch.library` ops)."""
    out: list[str] = []

    def visit(node: CallTree) -> None:
        namespace = node["op"].partition("::")[0]
        if namespace not in ("aten", "prim", "") and "::" in node["op"]:
            if node["op"] not in out:
                out.append(node["op"])
            return
        for child in node.get("calls") or ():
            if node.get("via") == "default":
                visit(child)

    visit(tree)
    return out


def _leaves_in(tree: CallTree, allowed: set[str]) -> list[str]:
    out: list[str] = []

    def visit(node: CallTree) -> None:
        if node["op"] in allowed:
            out.append(node["op"])
            return
        calls = node.get("calls")
        if calls is not None and node.get("via") == "default":
            for child in calls:
                visit(child)

    visit(tree)
    return out
