"""Pull diagnostics (with resultId and refresh) for clients that support them, and the
onType trigger."""

from __future__ import annotations

import os
import pathlib

import pytest
import pytest_lsp
from harness import (
    SERVER,
    copy_workspace,
    open_file,
    published_until,
    pulling_capabilities,
    register_extras,
    replace_text,
    until_published,
)
from lsprotocol import types
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient

from ci_support import model_calls
from torch_facts import mps_missing_two


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def puller(lsp_client: LanguageClient, tmp_path):
    lsp_client.root = copy_workspace(tmp_path)
    register_extras(lsp_client)
    root_uri = from_fs_path(lsp_client.root)
    result = await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=pulling_capabilities(),
            root_uri=root_uri,
            workspace_folders=[types.WorkspaceFolder(uri=root_uri, name="ws")],
        )
    )
    lsp_client.server_caps = result.capabilities
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
async def test_pull_with_result_ids_and_refresh(puller: LanguageClient):
    assert puller.server_caps.diagnostic_provider is not None
    uri = open_file(puller, os.path.join(puller.root, "model.py"))
    report = await puller.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri))
    )
    assert sorted(d.code for d in report.items) == ["MPS001", "MPS001"] and report.result_id
    again = await puller.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(
            text_document=types.TextDocumentIdentifier(uri), previous_result_id=report.result_id
        )
    )
    assert again.kind == "unchanged" and again.result_id == report.result_id
    assert puller.diagnostics.get(uri) is None  # one mechanism per session: nothing was pushed
    refreshes = puller.diagnostic_refresh_count
    text = pathlib.Path(puller.root, "model.py").read_text(encoding="utf-8")
    replace_text(puller, uri, text.replace(model_calls()[0], "self.proj(x)"), 2)
    puller.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri)))
    await until_published(puller, lambda: puller.diagnostic_refresh_count > refreshes, 30)
    assert puller.diagnostic_refresh_count > refreshes  # told to re-pull once the analysis finished
    changed = await puller.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(
            text_document=types.TextDocumentIdentifier(uri), previous_result_id=report.result_id
        )
    )
    assert [d.code for d in changed.items] == ["MPS001"] and changed.result_id != report.result_id


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def typer(lsp_client: LanguageClient, tmp_path):
    from harness import start

    lsp_client.root = copy_workspace(tmp_path)
    await start(lsp_client, "neovim", lsp_client.root, {"trigger": "onType", "onTypeDelayMs": 200})
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
async def test_on_type_analyses_unsaved_text_after_a_pause(typer: LanguageClient):
    path = os.path.join(typer.root, "model.py")
    uri = open_file(typer, path)
    await published_until(typer, uri, lambda items: len(items) == 2)
    text = pathlib.Path(path).read_text(encoding="utf-8")
    for version, cut in enumerate((len(text) - 10, len(text) - 5, len(text)), start=2):
        replace_text(typer, uri, text[:cut].replace(model_calls()[0], "self.proj(x)"), version)
    items = await published_until(typer, uri, lambda items: len(items) == 1)  # no save needed
    assert items[0].code == "MPS001" and mps_missing_two()[1].op in items[0].message  # the second call's
