"""The session's threads (issue 15): Check Workspace runs on a worker thread but reads and
writes what the event loop changes only on the loop; replacing the worker pool (another
interpreter) never closes it under a running check, so no false "worker crashed" (ATL006).

Captures are held on threading events, so each interleaving is produced on purpose."""

from __future__ import annotations

import asyncio
import dataclasses
import threading

import pytest
from fake_engine import FakeEngine
from session_support import make_session, settle

import atenlint.lsp.session as session_module
from atenlint.lsp.results import internal_error, make_result
from atenlint.lsp.settings import EditorSettings

TAKE = "import torch\ny = torch.take(x, i)\n"


class HeldEngine(FakeEngine):
    """A fake engine whose captures of `held` paths wait for `release`."""

    def __init__(self, held=()):
        super().__init__()
        self.held = {str(p) for p in held}
        self.release = threading.Event()
        self.entered = threading.Event()
        self.hello = {"torch": "fake"}

    def start(self):
        return self.hello

    def capture(self, path, text=None, overlays=None, display=None, execute=True, on_partial=None, settings=None):
        if str(path) in self.held:
            self.entered.set()
            assert self.release.wait(30), "the test never released the capture"
        return super().capture(path, text, overlays, display, execute, on_partial)


class FakePool:
    def __init__(self, *args, **kwargs):
        self.closed = False

    def close(self):
        self.closed = True


@pytest.fixture
def replaced_workers(monkeypatch):
    """What `_restart_workers` builds: fake pools and engines, recorded in order."""
    made = {"pools": [], "engines": []}

    def pool(*args, **kwargs):
        made["pools"].append(FakePool())
        return made["pools"][-1]

    def engine(pool, resolver, log=None):
        made["engines"].append(HeldEngine())
        return made["engines"][-1]

    monkeypatch.setattr(session_module, "WorkerPool", pool)
    monkeypatch.setattr(session_module, "Engine", engine)
    return made


async def _wait_thread(event: threading.Event) -> None:
    assert await asyncio.get_running_loop().run_in_executor(None, event.wait, 30)


def test_changing_the_interpreter_never_closes_the_pool_under_a_running_check(tmp_path, replaced_workers):
    path = tmp_path / "model.py"
    path.write_text(TAKE)
    old_engine, old_pool = HeldEngine(held=[path]), FakePool()

    async def run():
        session, callbacks = make_session(old_engine, EditorSettings(), [str(tmp_path)])
        session.pool = old_pool
        uri = path.as_uri()
        session.open(uri, str(path), 1, TAKE)
        await _wait_thread(old_engine.entered)  # the check runs on the old pool now
        session.configure(dataclasses.replace(session.settings, python="/another/python"))
        session.recheck_all()
        closed_during = old_pool.closed
        old_engine.release.set()
        await settle(session)
        return closed_during, callbacks.published[uri], session

    closed_during, published, session = asyncio.run(run())
    assert not closed_during  # the running check kept its pool
    assert old_pool.closed  # ... which closed once that check ended
    assert [f.code for f in published] == ["MPS001"]  # no false ATL006
    new_engine = replaced_workers["engines"][-1]
    assert session.engine is new_engine and new_engine.captures == 1  # re-checked on the new pool


def test_changing_the_interpreter_when_idle_closes_the_old_pool_at_once(tmp_path, replaced_workers):
    async def run():
        session, _ = make_session(HeldEngine(), EditorSettings(), [str(tmp_path)])
        old_pool = session.pool = FakePool()
        session.configure(dataclasses.replace(session.settings, python="/another/python"))
        closed = old_pool.closed
        await settle(session)
        session.shutdown()
        return closed, replaced_workers["pools"][-1].closed

    closed, new_closed = asyncio.run(run())
    assert closed and new_closed


def test_a_file_changed_during_check_workspace_keeps_no_result_of_it(tmp_path):
    first, second = tmp_path / "a.py", tmp_path / "b.py"
    first.write_text(TAKE)
    second.write_text(TAKE)
    engine = HeldEngine(held=[first])

    async def run():
        session, _ = make_session(engine, EditorSettings(), [str(tmp_path)])
        session.workspace_results[str(second)] = make_result(
            str(second), None, internal_error(str(second), "an older scan's result"), (), 0.0
        )
        loop = asyncio.get_running_loop()
        scan = loop.run_in_executor(session._executor, session.check_workspace, lambda *a: None, threading.Event())
        await _wait_thread(engine.entered)
        # Meanwhile on the loop: documents come and go, and b.py is saved by another tool.
        for index in range(50):
            other = tmp_path / f"open{index}.py"
            session.open(other.as_uri(), str(other), 1, "x = 1\n")
            session.close(other.as_uri())
        second.write_text("x = 2\n")
        session.files_changed([str(second)])
        engine.release.set()
        results = await scan
        await settle(session)
        return results, dict(session.workspace_results)

    results, stored = asyncio.run(run())
    assert str(first) in results and str(first) in stored
    assert str(second) not in results and str(second) not in stored  # read before its change


def test_check_workspace_holds_the_engine_against_a_pool_swap(tmp_path, replaced_workers):
    path = tmp_path / "a.py"
    path.write_text(TAKE)
    engine, pool = HeldEngine(held=[path]), FakePool()

    async def run():
        session, _ = make_session(engine, EditorSettings(), [str(tmp_path)])
        session.pool = pool
        loop = asyncio.get_running_loop()
        scan = loop.run_in_executor(session._executor, session.check_workspace, lambda *a: None, threading.Event())
        await _wait_thread(engine.entered)
        session.configure(dataclasses.replace(session.settings, python="/another/python"))
        closed_during = pool.closed
        engine.release.set()
        results = await scan
        return closed_during, pool.closed, results

    closed_during, closed_after, results = asyncio.run(run())
    assert not closed_during and closed_after
    assert [f.code for f in results[str(path)].findings] == ["MPS001"]
