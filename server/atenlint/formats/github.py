"""`--format github`: GitHub Actions workflow commands, one annotation per finding.

`::error file=F,line=L,col=C,endLine=EL,endColumn=EC,title=atenlint CODE::message`
(`warning`; `notice` for information and hints). GitHub reads `%`, CR and LF escaped in
the message, and also `:` and `,` in property values.
"""

from __future__ import annotations

from ..engine import Report
from ..findings import Finding
from . import locations

COMMAND = {"error": "error", "warning": "warning", "information": "notice", "hint": "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(finding: Finding, root: str) -> str:
    path = locations.absolute(finding)
    file = locations.relative_to_root(path, root) or path
    region = locations.region(finding)
    # The same 1-based region as SARIF (end column one past the last character, as ruff writes it).
    properties = [
        ("file", file),
        ("line", str(region.start_line)),
        ("col", str(region.start_column)),
        ("endLine", str(region.end_line)),
        ("endColumn", str(region.end_column)),
        ("title", f"atenlint {finding.code}"),
    ]
    rendered = ",".join(f"{name}={escape_property(value)}" for name, value in properties)
    target = f"[{finding.target}] " if finding.target else ""
    return f"::{COMMAND.get(finding.severity, 'warning')} {rendered}::{escape_data(target + finding.message)}"


def report_github(report: Report, root: str | None = None) -> str:
    root = root or locations.repository_root()
    lines = [annotation(finding, root) for finding in report.findings]
    for error in report.errors:
        lines.append(f"::error file={escape_property(error.path)},title=atenlint::{escape_data(error.message)}")
    return "".join(line + "\n" for line in lines)
