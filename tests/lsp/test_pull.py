"""Pull diagnostics serve exactly what the session computed (issue 19): a document's report
is the union of its own findings and those other files' results place in it, with a
`resultId` over exactly that, so a VS Code-like client (keeps the last full report, sends
`previousResultId`, re-pulls on every refresh) never keeps a stale squiggle; a finding
placed in a file that is not open reaches it through `relatedDocuments` and the workspace
pull, and is withdrawn there."""

from __future__ import annotations

import asyncio
import os
import threading

from fake_engine import FakeEngine
from pull_client import ENCODER, FIXED, MODEL, pull_session, write

from atenlint.lsp.session import path_uri


class SlowerImporter(FakeEngine):
    """b.py's checks take longer than a.py's, so a.py's own result is pulled while b.py's
    re-check (which places the finding in a.py) still runs: the order that left stale
    squiggles when a.py's id covered only its own findings."""

    def __init__(self):
        super().__init__()
        self.per_path: dict[str, int] = {}
        self.lock = threading.Lock()

    def _capture(self, path, text, overlays, execute):
        with self.lock:
            self.per_path[os.path.basename(path)] = self.per_path.get(os.path.basename(path), 0) + 1
        if os.path.basename(path) == "b.py":
            threading.Event().wait(0.08)
        return super()._capture(path, text, overlays, execute)


def _workspace(tmp_path) -> tuple[str, str]:
    a, b = str(tmp_path / "a.py"), str(tmp_path / "b.py")
    write(a, ENCODER)
    write(b, MODEL)
    return a, b


def test_alternating_fixes_leave_no_stale_squiggle_on_the_imported_file(tmp_path):
    a, b = _workspace(tmp_path)
    engine = SlowerImporter()

    async def scenario():
        session, client = pull_session(engine, str(tmp_path))
        stale = 0
        try:
            for path in (a, b):
                session.open(path_uri(path), path, 1, ENCODER if path == a else MODEL)
                await client.pull(path_uri(path))
            await client.idle()
            assert client.codes(a) == ["MPS001"]
            for step in range(6):
                text = FIXED if step % 2 == 0 else ENCODER
                version = step + 2
                session.change(path_uri(a), version, text)
                write(a, text)
                session.save(path_uri(a), text)
                await client.idle()
                expected = [] if text == FIXED else ["MPS001"]
                stale += client.codes(a) != expected
            return stale, client.unchanged
        finally:
            session.shutdown()

    stale, unchanged = asyncio.run(scenario())
    assert stale == 0
    assert unchanged > 0  # answers that really were unchanged still say so


def test_a_finding_placed_in_a_file_that_is_not_open_reaches_the_client_and_is_withdrawn(tmp_path):
    a, b = _workspace(tmp_path)
    engine = FakeEngine()

    async def scenario():
        session, client = pull_session(engine, str(tmp_path))
        seen = {}
        try:
            uri = path_uri(b)
            session.open(uri, b, 1, MODEL)
            result = await session.result_for(uri, partial=True)
            assert result is not None
            report = client.reports.document(session.state, uri, b, None, lambda s: [])
            seen["related"] = sorted(report.related_documents or {})
            await client.pull(uri)
            seen["via related"] = client.codes(a)
            client.shown.pop(path_uri(a))
            client.pull_workspace()
            seen["via workspace"] = client.codes(a)
            write(a, FIXED)  # fixed by another tool: b.py is re-checked without the finding
            session.files_changed([a])
            await client.idle()
            seen["after the fix"] = client.codes(a)
            write(a, ENCODER)
            session.files_changed([a])
            await client.idle()
            seen["put back"] = client.codes(a)
            client.close(uri)  # the producing file closed: withdrawn by the workspace pull
            await client.idle()
            seen["after close"] = client.codes(a)
            return seen
        finally:
            session.shutdown()

    seen = asyncio.run(scenario())
    assert seen["related"] == [path_uri(a)]
    assert seen["via related"] == ["MPS001"] and seen["via workspace"] == ["MPS001"]
    assert seen["after the fix"] == []
    assert seen["put back"] == ["MPS001"]
    assert seen["after close"] == []


def test_the_result_id_changes_with_any_contribution_and_only_then(tmp_path):
    a, b = _workspace(tmp_path)
    write(a, FIXED)
    engine = FakeEngine()

    async def scenario():
        session, client = pull_session(engine, str(tmp_path))
        try:
            session.open(path_uri(a), a, 1, FIXED)
            await client.idle()
            alone = session.state.served(a).result_id
            own = session.documents[path_uri(a)].result
            session.open(path_uri(b), b, 1, MODEL)
            await client.idle()
            with_b_clean = session.state.served(a).result_id
            # a.py changes on disk with no notification for it (another tool), then b.py is
            # saved: b.py's re-check places the finding in a.py; a.py's own result stands.
            write(a, ENCODER)
            session.save(path_uri(b), MODEL)
            await client.idle()
            return alone, own, with_b_clean, session.state.served(a), session.documents[path_uri(a)].result
        finally:
            session.shutdown()

    alone, own, with_b_clean, served, own_after = asyncio.run(scenario())
    assert alone == with_b_clean  # nothing served changed: the same id
    assert [f.code for f in served.findings] == ["MPS001"]  # placed by b.py's re-check ...
    assert own_after is own and served.result_id != alone  # ... a.py's id changed, its own result did not
