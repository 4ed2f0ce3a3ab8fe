"""What the language server knows and schedules: open documents, their analyses, the
results cache and the dependency graph between workspace files.

Protocol-free: the handlers in `server.py` translate LSP messages into calls here, and
this module reports back through `Callbacks`. Analyses run the same engine as the CLI,
in a thread pool (the engine blocks on a worker process), so the event loop never waits.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import hashlib
import os
import shutil
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Optional, Protocol

from ..config import SettingsResolver
from ..discover import iter_python_files, read_regular_file
from ..engine import CallSite, Engine, FileCapture, SourceCache
from ..findings import Finding
from ..notebook import is_notebook, saved_module_text
from ..sourcetext import DecodeError, decode_source
from ..worker.pool import WorkerFailure, WorkerPool, WorkerSettings
from .settings import EditorSettings

_CACHE_PER_FILE = 8


class Callbacks(Protocol):
    def publish(self, uri: str, version: Optional[int], findings: list) -> None: ...
    def refresh(self) -> None: ...
    def status(self, status: dict) -> None: ...
    def log(self, message: str, level: str = "info") -> None: ...
    def show(self, message: str, level: str = "info") -> None: ...


@dataclass
class DocumentResult:
    path: str
    version: Optional[int]
    findings: list  # findings located in this file
    call_sites: list
    dependencies: list  # the user's files the analysis imported
    key: tuple
    seconds: float
    result_id: str = ""
    # Findings this analysis located in other files (a helper or base class defined
    # elsewhere): shown in those files, next to their own findings.
    foreign: dict = field(default_factory=dict)
    input: Optional["AnalysisInput"] = None  # what was checked (positions refer to its text)
    # Notes about the whole run rather than this file (told once, shown in the status item).
    run_notes: tuple = ()

    @property
    def text(self) -> Optional[str]:
        return self.input.text if self.input is not None else None

    @property
    def import_failed(self) -> bool:
        """A failed import reached files we cannot name (a module that does not exist yet,
        the file with the syntax error): such a result is re-checked on any change and never
        reused from the cache."""
        return any(f.code in _UNSTABLE_CODES for f in self.findings) or \
            any(f.code in _UNSTABLE_CODES for found in self.foreign.values() for f in found)

    @property
    def reads_unknown_files(self) -> bool:
        """Its dependencies are not known: a failed import, or the static pass (which reads
        the files an import names, to find classes and helpers, without listing them)."""
        return self.import_failed or (self.input is not None and not self.input.execute)

    def __post_init__(self) -> None:
        # Everything a client shows or acts on: a settings change that only alters severity
        # must change the id, or a pulling client keeps showing the old one.
        shown = [(f.as_json(), f.related) for f in self.findings] + \
                sorted((path, [f.as_json() for f in found]) for path, found in self.foreign.items())
        digest = hashlib.sha1(repr(shown).encode("utf-8")).hexdigest()[:16]
        self.result_id = self.result_id or digest


@dataclass
class Document:
    uri: str
    path: str
    version: Optional[int]
    text: str
    task: Optional[asyncio.Task] = None
    debounce: Optional[asyncio.TimerHandle] = None
    result: Optional[DocumentResult] = None
    waiters: list = field(default_factory=list)
    saved_text: Optional[str] = None  # the file's content on disk (None: not on disk)
    pending: bool = False  # a check was asked for and has not started yet


def text_hash(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", errors="surrogatepass")).hexdigest()


@dataclass(frozen=True)
class AnalysisInput:
    """What one check of a document reads: the text, whether it may import and run it, and
    the other unsaved buffers its import sees (only when the user opted in)."""

    text: str
    execute: bool
    overlays: tuple = ()  # ((path, text), ...)


def analysis_input(text: str, saved_text: Optional[str], other_unsaved: dict,
                   settings: EditorSettings) -> AnalysisInput:
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
class CacheEntry:
    key: tuple  # the input's text, mode and settings
    dependency_hashes: tuple  # ((path, content hash), ...) of every workspace file the import reached
    result: "DocumentResult"


# A result with one of these is never reused: the import failed somewhere we cannot name,
# or a worker timed out or crashed (which may not happen again).
_UNSTABLE_CODES = ("ATL002", "ATL005", "ATL006", "ATL099")
# Findings about the run rather than a file: said once and shown in the status item.
RUN_LEVEL_CODES = ("COREML000",)


# The server reads files from disk itself (saved texts, dependency hashes) only if they are
# regular files and at most this large; analyses honour the project's max-file-size.
MAX_READ_BYTES = 64 * 1024 * 1024


def is_source_file(path: Optional[str]) -> bool:
    """A file whose content on disk is the document's text (not a notebook's JSON)."""
    return bool(path) and path.endswith((".py", ".pyi"))


def read_saved_text(path: Optional[str]) -> Optional[str]:
    if not path:
        return None
    if is_notebook(path):  # a notebook's document text is the module of its code cells
        return saved_module_text(path)
    try:
        return decode_source(read_regular_file(path, MAX_READ_BYTES))
    except (OSError, DecodeError, SyntaxError, ValueError):
        return None  # a FIFO, a device, too large, undecodable: never read without limit


def content_hash(path: str, overlays: dict) -> Optional[str]:
    """The content a check of a dependency saw: its overlay, else the file (hashed, not
    stat'ed: two saves within a timestamp tick must still differ)."""
    if path in overlays:
        return text_hash(overlays[path])
    try:
        return hashlib.sha1(read_regular_file(path, MAX_READ_BYTES)).hexdigest()
    except OSError:
        return None


def depends_on(document: "Document", changed: set) -> bool:
    """Whether a change to any of `changed` may change the document's result."""
    result = document.result
    if result is None or document.pending or (document.task is not None and not document.task.done()):
        return True  # not known yet (or being computed from what may be the old content)
    return result.reads_unknown_files or any(p in changed for p in result.dependencies)


def split_run_notes(findings: list) -> tuple[list, tuple]:
    """(file findings, run-level notes): the COREML000-like ones leave the file."""
    notes = tuple(dict.fromkeys(f.message for f in findings if f.code in RUN_LEVEL_CODES))
    return [f for f in findings if f.code not in RUN_LEVEL_CODES], notes


class Session:
    def __init__(self, callbacks: Callbacks, settings: EditorSettings = EditorSettings(),
                 folders: Optional[list] = None, pull: bool = False):
        self.callbacks = callbacks
        self.settings = settings
        self.folders = list(folders or [])
        self.pull = pull  # the client pulls diagnostics (textDocument/diagnostic); else we push
        self.documents: dict[str, Document] = {}
        self.workspace_results: dict[str, DocumentResult] = {}  # path -> result of a workspace check
        self._cache: dict[str, collections.OrderedDict] = {}
        self._executor: Optional[ThreadPoolExecutor] = None
        self.pool: Optional[WorkerPool] = None
        self.engine: Optional[Engine] = None
        self._ready: Optional[asyncio.Future] = None
        self._busy = 0
        self.last_error: Optional[str] = None
        self._told_restricted = False
        self._state = "starting"
        self._announced = False
        self._told_problems: set = set()
        self.timings: list = []  # (path, seconds) of recent analyses, for logs and benchmarks
        self.analyses = 0  # checks that ran (not answered from the cache)
        self.run_notes: list = []
        self._disk_generation = 0  # bumped by every change on disk we are told of
        self.workspace_note: Optional[str] = None  # why Check Workspace saw what it saw
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._workspace_checks = 0

    # -- lifecycle -------------------------------------------------------
    def start(self) -> None:
        """Start workers in the background; requests wait for them, the client does not."""
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._executor = ThreadPoolExecutor(max_workers=max(2, self.settings.workers + 1),
                                            thread_name_prefix="atenlint")
        self.pool = WorkerPool(self.settings.workers, WorkerSettings(python=self._interpreter(),
                                                          memory_limit_mb=self.settings.memory_limit_mb),
                               log=lambda message: self.callbacks.log(message))
        self.engine = Engine(self.pool, self._resolver(), log=lambda message: self.callbacks.log(message))
        self._ready = loop.create_future()
        self._state = "starting"
        self._report_problems()
        loop.run_in_executor(self._executor, self._warm).add_done_callback(
            lambda future: loop.call_soon_threadsafe(self._warmed, future))

    def _warm(self) -> dict:
        started = time.perf_counter()
        hello = self.engine.start()
        self.callbacks.log(f"workers ready in {time.perf_counter() - started:.1f}s: python {hello.get('python')} "
                           f"({hello.get('executable')}), torch {hello.get('torch_full')}")
        return hello

    def announce(self) -> None:
        """Tell the client where we are (custom notifications wait for `initialized`)."""
        self._announced = True
        self._status(self._state)

    def _warmed(self, future) -> None:
        error = future.exception()
        if error is not None:
            self.last_error = f"cannot start the analysis worker with {self.settings.python}: {error}"
            self.callbacks.show(f"atenlint: {self.last_error}. Set `atenlint.python` (or the interpreter) to a "
                                f"Python with torch installed (`python -m pip install torch`).", "error")
            self._status("error")
        else:
            self._status("idle")
        if not self._ready.done():
            self._ready.set_result(error is None)

    def use_engine(self, engine: Engine) -> None:
        """Run on an engine that is already warm (tests, benchmarks): no workers of our own."""
        self._loop = asyncio.get_running_loop()
        self._executor = self._executor or ThreadPoolExecutor(max_workers=2, thread_name_prefix="atenlint")
        self.engine = engine
        self._ready = None
        self._state = "idle"

    def shutdown(self) -> None:
        if self.pool is not None:
            self.pool.close()
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)

    def _resolver(self) -> SettingsResolver:
        # Configuration never comes from above the workspace folders (issue 12).
        return SettingsResolver(overrides=self.settings.overrides(), workspace_roots=list(self.folders))

    def _interpreter(self, settings: Optional[EditorSettings] = None) -> str:
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
        message = (f"atenlint: this workspace is not trusted, so its interpreter {python} is not run; "
                   f"the analysis uses {sys.executable} instead. Trust the workspace to use it.")
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
        if self.pool is not None:
            self.pool.close()
        self.pool = WorkerPool(self.settings.workers, WorkerSettings(python=self._interpreter(),
                                                          memory_limit_mb=self.settings.memory_limit_mb),
                               log=lambda message: self.callbacks.log(message))
        self.engine = Engine(self.pool, self._resolver(), log=lambda message: self.callbacks.log(message))
        loop = asyncio.get_running_loop()
        self._ready = loop.create_future()
        loop.run_in_executor(self._executor, self._warm).add_done_callback(
            lambda future: loop.call_soon_threadsafe(self._warmed, future))

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
    def open(self, uri: str, path: str, version: Optional[int], text: str,
             saved_text: Optional[str] = None) -> None:
        """`saved_text`: what is saved of this document when its file is not Python source
        (a notebook's module); a .py file's is read from disk."""
        if saved_text is None:
            saved_text = read_saved_text(path) if is_source_file(path) else text
        self.documents[uri] = Document(uri, path, version, text, saved_text=saved_text)
        self.schedule(uri)
        if self.settings.execute_unsaved:
            self._recheck_importers_of([path])  # its buffer is now an overlay of theirs

    def change(self, uri: str, version: Optional[int], text: str) -> None:
        """An unsaved edit. With `onSave` nothing runs; with `onType` the buffer is checked
        after a pause (statically unless the user opted in to running unsaved code)."""
        document = self.documents.get(uri)
        if document is None:
            return
        document.version, document.text = version, text
        if self.settings.trigger == "onType":
            self._debounce(document)

    def save(self, uri: str, text: Optional[str] = None) -> None:
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
        for waiter in document.waiters:
            if not waiter.done():
                waiter.set_result(None)
        document.waiters = []
        if not self.pull:
            # Nothing stale stays behind: only what other open files' checks located in it.
            self.callbacks.publish(uri, None, self.findings_for(document.path))
            for path in (document.result.foreign if document.result else {}):
                other = self._document_at(path)  # open or not: what it showed from this file goes
                self.callbacks.publish(other.uri if other else path_uri(path), other.version if other else None,
                                       self.findings_for(path))
        else:
            self.callbacks.refresh()
        if self.settings.execute_unsaved and document.text != document.saved_text:
            self._recheck_importers_of([document.path])  # they see the file on disk again

    def files_changed(self, paths: list, reread: bool = True) -> None:
        """Files of the workspace changed on disk (saved, created, deleted): re-check the open
        ones among them and every open file whose last analysis depends on one of them."""
        paths = [os.path.abspath(p) for p in paths]
        self._disk_generation += 1  # an analysis running now may have read the old content
        for path in paths:
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

    def _recheck_importers_of(self, paths: list) -> None:
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

    def input_for(self, document: Document) -> "AnalysisInput":
        others = {d.path: d.text for d in self.documents.values()
                  if d is not document and d.text != d.saved_text}
        return analysis_input(document.text, document.saved_text, others, self.settings)

    async def _run(self, document: Document) -> None:
        try:
            while document.pending:
                document.pending = False
                version = document.version
                result = await self._analyse(document.path, self.input_for(document), version)
                if self.documents.get(document.uri) is not document:
                    return  # closed meanwhile
                if document.pending:
                    continue  # superseded while it ran (an edit, a save, a file it imports)
                previous, document.result = document.result, result
                self._deliver(document, previous)
        except Exception as error:  # noqa: BLE001 - waiters must not hang on a bug of ours
            self.last_error = f"{type(error).__name__}: {error}"
            self.callbacks.log(f"checking {document.path} failed: {self.last_error}", "error")
            for waiter in document.waiters:
                if not waiter.done():
                    waiter.set_result(document.result)
            document.waiters = []

    def _deliver(self, document: Document, previous: Optional[DocumentResult] = None) -> None:
        waiters, document.waiters = document.waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(document.result)
        self._note_run_level(document.result)
        if self.pull:
            self.callbacks.refresh()
            if is_notebook(document.path):  # clients pull no notebook cells (not tabs): push to each cell
                self.callbacks.publish(document.uri, document.result.version, self.findings_for(document.path))
            return
        self.callbacks.publish(document.uri, document.result.version, self.findings_for(document.path))
        touched = set(document.result.foreign) | set(previous.foreign if previous else ())
        for path in touched:
            other = self._document_at(path)
            self.callbacks.publish(other.uri if other else path_uri(path), other.version if other else None,
                                   self.findings_for(path))

    def _note_run_level(self, result: Optional[DocumentResult]) -> None:
        """Run-level notes (a converter that is not installed) are told once, and stay in the
        status item, instead of sitting on every class of every file."""
        fresh = [n for n in (result.run_notes if result else ()) if n not in self.run_notes]
        if not fresh:
            return
        self.run_notes.extend(fresh)
        for note in fresh:
            self.callbacks.show(f"atenlint: {note}", "warning")
        self._status(self._state)

    def findings_for(self, path: str) -> list:
        """A file's own findings plus those other open files' analyses located in it."""
        own_document = self._document_at(path)
        own = list(own_document.result.findings) if own_document and own_document.result else \
            list(self.workspace_results[path].findings) if path in self.workspace_results else []
        seen = {f.identity() for f in own}
        for document in self.documents.values():
            if document.path == path or document.result is None:
                continue
            for finding in document.result.foreign.get(path, ()):
                if finding.identity() not in seen:
                    seen.add(finding.identity())
                    own.append(finding)
        return own

    def source_text_for(self, path: str) -> Optional[str]:
        """The text the shown results of `path` were computed on (positions refer to it)."""
        document = self._document_at(path)
        if document is not None:
            return document.result.text if document.result is not None and document.result.text is not None \
                else document.text
        return read_saved_text(path)

    def _document_at(self, path: str) -> Optional[Document]:
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

    async def result_for(self, uri: str) -> Optional[DocumentResult]:
        """The current result for a document (pull diagnostics, hover, report): waits for
        a running or needed check; never starts one that the trigger does not call for."""
        document = self.documents.get(uri)
        if document is None:
            return None
        if self.is_current(document):
            return document.result
        running = document.pending or (document.task is not None and not document.task.done())
        if not running and document.debounce is None:
            self.schedule(uri)
        waiter = asyncio.get_running_loop().create_future()
        document.waiters.append(waiter)
        return await waiter

    def last_result(self, uri: str) -> Optional[DocumentResult]:
        document = self.documents.get(uri)
        return document.result if document is not None else None

    # -- analysis --------------------------------------------------------
    def _input_key(self, path: str, wanted: "AnalysisInput") -> tuple:
        engine = self.engine
        try:
            fingerprint = engine.resolver.for_file(path).fingerprint() if engine else ""
        except Exception:  # noqa: BLE001 - an invalid config is reported by the analysis itself
            fingerprint = "invalid"
        overlays = tuple((p, text_hash(t)) for p, t in wanted.overlays)
        return (text_hash(wanted.text), wanted.execute, overlays, engine.torch_version if engine else None,
                fingerprint, self.settings.trusted)

    def _cached(self, path: str, key: tuple, wanted: "AnalysisInput") -> Optional[DocumentResult]:
        overlays = dict(wanted.overlays)
        for entry in reversed(self._cache.get(path, ())):
            if entry.key == key and all(content_hash(p, overlays) == h for p, h in entry.dependency_hashes):
                return entry.result
        return None

    def _store(self, path: str, key: tuple, wanted: "AnalysisInput", result: DocumentResult) -> None:
        overlays = dict(wanted.overlays)
        hashes = tuple((p, content_hash(p, overlays)) for p in sorted(set(result.dependencies)))
        entries = self._cache.setdefault(path, collections.deque(maxlen=_CACHE_PER_FILE))
        entries.append(CacheEntry(key, hashes, result))

    async def _analyse(self, path: str, wanted: "AnalysisInput", version: Optional[int]) -> DocumentResult:
        if self._ready is not None:
            await asyncio.shield(self._ready)
        key = self._input_key(path, wanted)
        cached = self._cached(path, key, wanted)
        if cached is not None:
            return dataclasses.replace(cached, version=version, seconds=0.0)
        generation = self._disk_generation
        self._busy += 1
        self._status("busy")
        started = time.perf_counter()
        failed = False
        try:
            loop = asyncio.get_running_loop()
            findings, call_sites, imported = await loop.run_in_executor(
                self._executor, self._analyse_blocking, path, wanted.text, dict(wanted.overlays), wanted.execute)
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
        self.callbacks.log(f"analysed {os.path.basename(path)} in {seconds * 1000:.0f} ms"
                           f"{'' if wanted.execute else ' (static: nothing imported)'}")
        result = _result(path, version, findings, call_sites, imported, key, seconds, wanted)
        # Only a result whose inputs cannot have changed under it is reused: none from a check
        # that overlapped a change on disk, failed, or reports a failure that may be transient.
        if not failed and generation == self._disk_generation and not result.reads_unknown_files:
            self._store(path, key, wanted, result)
        return result

    def _analyse_blocking(self, path: str, text: str, overlays: dict, execute: bool = True) -> tuple[list, list, list]:
        engine = self.engine
        if self.settings.trusted and execute:
            capture = engine.capture(path, text=text, overlays=overlays)
        else:
            capture = engine.capture_static(path, text=text)
            if not self.settings.trusted:
                self._tell_restricted()
        sources = SourceCache(dict(overlays, **{path: text}))
        findings = engine.findings([capture], sources)
        call_sites = [c for c in engine.call_sites([capture], sources) if c.path == path]
        if any(f.code in ("ATL005", "ATL006") for f in findings):
            self.last_error = next(f.message for f in findings if f.code in ("ATL005", "ATL006"))
        return findings, call_sites, list(capture.imported)

    def _tell_restricted(self) -> None:
        if not self._told_restricted:
            self._told_restricted = True
            self.callbacks.show("atenlint: this workspace is not trusted, so none of its code is imported or run; "
                                "findings come from reading the source only (static analysis). Trust the workspace "
                                "for complete results.", "info")

    # -- whole workspace -------------------------------------------------
    def check_workspace(self, progress: Callable[[int, int, str], None], cancelled: threading.Event) -> dict:
        """Analyse every Python file of the workspace folders (blocking; run in a thread).
        Returns {path: DocumentResult}."""
        folders, why = self.workspace_folders()
        files, skipped = iter_python_files(folders)
        for skipped_path, why in skipped:  # FIFOs, devices, links leaving the workspace: never read
            self.callbacks.log(f"{skipped_path}: {why}")
        self.workspace_note = why if files else (why or "") + \
            (f" No Python files in {', '.join(folders)}." if folders else "")
        open_inputs = {d.path: self.input_for(d) for d in list(self.documents.values())}
        open_texts = {p: i.text for p, i in open_inputs.items()}
        unsaved = {d.path: d.text for d in list(self.documents.values()) if d.text != d.saved_text}
        results: dict[str, DocumentResult] = {}
        for index, path in enumerate(files):
            if cancelled.is_set():
                break
            progress(index, len(files), os.path.basename(path))
            path = os.path.abspath(path)
            text = open_texts.get(path)
            if text is None:
                try:
                    limit = self.engine.resolver.for_file(path).max_file_bytes
                except Exception:  # noqa: BLE001 - an invalid config is reported by the capture below
                    limit = MAX_READ_BYTES
                try:
                    text = decode_source(read_regular_file(path, limit))
                except (OSError, DecodeError, SyntaxError, ValueError):
                    text = None  # the capture below says why (too large, not a regular file, ...)
            if text is None:
                capture = self.engine.capture(path, execute=False)
                results[path] = _result(path, None, self.engine.findings([capture]), [], [], (), 0.0)
                continue
            # The same rule as for an open file: unsaved buffers are never run unless opted in.
            wanted = open_inputs.get(path) or analysis_input(
                text, text, {p: t for p, t in unsaved.items() if p != path}, self.settings)
            try:
                findings, call_sites, imported = self._analyse_blocking(path, wanted.text, dict(wanted.overlays),
                                                                        wanted.execute)
            except WorkerFailure as failure:
                self.callbacks.log(f"{path}: {failure.message}", "error")
                continue
            results[path] = _result(path, None, findings, call_sites, imported, (), 0.0, wanted)
            self._note_run_level_threadsafe(results[path])
        self.workspace_results.update(results)
        return results

    def workspace_folders(self) -> tuple[list, Optional[str]]:
        """The folders Check Workspace walks, and why they are these when the client sent none."""
        if self.folders:
            return list(self.folders), None
        around = sorted({os.path.dirname(d.path) for d in self.documents.values()})
        why = ("The editor sent no workspace folder (it found no project root such as pyproject.toml "
               "or .git above your file).")
        if around:
            return around, why + f" Checked the folders of the open files instead: {', '.join(around)}."
        return [], why + " Open a file of the project, or open its folder, and check again."

    def _note_run_level_threadsafe(self, result: DocumentResult) -> None:
        if result.run_notes:
            loop = self._loop
            if loop is not None and not loop.is_closed():
                loop.call_soon_threadsafe(self._note_run_level, result)

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
            targets = list(self.settings.targets or self._resolver().for_directory(
                self.folders[0] if self.folders else os.getcwd()).targets)
        except Exception:  # noqa: BLE001
            targets = list(self.settings.targets or ())
        self.callbacks.status({
            "state": state, "targets": targets, "torch": hello.get("torch"),
            "python": hello.get("executable") or self.settings.python, "trusted": self.settings.trusted,
            "lastError": self.last_error, "message": self.workspace_note if self._workspace_checks else None,
            "notes": list(self.run_notes), "trigger": self.settings.trigger,
            "executeUnsaved": self.settings.execute_unsaved, "workspaceChecks": self._workspace_checks,
        })


def _internal_error(path: str, error: str) -> Finding:
    from ..findings import INTERNAL_ERROR
    from ..sourcetext import Position, Range

    return Finding(os.path.basename(path), Range(Position(0, 0), Position(0, 0)), "warning", INTERNAL_ERROR,
                   f"atenlint failed while checking this file ({error[:300]}); its results are not shown. "
                   f"Please report it with the output log", abs_path=path)


def _result(path: str, version, findings: list, call_sites: list, imported: list, key: tuple,
            seconds: float, wanted: Optional[AnalysisInput] = None) -> DocumentResult:
    findings, notes = split_run_notes(findings)
    own = [f for f in findings if os.path.abspath(f.abs_path or path) == path]
    foreign: dict[str, list] = {}
    for finding in findings:
        where = os.path.abspath(finding.abs_path or path)
        if where != path:
            foreign.setdefault(where, []).append(finding)
    dependencies = sorted({os.path.abspath(p) for p in imported} - {path})
    return DocumentResult(path, version, own, call_sites, dependencies, key, seconds, foreign=foreign,
                          input=wanted, run_notes=notes)


def path_uri(path: str) -> str:
    from pathlib import Path

    return Path(path).as_uri()


def findings_at(result: Optional[DocumentResult], line: int, character: int) -> list[Finding]:
    if result is None:
        return []
    return [f for f in result.findings if _contains(f.range, line, character)]


def call_site_at(result: Optional[DocumentResult], line: int, character: int) -> Optional[CallSite]:
    """The innermost call whose range holds the position."""
    if result is None:
        return None
    inside = [c for c in result.call_sites if _contains(c.range, line, character)]
    if not inside:
        return None
    return min(inside, key=lambda c: (c.range.end.line - c.range.start.line,
                                      c.range.end.character - c.range.start.character))


def _contains(rng, line: int, character: int) -> bool:
    start, end = rng.start, rng.end
    if (line, character) < (start.line, start.character):
        return False
    return (line, character) <= (end.line, end.character)


__all__ = ["Session", "Callbacks", "DocumentResult", "findings_at", "call_site_at", "FileCapture"]
