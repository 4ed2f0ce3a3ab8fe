"""The session's state: open documents, editor settings, the results of Check Workspace,
and the index of which file's result places findings in which other file. Protocol-free
and never blocking: it is read and changed on the event loop only, and the background
checks (`analysis.py`) see snapshots of it, never the live objects."""

from __future__ import annotations

import asyncio
import hashlib
import os
import threading
from dataclasses import dataclass, field
from typing import Any

from ..discover import read_regular_file
from ..findings import CANNOT_BUILD, Finding
from ..notebook import is_notebook, saved_module_text
from ..sourcetext import DecodeError, decode_source
from .results import AnalysisInput, DocumentResult, analysis_input, served_digest, text_hash
from .settings import EditorSettings

# The server reads files from disk itself (saved texts, dependency hashes) only if they are
# regular files and at most this large; analyses honour the project's max-file-size.
MAX_READ_BYTES = 64 * 1024 * 1024
_TEXT_VERSIONS_KEPT = 16


@dataclass
class Document:
    uri: str
    path: str
    version: int | None
    text: str
    task: asyncio.Task[Any] | None = None
    debounce: asyncio.TimerHandle | None = None
    result: DocumentResult | None = None
    waiters: list[asyncio.Future[DocumentResult | None]] = field(default_factory=list)
    saved_text: str | None = None  # the file's content on disk (None: not on disk)
    pending: bool = False  # a check was asked for and has not started yet
    # The fast targets' result of the running check, shown until its full result arrives
    # (or a newer check's partial or full result replaces it).
    partial: DocumentResult | None = None
    partial_waiters: list[asyncio.Future[DocumentResult | None]] = field(
        default_factory=list
    )  # pulls that take a partial result
    run: object | None = None  # identifies the running check (a partial of an older one is dropped)
    cancel: threading.Event | None = None  # set: the running check is no longer wanted (closed, superseded)
    partial_run: object | None = None  # the check `partial` came from
    # text hash -> the latest version whose buffer held that text (the last few): the
    # version a quick fix computed on a checked text is valid for.
    text_versions: dict[str, int] = field(default_factory=dict)
    # Files notified again with the content already notified while the check ran: that
    # check stands unless one of them was written after it started (it may have read the
    # file half-written).
    renotified: set[str] = field(default_factory=set)
    # When the check of `result` started: (disk generation, wall clock ns).
    checked_at: tuple[int, int] = (-1, 0)

    def __post_init__(self) -> None:
        self.remember_text()

    @property
    def shown(self) -> DocumentResult | None:
        """What the client shows now: the running check's partial result, else the last full one."""
        return self.partial if self.partial is not None else self.result

    @property
    def busy(self) -> bool:
        """A check is asked for or running (its result may be of older content)."""
        return self.pending or (self.task is not None and not self.task.done())

    def remember_text(self) -> None:
        if self.version is None:
            return
        key = text_hash(self.text)
        self.text_versions.pop(key, None)
        self.text_versions[key] = self.version
        while len(self.text_versions) > _TEXT_VERSIONS_KEPT:
            self.text_versions.pop(next(iter(self.text_versions)))

    def read_since(self, paths: set[str] | tuple[str, ...], changed_at: dict[str, int]) -> bool:
        """Whether its last check started after the last change notified of each of `paths`
        and none was written after it started: its result is of their current content."""
        generation, started_ns = self.checked_at
        return self.result is not None and all(
            changed_at.get(p, -1) <= generation and not modified_since(p, started_ns) for p in paths
        )

    def version_of(self, text: str | None) -> int | None:
        return self.text_versions.get(text_hash(text)) if text is not None else None


@dataclass(frozen=True)
class WorkspaceScan:
    """What Check Workspace read of the session when it started (on the event loop)."""

    folders: list[str]
    why: str | None
    open_inputs: dict[str, AnalysisInput]  # path -> AnalysisInput of each open document
    open_texts: dict[str, str]  # path -> the text its check reads
    unsaved: dict[str, str]  # path -> unsaved buffer
    settings: EditorSettings
    generation: int  # the disk generation when it started


def is_source_file(path: str | None) -> bool:
    """A file whose content on disk is the document's text (not a notebook's JSON)."""
    return path is not None and path.endswith((".py", ".pyi"))


def read_saved_text(path: str | None) -> str | None:
    if not path:
        return None
    if is_notebook(path):  # a notebook's document text is the module of its code cells
        return saved_module_text(path)
    try:
        return decode_source(read_regular_file(path, MAX_READ_BYTES))
    except (OSError, DecodeError, SyntaxError, ValueError):
        return None  # a FIFO, a device, too large, undecodable: never read without limit


def content_hash(path: str, overlays: dict[str, str]) -> str | None:
    """The content a check of a dependency saw: its overlay, else the file (hashed, not
    stat'ed: two saves within a timestamp tick must still differ)."""
    if path in overlays:
        return text_hash(overlays[path])
    try:
        return hashlib.sha1(read_regular_file(path, MAX_READ_BYTES)).hexdigest()
    except OSError:
        return None


def modified_since(path: str, since_ns: int) -> bool:
    """Whether the file was modified at or after `since_ns` (wall clock); a file that cannot
    be stat'ed counts as modified."""
    try:
        return os.stat(path).st_mtime_ns >= since_ns
    except OSError:
        return True


def depends_on(document: Document, changed: set[str]) -> bool:
    """Whether a change to any of `changed` may change the document's result."""
    result = document.result
    if result is None or document.busy:
        return True  # not known yet (or being computed from what may be the old content)
    return result.reads_unknown_files or any(p in changed for p in result.dependencies)


@dataclass(frozen=True)
class Served:
    """What a file's diagnostics are now: its findings, the text their positions refer to,
    the document version quick fixes are stamped with, and the id of exactly that."""

    path: str
    findings: list[Finding]
    text: str | None
    version: int | None
    result_id: str


class SessionState:
    """Documents by URI, settings, workspace results, and what was last seen on disk."""

    def __init__(self, settings: EditorSettings, folders: list[str]) -> None:
        self.settings = settings
        self.folders = list(folders)
        self.documents: dict[str, Document] = {}
        self.workspace_results: dict[str, DocumentResult] = {}  # path -> result of a workspace check
        self.disk_generation = 0  # bumped by every change on disk we are told of
        # Per path, the disk generation of its last change (a workspace scan that read it
        # before then must not store its result).
        self.changed_at: dict[str, int] = {}
        # Per path, the content hash of the last change we were told of: a second
        # notification of the same content (VS Code's watcher ~0.4 s after didSave) is not
        # a change.
        self.notified: dict[str, str] = {}

    # -- documents --------------------------------------------------------
    def document_at(self, path: str) -> Document | None:
        return next((d for d in self.documents.values() if d.path == path), None)

    def input_for(self, document: Document) -> AnalysisInput:
        others = {d.path: d.text for d in self.documents.values() if d is not document and d.text != d.saved_text}
        return analysis_input(document.text, document.saved_text, others, self.settings)

    def importers_of(self, paths: list[str]) -> list[Document]:
        """Open documents whose result may change when any of `paths` changes."""
        changed = {os.path.abspath(p) for p in paths}
        return [d for d in self.documents.values() if d.path not in changed and depends_on(d, changed)]

    # -- disk -------------------------------------------------------------
    def disk_changed(self, paths: list[str], hashes: dict[str, str | None]) -> list[str]:
        """Record that `paths` changed on disk; returns those that really did: a path whose
        content hash equals the last one notified is left out (nothing changed since)."""
        changed = []
        for path in paths:
            digest = hashes.get(path)
            if digest is not None and self.notified.get(path) == digest:
                continue
            if digest is None:
                self.notified.pop(path, None)
            else:
                self.notified[path] = digest
            changed.append(path)
        if changed:
            self.disk_generation += 1  # an analysis running now may have read the old content
        for path in changed:
            self.changed_at[path] = self.disk_generation
            # A Check Workspace result of an unopened file is only valid for the content it saw.
            self.workspace_results.pop(path, None)
        return changed

    # -- what is served ---------------------------------------------------
    def findings_for(self, path: str) -> list[Finding]:
        """A file's own findings plus those other files' results place in it."""
        own_document = self.document_at(path)
        own = (
            list(own_document.shown.findings)
            if own_document and own_document.shown
            else list(self.workspace_results[path].findings)
            if path in self.workspace_results
            else []
        )
        # As in the CLI's report of both files (`pipeline.merge_results`): a class another
        # shown result analysed inside its own classes needs no "cannot be built alone" note.
        covered = self._covered_elsewhere(path)
        own = [f for f in own if not (f.code == CANNOT_BUILD and f.module in covered)]
        seen = {f.identity() for f in own}
        for placed in self._placed_in(path):
            if placed.identity() not in seen:
                seen.add(placed.identity())
                own.append(placed)
        return own

    def _covered_elsewhere(self, path: str) -> frozenset[str]:
        """The classes other files' shown results analysed inside their own classes."""
        shown = [d.shown for d in self.documents.values() if d.path != path and d.shown is not None]
        shown += [r for p, r in self.workspace_results.items() if p != path]
        return frozenset().union(*(r.covers for r in shown if r is not None))

    def noting_unbuilt(self, classes: frozenset[str]) -> set[str]:
        """The files whose own shown results say one of `classes` cannot be built alone: what
        they show changes when another result starts or stops analysing those classes."""
        if not classes:
            return set()
        results = [d.shown for d in self.documents.values() if d.shown is not None]
        results += list(self.workspace_results.values())
        return {r.path for r in results if any(f.code == CANNOT_BUILD and f.module in classes for f in r.findings)}

    def _placed_in(self, path: str) -> list[Finding]:
        """What open documents' shown results place in `path`."""
        out: list[Finding] = []
        for document in self.documents.values():
            shown = document.shown
            if document.path != path and shown is not None:
                out.extend(shown.foreign.get(path, ()))
        return out

    def placed_by(self, path: str) -> set[str]:
        """The files the shown result of `path` places findings in."""
        document = self.document_at(path)
        shown = document.shown if document is not None else self.workspace_results.get(path)
        return set(shown.foreign) if shown is not None else set()

    def outside_paths(self) -> set[str]:
        """Files that are not open and have findings to show: Check Workspace's results and
        what open files' results place in them."""
        paths = set(self.workspace_results)
        for document in self.documents.values():
            if document.shown is not None:
                paths |= set(document.shown.foreign)
        return {p for p in paths if self.document_at(p) is None}

    def served(self, path: str) -> Served:
        findings = self.findings_for(path)
        document = self.document_at(path)
        text = self.source_text_for(path) if document is not None else None
        version = document.version_of(text) if document is not None else None
        return Served(path, findings, text, version, served_digest(findings, text, version))

    def source_text_for(self, path: str) -> str | None:
        """The text the shown results of `path` were computed on (positions refer to it)."""
        document = self.document_at(path)
        if document is not None:
            shown = document.shown
            return shown.text if shown is not None and shown.text is not None else document.text
        return read_saved_text(path)

    # -- Check Workspace --------------------------------------------------
    def workspace_folders(self) -> tuple[list[str], str | None]:
        """The folders Check Workspace walks, and why they are these when the client sent none."""
        if self.folders:
            return list(self.folders), None
        around = sorted({os.path.dirname(d.path) for d in self.documents.values()})
        why = (
            "The editor sent no workspace folder (it found no project root such as pyproject.toml "
            "or .git above your file)."
        )
        if around:
            return around, why + f" Checked the folders of the open files instead: {', '.join(around)}."
        return [], why + " Open a file of the project, or open its folder, and check again."

    def workspace_snapshot(self) -> WorkspaceScan:
        """What a workspace scan reads of the session (on the event loop)."""
        folders, why = self.workspace_folders()
        documents = list(self.documents.values())
        open_inputs = {d.path: self.input_for(d) for d in documents}
        return WorkspaceScan(
            folders,
            why,
            open_inputs,
            {p: i.text for p, i in open_inputs.items()},
            {d.path: d.text for d in documents if d.text != d.saved_text},
            self.settings,
            self.disk_generation,
        )

    def store_workspace_results(self, results: dict[str, DocumentResult], generation: int) -> dict[str, DocumentResult]:
        """Keep a scan's results (on the event loop), except for files changed on disk since
        the scan started: their result may be of the old content."""
        fresh = {path: result for path, result in results.items() if self.changed_at.get(path, -1) <= generation}
        self.workspace_results.update(fresh)
        return fresh
