"""`--format github`: GitHub Actions workflow commands, one annotation per finding.

`::error file=F,line=L,col=C,endLine=EL,endColumn=EC,title=atenlint CODE::message`
(`warning`; `notice` for information and hints). GitHub reads `%`, CR and LF escaped in
the message, and also `:` and `,` in property values.
"""

from __future__ import annotations

from ..findings import Finding
from ..run_report import Report
from . import locations
from .redact import finding_message, machine_text, secret_values

COMMAND = {"error": "error", "warning": "warning", "information": "notice", "hint": "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(finding: Finding, root: str, secrets: list[tuple[str, str]] | None = None) -> str:
    relative, base = locations.portable(locations.absolute(finding), root)
    # An installed library's file by its place in site-packages: GitHub cannot annotate it
    # anyway, and an absolute path would name this machine's environment.
    file = f"site-packages/{relative}" if base == "site" else relative
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
    message = finding_message(finding, secret_values() if secrets is None else secrets)
    return f"::{COMMAND.get(finding.severity, 'warning')} {rendered}::{escape_data(target + message)}"


def report_github(report: Report, root: str | None = None) -> str:
    root = root or locations.repository_root()
    secrets = secret_values()
    lines = [annotation(finding, root, secrets) for finding in report.findings]
    for error in report.errors:
        message = machine_text(error.message, (), secrets)
        lines.append(f"::error file={escape_property(error.path)},title=atenlint::{escape_data(message)}")
    return "".join(line + "\n" for line in lines)
