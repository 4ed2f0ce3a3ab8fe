"""The record of one `atenlint check` run: its findings and what was analysed how.

Below the engine, the fixes and the output formats, so each of them can read it without
importing the others.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .findings import FileError, Finding

# A key of `Report.by_capture` that is not a capture path: of the classes read from source
# ("static"), those whose file ran out of its time limit (a trace or a TorchScript graph was
# attempted and did not finish), so a run's output can say that load or a limit decided them.
AFTER_TIMEOUT = "static_after_timeout"


@dataclass
class Report:
    torch_version: str
    targets: list[str]
    findings: list[Finding]
    errors: list[FileError]
    files: int = 0
    classes: int = 0
    seconds: float = 0.0
    # Module classes by capture path: {"trace", "inferred", "script", "static", "none"} -> count,
    # and AFTER_TIMEOUT (of "static").
    by_capture: dict[str, int] = field(default_factory=dict)
    built: dict[str, int] = field(default_factory=dict)  # build path -> count (meta, CPU-made tensors moved, CPU)

    @property
    def not_executed(self) -> int:
        """Classes the default mode could not build, trace or script (static or nothing)."""
        return self.by_capture.get("static", 0) + self.by_capture.get("none", 0)

    def counts(self) -> dict[str, int]:
        out = {"error": 0, "warning": 0, "information": 0, "hint": 0}
        for finding in self.findings:
            out[finding.severity] = out.get(finding.severity, 0) + 1
        return out
