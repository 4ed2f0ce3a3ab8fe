"""One target's verdict on everything one place made: a user call site (hover, the file
report) or one op of a module (`atenlint report`). The one aggregator of per-call problems
into a status, so every view says "supported", "conditional" or "problem" alike.

Problems merge before the target words them, as findings do (engine._site_finding): a
definite problem outranks a conditional one (a path the library picks at run time).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .base import Problem, Target

SUPPORTED = "supported"
CONDITIONAL = "conditional"  # only on a path the library chooses at run time
PROBLEM = "problem"
STATUSES = (SUPPORTED, CONDITIONAL, PROBLEM)


@dataclass(frozen=True)
class SiteVerdict:
    status: str  # one of STATUSES
    ops: tuple[str, ...] = ()  # the overloads the verdict is about
    severity: str = ""  # the target's severity for them ("" when supported)
    code: str = ""
    message: str = ""  # completes a sentence that starts with the call

    def as_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "ops": list(self.ops),
            "severity": self.severity,
            "code": self.code,
            "message": self.message,
        }


def _everything(problem: Problem) -> bool:
    return True


@dataclass
class VerdictAggregate:
    """Collects what one target says about each captured call at one place."""

    target: Target
    definite: list[Problem] = field(default_factory=list)
    conditional: list[Problem] = field(default_factory=list)

    def add(self, problems: list[Problem], conditional: bool) -> None:
        bucket = self.conditional if conditional else self.definite
        for problem in problems:
            if problem not in bucket:
                bucket.append(problem)

    def chosen(self, keep: Callable[[Problem], bool] = _everything) -> tuple[list[Problem], bool]:
        """The problems the verdict is about, and whether they are only conditional: the
        definite ones the user did not ignore (`keep`), else the conditional ones."""
        definite = [p for p in self.definite if keep(p)]
        if definite:
            return definite, False
        return [p for p in self.conditional if keep(p)], True

    def verdict(self, keep: Callable[[Problem], bool] = _everything) -> SiteVerdict:
        problems, conditional = self.chosen(keep)
        if not problems:
            return SiteVerdict(SUPPORTED)
        worded = self.target.verdict(problems)
        ops = tuple(dict.fromkeys(p.op for p in problems))
        return SiteVerdict(CONDITIONAL if conditional else PROBLEM, ops, worded.severity, worded.code, worded.message)
