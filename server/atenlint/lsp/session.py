"""What the language server knows and schedules: open documents, their analyses, the
results cache and the dependency graph between workspace files.

Protocol-free: the handlers in `server.py` translate LSP messages into calls here, and
this module reports back through `Callbacks`. Analyses run the same engine as the CLI,
in a thread pool (the engine blocks on a worker process), so the event loop never waits.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import dataclasses
import functools
import hashlib
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..config import SettingsResolver
from ..discover import iter_python_files, read_regular_file
from ..engine import CallSite, Engine, FileCapture, SourceCache
from ..findings import RUN_LEVEL_CODES, Finding  # run-level: said once, in the status item
from ..notebook import is_notebook, saved_module_text
from ..sourcetext import DecodeError, Range, decode_source
from ..uris import path_uri
from ..worker.pool import WorkerFailure, WorkerPool, WorkerSettings
from .settings import EditorSettings

_CACHE_PER_FILE = 8
# A dependency modified this close to (or after) a check's start may have changed while the
# check read it: its result is not cached. The slack covers file systems whose timestamps
# tick coarsely (HFS+ in whole seconds; ext4 and APFS record nanoseconds).
_MODIFIED_DURING_CHECK_SLACK_NS = 1_000_000_000
# What one check found: (findings, call sites, imported files, the fast targets judged).
Analysed = tuple[list[Finding], list[CallSite], list[str], list[str]]


class Callbacks(Protocol):
    def publish(self, uri: str, version: int | None, findings: list[Finding]) -> None: ...
    def refresh(self) -> None: ...
    def status(self, status: dict[str, Any]) -> None: ...
    def log(self, message: str, level: str = "info") -> None: ...
    def show(self, message: str, level: str = "info") -> None: ...


@dataclass
class DocumentResult:
    path: str
    version: int | None
    findings: list[Finding]  # findings located in this file
    call_sites: list[CallSite]
    dependencies: list[str]  # the user's files the analysis imported
    key: tuple[Any, ...]
    seconds: float
    result_id: str = ""
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

    @property
    def text(self) -> str | None:
        return self.input.text if self.input is not None else None

    @property
    def import_failed(self) -> bool:
        """A failed import reached files we cannot name (a module that does not exist yet,
        the file with the syntax error): such a result is re-checked on any change and never
        reused from the cache."""
        return any(f.code in _UNSTABLE_CODES for f in self.findings) or any(
            f.code in _UNSTABLE_CODES for found in self.foreign.values() for f in found
        )

    @property
    def reads_unknown_files(self) -> bool:
        """Its dependencies are not known: a failed import, or the static pass (which reads
        the files an import names, to find classes and helpers, without listing them)."""
        return self.import_failed or (self.input is not None and not self.input.execute)

    def __post_init__(self) -> None:
        # Everything a client shows or acts on: a settings change that only alters severity
        # must change the id, or a pulling client keeps showing the old one.
        shown = [(f.as_json(), f.related) for f in self.findings] + sorted(
            (path, [f.as_json() for f in found]) for path, found in self.foreign.items()
        )
        digest = hashlib.sha1(repr(shown).encode("utf-8")).hexdigest()[:16]
        self.result_id = self.result_id or digest


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
    partial_run: object | None = None  # the check `partial` came from

    @property
    def shown(self) -> DocumentResult | None:
        """What the client shows now: the running check's partial result, else the last full one."""
        return self.partial if self.partial is not None else self.result


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


@dataclass(frozen=True)
class _WorkspaceScan:
    """What Check Workspace read of the session when it started (on the event loop)."""

    folders: list[str]
    why: str | None
    open_inputs: dict[str, AnalysisInput]  # path -> AnalysisInput of each open document
    open_texts: dict[str, str]  # path -> the text its check reads
    unsaved: dict[str, str]  # path -> unsaved buffer
    settings: EditorSettings
    generation: int  # the disk generation when it started


@dataclass(frozen=True)
class CacheEntry:
    key: tuple[Any, ...]  # the input's text, mode and settings
    dependency_hashes: tuple[
        tuple[str, str | None], ...
    ]  # ((path, content hash), ...) of every workspace file the import reached
    result: DocumentResult


# A result with one of these is never reused: the import failed somewhere we cannot name,
# or a worker timed out or crashed (which may not happen again).
_UNSTABLE_CODES = ("ATL002", "ATL005", "ATL006", "ATL099")


# The server reads files from disk itself (saved texts, dependency hashes) only if they are
# regular files and at most this large; analyses honour the project's max-file-size.
MAX_READ_BYTES = 64 * 1024 * 1024


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
    if result is None or document.pending or (document.task is not None and not document.task.done()):
        return True  # not known yet (or being computed from what may be the old content)
    return result.reads_unknown_files or any(p in changed for p in result.dependencies)


def split_run_notes(findings: list[Finding]) -> tuple[list[Finding], tuple[str, ...]]:
    """(file findings, run-level notes): the COREML000-like ones leave the file."""
    notes = tuple(dict.fromkeys(f.message for f in findings if f.code in RUN_LEVEL_CODES))
    return [f for f in findings if f.code not in RUN_LEVEL_CODES], notes


# Findings about the slow (export) views that only a full result has: a front end's failure.
_SLOW_VIEW_CODES = ("ATL020",)


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
    return dataclasses.replace(
        partial, findings=findings, foreign={p: f for p, f in foreign.items() if f}, result_id=""
    )


class Session:
    def __init__(
        self,
        callbacks: Callbacks,
        settings: EditorSettings | None = None,
        folders: list[str] | None = None,
        pull: bool = False,
    ):
        self.callbacks = callbacks
        self.settings = settings or EditorSettings()
        self.folders = list(folders or [])
        self.pull = pull  # the client pulls diagnostics (textDocument/diagnostic); else we push
        self.documents: dict[str, Document] = {}
        self.workspace_results: dict[str, DocumentResult] = {}  # path -> result of a workspace check
        self._cache: dict[str, collections.deque[CacheEntry]] = {}
        self._executor: ThreadPoolExecutor | None = None
        self.pool: WorkerPool | None = None
        self.engine: Engine | None = None
        self._ready: asyncio.Future[bool] | None = None
        self._busy = 0
        self.last_error: str | None = None
        self._told_restricted = False
        self._state = "starting"
        self._announced = False
        self._told_problems: set[str] = set()
        self.timings: list[tuple[str, float]] = []  # (path, seconds) of recent analyses, for logs and benchmarks
        self.analyses = 0  # checks that ran (not answered from the cache)
        self.run_notes: list[str] = []
        self._disk_generation = 0  # bumped by every change on disk we are told of
        self.workspace_note: str | None = None  # why Check Workspace saw what it saw
        self._loop: asyncio.AbstractEventLoop | None = None
        self._workspace_checks = 0
        # Checks running per engine, and pools replaced while they ran (closed by their last check).
        self._engine_lock = threading.Lock()
        self._engine_users: dict[int, int] = {}
        self._retired: list[tuple[WorkerPool, Engine]] = []
        self._engine_generation = 0  # bumped by every new pool and engine
        # Per path, the disk generation of its last change (a workspace scan that read it
        # before then must not store its result).
        self._changed_at: dict[str, int] = {}

    # -- lifecycle -------------------------------------------------------
    def start(self) -> None:
        """Start workers in the background; requests wait for them, the client does not."""
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._executor = ThreadPoolExecutor(
            max_workers=max(2, self.settings.workers + 1), thread_name_prefix="atenlint"
        )
        self.pool = WorkerPool(
            self.settings.workers,
            WorkerSettings(python=self._interpreter(), memory_limit_mb=self.settings.memory_limit_mb),
            log=lambda message: self.callbacks.log(message),
        )
        self.engine = Engine(self.pool, self._resolver(), log=lambda message: self.callbacks.log(message))
        self._ready = loop.create_future()
        self._state = "starting"
        self._report_problems()
        loop.run_in_executor(self._executor, self._warm).add_done_callback(
            lambda future: loop.call_soon_threadsafe(self._warmed, future)
        )

    def _warm(self) -> dict[str, Any]:
        started = time.perf_counter()
        engine = self.engine
        if engine is None:
            raise RuntimeError("no engine to start")
        hello = engine.start()
        self.callbacks.log(
            f"workers ready in {time.perf_counter() - started:.1f}s: python {hello.get('python')} "
            f"({hello.get('executable')}), torch {hello.get('torch_full')}"
        )
        return hello

    def announce(self) -> None:
        """Tell the client where we are (custom notifications wait for `initialized`)."""
        self._announced = True
        self._status(self._state)

    def _warmed(self, future: asyncio.Future[dict[str, Any]]) -> None:
        error = future.exception()
        if error is not None:
            self.last_error = f"cannot start the analysis worker with {self.settings.python}: {error}"
            self.callbacks.show(
                f"atenlint: {self.last_error}. Set `atenlint.python` (or the interpreter) to a "
                f"Python with torch installed (`python -m pip install torch`).",
                "error",
            )
            self._status("error")
        else:
            self._status("idle")
            self._note_run_level(self.engine.torch_degradations if self.engine else ())
        if self._ready is not None and not self._ready.done():
            self._ready.set_result(error is None)

    def use_engine(self, engine: Engine) -> None:
        """Run on an engine that is already warm (tests, benchmarks): no workers of our own."""
        self._loop = asyncio.get_running_loop()
        self._executor = self._executor or ThreadPoolExecutor(max_workers=2, thread_name_prefix="atenlint")
        self.engine = engine
        self._ready = None
        self._state = "idle"
        self._note_run_level(engine.torch_degradations)

    def shutdown(self) -> None:
        with self._engine_lock:
            retired, self._retired = [pool for pool, _ in self._retired], []
        for pool in [*retired, self.pool]:
            if pool is not None:
                pool.close()
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)

    def _resolver(self) -> SettingsResolver:
        # Configuration never comes from above the workspace folders (issue 12).
        return SettingsResolver(overrides=self.settings.overrides(), workspace_roots=list(self.folders))

    def _interpreter(self, settings: EditorSettings | None = None) -> str:
        """The interpreter the workers run. An untrusted session never executes one that
        lives in the workspace (a checked-in `.venv/bin/python` can be anything): it uses
        the server's own interpreter instead, and says so once."""
        settings = settings or self.settings
        python = settings.python
        if settings.trusted or not self.folders:
            return python
        candidates = {os.path.abspath(python)}
        found = shutil.which(python) if os.sep not in python else None
        if found:
            candidates.add(os.path.abspath(found))
        candidates |= {os.path.realpath(c) for c in candidates}
        folders = [os.path.realpath(f) for f in self.folders] + [os.path.abspath(f) for f in self.folders]
        inside = any(c == f or c.startswith(f.rstrip(os.sep) + os.sep) for c in candidates for f in folders)
        if not inside:
            return python
        message = (
            f"atenlint: this workspace is not trusted, so its interpreter {python} is not run; "
            f"the analysis uses {sys.executable} instead. Trust the workspace to use it."
        )
        if message not in self._told_problems:
            self._told_problems.add(message)
            self.callbacks.show(message, "warning")
        return sys.executable

    def configure(self, settings: EditorSettings) -> bool:
        """Apply new editor settings; True when open documents need a re-check."""
        old, self.settings = self.settings, settings
        self._report_problems()
        if self.engine is not None:
            self.engine.resolver = self._resolver()
        self._cache.clear()
        if self._interpreter(old) != self._interpreter(settings) or old.workers != settings.workers:
            self.callbacks.log(f"interpreter or workers changed: restarting workers with {settings.python}")
            self._restart_workers()
        return True

    def _restart_workers(self) -> None:
        """A new pool and engine for new interpreter settings. The old pool closes now when
        no check uses it, else when its last check ends (that check's result is superseded
        by the re-check `configure` asks for): a check is never cut off into a false ATL006."""
        old_pool, old_engine = self.pool, self.engine
        with self._engine_lock:
            busy = old_engine is not None and self._engine_users.get(id(old_engine), 0) > 0
            if busy and old_pool is not None and old_engine is not None:
                self._retired.append((old_pool, old_engine))
        if old_pool is not None and not busy:
            old_pool.close()
        self._engine_generation += 1
        self.pool = WorkerPool(
            self.settings.workers,
            WorkerSettings(python=self._interpreter(), memory_limit_mb=self.settings.memory_limit_mb),
            log=lambda message: self.callbacks.log(message),
        )
        self.engine = Engine(self.pool, self._resolver(), log=lambda message: self.callbacks.log(message))
        loop = asyncio.get_running_loop()
        self._ready = loop.create_future()
        loop.run_in_executor(self._executor, self._warm).add_done_callback(
            lambda future: loop.call_soon_threadsafe(self._warmed, future)
        )

    def project_settings_changed(self) -> None:
        """A pyproject.toml changed: forget resolved settings and cached results."""
        if self.engine is not None:
            self.engine.resolver = self._resolver()
        self._cache.clear()

    def _report_problems(self) -> None:
        for problem in self.settings.problems:
            if problem not in self._told_problems:
                self._told_problems.add(problem)
                self.callbacks.show(f"atenlint: ignoring an invalid setting: {problem}", "warning")

    # -- documents -------------------------------------------------------
    def open(self, uri: str, path: str, version: int | None, text: str, saved_text: str | None = None) -> None:
        """`saved_text`: what is saved of this document when its file is not Python source
        (a notebook's module); a .py file's is read from disk."""
        if saved_text is None:
            saved_text = read_saved_text(path) if is_source_file(path) else text
        self.documents[uri] = Document(uri, path, version, text, saved_text=saved_text)
        self.schedule(uri)
        if self.settings.execute_unsaved:
            self._recheck_importers_of([path])  # its buffer is now an overlay of theirs

    def change(self, uri: str, version: int | None, text: str) -> None:
        """An unsaved edit. With `onSave` nothing runs; with `onType` the buffer is checked
        after a pause (statically unless the user opted in to running unsaved code)."""
        document = self.documents.get(uri)
        if document is None:
            return
        document.version, document.text = version, text
        if self.settings.trigger == "onType":
            self._debounce(document)

    def save(self, uri: str, text: str | None = None) -> None:
        document = self.documents.get(uri)
        if document is None:
            return
        if text is not None:
            document.text = text
        document.saved_text = document.text  # didSave: the editor just wrote this buffer
        self.files_changed([document.path], reread=False)

    def close(self, uri: str) -> None:
        document = self.documents.pop(uri, None)
        if document is None:
            return
        if document.debounce is not None:
            document.debounce.cancel()
        for waiter in document.waiters + document.partial_waiters:
            if not waiter.done():
                waiter.set_result(None)
        document.waiters, document.partial_waiters = [], []
        if not self.pull:
            # Nothing stale stays behind: only what other open files' checks located in it.
            self.callbacks.publish(uri, None, self.findings_for(document.path))
            shown = [r for r in (document.partial, document.result) if r is not None]
            for path in {p for r in shown for p in r.foreign}:
                other = self._document_at(path)  # open or not: what it showed from this file goes
                self.callbacks.publish(
                    other.uri if other else path_uri(path), other.version if other else None, self.findings_for(path)
                )
        else:
            self.callbacks.refresh()
        if self.settings.execute_unsaved and document.text != document.saved_text:
            self._recheck_importers_of([document.path])  # they see the file on disk again

    def files_changed(self, paths: list[str], reread: bool = True) -> None:
        """Files of the workspace changed on disk (saved, created, deleted): re-check the open
        ones among them and every open file whose last analysis depends on one of them."""
        paths = [os.path.abspath(p) for p in paths]
        self._disk_generation += 1  # an analysis running now may have read the old content
        for path in paths:
            self._changed_at[path] = self._disk_generation
            self._forget_workspace_result(path)
            document = self._document_at(path)
            if document is not None:
                if reread and is_source_file(path):
                    document.saved_text = read_saved_text(path)
                self.schedule(document.uri)
        self._recheck_importers_of(paths)

    def recheck_dependents(self, path: str) -> None:
        """A file changed on disk (kept for callers that name one file)."""
        self.files_changed([path])

    def _recheck_importers_of(self, paths: list[str]) -> None:
        changed = {os.path.abspath(p) for p in paths}
        for other in list(self.documents.values()):
            if other.path in changed:
                continue
            if depends_on(other, changed):
                self.schedule(other.uri)

    def _forget_workspace_result(self, path: str) -> None:
        # A Check Workspace result of an unopened file is only valid for the content it saw.
        self.workspace_results.pop(path, None)

    def recheck_all(self) -> None:
        for uri in list(self.documents):
            self.schedule(uri)

    def _debounce(self, document: Document) -> None:
        if document.debounce is not None:
            document.debounce.cancel()
        loop = asyncio.get_running_loop()
        document.debounce = loop.call_later(self.settings.on_type_delay_ms / 1000, self._typed, document.uri)

    def _typed(self, uri: str) -> None:
        document = self.documents.get(uri)
        if document is None:
            return
        document.debounce = None
        self.schedule(uri)
        if self.settings.execute_unsaved:
            self._recheck_importers_of([document.path])  # they import this buffer's text

    def schedule(self, uri: str) -> None:
        """Check the document again. A request while a check runs is never dropped: the
        running check finishes, its result is discarded, and the current state goes next."""
        document = self.documents.get(uri)
        if document is None:
            return
        document.pending = True
        if document.task is None or document.task.done():
            document.task = asyncio.get_running_loop().create_task(self._run(document))

    def input_for(self, document: Document) -> AnalysisInput:
        others = {d.path: d.text for d in self.documents.values() if d is not document and d.text != d.saved_text}
        return analysis_input(document.text, document.saved_text, others, self.settings)

    async def _run(self, document: Document) -> None:
        try:
            while document.pending:
                document.pending = False
                version = document.version
                run = document.run = object()
                result = await self._analyse(
                    document.path,
                    self.input_for(document),
                    version,
                    functools.partial(self._deliver_partial, document, run),
                )
                if self.documents.get(document.uri) is not document:
                    return  # closed meanwhile
                if document.pending:
                    continue  # superseded while it ran (an edit, a save, a file it imports)
                previous, document.result = document.shown, result
                document.partial = None  # the full result replaces the fast targets' one
                self._deliver(document, previous)
        except Exception as error:  # noqa: BLE001 - waiters must not hang on a bug of ours
            self.last_error = f"{type(error).__name__}: {error}"
            self.callbacks.log(f"checking {document.path} failed: {self.last_error}", "error")
            document.partial = None
            for waiter in document.waiters + document.partial_waiters:
                if not waiter.done():
                    waiter.set_result(document.result)
            document.waiters, document.partial_waiters = [], []
        finally:
            document.run = None

    def _deliver_partial(self, document: Document, run: object, early: DocumentResult) -> None:
        """Show the fast targets' verdicts of the running check (on the event loop). Only for
        the check still running and not superseded: a stale partial is never shown."""
        if self.documents.get(document.uri) is not document or document.run is not run or document.pending:
            return
        previous = document.shown
        document.partial = with_kept_slow_findings(early, document.result)
        document.partial_run = run
        waiters, document.partial_waiters = document.partial_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(document.partial)
        if self.pull:
            self.callbacks.refresh()
            if not is_notebook(document.path):
                return
        self.callbacks.publish(document.uri, document.partial.version, self.findings_for(document.path))
        if self.pull:
            return
        touched = set(document.partial.foreign) | set(previous.foreign if previous else ())
        for path in touched:
            other = self._document_at(path)
            self.callbacks.publish(
                other.uri if other else path_uri(path), other.version if other else None, self.findings_for(path)
            )

    def _deliver(self, document: Document, previous: DocumentResult | None = None) -> None:
        result = document.result
        waiters, document.waiters = document.waiters + document.partial_waiters, []
        document.partial_waiters = []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(result)
        if result is None:
            return
        self._note_run_level(result.run_notes)
        if self.pull:
            self.callbacks.refresh()
            if is_notebook(document.path):  # clients pull no notebook cells (not tabs): push to each cell
                self.callbacks.publish(document.uri, result.version, self.findings_for(document.path))
            return
        self.callbacks.publish(document.uri, result.version, self.findings_for(document.path))
        touched = set(result.foreign) | set(previous.foreign if previous else ())
        for path in touched:
            other = self._document_at(path)
            self.callbacks.publish(
                other.uri if other else path_uri(path), other.version if other else None, self.findings_for(path)
            )

    def _note_run_level(self, notes: Iterable[str]) -> None:
        """Run-level notes (a converter that is not installed, a capability this torch lacks)
        are told once, and stay in the status item, instead of sitting on every class of
        every file."""
        fresh = [n for n in notes if n not in self.run_notes]
        if not fresh:
            return
        self.run_notes.extend(fresh)
        for note in fresh:
            self.callbacks.show(f"atenlint: {note}", "warning")
        self._status(self._state)

    def findings_for(self, path: str) -> list[Finding]:
        """A file's own findings plus those other open files' analyses located in it."""
        own_document = self._document_at(path)
        own = (
            list(own_document.shown.findings)
            if own_document and own_document.shown
            else list(self.workspace_results[path].findings)
            if path in self.workspace_results
            else []
        )
        seen = {f.identity() for f in own}
        for document in self.documents.values():
            shown = document.shown
            if document.path == path or shown is None:
                continue
            for finding in shown.foreign.get(path, ()):
                if finding.identity() not in seen:
                    seen.add(finding.identity())
                    own.append(finding)
        return own

    def source_text_for(self, path: str) -> str | None:
        """The text the shown results of `path` were computed on (positions refer to it)."""
        document = self._document_at(path)
        if document is not None:
            shown = document.shown
            return shown.text if shown is not None and shown.text is not None else document.text
        return read_saved_text(path)

    def _document_at(self, path: str) -> Document | None:
        return next((d for d in self.documents.values() if d.path == path), None)

    def is_current(self, document: Document) -> bool:
        """Whether the document's result answers a pull now. With `onSave` the last check
        stands until the next save (a pull never analyses unsaved text); with `onType` it
        must be of the current input."""
        if document.result is None or document.pending or (document.task is not None and not document.task.done()):
            return False
        if self.settings.trigger == "onSave":
            return True
        return document.result.input == self.input_for(document)

    async def result_for(self, uri: str, partial: bool = False) -> DocumentResult | None:
        """The current result for a document (pull diagnostics, hover, report): waits for
        a running or needed check; never starts one that the trigger does not call for.
        `partial`: the running check's fast-target result will do (pull diagnostics: the
        full one follows with a refresh); without it, only a full result answers."""
        document = self.documents.get(uri)
        if document is None:
            return None
        if self.is_current(document):
            return document.result
        if (
            partial
            and document.partial is not None
            and document.partial_run is document.run is not None
            and not document.pending
        ):
            return document.partial
        running = document.pending or (document.task is not None and not document.task.done())
        if not running and document.debounce is None:
            self.schedule(uri)
        waiter: asyncio.Future[DocumentResult | None] = asyncio.get_running_loop().create_future()
        (document.partial_waiters if partial else document.waiters).append(waiter)
        return await waiter

    def last_result(self, uri: str) -> DocumentResult | None:
        """What the client shows for the document (hover): positions refer to its text."""
        document = self.documents.get(uri)
        return document.shown if document is not None else None

    # -- analysis --------------------------------------------------------
    def _input_key(self, path: str, wanted: AnalysisInput) -> tuple[Any, ...]:
        engine = self.engine
        try:
            fingerprint = engine.resolver.for_file(path).fingerprint() if engine else ""
        except Exception:  # noqa: BLE001 - an invalid config is reported by the analysis itself
            fingerprint = "invalid"
        overlays = tuple((p, text_hash(t)) for p, t in wanted.overlays)
        # Per engine: a result of another interpreter's workers is never reused.
        workers = (engine.torch_version if engine else None, self._engine_generation)
        return (text_hash(wanted.text), wanted.execute, overlays, workers, fingerprint, self.settings.trusted)

    def _cached(self, path: str, key: tuple[Any, ...], wanted: AnalysisInput) -> DocumentResult | None:
        overlays = dict(wanted.overlays)
        for entry in reversed(self._cache.get(path, ())):
            if entry.key == key and all(content_hash(p, overlays) == h for p, h in entry.dependency_hashes):
                return entry.result
        return None

    def _store(
        self, path: str, key: tuple[Any, ...], wanted: AnalysisInput, result: DocumentResult, started_ns: int
    ) -> None:
        """Cache a result with the hashes of the dependencies it read. The hashes are taken
        now, after the check: a file changed on disk while the check ran, with no
        notification yet (a watcher's latency, another tool), would be hashed in its new
        content beside a result of the old one. Such a result is not cached at all."""
        overlays = dict(wanted.overlays)
        dependencies = sorted(set(result.dependencies))
        if any(
            modified_since(p, started_ns - _MODIFIED_DURING_CHECK_SLACK_NS) for p in dependencies if p not in overlays
        ):
            return
        hashes = tuple((p, content_hash(p, overlays)) for p in dependencies)
        entries = self._cache.setdefault(path, collections.deque(maxlen=_CACHE_PER_FILE))
        entries.append(CacheEntry(key, hashes, result))

    async def _analyse(
        self,
        path: str,
        wanted: AnalysisInput,
        version: int | None,
        on_partial: Callable[[DocumentResult], None] | None = None,
    ) -> DocumentResult:
        """One check. `on_partial` is called on the event loop with the fast targets' result
        when the file's targets include slower export ones (never for a cached result)."""
        if self._ready is not None:
            await asyncio.shield(self._ready)
        key = self._input_key(path, wanted)
        cached = self._cached(path, key, wanted)
        if cached is not None:
            return dataclasses.replace(cached, version=version, seconds=0.0)
        generation = self._disk_generation
        started_ns = time.time_ns()
        self._busy += 1
        self._status("busy")
        started = time.perf_counter()
        failed = False
        loop = asyncio.get_running_loop()
        early: Callable[[Analysed], None] | None = None
        if on_partial is not None:

            def early(analysed: Analysed) -> None:  # on the analysing thread
                findings, call_sites, imported, fast = analysed
                partial = dataclasses.replace(
                    _result(path, version, findings, call_sites, imported, key, time.perf_counter() - started, wanted),
                    partial=True,
                    fast_targets=tuple(fast),
                )
                if not loop.is_closed():
                    loop.call_soon_threadsafe(on_partial, partial)

        try:
            findings, call_sites, imported = await loop.run_in_executor(
                self._executor, self._analyse_blocking, path, wanted.text, dict(wanted.overlays), wanted.execute, early
            )
        except Exception as error:  # noqa: BLE001 - a bug of ours must not take the editor down
            self.last_error = f"{type(error).__name__}: {error}"
            self.callbacks.log(f"analysis of {path} failed: {self.last_error}", "error")
            # Never an empty, clean-looking result: say that the check itself failed.
            findings, call_sites, imported, failed = [_internal_error(path, self.last_error)], [], [], True
        finally:
            self._busy -= 1
            self._status("busy" if self._busy else "idle")
        seconds = time.perf_counter() - started
        self.timings.append((path, seconds))
        del self.timings[:-100]
        self.analyses += 1
        self.callbacks.log(
            f"analysed {os.path.basename(path)} in {seconds * 1000:.0f} ms"
            f"{'' if wanted.execute else ' (static: nothing imported)'}"
        )
        result = _result(path, version, findings, call_sites, imported, key, seconds, wanted)
        # Only a result whose inputs cannot have changed under it is reused: none from a check
        # that overlapped a change on disk, failed, or reports a failure that may be transient.
        if not failed and generation == self._disk_generation and not result.reads_unknown_files:
            self._store(path, key, wanted, result, started_ns)
        return result

    def _analyse_blocking(
        self,
        path: str,
        text: str,
        overlays: dict[str, str],
        execute: bool = True,
        on_partial: Callable[[Analysed], None] | None = None,
        engine: Engine | None = None,
    ) -> tuple[list[Finding], list[CallSite], list[str]]:
        """Capture and judge one file (on a thread). The engine is held for the whole
        check: a pool replaced meanwhile (another interpreter) closes only after it."""
        with self._holding(engine) as held:
            return self._analyse_on(held, path, text, overlays, execute, on_partial)

    def _analyse_on(
        self,
        engine: Engine,
        path: str,
        text: str,
        overlays: dict[str, str],
        execute: bool,
        on_partial: Callable[[Analysed], None] | None,
    ) -> tuple[list[Finding], list[CallSite], list[str]]:
        def judged(capture: FileCapture) -> tuple[list[Finding], list[CallSite]]:
            sources = SourceCache(dict(overlays, **{path: text}))
            findings = engine.findings([capture], sources)
            return findings, [c for c in engine.call_sites([capture], sources) if c.path == path]

        def early(capture: FileCapture) -> None:
            if on_partial is not None:
                findings, call_sites = judged(capture)
                fast = [t.name for t in engine.fast_targets(capture.settings)]
                on_partial((findings, call_sites, list(capture.imported), fast))

        if self.settings.trusted and execute:
            if on_partial is not None:
                capture = engine.capture(path, text=text, overlays=overlays, on_partial=early)
            else:
                capture = engine.capture(path, text=text, overlays=overlays)
        else:
            capture = engine.capture_static(path, text=text)
            if not self.settings.trusted:
                self._tell_restricted()
        findings, call_sites = judged(capture)
        if any(f.code in ("ATL005", "ATL006") for f in findings):
            self.last_error = next(f.message for f in findings if f.code in ("ATL005", "ATL006"))
        return findings, call_sites, list(capture.imported)

    @contextlib.contextmanager
    def _holding(self, engine: Engine | None = None) -> Iterator[Engine]:
        """The current engine (or `engine`), counted as in use until the block ends: a pool
        retired meanwhile (`_restart_workers`) is closed by its last user, never under it."""
        with self._engine_lock:
            held = engine or self.engine
            if held is None:
                raise RuntimeError("the analysis engine is not started")
            self._engine_users[id(held)] = self._engine_users.get(id(held), 0) + 1
        try:
            yield held
        finally:
            with self._engine_lock:
                self._engine_users[id(held)] -= 1
                idle = not self._engine_users[id(held)]
                if idle:
                    del self._engine_users[id(held)]
                retired = [pool for pool, owner in self._retired if owner is held] if idle else []
                self._retired = [(pool, owner) for pool, owner in self._retired if owner is not held or not idle]
            for pool in retired:
                pool.close()

    def _tell_restricted(self) -> None:
        if not self._told_restricted:
            self._told_restricted = True
            self.callbacks.show(
                "atenlint: this workspace is not trusted, so none of its code is imported or run; "
                "findings come from reading the source only (static analysis). Trust the workspace "
                "for complete results.",
                "info",
            )

    # -- whole workspace -------------------------------------------------
    def check_workspace(
        self, progress: Callable[[int, int, str], None], cancelled: threading.Event
    ) -> dict[str, DocumentResult]:
        """Analyse every Python file of the workspace folders (blocking; run in a thread).
        Returns {path: DocumentResult}. What the event loop also changes (open documents,
        the results) is read and written on the loop: a snapshot first, the results last;
        a file that changed on disk while it was read keeps no result of this scan."""
        scan = self._on_loop(self._workspace_snapshot)
        files, skipped = iter_python_files(scan.folders)
        for skipped_path, reason in skipped:  # FIFOs, devices, links leaving the workspace: never read
            self.callbacks.log(f"{skipped_path}: {reason}")
        note = (
            scan.why
            if files
            else (scan.why or "") + (f" No Python files in {', '.join(scan.folders)}." if scan.folders else "")
        )
        self._on_loop(lambda: setattr(self, "workspace_note", note))
        results: dict[str, DocumentResult] = {}
        with self._holding() as engine:  # a pool replaced meanwhile closes after this scan
            for index, path in enumerate(files):
                if cancelled.is_set():
                    break
                progress(index, len(files), os.path.basename(path))
                path = os.path.abspath(path)
                result = self._check_one(engine, path, scan)
                if result is not None:
                    results[path] = result
                    self._note_run_level_threadsafe(result)
        stored: dict[str, DocumentResult] = self._on_loop(
            lambda: self._store_workspace_results(results, scan.generation)
        )
        return stored

    def _check_one(self, engine: Engine, path: str, scan: _WorkspaceScan) -> DocumentResult | None:
        text = scan.open_texts.get(path)
        if text is None:
            try:
                limit = engine.resolver.for_file(path).max_file_bytes
            except Exception:  # noqa: BLE001 - an invalid config is reported by the capture below
                limit = MAX_READ_BYTES
            try:
                text = decode_source(read_regular_file(path, limit))
            except (OSError, DecodeError, SyntaxError, ValueError):
                text = None  # the capture below says why (too large, not a regular file, ...)
        if text is None:
            capture = engine.capture(path, execute=False)
            return _result(path, None, engine.findings([capture]), [], [], (), 0.0)
        # The same rule as for an open file: unsaved buffers are never run unless opted in.
        wanted = scan.open_inputs.get(path) or analysis_input(
            text, text, {p: t for p, t in scan.unsaved.items() if p != path}, scan.settings
        )
        try:
            findings, call_sites, imported = self._analyse_blocking(
                path, wanted.text, dict(wanted.overlays), wanted.execute, engine=engine
            )
        except WorkerFailure as failure:
            self.callbacks.log(f"{path}: {failure.message}", "error")
            return None
        return _result(path, None, findings, call_sites, imported, (), 0.0, wanted)

    def _workspace_snapshot(self) -> _WorkspaceScan:
        """What a workspace scan reads of the session (on the event loop)."""
        folders, why = self.workspace_folders()
        documents = list(self.documents.values())
        open_inputs = {d.path: self.input_for(d) for d in documents}
        return _WorkspaceScan(
            folders,
            why,
            open_inputs,
            {p: i.text for p, i in open_inputs.items()},
            {d.path: d.text for d in documents if d.text != d.saved_text},
            self.settings,
            self._disk_generation,
        )

    def _store_workspace_results(
        self, results: dict[str, DocumentResult], generation: int
    ) -> dict[str, DocumentResult]:
        """Keep a scan's results (on the event loop), except for files changed on disk since
        the scan started: their result may be of the old content."""
        fresh = {path: result for path, result in results.items() if self._changed_at.get(path, -1) <= generation}
        self.workspace_results.update(fresh)
        return fresh

    def _on_loop(self, function: Callable[[], Any]) -> Any:
        """Run `function` on the event loop and wait for its value (from a worker thread);
        directly when there is no running loop to hand it to, or when on the loop already."""
        loop = self._loop
        if loop is None or loop.is_closed() or not loop.is_running() or self._on_loop_thread(loop):
            return function()
        done: concurrent.futures.Future[Any] = concurrent.futures.Future()

        def call() -> None:
            try:
                done.set_result(function())
            except BaseException as error:  # noqa: BLE001 - handed to the waiting thread
                done.set_exception(error)

        try:
            loop.call_soon_threadsafe(call)
        except RuntimeError:  # the loop closed meanwhile
            return function()
        return done.result()

    @staticmethod
    def _on_loop_thread(loop: asyncio.AbstractEventLoop) -> bool:
        try:
            return asyncio.get_running_loop() is loop
        except RuntimeError:
            return False

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

    def _note_run_level_threadsafe(self, result: DocumentResult) -> None:
        if result.run_notes:
            loop = self._loop
            if loop is not None and not loop.is_closed():
                loop.call_soon_threadsafe(self._note_run_level, result.run_notes)

    # -- status ----------------------------------------------------------
    def workspace_check_started(self) -> None:
        self._workspace_checks += 1
        self._status(self._state)

    def workspace_check_ended(self) -> None:
        self._workspace_checks = max(0, self._workspace_checks - 1)
        self._status(self._state)

    def _status(self, state: str) -> None:
        self._state = state
        if not self._announced:
            return
        if state == "idle" and self._workspace_checks:
            state = "busy"  # Check Workspace runs outside the per-document checks
        hello = self.engine.hello if self.engine else {}
        try:
            targets = list(
                self.settings.targets
                or self._resolver().for_directory(self.folders[0] if self.folders else os.getcwd()).targets
            )
        except Exception:  # noqa: BLE001
            targets = list(self.settings.targets or ())
        self.callbacks.status(
            {
                "state": state,
                "targets": targets,
                "torch": hello.get("torch"),
                "python": hello.get("executable") or self.settings.python,
                "trusted": self.settings.trusted,
                "lastError": self.last_error,
                "message": self.workspace_note if self._workspace_checks else None,
                "notes": list(self.run_notes),
                "trigger": self.settings.trigger,
                "executeUnsaved": self.settings.execute_unsaved,
                "workspaceChecks": self._workspace_checks,
            }
        )


def _internal_error(path: str, error: str) -> Finding:
    from ..findings import INTERNAL_ERROR
    from ..sourcetext import Position, Range

    return Finding(
        os.path.basename(path),
        Range(Position(0, 0), Position(0, 0)),
        "warning",
        INTERNAL_ERROR,
        f"atenlint failed while checking this file ({error[:300]}); its results are not shown. "
        f"Please report it with the output log",
        abs_path=path,
    )


def _result(
    path: str,
    version: int | None,
    findings: list[Finding],
    call_sites: list[CallSite],
    imported: list[str],
    key: tuple[Any, ...],
    seconds: float,
    wanted: AnalysisInput | None = None,
) -> DocumentResult:
    findings, notes = split_run_notes(findings)
    own = [f for f in findings if os.path.abspath(f.abs_path or path) == path]
    foreign: dict[str, list[Finding]] = {}
    for finding in findings:
        where = os.path.abspath(finding.abs_path or path)
        if where != path:
            foreign.setdefault(where, []).append(finding)
    dependencies = sorted({os.path.abspath(p) for p in imported} - {path})
    return DocumentResult(
        path, version, own, call_sites, dependencies, key, seconds, foreign=foreign, input=wanted, run_notes=notes
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


__all__ = ["Callbacks", "DocumentResult", "FileCapture", "Session", "call_site_at", "findings_at"]
