"""Baselines: the findings a project has accepted for now, so CI reports only new ones.

A finding is recorded by its file, code, target, operators and a fingerprint of the
call's text as written (whitespace-insensitive), never by its line: an edit above it
does not bring it back, and moving a notebook cell does not either. Identical calls in
one file are counted, so a second copy of an accepted call is still reported.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TypedDict

from . import __version__
from .bounded_read import read_regular_file
from .findings import Finding
from .sourcetext import DecodeError, SourceText, decode_source

FORMAT_VERSION = 1
# atenlint's own failures say the file was not checked: never accepted, always shown.
NEVER_ACCEPTED = {"ATL099"}


class BaselineError(Exception):
    """The baseline file cannot be read or is not one atenlint wrote."""


@dataclass(frozen=True)
class BaselineKey:
    path: str  # absolute
    code: str
    target: str
    ops: tuple[str, ...]
    fingerprint: str


class BaselineEntry(TypedDict):
    """One accepted finding as the baseline file records it (`path` relative to the file)."""

    path: str
    code: str
    target: str | None
    ops: list[str]
    fingerprint: str
    text: str  # the call as written, for a reader of the file (not compared)
    count: int


@dataclass
class Baseline:
    counts: dict[BaselineKey, int] = field(default_factory=dict)  # how many such findings were accepted

    def __len__(self) -> int:
        return sum(self.counts.values())


class SourceLookup:
    """The text a finding covers: notebooks give it with the finding (`data["source_text"]`),
    files are read once each."""

    def __init__(self) -> None:
        self._sources: dict[str, SourceText | None] = {}

    def text_of(self, finding: Finding) -> str:
        given = finding.data.get("source_text")
        if isinstance(given, str):
            return given
        path = os.path.abspath(finding.abs_path or finding.path)
        if path not in self._sources:
            try:
                self._sources[path] = SourceText(decode_source(read_regular_file(path)), path)
            except (OSError, DecodeError, ValueError):
                self._sources[path] = None
        source = self._sources[path]
        if source is None:
            return finding.call or ""
        return range_text(source, finding)


def range_text(source: SourceText, finding: Finding) -> str:
    start, end = finding.range.start, finding.range.end
    lines = []
    for line in range(start.line, end.line + 1):
        text = source.line_text(line)
        first = source.char_from_utf16(line, start.character) if line == start.line else 0
        last = source.char_from_utf16(line, end.character) if line == end.line else len(text)
        lines.append(text[first:last])
    text = "\n".join(lines)
    if not text.strip():
        # An empty range (a module-level result at a line start): the line says what it is.
        text = source.line_text(start.line)
    return text


def text_fingerprint(text: str) -> str:
    """Whitespace-insensitive, so reformatting a call keeps it accepted."""
    return hashlib.sha256("".join(text.split()).encode("utf-8", errors="surrogatepass")).hexdigest()[:20]


def key_of(finding: Finding, lookup: SourceLookup) -> BaselineKey:
    return BaselineKey(
        os.path.abspath(finding.abs_path or finding.path),
        finding.code,
        finding.target or "",
        tuple(sorted(finding.ops)),
        text_fingerprint(lookup.text_of(finding)),
    )


def write_baseline(
    path: str, findings: Iterable[Finding], torch_version: str, lookup: SourceLookup | None = None
) -> int:
    """Record `findings` in `path`; returns how many were recorded."""
    lookup = lookup or SourceLookup()
    base = os.path.dirname(os.path.abspath(path))
    entries: dict[BaselineKey, BaselineEntry] = {}
    for finding in findings:
        if finding.code in NEVER_ACCEPTED:
            continue
        key = key_of(finding, lookup)
        entry = entries.get(key)
        if entry is None:
            entries[key] = {
                "path": _relative(key.path, base),
                "code": key.code,
                "target": key.target or None,
                "ops": list(key.ops),
                "fingerprint": key.fingerprint,
                "text": " ".join(lookup.text_of(finding).split())[:200],
                "count": 1,
            }
        else:
            entry["count"] += 1
    document = {
        "atenlint-baseline": FORMAT_VERSION,
        "atenlint": __version__,
        "torch": torch_version,
        "findings": sorted(entries.values(), key=lambda e: (e["path"], e["code"], e["target"] or "", e["fingerprint"])),
    }
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(document, handle, indent=1, ensure_ascii=False)
        handle.write("\n")
    return sum(e["count"] for e in entries.values())


BASELINE_LIMIT = 64 << 20


def read_baseline(path: str) -> Baseline:
    try:
        # A baseline is a list of keys: 64 MiB holds millions. `--baseline /dev/zero` or a
        # FIFO is refused here instead of being read without end.
        document = json.loads(read_regular_file(path, BASELINE_LIMIT).decode("utf-8"))
    except OSError as error:
        raise BaselineError(f"cannot read the baseline {path}: {error.strerror or error}") from None
    except ValueError as error:
        raise BaselineError(f"the baseline {path} is not valid JSON: {error}") from None
    if (
        not isinstance(document, dict)
        or document.get("atenlint-baseline") != FORMAT_VERSION
        or not isinstance(document.get("findings"), list)
    ):
        raise BaselineError(f"{path} is not an atenlint baseline (write one with --write-baseline)")
    base = os.path.dirname(os.path.abspath(path))
    baseline = Baseline()
    for index, entry in enumerate(document["findings"]):
        try:
            key = BaselineKey(
                os.path.normpath(os.path.join(base, entry["path"])),
                str(entry["code"]),
                entry.get("target") or "",
                tuple(sorted(entry.get("ops") or ())),
                str(entry["fingerprint"]),
            )
            count = int(entry.get("count", 1))
        except (KeyError, TypeError, ValueError, AttributeError):
            raise BaselineError(f"{path}: entry {index} is malformed (needs path, code, fingerprint)") from None
        baseline.counts[key] = baseline.counts.get(key, 0) + max(count, 0)
    return baseline


def new_findings(
    findings: list[Finding], baseline: Baseline, lookup: SourceLookup | None = None
) -> tuple[list[Finding], int]:
    """The findings not accepted by the baseline, and how many were. Of several identical
    findings in a file, the first ones (in report order) are the accepted ones."""
    lookup = lookup or SourceLookup()
    remaining = dict(baseline.counts)
    kept: list[Finding] = []
    accepted = 0
    for finding in findings:
        key = key_of(finding, lookup)
        if finding.code not in NEVER_ACCEPTED and remaining.get(key, 0) > 0:
            remaining[key] -= 1
            accepted += 1
            continue
        kept.append(finding)
    return kept, accepted


def _relative(path: str, base: str) -> str:
    try:
        relative = os.path.relpath(path, base)
    except ValueError:  # another drive on Windows
        return path.replace(os.sep, "/")
    return relative.replace(os.sep, "/")
