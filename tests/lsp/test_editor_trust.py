"""What a user must be able to rely on in any editor: unsaved code is never imported by
default (pushed or pulled), pull diagnostics only for clients that pull, `$/cancelRequest`
stops Check Workspace, quick fixes for clients that do not echo `data` (Vim + ALE), and
the status item tells what runs."""

from __future__ import annotations

import asyncio
import os

import pytest
import pytest_lsp
from harness import (
    SERVER,
    copy_workspace,
    diagnostics,
    open_file,
    published_until,
    register_extras,
    replace_text,
    until_published,
)
from lsprotocol import types
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from torch_facts import mps_missing_two, mps_missing_with_exact_rewrite, with_mps_missing

# A module with top-level code that calls an op with no MPS kernel in the installed torch
# (`counted()` fills MISSING in). The worker's sandbox refuses its writes (ATL012), so the
# imports are counted from the server's log: one "analysed counted.py" line per check that
# imported it (a static pass says so, a cached answer logs nothing).
COUNTED = """import torch
import torch.nn as nn

imported = "imported"


class Counted(nn.Module):
    def forward(self, x, index):
        return MISSING(x)
"""

# A module whose one call has no MPS kernel and an exact rewrite in the installed torch.
SCORER = """import torch
import torch.nn as nn


class Scorer(nn.Module):
    def forward(self, x):
        return {call}
"""


def counted() -> str:
    return with_mps_missing(COUNTED)


def imports(client: LanguageClient) -> int:
    return sum(m.message.startswith("analysed counted.py") and "static" not in m.message for m in client.log_messages)


def codes(items) -> list:
    return sorted(d.code for d in items if d.code != "ATL012")


def pulling_capabilities() -> types.ClientCapabilities:
    capabilities = client_capabilities("visual-studio-code")
    capabilities.text_document.diagnostic = types.DiagnosticClientCapabilities(dynamic_registration=False)
    capabilities.workspace.diagnostics = types.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
    return capabilities


async def _initialize(client: LanguageClient, root: str, capabilities, options=None, folders=True) -> None:
    register_extras(client)
    client.root = root
    root_uri = from_fs_path(root)
    result = await client.initialize_session(
        types.InitializeParams(
            capabilities=capabilities,
            root_uri=root_uri if folders else None,
            workspace_folders=[types.WorkspaceFolder(uri=root_uri, name="ws")] if folders else None,
            initialization_options=options or {},
        )
    )
    client.server_caps = result.capabilities


def _write(root: str, name: str, text: str) -> str:
    path = os.path.join(root, name)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def puller(lsp_client: LanguageClient, tmp_path):
    root = copy_workspace(tmp_path)
    _write(root, "counted.py", counted())
    await _initialize(lsp_client, root, pulling_capabilities())
    yield
    await lsp_client.shutdown_session()


async def _pull(client, uri, previous=None):
    return await client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri), previous_result_id=previous)
    )


@pytest.mark.asyncio
async def test_pulls_never_import_unsaved_text_under_on_save(puller: LanguageClient):
    assert puller.server_caps.diagnostic_provider is not None  # registered because this client pulls
    path = os.path.join(puller.root, "counted.py")
    uri = open_file(puller, path)
    first = await _pull(puller, uri)
    assert codes(first.items) == ["MPS001"] and imports(puller) == 1
    text = counted()
    previous = first.result_id
    for version in range(2, 7):  # five unsaved edits, each followed by the pull VS Code sends
        text = text.replace("imported", f"imported{version}", 1)
        replace_text(puller, uri, text, version)
        report = await _pull(puller, uri, previous)
        assert report.kind == "unchanged"  # the saved file's result stands: nothing was run
    assert imports(puller) == 1
    _write(puller.root, "counted.py", text)
    puller.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri)))
    await until_published(puller, lambda: imports(puller) >= 2, 20)
    await _pull(puller, uri)
    assert imports(puller) == 2  # one import per save


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def pusher(lsp_client: LanguageClient, tmp_path):
    root = copy_workspace(tmp_path)
    _write(root, "counted.py", counted())
    await _initialize(lsp_client, root, client_capabilities("neovim"))
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
async def test_a_client_that_does_not_pull_gets_no_pull_provider(pusher: LanguageClient):
    assert pusher.server_caps.diagnostic_provider is None  # pushes only: no squiggle twice


@pytest.mark.asyncio
async def test_code_actions_without_echoed_data_come_from_the_servers_results(pusher: LanguageClient):
    """Vim + ALE send the diagnostic without `data` (or none at all)."""
    # An op with an exact rewrite in atenlint's catalog: the rewrite must be offered without `data` too.
    missing, rewrite = mps_missing_with_exact_rewrite()
    path = _write(pusher.root, "scorer.py", SCORER.format(call=missing.call.call("x")))
    uri = open_file(pusher, path)
    items = await diagnostics(pusher, uri)
    finding = next(d for d in items if missing.op in d.message)
    stripped = types.Diagnostic(
        range=finding.range, message=finding.message, severity=finding.severity, code=finding.code, source="atenlint"
    )
    for context in (types.CodeActionContext(diagnostics=[stripped]), types.CodeActionContext(diagnostics=[])):
        actions = await pusher.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri), range=finding.range, context=context
            )
        )
        titles = [a.title for a in actions or []]
        assert f"Ignore {missing.op} on this line" in titles, titles
        assert any(t.startswith(f"{rewrite.title}: `") for t in titles), titles
        assert not titles[0].startswith("Silence")  # a runtime-warning filter is never listed first


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def typer(lsp_client: LanguageClient, tmp_path):
    root = copy_workspace(tmp_path)
    _write(root, "counted.py", counted())
    await _initialize(lsp_client, root, client_capabilities("neovim"), {"trigger": "onType", "onTypeDelayMs": 100})
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
async def test_on_type_checks_unsaved_text_statically_and_saved_text_fully(typer: LanguageClient):
    path = os.path.join(typer.root, "counted.py")
    uri = open_file(typer, path)
    await published_until(typer, uri, lambda items: codes(items) == ["MPS001"])
    assert imports(typer) == 1
    first, second = (missing.call.call("x") for missing in mps_missing_two())
    edited = counted().replace(first, f"{first} + {second}.sum()")  # a second op without a kernel
    replace_text(typer, uri, edited, 2)
    items = await published_until(typer, uri, lambda items: len(codes(items)) == 2)  # the static pass saw it
    assert codes(items) == ["MPS001", "MPS001"] and imports(typer) == 1
    # A syntax error in the unsaved buffer: ATL001 where the buffer has it, not the file on disk.
    broken = "# a line the file on disk does not have\n" + edited.replace(
        "def forward(self, x, index):", "def forward(self, x, index)"
    )
    replace_text(typer, uri, broken, 3)
    (error,) = await published_until(typer, uri, lambda items: codes(items) == ["ATL001"])
    line = broken.splitlines().index("    def forward(self, x, index)")
    assert error.range.start.line == line and error.range.start.character <= len("    def forward(self, x, index)")
    assert imports(typer) == 1


@pytest.mark.asyncio
async def test_cancel_request_stops_check_workspace(pusher: LanguageClient):
    await diagnostics(pusher, open_file(pusher, os.path.join(pusher.root, "model.py")))  # workers are up
    for index in range(4):  # slow to import: the check is still running when it is cancelled
        _write(
            pusher.root,
            f"slow_{index}.py",
            "import time\nimport torch.nn as nn\ntime.sleep(1.5)\n\n\n"
            "class Slow(nn.Module):\n    def forward(self, x):\n"
            "        return x.take(x.long())\n",
        )
    future = asyncio.ensure_future(
        pusher.workspace_execute_command_async(types.ExecuteCommandParams(command="atenlint.checkWorkspace"))
    )
    await until_published(pusher, lambda: any(s.get("workspaceChecks") for s in pusher.statuses), 30)
    assert any(s.get("state") == "busy" and s.get("workspaceChecks") for s in pusher.statuses)  # not "idle"
    msg_id = next(reversed(pusher.protocol._request_futures))
    pusher.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
    with pytest.raises(Exception) as raised:
        await asyncio.wait_for(future, 60)
    assert "cancel" in str(raised.value).lower()
    await until_published(pusher, lambda: bool(pusher.statuses) and pusher.statuses[-1].get("workspaceChecks") == 0, 8)
    assert pusher.statuses[-1]["workspaceChecks"] == 0, [
        (s.get("state"), s.get("workspaceChecks")) for s in pusher.statuses
    ]
    assert not any("slow_3" in uri for uri in pusher.diagnostics)  # it never got that far


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def rootless(lsp_client: LanguageClient, tmp_path):
    root = copy_workspace(tmp_path)
    await _initialize(lsp_client, root, client_capabilities("neovim"), folders=False)
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
async def test_check_workspace_without_a_folder_says_why(rootless: LanguageClient):
    result = await rootless.workspace_execute_command_async(
        types.ExecuteCommandParams(command="atenlint.checkWorkspace")
    )
    assert result["files"] == 0 and "no workspace folder" in result["message"]
    open_file(rootless, os.path.join(rootless.root, "model.py"))
    result = await rootless.workspace_execute_command_async(
        types.ExecuteCommandParams(command="atenlint.checkWorkspace")
    )
    assert result["files"] >= 1 and "folders of the open files" in result["message"]


def test_a_cancel_for_an_answered_request_is_not_a_warning(caplog):
    from atenlint.lsp.server import server

    with caplog.at_level("DEBUG"):
        server.protocol._handle_cancel_notification(123456)  # VS Code cancels pulls it no longer needs
    assert not [r for r in caplog.records if "unknown message id" in r.getMessage()]


def test_a_message_before_initialize_is_answered_server_not_initialized():
    from pygls.exceptions import JsonRpcServerNotInitialized

    from atenlint.lsp.server import AtenlintServer, did_open

    fresh = AtenlintServer()  # no `initialize` yet: no session
    params = types.DidOpenTextDocumentParams(types.TextDocumentItem("file:///w/m.py", "python", 1, "x = 1\n"))
    with pytest.raises(JsonRpcServerNotInitialized):
        did_open(fresh, params)
