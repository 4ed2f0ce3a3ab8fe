"""Workers started from the raw `initialize` before the server imports pygls (lsp/prestart.py):
only where the interpreter is the settings' own, with the settings the session will have,
their log kept until the server can show it."""

from __future__ import annotations

from typing import ClassVar

import pytest

from atenlint.lsp import prestart
from atenlint.worker import pool as worker_pool


class _RecordedPool:
    """Stands in for WorkerPool: records how it was made and whether it was started."""

    made: ClassVar[list[_RecordedPool]] = []

    def __init__(self, size, settings, log) -> None:
        self.size, self.settings, self.log, self.started = size, settings, log, False
        _RecordedPool.made.append(self)

    def start_in_background(self) -> None:
        self.started = True


@pytest.fixture
def recorded(monkeypatch) -> list[_RecordedPool]:
    _RecordedPool.made = []
    monkeypatch.setattr(worker_pool, "WorkerPool", _RecordedPool)
    return _RecordedPool.made


def test_a_trusted_session_starts_its_workers_with_its_own_settings(recorded) -> None:
    params = {
        "rootUri": "file:///ws",
        "initializationOptions": {"trusted": True, "workers": 2, "python": "/opt/py/bin/python", "memoryLimitMb": 900},
    }
    started = prestart.prestart_workers(params)
    assert started is not None
    (pool,) = recorded
    assert started[0] is pool and pool.started
    assert pool.size == 2
    assert pool.settings == worker_pool.WorkerSettings(python="/opt/py/bin/python", memory_limit_mb=900)


def test_a_session_with_no_folder_starts_its_workers(recorded) -> None:
    assert prestart.prestart_workers({"capabilities": {}, "initializationOptions": {"trusted": False}}) is not None
    assert len(recorded) == 1


@pytest.mark.parametrize("folder_key", ["workspaceFolders", "rootUri", "rootPath"])
def test_an_untrusted_workspace_starts_nothing_before_the_session_chooses_its_interpreter(recorded, folder_key) -> None:
    folder = [{"uri": "file:///ws", "name": "ws"}] if folder_key == "workspaceFolders" else "file:///ws"
    params = {folder_key: folder, "initializationOptions": {"trusted": False, "python": "/ws/.venv/bin/python"}}
    assert prestart.prestart_workers(params) is None
    assert recorded == []


def test_no_initialize_starts_nothing(recorded) -> None:
    assert prestart.prestart_workers(None) is None
    assert recorded == []


def test_the_log_is_kept_until_attached_then_handed_on_in_order() -> None:
    log = prestart.RelayedLog()
    shown: list[str] = []
    log("worker 1 starting")
    log("worker 1 up")
    log.attach(shown.append)
    log("worker 2 up")
    assert shown == ["worker 1 starting", "worker 1 up", "worker 2 up"]
