"""Random edit/save sequences over incremental sync: whatever happened, the diagnostics
after the last save equal a fresh analysis of the final text (no stale squiggles)."""

from __future__ import annotations

import asyncio
import os
import pathlib
import threading

import pytest
from harness import SERVER, copy_workspace, final_diagnostics, open_file, save, start
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsprotocol import types
from pytest_lsp.client import make_test_lsp_client

from atenlint.engine import SourceCache
from atenlint.lsp.convert import headline
from torch_facts import missing_on

# {0}, {1}, {2}: calls of three ops with no MPS kernel in the installed torch (`calls()`).
SNIPPETS = [
    "        y = {0}\n",
    "        z = {1}\n",
    "        w = x.relu() @ x\n",
    "        v = {2}\n",
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
    snippet_calls = calls()  # first: a torch without three such ops skips before a server starts
    runner = _LoopThread()
    root = copy_workspace(tmp_path_factory.mktemp("edits"))
    client = make_test_lsp_client()

    async def begin():
        await client.start_io(*SERVER)
        await start(client, "visual-studio-code", root)  # push, UTF-16: comparable with the engine

    runner.run(begin())
    # The workspace's model (two ops without an MPS kernel), as copied: each example starts from it.
    base = pathlib.Path(root, "model.py").read_text(encoding="utf-8")
    state = {"client": client, "root": root, "runner": runner, "version": 0, "base": base, "calls": snippet_calls}
    yield state

    async def end():
        await client.shutdown_session()
        await client.stop()

    runner.run(end())
    runner.loop.call_soon_threadsafe(runner.loop.stop)


def calls() -> list[str]:
    return [missing.call.call("x") for missing in missing_on("MPS", 3)]


def _edit(lines: list[str], body_start: int, kind: str, where: int, snippet: str):
    """Apply one edit to `lines` (inserting `snippet` or deleting a line from the model's
    body on, which starts at line `body_start`); return the incremental change an editor
    would send."""
    line = min(body_start + where, len(lines))
    if kind == "insert":
        lines.insert(line, snippet)
        return types.TextDocumentContentChangePartial(
            range=types.Range(types.Position(line, 0), types.Position(line, 0)), text=snippet
        )
    if line >= len(lines) or line < body_start:
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
    base = session["base"]
    lines = base.splitlines(keepends=True)
    body_start = lines.index("    def forward(self, x, index):\n") + 1
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(base)
    session["version"] += 1
    runner.run(_reopen(client, path, session["version"]))
    for kind, where, snippet in operations:
        if kind == "save":
            client.text_document_did_save(
                types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri))
            )
            continue
        change = _edit(lines, body_start, kind, where, snippet.format(*session["calls"]))
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
