"""The language server's session: what it knows and schedules.

Protocol-free: the handlers in `server.py` translate LSP messages into calls here, and
this module reports back through `Callbacks`. The parts, each a class of its own:
`state.SessionState` (documents, settings, results and where they place findings),
`checks.Checks` (what each document message asks for, and delivery), `analysis.Analyser`
(the checks themselves, on a thread pool, over snapshots), `Workers` (the worker
processes) and `status.Status` (the status item)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from ..config import SettingsResolver
from ..engine import Engine, FileCapture
from ..findings import Finding
from ..uris import path_uri
from ..worker.pool import WorkerPool, WorkerSettings
from .analysis import Analyser
from .checks import Checks
from .results import (
    DocumentResult,
    analysis_input,
    call_site_at,
    findings_at,
    split_run_notes,
)
from .settings import EditorSettings
from .state import Document, SessionState
from .status import Status


class Callbacks(Protocol):
    def publish(self, uri: str, version: int | None, findings: list[Finding]) -> None: ...
    def refresh(self) -> None: ...
    def status(self, status: dict[str, Any]) -> None: ...
    def log(self, message: str, level: str = "info") -> None: ...
    def show(self, message: str, level: str = "info") -> None: ...


class Workers:
    """The worker pool and the engine over it: started in the background, replaced for a new
    interpreter (the analyser closes the old pool after its last check), closed at shutdown."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.pool: WorkerPool | None = None
        self.ready: asyncio.Future[bool] | None = None
        self.closed = False
        self._told: set[str] = set()

    def start(self, loop: asyncio.AbstractEventLoop, pool: WorkerPool | None = None) -> None:
        """`pool`: one whose workers began starting before the session existed (the server
        starts them before importing the analysis side); adopted when it is what
        `_new_pool` would make, else closed."""
        session = self.session
        session.analyser.executor = ThreadPoolExecutor(
            max_workers=max(2, session.settings.workers + 1), thread_name_prefix="atenlint"
        )
        self.pool = pool if pool is not None and self._fits(pool) else self._new_pool()
        if pool is not None and pool is not self.pool:
            threading.Thread(target=_discard, args=(pool,), daemon=True, name="atenlint-discard").start()
        session.analyser.replace_engine(self._new_engine(self.pool), None)
        self._warm_up(loop)

    def restart(self) -> None:
        """A new pool and engine for new interpreter settings; the re-check `configure` asks
        for supersedes the results of checks still running on the old one."""
        old_pool, self.pool = self.pool, self._new_pool()
        self.session.analyser.replace_engine(self._new_engine(self.pool), old_pool)
        self._warm_up(asyncio.get_running_loop())

    def _new_pool(self) -> WorkerPool:
        settings = self.session.settings
        return WorkerPool(
            settings.workers,
            WorkerSettings(python=self.interpreter(), memory_limit_mb=settings.memory_limit_mb),
            log=lambda message: self.session.callbacks.log(message),
        )

    def _fits(self, pool: WorkerPool) -> bool:
        settings = self.session.settings
        wanted = WorkerSettings(python=self.interpreter(), memory_limit_mb=settings.memory_limit_mb)
        return pool.size == max(1, settings.workers) and pool.settings == wanted

    def _new_engine(self, pool: WorkerPool) -> Engine:
        engine = Engine(pool, self.session.resolver(), log=lambda message: self.session.callbacks.log(message))
        engine.persist_results()  # a restarted editor serves unchanged files from the stored checks
        return engine

    def _warm_up(self, loop: asyncio.AbstractEventLoop) -> None:
        """Checks wait on `ready` from now on; the start itself begins on the loop's next
        turn, after the message being handled (`initialize`) has been answered: its thread
        would otherwise compete with the answer for the interpreter."""
        self.ready = loop.create_future()

        def begin() -> None:
            if self.closed:
                return  # shut down before it began
            loop.run_in_executor(self.session.analyser.executor, self._warm).add_done_callback(
                lambda future: loop.call_soon_threadsafe(self._warmed, future)
            )

        loop.call_soon(begin)

    def _warm(self) -> dict[str, Any]:
        started = time.perf_counter()
        engine = self.session.analyser.engine
        if engine is None:
            raise RuntimeError("no engine to start")
        hello = engine.start()
        self.session.callbacks.log(
            f"workers ready in {time.perf_counter() - started:.1f}s: python {hello.get('python')} "
            f"({hello.get('executable')}), torch {hello.get('torch_full')}"
        )
        self._prepare_targets(engine)
        return hello

    def _prepare_targets(self, engine: Engine) -> None:
        """Build the targets of each workspace folder's settings now, while the editor is
        still opening: their support tables (the exporters' registries, read in a child of
        the worker) would otherwise be read by the first check, before its first squiggle.
        Checks wait for this as for the workers; a folder whose settings cannot be read is
        left to its checks, which report why."""
        started = time.perf_counter()
        built: list[str] = []
        for folder in self.session.folders:
            try:
                # Built once per distinct settings (the engine keeps them): a second folder
                # with the same targets costs a lookup.
                settings = engine.resolver.for_directory(folder)
                built += [t.name for t in engine.targets_for(settings)]
                if self.session.settings.trusted:  # an untrusted session imports nothing: no view to warm
                    engine.warm(settings)
            except Exception as error:  # noqa: BLE001 - the first check of a file there says it again, worded
                self.session.callbacks.log(f"targets for {folder} not prepared: {error}", "debug")
        if built:
            names = ", ".join(dict.fromkeys(built))
            self.session.callbacks.log(f"targets {names} ready in {time.perf_counter() - started:.1f}s")

    def _warmed(self, future: asyncio.Future[dict[str, Any]]) -> None:
        session, error = self.session, future.exception()
        if error is not None:
            session.last_error = f"cannot start the analysis worker with {session.settings.python}: {error}"
            session.callbacks.show(
                f"atenlint: {session.last_error}. Set `atenlint.python` (or the interpreter) to a "
                f"Python with torch installed (`python -m pip install torch`).",
                "error",
            )
            session.status.set("error")
        else:
            session.status.set("idle")
            engine = session.analyser.engine
            session.status.note_run_level(engine.run_notes if engine else ())
        if self.ready is not None and not self.ready.done():
            self.ready.set_result(error is None)

    def shutdown(self) -> None:
        self.closed = True
        for pool in [*self.session.analyser.retired_pools(), self.pool]:
            if pool is not None:
                pool.close()
        executor = self.session.analyser.executor
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)

    def interpreter(self, settings: EditorSettings | None = None) -> str:
        """The interpreter the workers run. An untrusted session never executes one that
        lives in the workspace (a checked-in `.venv/bin/python` can be anything): it uses
        the server's own interpreter instead, and says so once."""
        settings = settings or self.session.settings
        python, folders = settings.python, self.session.folders
        if settings.trusted or not folders:
            return python
        candidates = {os.path.abspath(python)}
        found = shutil.which(python) if os.sep not in python else None
        if found:
            candidates.add(os.path.abspath(found))
        candidates |= {os.path.realpath(c) for c in candidates}
        roots = [os.path.realpath(f) for f in folders] + [os.path.abspath(f) for f in folders]
        inside = any(c == f or c.startswith(f.rstrip(os.sep) + os.sep) for c in candidates for f in roots)
        if not inside:
            return python
        message = (
            f"atenlint: this workspace is not trusted, so its interpreter {python} is not run; "
            f"the analysis uses {sys.executable} instead. Trust the workspace to use it."
        )
        if message not in self._told:
            self._told.add(message)
            self.session.callbacks.show(message, "warning")
        return sys.executable


def _discard(pool: WorkerPool) -> None:
    """Close a pool once its workers' starts are over: one closed while a start is under
    way would leave that worker running."""
    with contextlib.suppress(Exception):
        pool.warm(wait_for_all=True)
    pool.close()


class Session:
    def __init__(
        self,
        callbacks: Callbacks,
        settings: EditorSettings | None = None,
        folders: list[str] | None = None,
        pull: bool = False,
    ):
        self.callbacks = callbacks
        self.state = SessionState(settings or EditorSettings(), list(folders or []))
        # Trust comes from the client's initialization only (issue 21): a later configuration,
        # which a workspace can influence, never raises it.
        self.initially_trusted = self.state.settings.trusted
        self.pull = pull  # the client pulls diagnostics (textDocument/diagnostic); else we push
        self.analyser = Analyser(self)
        self.workers = Workers(self)
        self.status = Status(callbacks, self._describe)
        self.checks = Checks(self.state, self.analyser, self.status, callbacks, pull, lambda: self.workers.ready)
        # The document messages (the handlers call these).
        self.open = self.checks.open
        self.change = self.checks.change
        self.save = self.checks.save
        self.close = self.checks.close
        self.files_changed = self.checks.files_changed
        self.recheck_all = self.checks.recheck_all
        self.result_for = self.checks.result_for
        self.last_result = self.checks.last_result
        self._told_problems: set[str] = set()
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- views of the state and the workers --------------------------------
    @property
    def last_error(self) -> str | None:
        return self.status.last_error

    @last_error.setter
    def last_error(self, error: str | None) -> None:
        self.status.last_error = error

    @property
    def _announced(self) -> bool:
        return self.status.announced

    @_announced.setter
    def _announced(self, announced: bool) -> None:
        self.status.announced = announced

    @property
    def workspace_note(self) -> str | None:
        return self.status.workspace_note

    @property
    def settings(self) -> EditorSettings:
        return self.state.settings

    @property
    def folders(self) -> list[str]:
        return self.state.folders

    @property
    def documents(self) -> dict[str, Document]:
        return self.state.documents

    @property
    def workspace_results(self) -> dict[str, DocumentResult]:
        return self.state.workspace_results

    @property
    def engine(self) -> Engine | None:
        return self.analyser.engine

    @property
    def pool(self) -> WorkerPool | None:
        return self.workers.pool

    @pool.setter
    def pool(self, pool: WorkerPool | None) -> None:
        self.workers.pool = pool

    @property
    def _executor(self) -> ThreadPoolExecutor | None:
        return self.analyser.executor

    @property
    def analyses(self) -> int:
        return self.analyser.analyses

    def findings_for(self, path: str) -> list[Finding]:
        return self.state.findings_for(path)

    def source_text_for(self, path: str) -> str | None:
        return self.state.source_text_for(path)

    def _document_at(self, path: str) -> Document | None:
        return self.state.document_at(path)

    def _interpreter(self, settings: EditorSettings | None = None) -> str:
        return self.workers.interpreter(settings)

    # -- lifecycle -------------------------------------------------------
    def start(self, pool: WorkerPool | None = None) -> None:
        """Start workers in the background (or adopt `pool`'s, already starting: see
        `Workers.start`); requests wait for them, the client does not."""
        self._loop = asyncio.get_running_loop()
        self.status.state = "starting"
        self._report_problems()
        self.workers.start(self._loop, pool)

    def announce(self) -> None:
        """Tell the client where we are (custom notifications wait for `initialized`)."""
        self.status.announced = True
        self.status.set(self.status.state)

    def use_engine(self, engine: Engine) -> None:
        """Run on an engine that is already warm (tests, benchmarks): no workers of our own."""
        self._loop = asyncio.get_running_loop()
        self.analyser.executor = self.analyser.executor or ThreadPoolExecutor(
            max_workers=2, thread_name_prefix="atenlint"
        )
        self.analyser.replace_engine(engine, None)
        self.workers.ready = None
        self.status.state = "idle"
        self.status.note_run_level(engine.run_notes)

    def shutdown(self) -> None:
        self.workers.shutdown()

    def resolver(self) -> SettingsResolver:
        # Configuration never comes from above the workspace folders (issue 12).
        return SettingsResolver(overrides=self.settings.overrides(), workspace_roots=list(self.folders))

    def configure(self, settings: EditorSettings) -> bool:
        """Apply new editor settings; True when open documents need a re-check."""
        if settings.trusted and not self.initially_trusted:
            self.callbacks.log("ignoring `trusted` from the configuration: trust is given at initialization", "warning")
            settings = dataclasses.replace(settings, trusted=False)
        old, self.state.settings = self.settings, settings
        self._report_problems()
        if self.engine is not None:
            self.engine.resolver = self.resolver()
        self.analyser.clear_cache()
        if self.workers.interpreter(old) != self.workers.interpreter(settings) or old.workers != settings.workers:
            self.callbacks.log(f"interpreter or workers changed: restarting workers with {settings.python}")
            self.workers.restart()
        return True

    def project_settings_changed(self) -> None:
        """A pyproject.toml changed: forget resolved settings and cached results."""
        if self.engine is not None:
            self.engine.resolver = self.resolver()
        self.analyser.clear_cache()

    def _report_problems(self) -> None:
        for problem in self.settings.problems:
            if problem not in self._told_problems:
                self._told_problems.add(problem)
                self.callbacks.show(f"atenlint: ignoring an invalid setting: {problem}", "warning")

    # -- analysis reports (the `analysis.Reporter` the analyser calls) -----
    def log(self, message: str, level: str = "info") -> None:
        self.callbacks.log(message, level)

    def busy(self, running: int) -> None:
        self.status.set("busy" if running else "idle")

    def failed(self, error: str) -> None:
        self.status.last_error = error

    def restricted(self) -> None:
        self.status.restricted()

    # -- whole workspace -------------------------------------------------
    def check_workspace(
        self, progress: Callable[[int, int, str], None], cancelled: threading.Event
    ) -> dict[str, DocumentResult]:
        """Analyse every Python file of the workspace folders (blocking; run in a thread).
        What the event loop also changes (open documents, the results) is read and written
        on the loop: a snapshot first, the results last; a file that changed on disk while
        it was read keeps no result of this scan."""
        scan = self._on_loop(self.state.workspace_snapshot)

        def noted(result: DocumentResult) -> None:  # on the checking thread
            loop = self._loop
            if result.run_notes and loop is not None and not loop.is_closed():
                loop.call_soon_threadsafe(self.status.note_run_level, result.run_notes)

        self._on_loop(lambda: setattr(self.status, "workspace_note", scan.why))
        results, note = self.analyser.check_workspace(scan, progress, cancelled, noted)
        self._on_loop(lambda: setattr(self.status, "workspace_note", note))
        stored: dict[str, DocumentResult] = self._on_loop(
            lambda: self.state.store_workspace_results(results, scan.generation)
        )
        return stored

    def workspace_folders(self) -> tuple[list[str], str | None]:
        return self.state.workspace_folders()

    def _on_loop(self, function: Callable[[], Any]) -> Any:
        """Run `function` on the event loop and wait for its value (from a worker thread);
        directly when there is no running loop to hand it to, or when on the loop already."""
        loop = self._loop
        if loop is None or loop.is_closed() or not loop.is_running() or _on_loop_thread(loop):
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

    # -- status ----------------------------------------------------------
    def workspace_check_started(self) -> None:
        self.status.workspace_check(True)

    def workspace_check_ended(self) -> None:
        self.status.workspace_check(False)

    def _describe(self) -> dict[str, Any]:
        hello = self.engine.hello if self.engine else {}
        try:
            targets = list(
                self.settings.targets
                or self.resolver().for_directory(self.folders[0] if self.folders else os.getcwd()).targets
            )
        except Exception:  # noqa: BLE001
            targets = list(self.settings.targets or ())
        return {
            "targets": targets,
            "torch": hello.get("torch"),
            "python": hello.get("executable") or self.settings.python,
            "trusted": self.settings.trusted,
            "trigger": self.settings.trigger,
            "executeUnsaved": self.settings.execute_unsaved,
        }


def _on_loop_thread(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


__all__ = [
    "Callbacks",
    "DocumentResult",
    "FileCapture",
    "Session",
    "analysis_input",
    "call_site_at",
    "findings_at",
    "path_uri",
    "split_run_notes",
]
