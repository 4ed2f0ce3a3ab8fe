"""Findings: what atenlint reports, as plain JSON-able values (the contract other tools read).

Codes are stable. Module-level codes start with ATL, target codes with the target's
name; the README documents each one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from .sourcetext import Range

# Module- and file-level codes (target is null in JSON).
SYNTAX_ERROR = "ATL001"
IMPORT_ERROR = "ATL002"
CANNOT_BUILD = "ATL003"
SCRIPT_FAILED = "ATL004"
TIMEOUT = "ATL005"
WORKER_CRASHED = "ATL006"
UNDECODABLE = "ATL007"
TOO_LARGE = "ATL008"
BAD_DIRECTIVE = "ATL009"
CONFIG_ERROR = "ATL010"
TRACE_FAILED = "ATL011"
PARTIAL_CAPTURE = "ATL020"  # one toolchain's front end could not capture a traced class: another view stood in
REFUSED = "ATL012"  # the worker's sandbox refused an action of the analysed code
INTERNAL_ERROR = "ATL099"

DOCS_URL = "https://github.com/atenlint/atenlint#rule-"

SEVERITY_RANK = {"error": 0, "warning": 1, "information": 2, "hint": 3}


@dataclass
class Finding:
    path: str  # as the user gave it, or relative to the working directory
    range: Range
    severity: str
    code: str
    message: str
    target: Optional[str] = None
    ops: list = field(default_factory=list)
    call: Optional[str] = None
    module: Optional[str] = None
    capture: Optional[str] = None  # script | trace | static
    fixes: list = field(default_factory=list)
    related: list = field(default_factory=list)  # [{"path", "line" (0-based), "character", "message"}]
    data: dict = field(default_factory=dict)  # what editors need beyond the contract (not in JSON output)
    abs_path: str = ""
    # Every analysed class that reaches this finding (a shared library line is reached by
    # several); `module` stays the first of them.
    modules: list = field(default_factory=list)

    def as_json(self) -> dict:
        return {
            "path": self.path,
            "range": self.range.as_json(),
            "severity": self.severity,
            "target": self.target,
            "code": self.code,
            "ops": list(self.ops),
            "call": self.call,
            "module": self.module,
            "modules": self.all_modules(),
            "capture": self.capture,
            "message": self.message,
            "fixes": list(self.fixes),
        }

    def sort_key(self) -> tuple:
        return (self.path, self.range.start.line, self.range.start.character, self.target or "",
                SEVERITY_RANK.get(self.severity, 9), self.code)

    def identity(self) -> tuple:
        """Findings with the same identity are one diagnostic (merged across classes)."""
        return (self.abs_path or self.path, self.range, self.target, self.code)

    def all_modules(self) -> list:
        out = [self.module] if self.module else []
        return out + [m for m in self.modules if m and m not in out]

    def merge(self, other: "Finding") -> None:
        for op in other.ops:
            if op not in self.ops:
                self.ops.append(op)
        self.modules = [m for m in self.all_modules() + other.all_modules()]
        self.modules = list(dict.fromkeys(self.modules))


@dataclass
class FileError:
    path: str
    message: str

    def as_json(self) -> dict:
        return {"path": self.path, "message": self.message}


def dedupe(findings: list[Finding]) -> list[Finding]:
    merged: dict[tuple, Finding] = {}
    for finding in findings:
        key = finding.identity()
        if key in merged:
            merged[key].merge(finding)
        else:
            merged[key] = finding
    return sorted(merged.values(), key=Finding.sort_key)
