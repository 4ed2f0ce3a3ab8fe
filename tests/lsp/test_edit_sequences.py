"""Random edit/save sequences over incremental sync: whatever happened, the diagnostics
after the last save equal a fresh analysis of the final text (no stale squiggles)."""

from __future__ import annotations

import asyncio
import os
import pathlib
import threading

import pytest
from harness import SERVER, WORKSPACE, copy_workspace, final_diagnostics, open_file, save, start
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsprotocol import types
from pytest_lsp.client import make_test_lsp_client

from atenlint.engine import SourceCache
from atenlint.lsp.convert import headline

BASE = pathlib.Path(WORKSPACE, "model.py").read_text(encoding="utf-8")
BODY_START = BASE.splitlines().index("    def forward(self, x, index):") + 1
SNIPPETS = [
    "        y = torch.heaviside(x, x)\n",
    "        z = torch.special.ndtri(x)\n",
    "        w = x.relu() @ x\n",
    "        v = torch.take(x, index)\n",
    "        u = x.sum(\n",  # a syntax error until something closes it
    "        )\n",
    "        # a comment with ünïcödé 𝛑\n",
    "\n",
]
operation = st.one_of(
    st.tuples(st.just("insert"), st.integers(0, 12), st.sampled_from(SNIPPETS)),
    st.tuples(st.just("delete"), st.integers(0, 12), st.just("")),
    st.tuples(st.just("save"), st.just(0), st.just("")),
)


class _LoopThread:
    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coroutine, timeout=120):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    runner = _LoopThread()
    root = copy_workspace(tmp_path_factory.mktemp("edits"))
    client = make_test_lsp_client()

    async def begin():
        await client.start_io(*SERVER)
        await start(client, "visual-studio-code", root)  # push, UTF-16: comparable with the engine

    runner.run(begin())
    state = {"client": client, "root": root, "runner": runner, "version": 0}
    yield state

    async def end():
        await client.shutdown_session()
        await client.stop()

    runner.run(end())
    runner.loop.call_soon_threadsafe(runner.loop.stop)


def _edit(lines: list[str], kind: str, where: int, snippet: str):
    """Apply one edit to `lines`; return the incremental change an editor would send."""
    line = min(BODY_START + where, len(lines))
    if kind == "insert":
        lines.insert(line, snippet)
        return types.TextDocumentContentChangePartial(
            range=types.Range(types.Position(line, 0), types.Position(line, 0)), text=snippet
        )
    if line >= len(lines) or line < BODY_START:
        return None
    del lines[line]
    return types.TextDocumentContentChangePartial(
        range=types.Range(types.Position(line, 0), types.Position(line + 1, 0)), text=""
    )


@settings(
    max_examples=50, deadline=None, suppress_health_check=list(HealthCheck)
)  # the session property test does 1,000+
@given(operations=st.lists(operation, min_size=1, max_size=8))
def test_final_diagnostics_match_a_fresh_check(session, engine, operations):
    client, root, runner = session["client"], session["root"], session["runner"]
    path = os.path.join(root, "model.py")
    uri = f"file://{path}"
    lines = BASE.splitlines(keepends=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(BASE)
    session["version"] += 1
    runner.run(_reopen(client, path, session["version"]))
    for kind, where, snippet in operations:
        if kind == "save":
            client.text_document_did_save(
                types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri))
            )
            continue
        change = _edit(lines, kind, where, snippet)
        if change is None:
            continue
        session["version"] += 1
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=session["version"]),
                content_changes=[change],
            )
        )
    final = "".join(lines)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(final)
    actual = runner.run(_save_and_wait(client, uri, session["version"]))
    capture = engine.capture(path, text=final)
    expected = [
        f for f in engine.findings([capture], SourceCache({path: final})) if os.path.abspath(f.abs_path) == path
    ]
    assert sorted(
        (d.code, d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character, d.message)
        for d in actual
    ) == sorted(
        (f.code, f.range.start.line, f.range.start.character, f.range.end.line, f.range.end.character, headline(f))
        for f in expected
    )


async def _reopen(client, path, version):
    uri = f"file://{path}"
    client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri)))
    since = len(client.events)
    open_file(client, path, version=version)
    await final_diagnostics(client, uri, version, since)


async def _save_and_wait(client, uri, version):
    since = len(client.events)
    save(client, uri)
    return await final_diagnostics(client, uri, version, since)
