"""Start the workers from the client's `initialize` before the server imports pygls (issue 22):
the workers' torch import is the longest wait of a cold server, and nothing about them needs
pygls. They start only where their interpreter is the settings' own: a trusted session, or
one with no folder (an untrusted workspace's interpreter is the session's choice,
`Workers.interpreter`). The session adopts them when they are what it would start
(`Workers.start` checks), else closes them.

Imports only atenlint's settings and worker pool, never pygls or the analysis side."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..worker.pool import WorkerPool
    from .settings import EditorSettings

# What names a workspace in `initialize`; with any of them the session has folders.
_FOLDER_KEYS = ("workspaceFolders", "rootUri", "rootPath")


class RelayedLog:
    """The pool's log before the server can show it: kept, then handed on in order once the
    server `attach`es its own."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: list[str] = []
        self._target: Callable[[str], None] | None = None

    def __call__(self, message: str) -> None:
        with self._lock:
            if self._target is None:
                self._kept.append(message)
                return
            target = self._target
        target(message)

    def attach(self, target: Callable[[str], None]) -> None:
        with self._lock:
            kept, self._kept, self._target = self._kept, [], target
        for message in kept:
            target(message)


def early_pool(settings: EditorSettings, has_folders: bool, log: Callable[[str], None]) -> WorkerPool | None:
    """The session's worker pool, its workers starting now; None where the interpreter is
    not yet known (an untrusted session with folders)."""
    if not settings.trusted and has_folders:
        return None
    from ..worker.pool import WorkerPool, WorkerSettings

    pool = WorkerPool(
        settings.workers, WorkerSettings(python=settings.python, memory_limit_mb=settings.memory_limit_mb), log=log
    )
    pool.start_in_background()
    return pool


def prestart_workers(initialize_params: dict[str, Any] | None) -> tuple[WorkerPool, RelayedLog] | None:
    """Workers starting for the session `initialize_params` (the raw request) will make, and
    the log they write to until the server attaches its own."""
    if initialize_params is None:
        return None
    from .settings import editor_settings

    options = initialize_params.get("initializationOptions")
    settings = editor_settings(options if isinstance(options, dict) else None)
    has_folders = any(initialize_params.get(key) for key in _FOLDER_KEYS)
    log = RelayedLog()
    pool = early_pool(settings, has_folders, log)
    return (pool, log) if pool is not None else None
