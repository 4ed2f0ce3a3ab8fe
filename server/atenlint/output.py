"""How a finished check is printed: compiler-style text, or the stable JSON contract."""

from __future__ import annotations

import os
from typing import Any, TypedDict

from . import __version__
from .answers import ARGUMENTS_INFERRED
from .captured import CallSite
from .findings import Finding
from .formats.locations import contract_path
from .formats.redact import finding_message, machine_text
from .notebook import cell_of
from .report_markdown import section, verdict_table
from .run_report import AFTER_TIMEOUT, Report


class StatisticsRow(TypedDict):
    """One line of `--statistics` (JSON "statistics", SARIF run properties)."""

    code: str
    op: str | None
    target: str | None
    count: int


def statistics(findings: list[Finding]) -> list[StatisticsRow]:
    """Counts per code and operator (a finding with several operators counts for each),
    most frequent first: `--statistics`."""
    counts: dict[tuple[str, str | None, str | None], int] = {}
    for finding in findings:
        ops: list[str | None] = list(finding.ops) or [None]
        for op in ops:
            key = (finding.code, op, finding.target)
            counts[key] = counts.get(key, 0) + 1
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0][0], item[0][1] or "", item[0][2] or ""))
    return [{"code": code, "op": op, "target": target, "count": count} for (code, op, target), count in ordered]


def statistics_lines(rows: list[StatisticsRow]) -> list[str]:
    if not rows:
        return ["atenlint: statistics: no findings"]
    width = max(len(str(row["count"])) for row in rows)
    code_width = max(len(row["code"]) for row in rows)
    return [
        f"{row['count']:>{width}}  {row['code']:<{code_width}}  {row['op'] or '-'}"
        + (f"  [{row['target']}]" if row["target"] else "")
        for row in rows
    ]


def report_json(report: Report) -> dict[str, Any]:
    return {
        "atenlint": __version__,
        "torch": report.torch_version,
        "targets": report.targets,
        "diagnostics": [finding_json(finding) for finding in report.findings],
        "errors": [dict(error.as_json(), message=machine_text(error.message)) for error in report.errors],
        "classes": classes_json(report),
    }


def classes_json(report: Report) -> dict[str, Any]:
    """How many module classes each capture path analysed, and how many none did."""
    by_capture = report.by_capture or {}
    return {
        "total": report.classes,
        "trace": by_capture.get("trace", 0) + by_capture.get("inferred", 0),
        "inferred": by_capture.get("inferred", 0),  # of "trace": with inputs atenlint inferred
        "script": by_capture.get("script", 0),
        "static": by_capture.get("static", 0),
        "not_analysed": by_capture.get("none", 0),
        "static_after_timeout": by_capture.get(AFTER_TIMEOUT, 0),  # of "static": their file hit its time limit
        # of "trace" and "script": built with constructor arguments atenlint inferred
        "arguments_inferred": by_capture.get(ARGUMENTS_INFERRED, 0),
        "built": dict(report.built or {}),
    }


def classes_summary(report: Report) -> str:
    """`12 module classes: 3 traced, 2 traced with inferred inputs, 3 scripted, 4 from source only,
    2 built with inferred arguments` (the last of those traced or scripted)."""
    by_capture = report.by_capture or {}
    total = sum(n for key, n in by_capture.items() if key not in (AFTER_TIMEOUT, ARGUMENTS_INFERRED)) or report.classes
    parts = [
        f"{by_capture[key]} {word}"
        for key, word in (
            ("trace", "traced"),
            ("inferred", "traced with inferred inputs"),
            ("script", "scripted"),
            ("static", "from source only"),
            ("none", "not analysed"),
        )
        if by_capture.get(key)
    ]
    if by_capture.get(AFTER_TIMEOUT) and by_capture.get("static"):
        timed_out = by_capture[AFTER_TIMEOUT]
        at = parts.index(f"{by_capture['static']} from source only")
        parts[at] += f" ({timed_out} of them after their file's time limit)"
    if by_capture.get(ARGUMENTS_INFERRED):
        parts.append(f"{by_capture[ARGUMENTS_INFERRED]} built with inferred arguments")
    cpu = sum(n for path, n in (report.built or {}).items() if path.startswith("cpu"))
    if cpu:
        parts.append(f"{cpu} built on the CPU")
    noun = f"{total} module class{'es' if total != 1 else ''}"
    return f"{noun}: {', '.join(parts)}" if parts else noun


def finding_json(finding: Finding) -> dict[str, Any]:
    """The contract's diagnostic; in a notebook, `cell` (index among all cells) and `range` in that cell."""
    out = finding.as_json()
    out["path"] = contract_path(finding)  # an installed library's file: relative to site-packages
    # JSON reports are read by tools and uploaded like SARIF: what analysed code put in an
    # exception message is cut to a headline, secrets in the environment never echoed.
    out["message"] = finding_message(finding)
    cell = cell_of(finding)
    if cell is not None:
        out["cell"] = cell
    return out


def location_text(finding: Finding) -> str:
    """`path:line:col`, or `nb.ipynb:cell 3:2:5` in a notebook (cells counted from 1, all kinds)."""
    start = finding.range.start
    cell = cell_of(finding)
    where = f"{finding.path}:cell {cell + 1}" if cell is not None else finding.path
    return f"{where}:{start.line + 1}:{start.character + 1}"


def report_text(report: Report, statistics: list[StatisticsRow] | None = None, baselined: int = 0) -> str:
    lines = []
    for finding in report.findings:
        target = finding.target or "atenlint"
        lines.append(f"{location_text(finding)}: {finding.severity} [{target}] {finding.message} ({finding.code})")
    for error in report.errors:
        lines.append(f"{error.path}: error: {error.message}")
    if statistics:
        lines.extend(statistics_lines(statistics))
    if baselined:
        lines.append(
            f"atenlint: {baselined} finding{'s' if baselined != 1 else ''} accepted by the baseline "
            f"{'are' if baselined != 1 else 'is'} not shown"
        )
    lines.append(summary_line(report))
    return "\n".join(lines) + "\n"


def summary_line(report: Report) -> str:
    counts = report.counts()
    parts = [
        f"{counts[k]} {name}{'s' if counts[k] != 1 else ''}"
        for k, name in (("error", "error"), ("warning", "warning"), ("information", "note"), ("hint", "hint"))
        if counts[k]
    ]
    summary = ", ".join(parts) if parts else "no problems"
    return (
        f"atenlint: {summary} in {report.files} file{'s' if report.files != 1 else ''} "
        f"({classes_summary(report)}) for "
        f"{', '.join(report.targets) or 'mps'} on torch {report.torch_version} [{report.seconds:.1f}s]"
    )


def report_markdown_for(path: str, call_sites: list[CallSite], findings: list[Finding], torch_version: str) -> str:
    """One file's op report as Markdown: per call, the overloads and each target's verdict,
    then the suggestions (fixes) — the "model structure" view of a single file."""
    lines = [f"# atenlint report: `{os.path.basename(path)}`", "", f"torch {torch_version}", ""]
    if not call_sites:
        lines.append("No operator calls were captured in this file.")
    targets = sorted({t for site in call_sites for t in site.verdicts})
    if call_sites:
        ordered = sorted(call_sites, key=lambda s: (s.range.start.line, s.range.start.character))
        lines += verdict_table(
            ["line", "call", "operators"],
            targets,
            [
                (
                    [str(site.range.start.line + 1), f"`{site.call}`", ", ".join(f"`{op}`" for op in site.ops)],
                    site.verdicts,
                )
                for site in ordered
            ],
        )
    lines += section(
        "Suggestions",
        [f"line {f.range.start.line + 1}, `{f.call}`: {fix.get('title', '')}" for f in findings for fix in f.fixes],
    )
    lines += section("Not analysed", [f"line {f.range.start.line + 1}: {f.message}" for f in findings if not f.target])
    return "\n".join(lines) + "\n"
