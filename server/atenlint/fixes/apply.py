"""`atenlint check --fix`: apply every exact rewrite (approximate ones only when asked),
re-check, and repeat while nested calls still have fixes left.

Only rewrites are applied: silencing a warning or explaining an environment variable
are choices for a person, offered in the editor. A file is written only when it is
inside the paths given, not a link, not hard-linked, writable, and its bytes are still
the ones analysed (safe_write.py); everything outside the edited spans stays
byte-identical (encoding, line breaks, BOM and all; in a notebook, everything but the
edited cells' sources).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..finding_data import Fix
from ..findings import Finding
from ..notebook import NOTEBOOK_SUFFIX, fix_cells, is_notebook
from ..run_report import Report
from ..sourcetext import DecodeError, Range
from .edits import EncodedText, LineIndex, TextEdit, overlaps, text_fingerprint
from .model import REWRITE
from .safe_write import WriteRefused, read_for_fix, replace_if_unchanged

MAX_PASSES = 4  # a pass per level of nesting (`take(heaviside(x, v), i)` needs two)


@dataclass(frozen=True)
class AppliedFix:
    path: str
    line: int  # 1-based, where the finding was
    character: int  # 1-based
    target: str
    call: str
    fix_id: str
    title: str
    exact: bool

    def as_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "line": self.line,
            "character": self.character,
            "target": self.target,
            "call": self.call,
            "fix": self.fix_id,
            "title": self.title,
            "exact": self.exact,
        }

    def as_text(self) -> str:
        return (
            f"{self.path}:{self.line}:{self.character}: fixed [{self.target}] `{self.call}`: {self.title} "
            f"({self.fix_id}{'' if self.exact else ', approximate'})"
        )


@dataclass
class FixOutcome:
    applied: list[AppliedFix]  # in the order applied
    skipped: list[tuple[Finding, str]]  # (finding, reason) for fixes that could not be applied
    passes: int


def choose(findings: list[Finding], unsafe: bool) -> list[tuple[Finding, Fix]]:
    """Per finding, the first rewrite it may apply: exact and valid for any input, or, with
    `unsafe`, also approximate or right only for the example inputs' sizes."""
    chosen: list[tuple[Finding, Fix]] = []
    for finding in findings:
        for fix in finding.fixes:
            safe = bool(fix.get("exact")) and fix.get("safe", True) is not False
            if fix.get("kind") != REWRITE or not (safe or unsafe):
                continue
            if any("path" in edit for edit in fix.get("edits", [])) or not finding.abs_path:
                continue
            chosen.append((finding, fix))
            break
    return chosen


def apply_to_files(chosen: list[tuple[Finding, Fix]], allowed_roots: Sequence[str] | None = None) -> FixOutcome:
    """Write the chosen fixes; a fix overlapping one already taken in its file waits for the
    next pass (after a re-check its edits are fresh).

    `allowed_roots`: the paths the user gave; a file outside them is never written (a
    finding's location comes from analysed code, which may reach or forge any path).
    None only where the caller has already restricted the findings. Links, hard-linked,
    read-only and changed files are left alone and reported (fixes/safe_write.py)."""
    outcome = FixOutcome([], [], 1)
    by_file: dict[str, list[tuple[Finding, Fix]]] = {}
    for finding, fix in chosen:
        by_file.setdefault(finding.abs_path, []).append((finding, fix))
    for path, fixes in by_file.items():
        try:
            read = read_for_fix(path, allowed_roots)
        except WriteRefused as refused:
            outcome.skipped.extend((f, str(refused)) for f, _ in fixes)
            continue
        if is_notebook(path):  # edits are in cells: only the edited cells' sources change
            new_data, applied, skipped = fix_cells(read.data, fixes, text_fingerprint)
            outcome.skipped.extend(skipped)
            suffix = NOTEBOOK_SUFFIX
        else:
            new_data, applied = _fixed_source(read.data, fixes, outcome)
            suffix = ".py"
        if new_data is None or not applied:
            continue
        try:
            replace_if_unchanged(read, new_data, suffix)
        except WriteRefused as refused:
            outcome.skipped.extend((f, str(refused)) for f, _ in applied)
            continue
        except OSError as error:
            outcome.skipped.extend((f, f"cannot write the file: {error.strerror or error}") for f, _ in applied)
            continue
        outcome.applied.extend(_applied_fix(finding, fix) for finding, fix in applied)
    return outcome


def _fixed_source(
    data: bytes, fixes: list[tuple[Finding, Fix]], outcome: FixOutcome
) -> tuple[bytes | None, list[tuple[Finding, Fix]]]:
    """A Python file's new bytes with the fixes that apply, and those fixes."""
    try:
        original = EncodedText.read(data)
    except DecodeError as error:
        outcome.skipped.extend((f, f"cannot read the file: {error}") for f, _ in fixes)
        return None, []
    index = LineIndex(original.text)
    taken: list[TextEdit] = []
    applied: list[tuple[Finding, Fix]] = []
    for finding, fix in fixes:
        if finding.data.get("text_sha256") != text_fingerprint(original.text):
            outcome.skipped.append((finding, "the file changed since it was analysed"))
            continue
        edits = [TextEdit.from_json(e, index) for e in fix["edits"]]
        if any(overlaps(new, old) and new != old for new in edits for old in taken):
            outcome.skipped.append((finding, "overlaps another fix; applied on the next pass"))
            continue
        taken.extend(e for e in edits if e not in taken)
        applied.append((finding, fix))
    if not applied:
        return None, []
    return original.with_edits(taken), applied


def fix_until_clean(
    check: Callable[[], Report],
    unsafe: bool,
    log: Callable[[str], None] | None = None,
    allowed_roots: Sequence[str] | None = None,
) -> tuple[Report, FixOutcome]:
    """Check, apply the chosen fixes, check again; stop when nothing more applies. Returns
    the last report (what is left) and everything applied. `allowed_roots`: as for
    `apply_to_files` (the CLI passes the paths it was given)."""
    total = FixOutcome([], [], 0)
    report = check()
    seen: set[tuple[str, Range, str, str]] = set()
    for _ in range(MAX_PASSES):
        chosen = [
            (f, fix)
            for f, fix in choose(report.findings, unsafe)
            if (f.abs_path, f.range, fix["id"], fix["title"]) not in seen
        ]
        if not chosen:
            break
        seen.update((f.abs_path, f.range, fix["id"], fix["title"]) for f, fix in chosen)
        outcome = apply_to_files(chosen, allowed_roots)
        total.passes += 1
        total.applied.extend(outcome.applied)
        # An overlapping fix is retried on the next pass; other skips are final.
        total.skipped.extend(s for s in outcome.skipped if not s[1].startswith("overlaps"))
        if not outcome.applied:
            total.skipped.extend(s for s in outcome.skipped if s[1].startswith("overlaps"))
            break
        report = check()
    else:
        if log is not None:
            log(f"stopped after {MAX_PASSES} fix passes")
    return report, total


def fix_summary(outcome: FixOutcome) -> str:
    """What --fix changed, one line per fix, then a count (text output)."""
    lines = [applied.as_text() for applied in outcome.applied]
    for finding, reason in outcome.skipped:
        start = finding.range.start
        lines.append(f"{finding.path}:{start.line + 1}:{start.character + 1}: not fixed `{finding.call}`: {reason}")
    files = len({applied.path for applied in outcome.applied})
    count = len(outcome.applied)
    lines.append(
        f"atenlint: applied {count} fix{'es' if count != 1 else ''}"
        + (f" in {files} file{'s' if files != 1 else ''}" if count else "")
        + "; the report below is what remains"
    )
    return "\n".join(lines) + "\n"


def _applied_fix(finding: Finding, fix: Fix) -> AppliedFix:
    start = finding.range.start
    return AppliedFix(
        finding.path,
        start.line + 1,
        start.character + 1,
        finding.target or "",
        finding.call or "",
        fix["id"],
        fix["title"],
        bool(fix["exact"]),
    )
