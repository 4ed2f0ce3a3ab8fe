"""The fast targets' verdicts are shown before the export targets' (issue 10): a check whose
file has both publishes the dispatcher-view result first, then the full one replaces it;
never a stale partial, never a dropped re-check, one publish when there is nothing to wait for.

The fake engine holds a capture at its partial answer (threading events), so every state in
between is observed deterministically, without sleeps."""

from __future__ import annotations

import asyncio
import dataclasses

from fake_engine import FakeEngine
from session_support import RecordingCallbacks, settle

from atenlint.lsp.session import Session
from atenlint.lsp.settings import EditorSettings

TAKE = "import torch\ny = torch.take(x, i)\n"
HEAVISIDE = "import torch\n\ny = torch.heaviside(x, i)\n"


class HistoryCallbacks(RecordingCallbacks):
    def __init__(self):
        super().__init__()
        self.history: list[tuple[str, list]] = []

    def publish(self, uri, version, findings):
        super().publish(uri, version, findings)
        self.history.append((uri, sorted((f.target or "", f.code, f.range.start.line) for f in findings)))


def _session(engine, tmp_path, pull=False, settings=None):
    callbacks = HistoryCallbacks()
    session = Session(callbacks, settings or EditorSettings(), [str(tmp_path)], pull=pull)
    session.use_engine(engine)
    return session, callbacks


async def _until(condition, what: str, timeout: float = 30.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise TimeoutError(f"never: {what}")
        await asyncio.sleep(0.001)


def _file(tmp_path, text):
    path = tmp_path / "model.py"
    path.write_text(text)
    return path


def test_the_fast_targets_are_published_first_then_the_full_result(tmp_path):
    path = _file(tmp_path, TAKE)
    engine = FakeEngine(slow_target="onnx:17")
    engine.after_partial.clear()

    async def run():
        session, callbacks = _session(engine, tmp_path)
        session.open(path.as_uri(), str(path), 1, TAKE)
        await _until(lambda: callbacks.history, "the partial publish")
        first = list(callbacks.history)
        engine.after_partial.set()
        await settle(session)
        return first, callbacks.history

    first, history = asyncio.run(run())
    assert first == [(path.as_uri(), [("mps", "MPS001", 1)])]
    assert history[-1] == (path.as_uri(), [("mps", "MPS001", 1), ("onnx:17", "ONNX001", 1)])
    assert len(history) == 2


def test_only_fast_targets_publish_once(tmp_path):
    path = _file(tmp_path, TAKE)

    async def run():
        session, callbacks = _session(FakeEngine(), tmp_path)
        session.open(path.as_uri(), str(path), 1, TAKE)
        await settle(session)
        return callbacks.history

    history = asyncio.run(run())
    assert history == [(path.as_uri(), [("mps", "MPS001", 1)])]


def test_a_partial_of_a_superseded_check_is_never_shown_and_the_recheck_runs(tmp_path):
    path = _file(tmp_path, TAKE)
    engine = FakeEngine(slow_target="onnx:17")
    engine.before_partial.clear()

    async def run():
        session, callbacks = _session(engine, tmp_path)
        uri = path.as_uri()
        session.open(uri, str(path), 1, TAKE)
        await _until(lambda: engine.captures == 1, "the first check started")
        path.write_text(HEAVISIDE)  # saved while the first check runs
        session.change(uri, 2, HEAVISIDE)
        session.save(uri)
        engine.before_partial.set()
        await settle(session)
        return callbacks.history

    history = asyncio.run(run())
    shown_lines = {line for _, findings in history for _, _, line in findings}
    assert 1 not in shown_lines  # nothing of the first text (torch.take at line 1) ever shown
    assert history[-1] == (path.as_uri(), [("mps", "MPS001", 2)])  # heaviside: mps only
    assert engine.captures == 2


def test_the_slow_findings_stay_while_the_same_text_is_rechecked(tmp_path):
    text = "import torch\nimport helper\ny = torch.take(x, i)\n"
    path = _file(tmp_path, text)
    helper = tmp_path / "helper.py"
    helper.write_text("A = 1\n")
    engine = FakeEngine(slow_target="onnx:17")

    async def run():
        session, callbacks = _session(engine, tmp_path)
        uri = path.as_uri()
        session.open(uri, str(path), 1, text)
        await settle(session)
        engine.after_partial.clear()
        helper.write_text("A = 2\n")
        session.files_changed([str(helper)])  # an imported file changed: the same text re-checked
        await _until(lambda: engine.partials == 2, "the second partial")
        await _until(lambda: len(callbacks.history) == 3, "the second partial's publish")
        during = callbacks.history[-1]
        engine.after_partial.set()
        await settle(session)
        return during, callbacks.history[-1]

    during, final = asyncio.run(run())
    both = [("mps", "MPS001", 2), ("onnx:17", "ONNX001", 2)]
    assert during == (path.as_uri(), both)  # no blink of the export squiggle
    assert final == (path.as_uri(), both)


def test_the_slow_findings_of_an_older_text_are_not_kept(tmp_path):
    path = _file(tmp_path, TAKE)
    engine = FakeEngine(slow_target="onnx:17")
    moved = "import torch\n\n\ny = torch.take(x, i)\n"

    async def run():
        session, callbacks = _session(engine, tmp_path)
        uri = path.as_uri()
        session.open(uri, str(path), 1, TAKE)
        await settle(session)
        engine.after_partial.clear()
        path.write_text(moved)
        session.change(uri, 2, moved)
        session.save(uri)
        await _until(lambda: engine.partials == 2, "the second partial")
        await _until(lambda: len(callbacks.history) == 3, "the second partial's publish")
        during = callbacks.history[-1]
        engine.after_partial.set()
        await settle(session)
        return during, callbacks.history[-1]

    during, final = asyncio.run(run())
    assert during == (path.as_uri(), [("mps", "MPS001", 3)])  # never ONNX001 at the old line 1
    assert final == (path.as_uri(), [("mps", "MPS001", 3), ("onnx:17", "ONNX001", 3)])


def test_a_pull_gets_the_partial_result_then_a_refresh_for_the_full_one(tmp_path):
    path = _file(tmp_path, TAKE)
    engine = FakeEngine(slow_target="onnx:17")
    engine.after_partial.clear()

    async def run():
        session, callbacks = _session(engine, tmp_path, pull=True)
        uri = path.as_uri()
        session.open(uri, str(path), 1, TAKE)
        partial = await asyncio.wait_for(session.result_for(uri, partial=True), 30)
        partial_findings = [(f.target, f.code) for f in session.findings_for(str(path))]
        partial_id = session.state.served(str(path)).result_id  # what a pull answers with now
        refreshes = callbacks.refreshes
        full_waiter = asyncio.ensure_future(session.result_for(uri))
        await asyncio.sleep(0)
        assert not full_waiter.done()  # a plain request waits for the full result
        engine.after_partial.set()
        full = await asyncio.wait_for(full_waiter, 30)
        await settle(session)
        full_id = session.state.served(str(path)).result_id
        return partial, partial_findings, refreshes, full, callbacks.refreshes, partial_id, full_id

    partial, partial_findings, refreshes, full, final_refreshes, partial_id, full_id = asyncio.run(run())
    assert partial.partial and partial_findings == [("mps", "MPS001")]
    assert refreshes >= 1 and final_refreshes > refreshes
    assert not full.partial and sorted(f.target for f in full.findings) == ["mps", "onnx:17"]
    assert full_id != partial_id  # the pull after the refresh is answered in full


def test_a_crash_after_the_partial_is_still_shown_as_the_crash(tmp_path):
    """The worker died after its partial answer: the full result (ATL006 from the engine)
    replaces the partial one, whose findings do not linger."""
    path = _file(tmp_path, TAKE)

    class CrashAfterPartial(FakeEngine):
        def capture(self, path, text=None, overlays=None, display=None, execute=True, on_partial=None, settings=None):
            result = super().capture(path, text, overlays, display, execute, on_partial)
            from fake_engine import _finding

            result.found = [_finding(result.path, 0, 0, "ATL006", "warning", "the worker process was killed")]
            return result

    async def run():
        session, callbacks = _session(CrashAfterPartial(slow_target="onnx:17"), tmp_path)
        session.open(path.as_uri(), str(path), 1, TAKE)
        await settle(session)
        return callbacks.history

    history = asyncio.run(run())
    assert history[0] == (path.as_uri(), [("mps", "MPS001", 1)])
    assert history[-1] == (path.as_uri(), [("", "ATL006", 0)])


def test_no_partial_for_a_cached_result(tmp_path):
    path = _file(tmp_path, TAKE)
    engine = FakeEngine(slow_target="onnx:17")

    async def run():
        session, callbacks = _session(engine, tmp_path)
        uri = path.as_uri()
        session.open(uri, str(path), 1, TAKE)
        await settle(session)
        before = len(callbacks.history)
        session.recheck_all()  # same input, nothing changed: answered from the cache
        await settle(session)
        return before, callbacks.history

    before, history = asyncio.run(run())
    assert before == 2 and len(history) == 3 and engine.partials == 1


def test_untrusted_static_checks_have_no_partial(tmp_path):
    path = _file(tmp_path, TAKE)
    engine = FakeEngine(slow_target="onnx:17")

    async def run():
        session, callbacks = _session(engine, tmp_path, settings=dataclasses.replace(EditorSettings(), trusted=False))
        session.open(path.as_uri(), str(path), 1, TAKE)
        await settle(session)
        return callbacks.history

    history = asyncio.run(run())
    assert len(history) == 1 and engine.partials == 0


def test_a_pull_never_gets_the_partial_of_a_superseded_check(tmp_path):
    path = _file(tmp_path, TAKE)
    engine = FakeEngine(slow_target="onnx:17")
    engine.after_partial.clear()

    async def run():
        session, _ = _session(engine, tmp_path, pull=True)
        uri = path.as_uri()
        session.open(uri, str(path), 1, TAKE)
        first = await asyncio.wait_for(session.result_for(uri, partial=True), 30)
        path.write_text(HEAVISIDE)
        session.change(uri, 2, HEAVISIDE)
        session.save(uri)  # the running check is superseded
        waiter = asyncio.ensure_future(session.result_for(uri, partial=True))
        await asyncio.sleep(0)
        waiting = not waiter.done()
        engine.after_partial.set()
        answer = await asyncio.wait_for(waiter, 30)
        await settle(session)
        return first, waiting, answer

    first, waiting, answer = asyncio.run(run())
    assert first.text == TAKE and waiting
    assert answer.text == HEAVISIDE
