"""What the language server knows and schedules: open documents, their analyses, the
results cache and the dependency graph between workspace files.

Protocol-free: the handlers in `server.py` translate LSP messages into calls here, and
this module reports back through `Callbacks`. Analyses run the same engine as the CLI,
in a thread pool (the engine blocks on a worker process), so the event loop never waits.
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Optional, Protocol

from ..config import SettingsResolver
from ..discover import iter_python_files
from ..engine import CallSite, Engine, FileCapture, SourceCache
from ..findings import Finding
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


def text_hash(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", errors="surrogatepass")).hexdigest()


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

    # -- lifecycle -------------------------------------------------------
    def start(self) -> None:
        """Start workers in the background; requests wait for them, the client does not."""
        loop = asyncio.get_running_loop()
        self._executor = ThreadPoolExecutor(max_workers=max(2, self.settings.workers + 1),
                                            thread_name_prefix="atenlint")
        self.pool = WorkerPool(self.settings.workers, WorkerSettings(python=self.settings.python,
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

    def shutdown(self) -> None:
        if self.pool is not None:
            self.pool.close()
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)

    def _resolver(self) -> SettingsResolver:
        return SettingsResolver(overrides=self.settings.overrides())

    def configure(self, settings: EditorSettings) -> bool:
        """Apply new editor settings; True when open documents need a re-check."""
        old, self.settings = self.settings, settings
        self._report_problems()
        if self.engine is not None:
            self.engine.resolver = self._resolver()
        self._cache.clear()
        if old.python != settings.python or old.workers != settings.workers:
            self.callbacks.log(f"interpreter or workers changed: restarting workers with {settings.python}")
            self._restart_workers()
        return True

    def _restart_workers(self) -> None:
        if self.pool is not None:
            self.pool.close()
        self.pool = WorkerPool(self.settings.workers, WorkerSettings(python=self.settings.python,
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
    def open(self, uri: str, path: str, version: Optional[int], text: str) -> None:
        self.documents[uri] = Document(uri, path, version, text)
        self.schedule(uri)

    def change(self, uri: str, version: Optional[int], text: str) -> None:
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
        self.schedule(uri)
        self.recheck_dependents(document.path)

    def close(self, uri: str) -> None:
        document = self.documents.pop(uri, None)
        if document is None:
            return
        if document.debounce is not None:
            document.debounce.cancel()
        if not self.pull:
            self.callbacks.publish(uri, None, [])  # nothing stale stays behind
            for path in (document.result.foreign if document.result else {}):
                other = self._document_at(path)
                if other is not None:
                    self.callbacks.publish(other.uri, other.version, self.findings_for(path))

    def recheck_dependents(self, path: str) -> None:
        """Re-check the open files whose last analysis imported `path`."""
        path = os.path.abspath(path)
        for other in list(self.documents.values()):
            if other.path != path and other.result is not None and path in other.result.dependencies:
                self.schedule(other.uri)

    def recheck_all(self) -> None:
        for uri in list(self.documents):
            self.schedule(uri)

    def _debounce(self, document: Document) -> None:
        if document.debounce is not None:
            document.debounce.cancel()
        loop = asyncio.get_running_loop()
        document.debounce = loop.call_later(self.settings.on_type_delay_ms / 1000, self.schedule, document.uri)

    def schedule(self, uri: str) -> None:
        """Analyse the document's current text. A running analysis of an older version
        finishes in the worker, but its result is dropped and the newest text goes next."""
        document = self.documents.get(uri)
        if document is None:
            return
        if document.task is None or document.task.done():
            document.task = asyncio.get_running_loop().create_task(self._run(document))

    async def _run(self, document: Document) -> None:
        while True:
            version, text = document.version, document.text
            result = await self._analyse(document.path, text, version)
            if self.documents.get(document.uri) is not document:
                return  # closed meanwhile
            if (document.version, document.text) != (version, text):
                continue  # superseded while it ran: analyse the newer text
            previous, document.result = document.result, result
            self._deliver(document, previous)
            return

    def _deliver(self, document: Document, previous: Optional[DocumentResult] = None) -> None:
        waiters, document.waiters = document.waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(document.result)
        if self.pull:
            self.callbacks.refresh()
            return
        self.callbacks.publish(document.uri, document.result.version, self.findings_for(document.path))
        touched = set(document.result.foreign) | set(previous.foreign if previous else ())
        for path in touched:
            other = self._document_at(path)
            self.callbacks.publish(other.uri if other else path_uri(path), other.version if other else None,
                                   self.findings_for(path))

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

    def _document_at(self, path: str) -> Optional[Document]:
        return next((d for d in self.documents.values() if d.path == path), None)

    async def result_for(self, uri: str) -> Optional[DocumentResult]:
        """The current result for a document (pull diagnostics, hover): waits for a
        running or needed analysis of its current text."""
        document = self.documents.get(uri)
        if document is None:
            return None
        current = document.result is not None and document.result.version == document.version \
            and document.task is not None and document.task.done()
        if current:
            return document.result
        if document.task is None or document.task.done():
            self.schedule(uri)
        waiter = asyncio.get_running_loop().create_future()
        document.waiters.append(waiter)
        return await waiter

    def last_result(self, uri: str) -> Optional[DocumentResult]:
        document = self.documents.get(uri)
        return document.result if document is not None else None

    # -- analysis --------------------------------------------------------
    def _overlays(self, exclude: str) -> dict:
        return {d.path: d.text for d in self.documents.values() if d.path != exclude}

    def _cache_key(self, path: str, text: str, dependencies: list) -> tuple:
        overlays = {d.path: d.text for d in self.documents.values()}
        dependency_hashes = []
        for dependency in sorted(dependencies):
            if dependency in overlays:
                dependency_hashes.append((dependency, text_hash(overlays[dependency])))
            else:
                try:
                    stat = os.stat(dependency)
                    dependency_hashes.append((dependency, stat.st_mtime_ns, stat.st_size))
                except OSError:
                    dependency_hashes.append((dependency, None))
        engine = self.engine
        try:
            fingerprint = engine.resolver.for_file(path).fingerprint() if engine else ""
        except Exception:  # noqa: BLE001 - an invalid config is reported by the analysis itself
            fingerprint = "invalid"
        return (text_hash(text), tuple(dependency_hashes), engine.torch_version if engine else None,
                fingerprint, self.settings.trusted)

    async def _analyse(self, path: str, text: str, version: Optional[int]) -> DocumentResult:
        previous = self._cache.get(path)
        dependencies = []
        if previous:
            dependencies = next(reversed(previous.values())).dependencies
        if self._ready is not None:
            await asyncio.shield(self._ready)
        key = self._cache_key(path, text, dependencies)
        cached = (previous or {}).get(key)
        if cached is not None:
            return DocumentResult(path, version, cached.findings, cached.call_sites, cached.dependencies, key,
                                  0.0, cached.result_id, cached.foreign)
        self._busy += 1
        self._status("busy")
        started = time.perf_counter()
        try:
            loop = asyncio.get_running_loop()
            findings, call_sites, imported = await loop.run_in_executor(
                self._executor, self._analyse_blocking, path, text, self._overlays(path))
        except Exception as error:  # noqa: BLE001 - a bug of ours must not take the editor down
            self.last_error = f"{type(error).__name__}: {error}"
            self.callbacks.log(f"analysis of {path} failed: {self.last_error}", "error")
            findings, call_sites, imported = [], [], []
        finally:
            self._busy -= 1
            self._status("busy" if self._busy else "idle")
        seconds = time.perf_counter() - started
        self.timings.append((path, seconds))
        del self.timings[:-100]
        self.callbacks.log(f"analysed {os.path.basename(path)} in {seconds * 1000:.0f} ms")
        key = self._cache_key(path, text, imported)
        result = _result(path, version, findings, call_sites, imported, key, seconds)
        entries = self._cache.setdefault(path, collections.OrderedDict())
        entries[key] = result
        while len(entries) > _CACHE_PER_FILE:
            entries.popitem(last=False)
        return result

    def _analyse_blocking(self, path: str, text: str, overlays: dict) -> tuple[list, list, list]:
        engine = self.engine
        if self.settings.trusted:
            capture = engine.capture(path, text=text, overlays=overlays)
        else:
            capture = engine.capture_static(path, text=text)
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
        files, _ = iter_python_files(self.folders)
        open_texts = {d.path: d.text for d in self.documents.values()}
        results: dict[str, DocumentResult] = {}
        for index, path in enumerate(files):
            if cancelled.is_set():
                break
            progress(index, len(files), os.path.basename(path))
            path = os.path.abspath(path)
            text = open_texts.get(path)
            if text is None:
                try:
                    with open(path, "rb") as handle:
                        from ..sourcetext import DecodeError, decode_source

                        text = decode_source(handle.read())
                except (OSError, DecodeError, SyntaxError):
                    text = None
            if text is None:
                capture = self.engine.capture(path)
                results[path] = _result(path, None, self.engine.findings([capture]), [], [], (), 0.0)
                continue
            overlays = {p: t for p, t in open_texts.items() if p != path}
            try:
                findings, call_sites, imported = self._analyse_blocking(path, text, overlays)
            except WorkerFailure as failure:
                self.callbacks.log(f"{path}: {failure.message}", "error")
                continue
            results[path] = _result(path, None, findings, call_sites, imported, (), 0.0)
        self.workspace_results.update(results)
        return results

    # -- status ----------------------------------------------------------
    def _status(self, state: str) -> None:
        self._state = state
        if not self._announced:
            return
        hello = self.engine.hello if self.engine else {}
        try:
            targets = list(self.settings.targets or self._resolver().for_directory(
                self.folders[0] if self.folders else os.getcwd()).targets)
        except Exception:  # noqa: BLE001
            targets = list(self.settings.targets or ())
        self.callbacks.status({
            "state": state, "targets": targets, "torch": hello.get("torch"),
            "python": hello.get("executable") or self.settings.python, "trusted": self.settings.trusted,
            "lastError": self.last_error, "message": None,
        })


def _result(path: str, version, findings: list, call_sites: list, imported: list, key: tuple,
            seconds: float) -> DocumentResult:
    own = [f for f in findings if os.path.abspath(f.abs_path or path) == path]
    foreign: dict[str, list] = {}
    for finding in findings:
        where = os.path.abspath(finding.abs_path or path)
        if where != path:
            foreign.setdefault(where, []).append(finding)
    return DocumentResult(path, version, own, call_sites, imported, key, seconds, foreign=foreign)


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
