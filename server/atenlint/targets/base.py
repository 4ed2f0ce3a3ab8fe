"""What every target answers about captured calls, whatever the backend.

A target sees only call trees (an overload and, for composites, what it calls) and the
phases a call runs in; it never knows where a call came from (that is `capture/`).
Findings at one user call site are merged before the target words them, so a call that
reaches several unsupported overloads becomes one diagnostic that lists them.

`Target` is the one type every caller uses: what a target must answer is abstract, what
only some targets have (class verdicts, dtype rules, graph options for the worker) has a
default here, so callers never probe for a method.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict

from ..worker.protocol import CallTree, ClassAnswer, Site

if TYPE_CHECKING:  # annotations are not evaluated at run time: no dependency on Python 3.11's typing
    from typing_extensions import NotRequired

SEVERITIES = ("error", "warning", "information", "hint")


@dataclass(frozen=True)
class Problem:
    """One overload a target cannot run as asked, and which kind of problem it is."""

    op: str
    kind: str  # target-specific: "fallback", "forced", "unsupported", ...


@dataclass(frozen=True)
class Verdict:
    """How a target words the merged problems of one call site, and the parameters a fix
    needs to act on it (so no fix reads them back out of the message)."""

    severity: str
    code: str
    message: str  # completes a sentence that starts with the user's call
    required_opset: int | None = None  # ONNX: the opset from which every reached op exports


@dataclass(frozen=True)
class ClassResult:
    """A target's verdict about a whole class rather than one call (TorchScript cannot
    compile it; the target's package is missing). `site` is where in the user's code, or
    None for the class name."""

    severity: str
    code: str
    message: str  # a whole sentence
    site: Site | None = None
    replaces: tuple[str, ...] = ()  # module-level codes this result makes redundant (ATL004)


class Support(TypedDict):
    """One overload's support, for `atenlint ops` (JSON as printed)."""

    verdict: str  # "supported", "unsupported", "composite", "maybe", "graph break", "forced cpu", "unknown"
    reason: str
    since: NotRequired[str]  # from which release or opset it is supported


class TargetStatus(TypedDict):
    """What `atenlint targets` prints about one target."""

    target: str
    available: bool
    description: str
    data: dict[str, Any]  # the versions of the data it judges with, by what they are


# What a trace saw about one call's tensors (dtypes, ranks): {"float64_origin", "max_dim", ...}.
CallFacts = dict[str, Any]


class Target(ABC):
    name: str
    description: str
    device: str  # the device the model runs on for this target (capture specialises for it)
    # The graph the target's toolchain consumes (capture/graphs.py): "dispatch" (a device
    # backend's dispatcher), "jit" / "onnx-jit" (torch.jit.trace, as coremltools or the
    # TorchScript ONNX exporter prepare it), "export" / "onnx-export" / "executorch-export"
    # / "coreml-export" (torch.export after that consumer's decomposition table), "script"
    # (none: a verdict per class).
    tree_view: str = "dispatch"

    @property
    def available(self) -> bool:
        """Whether the target's package could be read (else it judges nothing and says why)."""
        return True

    @abstractmethod
    def problems(self, tree: CallTree, phases: tuple[str, ...]) -> list[Problem]:
        """The problems of one captured call (empty when it runs fine)."""

    @abstractmethod
    def verdict(self, problems: list[Problem]) -> Verdict:
        """How to report the merged problems of one user call site."""

    @abstractmethod
    def status(self) -> TargetStatus:
        """Availability and the versions of the data it judges with."""

    @abstractmethod
    def support(self, op: str) -> Support:
        """Whether one overload runs, for `atenlint ops`."""

    def facts_problems(self, op: str, facts: CallFacts) -> list[Problem]:
        """Rules on dtypes and shapes, for calls a trace saw with real example inputs."""
        return []

    def argument_problems(self, op: str, args: dict[str, Any], phases: tuple[str, ...]) -> list[Problem]:
        """Rules on a call's constant arguments (`args`: schema name -> JSON value, as the
        capture read them), for what the arguments alone decide (a TensorRT converter's
        capability validator that declines `ceil_mode=True`)."""
        return []

    def class_results(self, cls: ClassAnswer) -> list[ClassResult]:
        """Verdicts about a class as a whole (`cls` is the worker's answer for it)."""
        return []

    def implemented_overloads(self) -> list[str]:
        """The overloads an exporter's own registry implements: its decomposition keeps them."""
        return []

    def decomposition_changes(self) -> dict[str, str]:
        """A toolchain's changes to torch.export's default decomposition table."""
        return {}


def worst(severities: Iterable[str]) -> str:
    chosen = set(severities)
    for severity in SEVERITIES:
        if severity in chosen:
            return severity
    return "hint"


def join_ops(ops: list[str]) -> str:
    quoted = [f"`{op}`" for op in ops]
    if len(quoted) <= 2:
        return " and ".join(quoted)
    return ", ".join(quoted[:-1]) + f" and {quoted[-1]}"
