"""The session prepares what the first check needs while the editor opens (issue 22): the
targets of each workspace folder's settings are built right after the workers start, and
the workers are asked to warm the views those targets judge (a trusted session only)."""

from __future__ import annotations

import asyncio
import os
import threading
from dataclasses import dataclass, field

import pytest
from session_support import RecordingCallbacks

from atenlint.config import ConfigError, SettingsResolver
from atenlint.lsp.session import Session
from atenlint.lsp.settings import EditorSettings


@dataclass
class _Target:
    name: str


@dataclass
class _Engine:
    """What `_prepare_targets` uses of the engine: its resolver, `targets_for` and `warm`."""

    resolver: SettingsResolver
    built: list[tuple[str, ...]] = field(default_factory=list)
    warmed: list[tuple[str, ...]] = field(default_factory=list)

    def targets_for(self, settings):
        self.built.append(settings.targets)
        return [_Target(name) for name in settings.targets]

    def warm(self, settings):
        self.warmed.append(settings.targets)
        return []


def _folder(root, name: str, pyproject: str) -> str:
    folder = os.path.join(str(root), name)
    os.makedirs(folder)
    with open(os.path.join(folder, "pyproject.toml"), "w", encoding="utf-8") as handle:
        handle.write(pyproject)
    return folder


def test_each_folder_s_targets_are_built_before_the_first_check(tmp_path):
    one = _folder(tmp_path, "one", '[tool.atenlint]\ntargets = ["mps", "onnx:17"]\n')
    two = _folder(tmp_path, "two", '[tool.atenlint]\ntargets = ["cuda"]\n')
    callbacks = RecordingCallbacks()
    session = Session(callbacks, EditorSettings(), [one, two])
    engine = _Engine(SettingsResolver(workspace_roots=[one, two]))
    session.workers._prepare_targets(engine)
    assert engine.built == [("mps", "onnx:17"), ("cuda",)]
    assert engine.warmed == engine.built  # each folder's views, asked for once its targets exist
    assert any(m.startswith("targets mps, onnx:17, cuda ready in") for m in callbacks.logged)


def test_an_untrusted_session_builds_the_targets_but_warms_no_view(tmp_path):
    """Nothing of an untrusted workspace is imported: no view will be asked for."""
    folder = _folder(tmp_path, "one", '[tool.atenlint]\ntargets = ["mps"]\n')
    session = Session(RecordingCallbacks(), EditorSettings(trusted=False), [folder])
    engine = _Engine(SettingsResolver(workspace_roots=[folder]))
    session.workers._prepare_targets(engine)
    assert engine.built == [("mps",)] and engine.warmed == []


def test_a_folder_whose_settings_cannot_be_read_is_left_to_its_checks(tmp_path):
    broken = _folder(tmp_path, "broken", '[tool.atenlint]\ntargets = ["no-such-backend"]\n')
    fine = _folder(tmp_path, "fine", '[tool.atenlint]\ntargets = ["mps"]\n')
    callbacks = RecordingCallbacks()
    session = Session(callbacks, EditorSettings(), [broken, fine])
    engine = _Engine(SettingsResolver(workspace_roots=[broken, fine]))
    with pytest.raises(ConfigError):  # what its checks will report
        engine.resolver.for_directory(broken)
    session.workers._prepare_targets(engine)  # no exception: the broken folder is skipped
    assert engine.built == [("mps",)]
    assert any(m.startswith(f"targets for {broken} not prepared") for m in callbacks.logged)


def test_the_workers_start_after_the_message_that_started_the_session_is_answered(tmp_path):
    """`initialize` starts the session; its answer must not wait for (or compete with) the
    workers' start, which begins on the event loop's next turn. A session shut down before
    then starts no worker at all."""

    async def scenario():
        session = Session(RecordingCallbacks(), EditorSettings(), [str(tmp_path)])
        session.start()
        ready = session.workers.ready
        started_at_once = bool(session.pool._all)
        session.shutdown()
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        return ready, started_at_once, list(session.pool._all)

    ready, started_at_once, workers = asyncio.run(scenario())
    assert ready is not None and not ready.done()  # checks wait on it from the start
    assert not started_at_once
    assert workers == []


def test_workers_started_before_the_session_are_adopted_when_they_are_its_own(monkeypatch):
    """The server starts the workers before it imports the session (their torch import
    overlaps those imports); the session adopts them when they are what it would start,
    else it starts its own and closes those once their start is over."""
    from atenlint.worker.pool import WorkerPool, WorkerSettings

    settings = EditorSettings()

    async def start_with(early: WorkerPool) -> WorkerPool | None:
        session = Session(RecordingCallbacks(), settings, [])
        monkeypatch.setattr(session.workers, "_warm_up", lambda loop: None)  # no worker process here
        session.start(early)
        adopted = session.workers.pool
        session.shutdown()
        return adopted

    own = WorkerPool(settings.workers, WorkerSettings(python=settings.python, memory_limit_mb=settings.memory_limit_mb))
    assert asyncio.run(start_with(own)) is own

    closed: list[WorkerPool] = []
    other = WorkerPool(settings.workers, WorkerSettings(python=os.path.join(os.sep, "no", "such", "python")))
    monkeypatch.setattr(other, "warm", lambda wait_for_all=False: {})
    monkeypatch.setattr(other, "close", lambda: closed.append(other))
    adopted = asyncio.run(start_with(other))
    assert adopted is not None and adopted is not other
    for thread in threading.enumerate():  # closed by a thread of its own, once the starts are over
        if thread.name == "atenlint-discard":
            thread.join()
    assert closed == [other]
