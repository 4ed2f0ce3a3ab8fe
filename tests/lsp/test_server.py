"""The language server end to end, over stdio, with the recorded capabilities of VS Code,
Neovim and Emacs."""

from __future__ import annotations

import os
import pathlib

import pytest
import pytest_lsp
from harness import (
    CLIENTS,
    SERVER,
    apply_edits,
    copy_workspace,
    diagnostics,
    edit_version,
    edits_of,
    encoding_of,
    open_file,
    replace_text,
    save,
    start,
)
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from ci_support import model_calls
from torch_facts import mps_missing

MODEL_FIXED = """import torch
import torch.nn as nn


class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x, index):
        picked = self.proj(x).flatten()[index]
        return picked + x.amax(dim=-1).sum()
"""


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER), params=CLIENTS)
async def client(lsp_client: LanguageClient, request, tmp_path):
    lsp_client.root = copy_workspace(tmp_path)
    lsp_client.spec = request.param
    await start(lsp_client, request.param, lsp_client.root)
    yield
    await lsp_client.shutdown_session()


def by_code(items):
    return sorted((d.code, d.range.start.line, d.range.start.character) for d in items)


@pytest.mark.asyncio
async def test_open_gives_diagnostics_on_the_calls(client: LanguageClient):
    uri = open_file(client, os.path.join(client.root, "model.py"))
    items = await diagnostics(client, uri)
    assert by_code(items) == [("MPS001", 10, 17), ("MPS001", 11, 24)]
    op = mps_missing().op  # what the call on line 11 reaches
    first = next(d for d in items if d.range.start.line == 10)
    assert first.source == "atenlint" and op in first.message
    assert first.code_description.href.endswith("docs/rules.md#mps001")
    assert len(first.message) <= 100 and first.message.startswith(f"`{op}` has no MPS kernel")
    assert "PYTORCH_ENABLE_MPS_FALLBACK" in first.related_information[0].message  # the details
    assert first.data["ops"] == [op] and first.data["target"] == "mps"


@pytest.mark.asyncio
async def test_unsaved_edits_count_only_after_save_and_fixes_clear(client: LanguageClient):
    path = os.path.join(client.root, "model.py")
    uri = open_file(client, path)
    assert len(await diagnostics(client, uri)) == 2
    text = pathlib.Path(path).read_text(encoding="utf-8")
    half = text.replace(model_calls()[0], "self.proj(x).flatten()[index]")
    replace_text(client, uri, half, 2)  # unsaved: the buffer text is what gets analysed on save
    save(client, uri)
    assert by_code(await diagnostics(client, uri)) == [("MPS001", 11, 24)]
    replace_text(client, uri, MODEL_FIXED, 3)
    save(client, uri)
    assert await diagnostics(client, uri) == []  # the empty set is published too


@pytest.mark.asyncio
async def test_ignore_action_applies_and_recheck_is_clean(client: LanguageClient):
    path = os.path.join(client.root, "model.py")
    uri = open_file(client, path)
    items = await diagnostics(client, uri)
    op = mps_missing().op
    finding = next(d for d in items if op in d.message)
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri),
            range=finding.range,
            context=types.CodeActionContext(diagnostics=[finding]),
        )
    )
    ignore = next(a for a in actions if a.title == f"Ignore {op} on this line")
    text = apply_edits(pathlib.Path(path).read_text(encoding="utf-8"), edits_of(ignore, uri), encoding_of(client))
    assert f"{model_calls()[0]}  # atenlint: ignore[{op}]\n" in text
    replace_text(client, uri, text, 2)
    save(client, uri)
    assert [d.code for d in await diagnostics(client, uri)] == ["MPS001"]  # only the second call is left


@pytest.mark.asyncio
async def test_a_quick_fix_carries_the_version_it_was_computed_for(client: LanguageClient):
    """Issue 21: a fix computed before an unsaved edit corrupted the code. Its edit now
    names the version of the text it was computed on, so the client rejects it."""
    path = os.path.join(client.root, "model.py")
    uri = open_file(client, path)
    op = mps_missing().op
    finding = next(d for d in await diagnostics(client, uri) if op in d.message)
    text = pathlib.Path(path).read_text(encoding="utf-8")
    replace_text(client, uri, "# a line added above, not saved\n" + text, 2)
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri),
            range=finding.range,
            context=types.CodeActionContext(diagnostics=[finding]),
        )
    )
    ignore = next(a for a in actions if a.title == f"Ignore {op} on this line")
    capabilities = client_capabilities(client.spec)
    if capabilities.workspace.workspace_edit and capabilities.workspace.workspace_edit.document_changes:
        assert edit_version(ignore, uri) == 1  # not the buffer's version 2: the client rejects it
    else:
        assert ignore.edit.changes  # a client without documentChanges gets plain changes


@pytest.mark.asyncio
async def test_hover_names_overloads_and_verdicts(client: LanguageClient):
    uri = open_file(client, os.path.join(client.root, "model.py"))
    await diagnostics(client, uri)
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri), position=types.Position(10, 20))
    )
    assert hover is not None
    assert f"`{mps_missing().op}`" in hover.contents.value and "**mps**" in hover.contents.value
    assert "torch 2." in hover.contents.value
    clean = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri), position=types.Position(10, 40))
    )
    assert "Runs on **mps**" in clean.contents.value  # self.proj(x): aten::linear runs on MPS


@pytest.mark.asyncio
async def test_configuration_change_rechecks(client: LanguageClient):
    uri = open_file(client, os.path.join(client.root, "model.py"))
    assert {d.severity for d in await diagnostics(client, uri)} == {types.DiagnosticSeverity.Warning}
    client.set_configuration({"severity": {"mps": "error"}}, section="atenlint")
    client.diagnostics.pop(uri, None)
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"atenlint": {"severity": {"mps": "error"}}})
    )
    items = await diagnostics(client, uri)
    assert {d.severity for d in items} == {types.DiagnosticSeverity.Error}


@pytest.mark.asyncio
async def test_status_notifications(client: LanguageClient):
    uri = open_file(client, os.path.join(client.root, "model.py"))
    await diagnostics(client, uri)
    assert "idle" in [s["state"] for s in client.statuses]
    last = client.statuses[-1]
    assert last["targets"] == ["mps"] and last["torch"].startswith("2.") and last["trusted"] is True


@pytest.mark.asyncio
async def test_a_restarted_server_serves_an_unchanged_file_from_the_stored_check(tmp_path):
    """open, shut down, a new server, open again: the same diagnostics, served from the
    stored check (its log says so) instead of a capture; an edit saved to disk is checked."""
    from pytest_lsp.client import make_test_lsp_client

    root = copy_workspace(tmp_path)
    path = os.path.join(root, "model.py")
    env = dict(os.environ, ATENLINT_CACHE_DIR=str(tmp_path / "cache"))
    shown, served = [], []
    for _ in range(2):
        client = make_test_lsp_client()
        await client.start_io(*SERVER, env=env)
        try:
            await start(client, "visual-studio-code", root)
            uri = open_file(client, path)
            shown.append(by_code(await diagnostics(client, uri)))
            served.append(any("served from the result cache" in m.message for m in client.log_messages))
        finally:
            await client.shutdown_session()
    assert shown[0] == shown[1] == [("MPS001", 10, 17), ("MPS001", 11, 24)]
    assert served == [False, True]
