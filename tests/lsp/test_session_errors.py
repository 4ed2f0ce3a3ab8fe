"""A bug of atenlint's own during a check is shown as one ATL099 diagnostic, never as an
empty, clean-looking result."""

from __future__ import annotations

import asyncio

from fake_engine import FakeEngine
from session_support import make_session, settle

from atenlint.lsp.settings import EditorSettings


class ExplodingEngine(FakeEngine):
    def capture(self, *args, **kwargs):
        raise RuntimeError("a bug in the capture")


def test_an_internal_failure_is_a_diagnostic_not_an_empty_result(tmp_path):
    path = tmp_path / "model.py"
    path.write_text("x = 1\n")

    async def run():
        session, callbacks = make_session(ExplodingEngine(), EditorSettings(), [str(tmp_path)])
        session.open(path.as_uri(), str(path), 1, "x = 1\n")
        await settle(session)
        return callbacks

    callbacks = asyncio.run(run())
    (published,) = callbacks.published.values()
    assert [f.code for f in published] == ["ATL099"]
    assert "a bug in the capture" in published[0].message
