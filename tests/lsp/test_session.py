"""The session's scheduling: one run per save (a watcher event for the content a save
already reported runs nothing), a closed document's check is cancelled (issue 21: after
500 open/close pairs a new file waited minutes), and trust comes only from initialization."""

from __future__ import annotations

import asyncio
import dataclasses
import time

from fake_engine import FakeEngine
from session_support import make_session, settle, write

from atenlint.lsp.session import path_uri
from atenlint.lsp.settings import EditorSettings, editor_settings

TAKE = "import torch\n\n\ndef gather(x, i):\n    return torch.take(x, i)\n"
CLEAN = "import torch\n\n\ndef gather(x, i):\n    return x.reshape(-1)[i]\n"
USER = "import torch.nn as nn\nfrom base import gather\n\n\nclass Mid(nn.Module):\n    def forward(self, x, i):\n        return gather(x, i)\n"


def test_a_watcher_event_for_the_saved_content_runs_nothing(tmp_path):
    base, mid = str(tmp_path / "base.py"), str(tmp_path / "mid.py")
    write(base, TAKE)
    write(mid, USER)
    engine = FakeEngine(delay=0.05)

    async def scenario():
        session, _ = make_session(engine, EditorSettings(trigger="onSave"), [str(tmp_path)])
        try:
            for path in (base, mid):
                session.open(path_uri(path), path, 1, TAKE if path == base else USER)
            await settle(session)
            before = engine.captures
            write(base, CLEAN)
            session.change(path_uri(base), 2, CLEAN)
            session.save(path_uri(base), CLEAN)  # base.py and mid.py (which imports it) re-checked
            await asyncio.sleep(0.01)  # VS Code's watcher reports the saved file while they run
            session.files_changed([base])
            during = engine.captures - before
            await settle(session)
            after_save = engine.captures - before
            session.files_changed([base])  # again, once idle: the cache answers
            await settle(session)
            shown = {p: [f.code for f in session.findings_for(p)] for p in (base, mid)}
            return during, after_save, engine.captures - before, shown
        finally:
            session.shutdown()

    during, after_save, total, shown = asyncio.run(scenario())
    assert during <= 2 and after_save == 2 and total == 2  # one check of each file per save
    assert shown == {base: [], mid: []}


def test_a_changed_file_notified_again_is_rechecked(tmp_path):
    """The same content notified twice is one change; a different content is a new one."""
    base = str(tmp_path / "base.py")
    write(base, TAKE)
    engine = FakeEngine()

    async def scenario():
        session, _ = make_session(engine, EditorSettings(trigger="onSave"), [str(tmp_path)])
        try:
            session.open(path_uri(base), base, 1, TAKE)
            await settle(session)
            write(base, CLEAN)
            session.files_changed([base])
            await settle(session)
            clean = [f.code for f in session.findings_for(base)]
            write(base, TAKE)
            session.files_changed([base])
            await settle(session)
            return clean, [f.code for f in session.findings_for(base)]
        finally:
            session.shutdown()

    assert asyncio.run(scenario()) == ([], ["MPS001"])


def test_closing_documents_cancels_their_checks(tmp_path):
    engine = FakeEngine(delay=0.05)
    paths = []
    for index in range(20):
        path = str(tmp_path / f"m{index}.py")
        write(path, TAKE)
        paths.append(path)
    fresh = str(tmp_path / "fresh.py")
    write(fresh, TAKE)

    async def scenario():
        session, _ = make_session(engine, EditorSettings(trigger="onSave"), [str(tmp_path)])
        try:
            for _ in range(25):  # 500 open/close pairs
                for path in paths:
                    session.open(path_uri(path), path, 1, TAKE)
                    await asyncio.sleep(0)  # its check starts (queued on the thread pool) ...
                    session.close(path_uri(path))  # ... and is no use any more
            ran = session.analyses
            started = time.perf_counter()
            session.open(path_uri(fresh), fresh, 1, TAKE)
            result = await asyncio.wait_for(session.result_for(path_uri(fresh)), 30)
            waited = time.perf_counter() - started
            await settle(session)
            return ran, waited, result, engine.captures
        finally:
            session.shutdown()

    ran, waited, result, captures = asyncio.run(scenario())
    # Only checks already running on the pool's 2 threads when their document closed ran
    # (~0.05 s each while the loop opened and closed): far from one per pair.
    assert ran <= 100 and captures <= 100
    assert result is not None and [f.code for f in result.findings] == ["MPS001"]
    assert waited < 2.0  # served at once, not behind 500 stale checks (~12 s of them)


def test_trust_comes_only_from_initialization(tmp_path):
    async def scenario():
        untrusted = editor_settings({"trusted": False})
        session, callbacks = make_session(FakeEngine(), untrusted, [str(tmp_path)])
        try:
            # A workspace can influence configuration (.vscode/settings.json): it never trusts.
            session.configure(editor_settings({"trusted": True}, base=session.settings))
            from_configuration = session.settings.trusted
            session.configure(dataclasses.replace(session.settings, trusted=True, trigger="onType"))
            return from_configuration, session.settings, callbacks.logged
        finally:
            session.shutdown()

    from_configuration, settings, logged = asyncio.run(scenario())
    assert from_configuration is False
    assert settings.trusted is False and settings.trigger == "onType"  # the rest of the settings apply
    assert any("trust is given at initialization" in m for m in logged)


def test_a_trusted_session_may_be_restricted_by_configuration(tmp_path):
    async def scenario():
        session, _ = make_session(FakeEngine(), editor_settings({"trusted": True}), [str(tmp_path)])
        try:
            session.configure(editor_settings({"trusted": False}, base=session.settings))
            return session.settings.trusted
        finally:
            session.shutdown()

    assert asyncio.run(scenario()) is False
