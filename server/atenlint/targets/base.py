"""What every target answers about captured calls, whatever the backend.

A target sees only call trees (an overload and, for composites, what it calls) and the
phases a call runs in; it never knows where a call came from (that is `capture/`).
Findings at one user call site are merged before the target words them, so a call that
reaches several unsupported overloads becomes one diagnostic that lists them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Protocol

SEVERITIES = ("error", "warning", "information", "hint")


@dataclass(frozen=True)
class Problem:
    """One overload a target cannot run as asked, and which kind of problem it is."""

    op: str
    kind: str  # target-specific: "fallback", "forced", "unsupported", ...


@dataclass(frozen=True)
class Verdict:
    severity: str
    code: str
    message: str  # completes a sentence that starts with the user's call


@dataclass(frozen=True)
class ClassResult:
    """A target's verdict about a whole class rather than one call (TorchScript cannot
    compile it; the target's package is missing). `site` is a capture site
    ({"file", "line", "col", "span_lines", "end_col"}) or None for the class name."""

    severity: str
    code: str
    message: str  # a whole sentence
    site: Optional[dict] = None
    replaces: tuple = ()  # module-level codes this result makes redundant (ATL004)


class Target(Protocol):
    name: str
    description: str
    device: str  # the device the model runs on for this target (capture specialises for it)
    # The graph the target's toolchain consumes (capture/graphs.py): "dispatch" (a device
    # backend's dispatcher), "jit" / "onnx-jit" (torch.jit.trace, as coremltools or the
    # TorchScript ONNX exporter prepare it), "export" / "onnx-export" / "executorch-export"
    # (torch.export after that consumer's decomposition table), "script" (none: a verdict
    # per class).
    tree_view: str

    def problems(self, tree: dict, phases: tuple[str, ...]) -> list[Problem]:
        """The problems of one captured call (empty when it runs fine)."""

    def verdict(self, problems: list[Problem]) -> Verdict:
        """How to report the merged problems of one user call site."""

    def status(self) -> dict:
        """Availability and the versions of the data it judges with."""

    # Optional: `class_results(cls) -> list[ClassResult]` for verdicts about a class as a
    # whole (`cls` is the worker's answer for it); `support(op) -> dict` for `atenlint ops`.


def worst(severities) -> str:
    for severity in SEVERITIES:
        if severity in severities:
            return severity
    return "hint"


def join_ops(ops: list[str]) -> str:
    ops = [f"`{op}`" for op in ops]
    if len(ops) <= 2:
        return " and ".join(ops)
    return ", ".join(ops[:-1]) + f" and {ops[-1]}"
