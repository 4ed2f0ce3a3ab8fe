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


def report_markdown_for(path: str, call_sites: list, findings: list, torch_version: str) -> str:
    """One file's op report as Markdown: per call, the overloads and each target's verdict,
    then the suggestions (fixes) — the "model structure" view of a single file."""
    import os

    lines = [f"# atenlint report: `{os.path.basename(path)}`", "", f"torch {torch_version}", ""]
    if not call_sites:
        lines.append("No operator calls were captured in this file.")
    targets = sorted({t for site in call_sites for t in site.verdicts})
    if call_sites:
        lines.append("| line | call | operators | " + " | ".join(targets) + " |")
        lines.append("|---|---|---|" + "---|" * len(targets))
        for site in sorted(call_sites, key=lambda s: (s.range.start.line, s.range.start.character)):
            cells = []
            for target in targets:
                verdict = site.verdicts.get(target)
                if verdict is None or verdict["status"] == "supported":
                    cells.append("supported")
                else:
                    word = "may fall back" if verdict["status"] == "conditional" else "unsupported"
                    cells.append(f"{word}: {', '.join(verdict['ops'])}")
            ops = ", ".join(f"`{op}`" for op in site.ops)
            lines.append(f"| {site.range.start.line + 1} | `{site.call}` | {ops} | " + " | ".join(cells) + " |")
    suggestions = [(f, fix) for f in findings for fix in f.fixes]
    if suggestions:
        lines += ["", "## Suggestions", ""]
        for finding, fix in suggestions:
            lines.append(f"- line {finding.range.start.line + 1}, `{finding.call}`: {fix.get('title', '')}")
    module_level = [f for f in findings if not f.target]
    if module_level:
        lines += ["", "## Not analysed", ""]
        lines += [f"- line {f.range.start.line + 1}: {f.message}" for f in module_level]
    return "\n".join(lines) + "\n"
