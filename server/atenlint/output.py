"""How a finished check is printed: compiler-style text, or the stable JSON contract."""

from __future__ import annotations

from . import __version__
from .engine import Report


def report_json(report: Report) -> dict:
    return {
        "atenlint": __version__,
        "torch": report.torch_version,
        "targets": report.targets,
        "diagnostics": [finding.as_json() for finding in report.findings],
        "errors": [error.as_json() for error in report.errors],
    }


def report_text(report: Report) -> str:
    lines = []
    for finding in report.findings:
        start = finding.range.start
        target = finding.target or "atenlint"
        lines.append(f"{finding.path}:{start.line + 1}:{start.character + 1}: {finding.severity} [{target}] "
                     f"{finding.message} ({finding.code})")
    for error in report.errors:
        lines.append(f"{error.path}: error: {error.message}")
    lines.append(summary_line(report))
    return "\n".join(lines) + "\n"


def summary_line(report: Report) -> str:
    counts = report.counts()
    parts = [f"{counts[k]} {name}{'s' if counts[k] != 1 else ''}" for k, name in
             (("error", "error"), ("warning", "warning"), ("information", "note"), ("hint", "hint")) if counts[k]]
    summary = ", ".join(parts) if parts else "no problems"
    return (f"atenlint: {summary} in {report.files} file{'s' if report.files != 1 else ''} "
            f"({report.classes} module class{'es' if report.classes != 1 else ''}) for "
            f"{', '.join(report.targets) or 'mps'} on torch {report.torch_version} [{report.seconds:.1f}s]")
