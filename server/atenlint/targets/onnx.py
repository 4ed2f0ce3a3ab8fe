"""ONNX through `torch.onnx.export`: the TorchScript-based exporter (`dynamo=False`: a
symbolic function per op and opset) or the dynamo exporter (`dynamo=True`, onnxscript's
torchlib after the ONNX-friendly decomposition). Tables come from the installed torch and
onnxscript (`probe/registries.py`).
"""

from __future__ import annotations

from typing import Any

from ..worker.protocol import CallTree, ClassAnswer, LibraryFacts
from .base import ClassResult, Problem, Support, Target, TargetStatus, Verdict, join_ops
from .walk import base_name, eval_only, traced_instead, unsupported

UNSUPPORTED = "unsupported"
OPSET = "opset"  # supported from a higher opset than the one exported at
CODES = {UNSUPPORTED: "ONNX001", OPSET: "ONNX002"}


class OnnxTarget(Target):
    device = "cpu"
    description = "ONNX through torch.onnx.export"

    def __init__(
        self,
        name: str,
        opset: int | None,
        exporter: str,
        torchscript: dict[str, Any],
        dynamo: dict[str, Any],
        torch_version: str,
        exporter_chosen_by: str = "setting",
    ) -> None:
        self.name = name
        self.torchscript = torchscript
        self.dynamo = dynamo
        self.torch_version = torch_version
        self.exporter = exporter
        self.exporter_chosen_by = exporter_chosen_by
        self.opset: int = int(opset or torchscript.get("default_opset") or dynamo.get("default_opset") or 18)
        # Each exporter is judged on the graph it converts: the TorchScript one on its own
        # front end's trace (`unconvertible_ops`), the dynamo one on torch.export after its
        # own decomposition table (capture/graphs.py).
        self.tree_view = "onnx-jit" if exporter == "torchscript" else "onnx-export"
        self._library_first: dict[str, int] = {}
        self._first: dict[str, int]
        self.registry_opset = self.opset
        if exporter == "torchscript":
            self._first = {name: opsets[0] for name, opsets in torchscript.get("ops", {}).items()}
        else:
            self._first = dict(dynamo.get("ops", {}))
            # Below torchlib's opset the exporter builds at its own opset and converts down.
            self.registry_opset = max(self.opset, int(dynamo.get("default_opset") or 18))

    @property
    def available(self) -> bool:
        table = self.torchscript if self.exporter == "torchscript" else self.dynamo
        return bool(table.get("available"))

    def _key(self, op: str) -> str:
        if self.exporter != "torchscript":
            return op
        name = base_name(op)
        # The exporter's own lookup (`_run_symbolic_function`): a kind that ends with "_"
        # loses that one underscore, so in-place `add_` is `add` and `__and__` is the
        # registered `__and_`.
        return name.removesuffix("_")

    def _supported(self, op: str) -> bool:
        first = self._first.get(self._key(op))
        limit = self.opset if self.exporter == "torchscript" else self.registry_opset
        return first is not None and first <= limit

    def problems(self, tree: CallTree, phases: tuple[str, ...]) -> list[Problem]:
        if not self.available or eval_only(phases):
            return []
        library = tree.get("library")
        if library is not None and self.exporter == "torchscript":
            return self._library_problems(tree["op"], library)
        found: list[Problem] = []
        for op in unsupported(tree, self._supported, self._descend):
            kind = OPSET if self._first.get(self._key(op)) is not None else UNSUPPORTED
            found.append(Problem(self._key(op) if self.exporter == "torchscript" else op, kind))
        return found

    def _library_problems(self, op: str, library: LibraryFacts) -> list[Problem]:
        """A library's own op (`torchvision::roi_align`): the symbolics that library
        registered with the exporter when it was imported, asked in the worker."""
        opsets = library.get("onnx_opsets")
        if opsets is None:
            return []  # the registry could not be asked: not judged
        name = base_name(op)
        if opsets:
            self._library_first[name] = min(opsets)
            return [] if min(opsets) <= self.opset else [Problem(name, OPSET)]
        return [Problem(name, UNSUPPORTED)]

    def _descend(self, node: CallTree) -> bool:
        # The TorchScript exporter converts the traced graph, where torch.jit.trace records
        # the call itself (`linalg_svdvals`, `scaled_dot_product_attention`), not what it
        # decomposes into, except where the trace holds other nodes instead (`via: "trace"`).
        # The dynamo exporter decomposes an op it lacks by either table.
        return self.exporter != "torchscript" or traced_instead(node)

    def implemented_overloads(self) -> list[str]:
        """The overloads the dynamo exporter's registry implements at this target's opset."""
        if self.exporter == "torchscript":
            return []
        return [op for op, first in self._first.items() if first <= self.registry_opset]

    def first_opset(self, op: str) -> int | None:
        return self._first.get(self._key(op), self._library_first.get(base_name(op)))

    def verdict(self, problems: list[Problem]) -> Verdict:
        exporter = (
            "the TorchScript-based ONNX exporter (dynamo=False)"
            if self.exporter == "torchscript"
            else f"the dynamo ONNX exporter (onnxscript {self.dynamo.get('onnxscript')})"
        )
        parts: list[str] = []
        need: int | None = None
        lacking = [p.op for p in problems if p.kind == UNSUPPORTED]
        later = [p.op for p in problems if p.kind == OPSET]
        if lacking:
            parts.append(
                f"reaches {join_ops(lacking)}, which {exporter} in torch {self.torch_version} cannot "
                f"export at any opset: torch.onnx.export fails"
            )
        if later:
            need = max(first for first in (self.first_opset(op) for op in later) if first is not None)
            parts.append(
                f"reaches {join_ops(later)}, which {exporter} supports from opset {need}; you export at "
                f"opset {self.opset}: raise opset_version to {need} or more"
            )
        message = "; it also ".join(parts)
        return Verdict("error", CODES[UNSUPPORTED] if lacking else CODES[OPSET], message, required_opset=need)

    def support(self, op: str) -> Support:
        first = self.first_opset(op)
        if first is None:
            return {"verdict": "unsupported", "reason": f"no {self.exporter} exporter implementation"}
        if self._supported(op):
            return {"verdict": "supported", "reason": f"implemented from opset {first}", "since": f"opset {first}"}
        return {
            "verdict": "unsupported",
            "reason": f"needs opset {first} (target opset {self.opset})",
            "since": f"opset {first}",
        }

    def class_results(self, cls: ClassAnswer) -> list[ClassResult]:
        if self.available:
            return []
        reason = self.dynamo.get("reason") if self.exporter == "dynamo" else self.torchscript.get("reason")
        return [ClassResult("information", "ONNX000", f"`{cls['name']}` was not judged for {self.name}: {reason}")]

    def status(self) -> TargetStatus:
        data: dict[str, Any] = {
            "exporter": f"{self.exporter} ({self.exporter_chosen_by})",
            "opset": self.opset,
            "torch": self.torch_version,
            "graph": (
                "torch.onnx's own trace front end (unconvertible_ops) with example inputs, the scripted graph without"
                if self.exporter == "torchscript"
                else "torch.export + the exporter's ONNX decomposition table"
            ),
        }
        if self.exporter == "torchscript":
            data["symbolic registry"] = (
                f"torch {self.torch_version}: {len(self._first)} ops, opsets "
                f"{self.torchscript.get('min_opset')}-{self.torchscript.get('max_opset')}"
            )
        else:
            data["torchlib registry"] = (
                f"onnxscript {self.dynamo.get('onnxscript')}: {len(self._first)} overloads"
                if self.dynamo.get("available")
                else self.dynamo.get("reason")
            )
        return {"target": self.name, "available": self.available, "description": self.description, "data": data}
