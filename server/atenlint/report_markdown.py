"""The op report as Markdown, one renderer for every place that shows one: the editor's
"atenlint: show report" (one file, a row per call site) and `atenlint report --format
markdown` (a pull-request comment, a row per op of each module). Rows come from
`targets/site_verdict.py`, so both say the same words for the same verdict."""

from __future__ import annotations

from collections.abc import Sequence

from .targets.site_verdict import CONDITIONAL, SUPPORTED, SiteVerdict

_ICONS = {"error": "❌", "warning": "⚠️"}


def verdict_cell(verdict: SiteVerdict | None) -> str:
    """One target's verdict in a table cell ("" where the target was not asked)."""
    if verdict is None:
        return ""
    if verdict.status == SUPPORTED:
        return "✅ supported"
    if verdict.status == CONDITIONAL:
        return f"❔ may fall back: {', '.join(verdict.ops)} ({verdict.code})"
    return f"{_ICONS.get(verdict.severity, '❔')} unsupported: {', '.join(verdict.ops)} ({verdict.code})"


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A Markdown table's lines (cells are escaped for pipes)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return lines


def verdict_table(
    first_columns: Sequence[str], targets: Sequence[str], rows: Sequence[tuple[Sequence[str], dict[str, SiteVerdict]]]
) -> list[str]:
    """A table with the given leading columns, then a verdict cell per target."""
    return table(
        [*first_columns, *targets],
        [[*cells, *(verdict_cell(verdicts.get(t)) for t in targets)] for cells, verdicts in rows],
    )


def section(title: str, items: Sequence[str], level: int = 2) -> list[str]:
    """A titled bullet list (nothing when there is nothing to list)."""
    if not items:
        return []
    return ["", f"{'#' * level} {title}", "", *(f"- {item}" for item in items)]
