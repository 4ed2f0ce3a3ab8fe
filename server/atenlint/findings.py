"""Findings: what atenlint reports, as plain JSON-able values (the contract other tools read).

Codes are stable. Module-level codes start with ATL, target codes with the target's
name; docs/rules.md documents each one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .finding_data import FindingData, Fix, RelatedPlace, no_data
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
EXPORT_FAILS = "EXPORT001"  # torch.export itself fails on the class's code: every export toolchain does
PARTIAL_CAPTURE = "ATL020"  # one toolchain's front end could not capture a traced class: another view stood in
REFUSED = "ATL012"  # the worker's sandbox refused an action of the analysed code
INTERNAL_ERROR = "ATL099"

# docs/rules.md has one anchor per code, the code in lower case (scripts/gen_rules_doc.py
# writes it; tests/test_sarif.py checks every code's link target exists).
DOCS_URL = "https://github.com/atenlint/atenlint/blob/main/docs/rules.md#"


def rule_url(code: str) -> str:
    """Where a rule code is documented: its anchor in docs/rules.md."""
    return f"{DOCS_URL}{code.lower()}"


SEVERITY_RANK = {"error": 0, "warning": 1, "information": 2, "hint": 3}

# Findings about the run rather than a file (a converter that is not installed): said once
# per run by the CLI, and in the editor's status item rather than on every class.
RUN_LEVEL_CODES = ("COREML000", "ET011")


@dataclass
class Finding:
    path: str  # as the user gave it, or relative to the working directory
    range: Range
    severity: str
    code: str
    message: str
    target: str | None = None
    ops: list[str] = field(default_factory=list)
    call: str | None = None
    module: str | None = None
    capture: str | None = None  # script | trace | static
    fixes: list[Fix] = field(default_factory=list)
    related: list[RelatedPlace] = field(default_factory=list)
    data: FindingData = field(default_factory=no_data)  # beyond the contract (not in JSON output): finding_data.py
    abs_path: str = ""
    # Every analysed class that reaches this finding (a shared library line is reached by
    # several); `module` stays the first of them.
    modules: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
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

    def sort_key(self) -> tuple[str, int, int, str, int, str]:
        return (
            self.path,
            self.range.start.line,
            self.range.start.character,
            self.target or "",
            SEVERITY_RANK.get(self.severity, 9),
            self.code,
        )

    def identity(self) -> tuple[str, Range, str | None, str]:
        """Findings with the same identity are one diagnostic (merged across classes)."""
        return (self.abs_path or self.path, self.range, self.target, self.code)

    def all_modules(self) -> list[str]:
        out = [self.module] if self.module else []
        return out + [m for m in self.modules if m and m not in out]

    def merge(self, other: Finding) -> None:
        for op in other.ops:
            if op not in self.ops:
                self.ops.append(op)
        self.modules = [m for m in self.all_modules() + other.all_modules()]
        self.modules = list(dict.fromkeys(self.modules))


@dataclass
class FileError:
    path: str
    message: str

    def as_json(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message}


def once_per_run(findings: list[Finding]) -> list[Finding]:
    """The first of each run-level note (same code and words), the other findings as they are."""
    seen: set[tuple[str, str]] = set()
    out = []
    for finding in findings:
        if finding.code in RUN_LEVEL_CODES:
            key = (finding.code, finding.message)
            if key in seen:
                continue
            seen.add(key)
        out.append(finding)
    return out
