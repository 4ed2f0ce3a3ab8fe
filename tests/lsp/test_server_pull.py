"""The real server with a pull client that behaves like VS Code: it keeps the last full
report per document, sends `previousResultId`, applies `relatedDocuments`, and re-pulls the
open documents and the workspace at every `workspace/diagnostic/refresh` (issue 19)."""

from __future__ import annotations

import asyncio
import os
import pathlib

import pytest
import pytest_lsp
from harness import SERVER, copy_workspace, open_file, pulling_capabilities, register_extras, replace_text, uri_of
from lsprotocol import types
from pull_client import ENCODER, FIXED, MODEL
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient


class VSCodeLike:
    def __init__(self, client: LanguageClient):
        self.client = client
        self.open: list[str] = []
        self.ids: dict[str, str] = {}
        self.workspace_ids: dict[str, str] = {}
        self.shown: dict[str, list[types.Diagnostic]] = {}
        self._refreshes = -1

    async def pull(self, uri: str) -> None:
        report = await self.client.text_document_diagnostic_async(
            types.DocumentDiagnosticParams(
                text_document=types.TextDocumentIdentifier(uri), previous_result_id=self.ids.get(uri)
            )
        )
        if report.kind == "full":
            self.ids[uri] = report.result_id or ""
            self.shown[uri] = list(report.items)
            for related, sub in (report.related_documents or {}).items():
                if sub.kind == "full":
                    self.shown[related] = list(sub.items)

    async def pull_workspace(self) -> None:
        report = await self.client.workspace_diagnostic_async(
            types.WorkspaceDiagnosticParams(
                previous_result_ids=[types.PreviousResultId(uri=u, value=v) for u, v in self.workspace_ids.items()]
            )
        )
        for item in report.items:
            self.workspace_ids[item.uri] = item.result_id or ""
            if item.kind == "full":
                self.shown[item.uri] = list(item.items)

    async def settle(self, timeout: float = 120.0) -> None:
        """Re-pull at each refresh, until the server is idle and asks for none for a while."""
        loop = asyncio.get_running_loop()
        deadline, quiet_since = loop.time() + timeout, None
        while loop.time() < deadline:
            if self.client.diagnostic_refresh_count != self._refreshes:
                self._refreshes = self.client.diagnostic_refresh_count
                for uri in list(self.open):
                    await self.pull(uri)
                await self.pull_workspace()
                quiet_since = None
                continue
            idle = bool(self.client.statuses) and self.client.statuses[-1].get("state") == "idle"
            if idle and quiet_since is None:
                quiet_since = loop.time()
            elif not idle:
                quiet_since = None
            if quiet_since is not None and loop.time() - quiet_since > 0.6:
                return
            await asyncio.sleep(0.05)
        raise TimeoutError("the server never settled")

    def codes(self, path: str, code: str = "MPS001") -> list[str]:
        return [str(d.code) for d in self.shown.get(uri_of(path), []) if d.code == code]


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def vscode(lsp_client: LanguageClient, tmp_path):
    root = copy_workspace(tmp_path)
    pathlib.Path(root, "a.py").write_text(ENCODER, encoding="utf-8")
    pathlib.Path(root, "b.py").write_text(MODEL, encoding="utf-8")
    register_extras(lsp_client)
    root_uri = from_fs_path(root)
    result = await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=pulling_capabilities(),
            root_uri=root_uri,
            workspace_folders=[types.WorkspaceFolder(uri=root_uri, name="ws")],
        )
    )
    lsp_client.server_caps = result.capabilities
    lsp_client.root = root
    yield
    await lsp_client.shutdown_session()


def _save(client: LanguageClient, uri: str, path: str, text: str, version: int) -> None:
    replace_text(client, uri, text, version)
    pathlib.Path(path).write_text(text, encoding="utf-8")
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri)))


@pytest.mark.asyncio
async def test_six_alternating_fixes_leave_no_stale_squiggle(vscode: LanguageClient):
    editor = VSCodeLike(vscode)
    a, b = os.path.join(vscode.root, "a.py"), os.path.join(vscode.root, "b.py")
    for path in (a, b):
        editor.open.append(open_file(vscode, path))
        await editor.pull(editor.open[-1])
    await editor.settle()
    assert editor.codes(a) == ["MPS001"]
    stale = 0
    for step in range(6):
        text = FIXED if step % 2 == 0 else ENCODER
        _save(vscode, uri_of(a), a, text, step + 2)
        await editor.settle()
        stale += editor.codes(a) != ([] if text == FIXED else ["MPS001"])
    assert stale == 0


@pytest.mark.asyncio
async def test_with_only_the_importer_open_the_finding_is_shown_and_withdrawn(vscode: LanguageClient):
    editor = VSCodeLike(vscode)
    a, b = os.path.join(vscode.root, "a.py"), os.path.join(vscode.root, "b.py")
    uri = open_file(vscode, b)
    report = await vscode.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri))
    )
    related = report.related_documents or {}
    assert [str(d.code) for d in related[uri_of(a)].items if d.code == "MPS001"] == ["MPS001"]
    assert "ndtri" in related[uri_of(a)].items[0].message
    workspace = await vscode.workspace_diagnostic_async(types.WorkspaceDiagnosticParams(previous_result_ids=[]))
    (item,) = [i for i in workspace.items if i.uri == uri_of(a)]
    assert [str(d.code) for d in item.items] == ["MPS001"]
    editor.open.append(uri)
    await editor.settle()
    assert editor.codes(a) == ["MPS001"]
    vscode.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)))
    editor.open.remove(uri)
    await editor.settle()
    assert editor.codes(a) == []  # the producing file closed: withdrawn by the workspace pull


COUNTED = ENCODER.replace("import torch.nn as nn\n", "import torch.nn as nn\n\nloaded = 'counted'\n")


def _imports(client: LanguageClient) -> int:
    """Checks that imported a.py, from the server's log (one "analysed a.py" line each; a
    static pass says so, a cached answer logs nothing)."""
    return sum(m.message.startswith("analysed a.py") and "static" not in m.message for m in client.log_messages)


@pytest.mark.asyncio
async def test_a_save_and_its_watcher_event_run_the_file_once(vscode: LanguageClient):
    editor = VSCodeLike(vscode)
    a = os.path.join(vscode.root, "a.py")
    editor.open.append(open_file(vscode, a))
    await editor.pull(editor.open[-1])
    await editor.settle()
    before = _imports(vscode)
    _save(vscode, uri_of(a), a, COUNTED, 2)
    await asyncio.sleep(0.4)  # VS Code's file watcher reports the saved file ~0.4 s after didSave
    vscode.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(changes=[types.FileEvent(uri=uri_of(a), type=types.FileChangeType.Changed)])
    )
    await editor.settle()
    assert _imports(vscode) - before == 1
