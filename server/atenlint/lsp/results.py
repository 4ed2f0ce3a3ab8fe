"""What one check of a document produced, and the pure functions over it: no state, no
scheduling, no protocol. The session keeps these records; the server converts them."""

from __future__ import annotations

import dataclasses
import hashlib
import os
from dataclasses import dataclass, field
from typing import Any

from ..captured import FileCapture
from ..config import Settings
from ..engine import CallSite
from ..findings import INTERNAL_ERROR, RUN_LEVEL_CODES, Finding  # run-level: said once, in the status item
from ..pipeline import FileResult
from ..sourcetext import Position, Range
from .settings import EditorSettings

# A result with one of these is never reused: the import failed somewhere we cannot name,
# or a worker timed out or crashed (which may not happen again).
UNSTABLE_CODES = ("ATL002", "ATL005", "ATL006", "ATL099")

# Findings about the slow (export) views that only a full result has: a front end's failure.
_SLOW_VIEW_CODES = ("ATL020",)


def text_hash(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", errors="surrogatepass")).hexdigest()


@dataclass(frozen=True)
class AnalysisInput:
    """What one check of a document reads: the text, whether it may import and run it, and
    the other unsaved buffers its import sees (only when the user opted in)."""

    text: str
    execute: bool
    overlays: tuple[tuple[str, str], ...] = ()  # ((path, text), ...)


def analysis_input(
    text: str, saved_text: str | None, other_unsaved: dict[str, str], settings: EditorSettings
) -> AnalysisInput:
    """Unsaved code is never imported or run unless `executeUnsaved` says so: with `onSave`
    the saved file is checked (the buffer only when there is no file), with `onType` an
    unsaved buffer gets the static pass and a saved one the full capture."""
    overlays = tuple(sorted(other_unsaved.items())) if settings.execute_unsaved and settings.trusted else ()
    clean = saved_text is not None and text == saved_text
    if clean or settings.execute_unsaved:
        return AnalysisInput(text, settings.trusted, overlays)
    if settings.trigger == "onType" or saved_text is None:
        return AnalysisInput(text, False)
    return AnalysisInput(saved_text, settings.trusted)


@dataclass
class DocumentResult:
    path: str
    version: int | None
    findings: list[Finding]  # findings located in this file
    call_sites: list[CallSite]
    dependencies: list[str]  # the user's files the analysis imported
    key: tuple[Any, ...]
    seconds: float
    # Findings this analysis located in other files (a helper or base class defined
    # elsewhere): shown in those files, next to their own findings.
    foreign: dict[str, list[Finding]] = field(default_factory=dict)
    input: AnalysisInput | None = None  # what was checked (positions refer to its text)
    # Notes about the whole run rather than this file (told once, shown in the status item).
    run_notes: tuple[str, ...] = ()
    # Only the fast targets' verdicts (the dispatcher view), shown while the export
    # targets' graphs are still being captured; the full result replaces it.
    partial: bool = False
    fast_targets: tuple[str, ...] = ()  # the targets judged in a partial result
    # The document version whose buffer held exactly the checked text (None: no version
    # did, e.g. a saved file checked under a buffer with unsaved edits): quick-fix edits
    # computed from this result are valid for that version only.
    text_version: int | None = None
    # Classes (by module key) this check analysed inside its own classes (`FileResult.covers`):
    # another file's "cannot be built alone" note about one of them is not shown beside it,
    # as the CLI drops it from a report holding both files (`pipeline.merge_results`).
    covers: frozenset[str] = frozenset()

    @property
    def text(self) -> str | None:
        return self.input.text if self.input is not None else None

    @property
    def import_failed(self) -> bool:
        """A failed import reached files we cannot name (a module that does not exist yet,
        the file with the syntax error): such a result is re-checked on any change and never
        reused from the cache."""
        return any(f.code in UNSTABLE_CODES for f in self.findings) or any(
            f.code in UNSTABLE_CODES for found in self.foreign.values() for f in found
        )

    @property
    def reads_unknown_files(self) -> bool:
        """Its dependencies are not known: a failed import, or the static pass (which reads
        the files an import names, to find classes and helpers, without listing them)."""
        return self.import_failed or (self.input is not None and not self.input.execute)


def served_digest(findings: list[Finding], text: str | None, version: int | None) -> str:
    """The id of exactly what is served for a file: every finding shown in it (its own and
    those other files' results place there), the text their positions convert against, and
    the document version their quick fixes are stamped with. Any change of any contribution
    changes it; the same served set always gives the same id."""
    served = sorted(repr((f.as_json(), f.related)) for f in findings)
    payload = repr((served, text_hash(text) if text is not None else None, version))
    return hashlib.sha1(payload.encode("utf-8", errors="surrogatepass")).hexdigest()[:20]


def split_run_notes(findings: list[Finding]) -> tuple[list[Finding], tuple[str, ...]]:
    """(file findings, run-level notes): the COREML000-like ones leave the file."""
    notes = tuple(dict.fromkeys(f.message for f in findings if f.code in RUN_LEVEL_CODES))
    return [f for f in findings if f.code not in RUN_LEVEL_CODES], notes


def with_kept_slow_findings(partial: DocumentResult, previous: DocumentResult | None) -> DocumentResult:
    """The fast targets' result, plus the previous full result's findings of the other
    (slow) targets when they still stand where they are: the same text, mode, torch and
    settings (a re-check because an imported file changed, or the same content saved again).
    Then the export targets' squiggles do not blink off and on while they are re-judged.
    When the text changed they are left out: an export error on a line the user just edited
    may be the one they fixed, and a stale squiggle is worse than a moment without one."""
    if previous is None or previous.partial or previous.input is None or partial.input is None:
        return partial
    same_settings = (
        len(previous.key) == len(partial.key) == 6
        and previous.key[1:2] + previous.key[3:] == partial.key[1:2] + partial.key[3:]
    )
    if previous.input.text != partial.input.text or not same_settings:
        return partial
    fast = set(partial.fast_targets)

    def slow(finding: Finding) -> bool:
        return finding.target not in fast if finding.target else finding.code in _SLOW_VIEW_CODES

    findings = list(partial.findings) + [f for f in previous.findings if slow(f)]
    foreign = {path: list(found) for path, found in partial.foreign.items()}
    for path, found in previous.foreign.items():
        foreign.setdefault(path, []).extend(f for f in found if slow(f))
    return dataclasses.replace(partial, findings=findings, foreign={p: f for p, f in foreign.items() if f})


def internal_error(path: str, error: str) -> FileResult:
    """The result of a check that failed inside atenlint: one finding that says so, never an
    empty, clean-looking result."""
    finding = Finding(
        os.path.basename(path),
        Range(Position(0, 0), Position(0, 0)),
        "warning",
        INTERNAL_ERROR,
        f"atenlint failed while checking this file ({error[:300]}); its results are not shown. "
        f"Please report it with the output log",
        abs_path=path,
    )
    capture = FileCapture(path, os.path.basename(path), Settings(), None, None)
    return FileResult(path, (finding,), (), (), capture)


def make_result(
    path: str,
    version: int | None,
    checked: FileResult,
    key: tuple[Any, ...],
    seconds: float,
    wanted: AnalysisInput | None = None,
) -> DocumentResult:
    """A check's findings split by the file they are located in (own, and placed in others)."""
    findings, notes = split_run_notes(list(checked.findings))
    own = [f for f in findings if os.path.abspath(f.abs_path or path) == path]
    foreign: dict[str, list[Finding]] = {}
    for finding in findings:
        where = os.path.abspath(finding.abs_path or path)
        if where != path:
            foreign.setdefault(where, []).append(finding)
    dependencies = sorted({os.path.abspath(p) for p in checked.imported} - {path})
    return DocumentResult(
        path,
        version,
        own,
        list(checked.call_sites),
        dependencies,
        key,
        seconds,
        foreign=foreign,
        input=wanted,
        run_notes=notes,
        partial=checked.partial,
        fast_targets=tuple(checked.fast_targets),
        covers=checked.covers,
    )


def findings_at(result: DocumentResult | None, line: int, character: int) -> list[Finding]:
    if result is None:
        return []
    return [f for f in result.findings if _contains(f.range, line, character)]


def call_site_at(result: DocumentResult | None, line: int, character: int) -> CallSite | None:
    """The innermost call whose range holds the position."""
    if result is None:
        return None
    inside = [c for c in result.call_sites if _contains(c.range, line, character)]
    if not inside:
        return None
    return min(
        inside, key=lambda c: (c.range.end.line - c.range.start.line, c.range.end.character - c.range.start.character)
    )


def _contains(rng: Range, line: int, character: int) -> bool:
    start, end = rng.start, rng.end
    if (line, character) < (start.line, start.character):
        return False
    return (line, character) <= (end.line, end.character)
