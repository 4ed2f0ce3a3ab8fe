"""Background work: checks of one file and Check Workspace, in a thread pool (the engine
blocks on a worker process), so the event loop never waits. It sees only snapshots of the
session's state (an `AnalysisInput`, a `WorkspaceScan`, the settings of the moment) and
hands results back; it never reads or changes the open documents."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

from ..discover import iter_python_files, read_regular_file
from ..engine import Engine
from ..pipeline import FileResult, FileSnapshot, check_file
from ..sourcetext import DecodeError, decode_source
from ..worker.pool import Cancelled, WorkerFailure, WorkerPool, cancelled_by
from .results import AnalysisInput, DocumentResult, analysis_input, internal_error, make_result, text_hash
from .settings import EditorSettings
from .state import MAX_READ_BYTES, WorkspaceScan, content_hash, modified_since

_CACHE_PER_FILE = 8
# A dependency modified this close to (or after) a check's start may have changed while the
# check read it: its result is not cached. The slack covers file systems whose timestamps
# tick coarsely (HFS+ in whole seconds; ext4 and APFS record nanoseconds).
_MODIFIED_DURING_CHECK_SLACK_NS = 1_000_000_000


class Reporter(Protocol):
    """What the background work tells the session (any thread; the session hops to its loop)."""

    def log(self, message: str, level: str = "info") -> None: ...
    def busy(self, running: int) -> None: ...
    def restricted(self) -> None: ...
    def failed(self, error: str) -> None: ...


@dataclass(frozen=True)
class CacheEntry:
    key: tuple[Any, ...]  # the input's text, mode and settings
    dependency_hashes: tuple[
        tuple[str, str | None], ...
    ]  # ((path, content hash), ...) of every workspace file the import reached
    result: DocumentResult


class Analyser:
    def __init__(self, reporter: Reporter) -> None:
        self.reporter = reporter
        self.executor: ThreadPoolExecutor | None = None
        self.engine: Engine | None = None
        self.engine_generation = 0  # bumped by every new pool and engine
        self._cache: dict[str, collections.deque[CacheEntry]] = {}
        self._busy = 0
        self.timings: list[tuple[str, float]] = []  # (path, seconds) of recent analyses, for logs and benchmarks
        self.analyses = 0  # checks that ran (not answered from the cache)
        # Checks running per engine, and pools replaced while they ran (closed by their last check).
        self._engine_lock = threading.Lock()
        self._engine_users: dict[int, int] = {}
        self._retired: list[tuple[WorkerPool, Engine]] = []

    # -- engines ---------------------------------------------------------
    def replace_engine(self, engine: Engine, old_pool: WorkerPool | None) -> None:
        """Use `engine` from now on. The old pool closes now when no check uses the old
        engine, else when its last check ends: a check is never cut off into a false ATL006."""
        old_engine = self.engine
        with self._engine_lock:
            busy = old_engine is not None and self._engine_users.get(id(old_engine), 0) > 0
            if busy and old_pool is not None and old_engine is not None:
                self._retired.append((old_pool, old_engine))
        if old_pool is not None and not busy:
            old_pool.close()
        self.engine_generation += 1
        self.engine = engine

    def retired_pools(self) -> list[WorkerPool]:
        with self._engine_lock:
            retired, self._retired = [pool for pool, _ in self._retired], []
        return retired

    @contextlib.contextmanager
    def holding(self, engine: Engine | None = None) -> Iterator[Engine]:
        """The current engine (or `engine`), counted as in use until the block ends: a pool
        retired meanwhile is closed by its last user, never under it."""
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

    # -- cache -----------------------------------------------------------
    def clear_cache(self) -> None:
        self._cache.clear()

    def input_key(self, path: str, wanted: AnalysisInput, settings: EditorSettings) -> tuple[Any, ...]:
        engine = self.engine
        try:
            fingerprint = engine.resolver.for_file(path).fingerprint() if engine else ""
        except Exception:  # noqa: BLE001 - an invalid config is reported by the analysis itself
            fingerprint = "invalid"
        overlays = tuple((p, text_hash(t)) for p, t in wanted.overlays)
        # Per engine: a result of another interpreter's workers is never reused.
        workers = (engine.torch_version if engine else None, self.engine_generation)
        return (text_hash(wanted.text), wanted.execute, overlays, workers, fingerprint, settings.trusted)

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

    # -- one file --------------------------------------------------------
    async def analyse(
        self,
        path: str,
        wanted: AnalysisInput,
        version: int | None,
        settings: EditorSettings,
        generation: Callable[[], int],
        on_partial: Callable[[DocumentResult], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> DocumentResult:
        """One check. `on_partial` is called on the event loop with the fast targets' result
        when the file's targets include slower export ones (never for a cached result).
        `generation()` is the session's disk generation: a check that overlapped a change
        on disk is not cached. Setting `cancel` stops the check (its worker request too):
        it raises `Cancelled` then, and nothing of it is reported or cached."""
        key = self.input_key(path, wanted, settings)
        cached = self._cached(path, key, wanted)
        if cached is not None:
            return dataclasses.replace(cached, version=version, seconds=0.0)
        started_generation = generation()
        started_ns = time.time_ns()
        self._busy += 1
        self.reporter.busy(self._busy)
        started = time.perf_counter()
        failed = False
        loop = asyncio.get_running_loop()
        early: Callable[[FileResult], None] | None = None
        if on_partial is not None:

            def early(checked: FileResult) -> None:  # on the analysing thread
                partial = make_result(path, version, checked, key, time.perf_counter() - started, wanted)
                if not loop.is_closed():
                    loop.call_soon_threadsafe(on_partial, partial)

        try:
            checked = await loop.run_in_executor(
                self.executor, self.analyse_blocking, path, wanted, settings.trusted, early, None, cancel
            )
        except Cancelled:
            raise  # nothing of it is reported or cached (`analyse_blocking` logged it)
        except Exception as error:  # noqa: BLE001 - a bug of ours must not take the editor down
            message = f"{type(error).__name__}: {error}"
            self.reporter.failed(message)
            self.reporter.log(f"analysis of {path} failed: {message}", "error")
            # Never an empty, clean-looking result: say that the check itself failed.
            checked, failed = internal_error(path, message), True
        finally:
            self._busy -= 1
            self.reporter.busy(self._busy)
        seconds = time.perf_counter() - started
        self.timings.append((path, seconds))
        del self.timings[:-100]
        self.analyses += 1
        self.reporter.log(
            f"analysed {os.path.basename(path)} in {seconds * 1000:.0f} ms"
            f"{'' if wanted.execute else ' (static: nothing imported)'}"
        )
        result = make_result(path, version, checked, key, seconds, wanted)
        # Only a result whose inputs cannot have changed under it is reused: none from a check
        # that overlapped a change on disk, failed, or reports a failure that may be transient.
        if not failed and started_generation == generation() and not result.reads_unknown_files:
            self._store(path, key, wanted, result, started_ns)
        return result

    def analyse_blocking(
        self,
        path: str,
        wanted: AnalysisInput,
        trusted: bool,
        on_partial: Callable[[FileResult], None] | None = None,
        engine: Engine | None = None,
        cancel: threading.Event | None = None,
    ) -> FileResult:
        """Capture and judge one file (on a thread). The engine is held for the whole
        check: a pool replaced meanwhile (another interpreter) closes only after it."""
        try:
            with self.holding(engine) as held, cancelled_by(cancel):
                return self._analyse_on(held, path, wanted, trusted, on_partial)
        except Cancelled:  # logged here: a closed document's task no longer awaits this thread
            self.reporter.log(f"stopped the check of {os.path.basename(path)}: no longer wanted", "debug")
            raise

    def _analyse_on(
        self,
        engine: Engine,
        path: str,
        wanted: AnalysisInput,
        trusted: bool,
        on_partial: Callable[[FileResult], None] | None,
    ) -> FileResult:
        """The CLI's per-file pipeline (capture or static pass, the static fallback after a
        timeout or crash, judging, placement, dedupe) on a snapshot of the document."""
        snapshot = FileSnapshot.of(
            path,
            text=wanted.text,
            overlays=dict(wanted.overlays),
            execute=trusted and wanted.execute,
            resolver=engine.resolver,
        )

        if not trusted:
            self.reporter.restricted()
        result = check_file(engine, snapshot, on_partial=on_partial)
        crashed = next((f.message for f in result.findings if f.code in ("ATL005", "ATL006")), None)
        if crashed is not None:
            self.reporter.failed(crashed)
        return result

    # -- whole workspace -------------------------------------------------
    def check_workspace(
        self,
        scan: WorkspaceScan,
        progress: Callable[[int, int, str], None],
        cancelled: threading.Event,
        on_result: Callable[[DocumentResult], None],
    ) -> tuple[dict[str, DocumentResult], str | None]:
        """Analyse every Python file of the scan's folders (blocking; run in a thread).
        Returns ({path: result}, why the check saw what it saw)."""
        files, skipped = iter_python_files(scan.folders)
        for skipped_path, reason in skipped:  # FIFOs, devices, links leaving the workspace: never read
            self.reporter.log(f"{skipped_path}: {reason}")
        note = (
            scan.why
            if files
            else (scan.why or "") + (f" No Python files in {', '.join(scan.folders)}." if scan.folders else "")
        )
        results: dict[str, DocumentResult] = {}
        with self.holding() as engine:  # a pool replaced meanwhile closes after this scan
            for index, path in enumerate(files):
                if cancelled.is_set():
                    break
                progress(index, len(files), os.path.basename(path))
                path = os.path.abspath(path)
                try:
                    result = self._check_one(engine, path, scan, cancelled)
                except Cancelled:  # `$/cancelRequest`: the file in flight stops too
                    break
                if result is not None:
                    results[path] = result
                    on_result(result)
        return results, note

    def _check_one(
        self, engine: Engine, path: str, scan: WorkspaceScan, cancelled: threading.Event | None = None
    ) -> DocumentResult | None:
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
        if text is None:  # the pipeline reads it and says why it cannot (too large, not a regular file)
            unread = check_file(engine, FileSnapshot.of(path, execute=False, resolver=engine.resolver))
            return make_result(path, None, unread, (), 0.0)
        # The same rule as for an open file: unsaved buffers are never run unless opted in.
        wanted = scan.open_inputs.get(path) or analysis_input(
            text, text, {p: t for p, t in scan.unsaved.items() if p != path}, scan.settings
        )
        try:
            checked = self.analyse_blocking(path, wanted, scan.settings.trusted, engine=engine, cancel=cancelled)
        except WorkerFailure as failure:
            self.reporter.log(f"{path}: {failure.message}", "error")
            return None
        return make_result(path, None, checked, (), 0.0, wanted)
