"""The shared shape of a benchmark result: one `Row` per line of issue 22's table.

Every `benchmarks/bench_*.py` that takes part in `benchmarks/run.py` exposes
`rows(quick: bool) -> list[Row]`. A row carries atenlint's time and, where the goal is a
ratio, the baseline's time measured in the same run: machines are noisy, so only a ratio
against a baseline timed next to it says anything; an absolute goal (`goal_abs_s`) is kept
for the editor latencies whose target is a fixed number (initialize, code action p95).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Row:
    measure: str  # a line of issue 22's table, in its words
    value_s: float  # atenlint's time
    baseline_s: float | None  # the baseline's time in the same run (None: absolute goal)
    goal_ratio: float | None = None  # e.g. 1.15
    goal_extra_s: float = 0.0  # allowance on top of the ratio, e.g. 0.05 * classes
    goal_abs_s: float | None = None  # e.g. 0.200 for initialize
    note: str = ""  # what was measured (sizes, rounds), printed after the row

    def ratio(self) -> float | None:
        if self.baseline_s is None or self.baseline_s <= 0:
            return None
        return self.value_s / self.baseline_s

    def limit_s(self) -> float | None:
        """The largest time for `value_s` that meets every goal set on this row."""
        limits: list[float] = []
        if self.goal_ratio is not None and self.baseline_s is not None:
            limits.append(self.goal_ratio * self.baseline_s + self.goal_extra_s)
        if self.goal_abs_s is not None:
            limits.append(self.goal_abs_s)
        return min(limits) if limits else None

    def goal_text(self) -> str:
        parts: list[str] = []
        if self.goal_ratio is not None:
            extra = f" + {self.goal_extra_s * 1000:.0f} ms" if self.goal_extra_s else ""
            parts.append(f"<= {self.goal_ratio:.2f}x{extra}")
        if self.goal_abs_s is not None:
            parts.append(f"<= {self.goal_abs_s * 1000:.0f} ms")
        return ", ".join(parts) or "-"

    def meets_goal(self) -> bool:
        limit = self.limit_s()
        return True if limit is None else self.value_s <= limit


def _seconds(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"


def format_table(rows: list[Row]) -> str:
    """A Markdown table, the shape of the issue's, with the measured ratio and the verdict."""
    header = ["measure", "atenlint", "baseline", "ratio", "goal", "met"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        ratio = row.ratio()
        cells = [
            row.measure + (f" ({row.note})" if row.note else ""),
            _seconds(row.value_s),
            _seconds(row.baseline_s),
            "-" if ratio is None else f"{ratio:.2f}x",
            row.goal_text(),
            "yes" if row.meets_goal() else "NO",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
