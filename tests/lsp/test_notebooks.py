"""Notebook documents over LSP 3.17: `notebookDocument/didOpen|didChange|didSave|didClose`,
diagnostics pushed on each cell's URI (also to a client that pulls for files), quick fixes edit the cells."""

from __future__ import annotations

import json
import os

import attrs
import pytest
import pytest_lsp
from harness import SERVER, apply_edits, copy_workspace, published_until, register_extras
from lsprotocol import types
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from torch_facts import mps_missing_with_exact_rewrite

IMPORTS = "import torch\nimport torch.nn as nn\n%matplotlib inline"


def model(call: str) -> str:
    """The model cell; `call` (on `y`, LSP line 7, column 15) has no MPS kernel in the installed
    torch. Its argument is a plain name: a rewrite that writes its input more than once is
    offered only for one (`self.proj(x)` would be computed several times)."""
    return (
        "class Scorer(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.proj = nn.Linear(8, 8)\n\n    def forward(self, x):\n"
        f"        y = self.proj(x)\n        return {call}\n"
    )


def capabilities(pull: bool) -> types.ClientCapabilities:
    caps = client_capabilities("visual-studio-code")
    caps.notebook_document = types.NotebookDocumentClientCapabilities(
        synchronization=types.NotebookDocumentSyncClientCapabilities(execution_summary_support=True)
    )
    if pull:
        caps.text_document.diagnostic = types.DiagnosticClientCapabilities(related_document_support=True)
        caps.workspace.diagnostics = types.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
    return caps


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER), params=["push", "pull"])
async def client(lsp_client: LanguageClient, request, tmp_path):
    register_extras(lsp_client)  # pytest-lsp answers workspace/diagnostic/refresh itself; the test pulls
    lsp_client.root = copy_workspace(tmp_path)
    lsp_client.pull = request.param == "pull"
    root_uri = from_fs_path(lsp_client.root)
    result = await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=capabilities(lsp_client.pull),
            root_uri=root_uri,
            workspace_folders=[types.WorkspaceFolder(uri=root_uri, name="ws")],
        )
    )
    lsp_client.server_caps = result.capabilities
    yield
    await lsp_client.shutdown_session()


def write_notebook(path: str, sources: list[tuple[str, str]]) -> None:
    cells = [
        {
            "cell_type": kind,
            "metadata": {},
            "source": text.splitlines(True),
            **({"execution_count": None, "outputs": []} if kind == "code" else {}),
        }
        for kind, text in sources
    ]
    with open(path, "w", encoding="utf-8") as handle:
        json.dump({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, handle, indent=1)


def cell_uri(path: str, index: int) -> str:
    return f"vscode-notebook-cell:{path}#W{index}sZmlsZQ%3D%3D"


def open_notebook(client: LanguageClient, path: str, sources: list[tuple[str, str]]) -> tuple[str, list[str]]:
    uri = from_fs_path(path)
    uris = [cell_uri(path, i) for i in range(len(sources))]
    kinds = {"code": types.NotebookCellKind.Code, "markdown": types.NotebookCellKind.Markup}
    client.notebook_document_did_open(
        types.DidOpenNotebookDocumentParams(
            notebook_document=types.NotebookDocument(
                uri=uri,
                notebook_type="jupyter-notebook",
                version=1,
                cells=[types.NotebookCell(kind=kinds[kind], document=cell) for cell, (kind, _) in zip(uris, sources)],
            ),
            cell_text_documents=[
                types.TextDocumentItem(
                    uri=cell, language_id="python" if kind == "code" else "markdown", version=1, text=text
                )
                for cell, (kind, text) in zip(uris, sources)
            ],
        )
    )
    return uri, uris


async def cell_diagnostics(client: LanguageClient, uri: str, predicate=lambda items: True) -> list:
    """A cell's diagnostics are pushed in both modes; a pull for a cell is always empty (a
    client doing both would otherwise show each twice)."""
    items = await published_until(client, uri, predicate)
    if client.pull:
        report = await client.text_document_diagnostic_async(
            types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri))
        )
        assert list(report.items) == []
    return items


@pytest.mark.asyncio
async def test_cells_get_their_diagnostics_quick_fixes_and_updates(client: LanguageClient):
    assert client.server_caps.notebook_document_sync is not None
    # An op with an exact rewrite in atenlint's catalog, so that a preferred fix is offered.
    missing, catalog_entry = mps_missing_with_exact_rewrite()
    source = model(missing.call.call("y"))
    path = os.path.join(client.root, "scoring.ipynb")
    sources = [("code", IMPORTS), ("markdown", "# The model"), ("code", source)]
    write_notebook(path, sources)
    uri, uris = open_notebook(client, path, sources)

    [finding] = await cell_diagnostics(client, uris[2], lambda items: len(items) == 1)
    assert (finding.code, finding.range.start.line, finding.range.start.character) == ("MPS001", 7, 15)
    assert missing.op in finding.message and finding.data["target"] == "mps"
    assert await cell_diagnostics(client, uris[0]) == []
    assert uri not in client.diagnostics and uris[1] not in client.diagnostics  # the notebook, a markdown cell

    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uris[2]),
            range=finding.range,
            context=types.CodeActionContext(diagnostics=[finding]),
        )
    )
    rewrite = next(a for a in actions if a.title.startswith(f"{catalog_entry.title}: `"))
    # VS Code applies `documentChanges`: each cell's edits carry the version of the cell
    # text they were computed on, so an edit typed meanwhile makes the client reject them.
    assert rewrite.is_preferred and rewrite.edit.changes is None
    [change] = rewrite.edit.document_changes
    assert (change.text_document.uri, change.text_document.version) == (uris[2], 1)
    fixed = apply_edits(source, change.edits)
    # The edit writes, in place of the call, the text its title shows (cut at "…" when long).
    promised = rewrite.title.split(": `", 1)[1].removesuffix("`").split("…", 1)[0]
    assert fixed.splitlines()[7].startswith(f"        return {promised}"), (rewrite.title, fixed)
    ignore = next(a for a in actions if a.title == f"Ignore {missing.op} on this line")
    assert f"# atenlint: ignore[{missing.op}]" in apply_edits(source, ignore.edit.document_changes[0].edits)
    # A diagnostic of an older version of the cell: its positions are stale, nothing is offered.
    stale = attrs.evolve(finding, data={**finding.data, "version": 0})
    assert not await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uris[2]),
            range=finding.range,
            context=types.CodeActionContext(diagnostics=[stale]),
        )
    )

    # The fix is typed into the cell and the notebook saved: the cell's squiggle goes.
    client.notebook_document_did_change(
        types.DidChangeNotebookDocumentParams(
            notebook_document=types.VersionedNotebookDocumentIdentifier(version=2, uri=uri),
            change=types.NotebookDocumentChangeEvent(
                cells=types.NotebookDocumentCellChanges(
                    text_content=[
                        types.NotebookDocumentCellContentChanges(
                            document=types.VersionedTextDocumentIdentifier(uri=uris[2], version=2),
                            changes=[types.TextDocumentContentChangeWholeDocument(text=fixed)],
                        )
                    ]
                )
            ),
        )
    )
    write_notebook(path, [("code", IMPORTS), ("markdown", "# The model"), ("code", fixed)])
    client.notebook_document_did_save(
        types.DidSaveNotebookDocumentParams(notebook_document=types.NotebookDocumentIdentifier(uri=uri))
    )
    assert await cell_diagnostics(client, uris[2], lambda items: items == []) == []

    # A cell that does not parse is flagged in that cell; the other cells are still analysed.
    client.notebook_document_did_change(
        types.DidChangeNotebookDocumentParams(
            notebook_document=types.VersionedNotebookDocumentIdentifier(version=3, uri=uri),
            change=types.NotebookDocumentChangeEvent(
                cells=types.NotebookDocumentCellChanges(
                    text_content=[
                        types.NotebookDocumentCellContentChanges(
                            document=types.VersionedTextDocumentIdentifier(uri=uris[2], version=3),
                            changes=[types.TextDocumentContentChangeWholeDocument(text=source + "\ndef broken(:\n")],
                        )
                    ]
                )
            ),
        )
    )
    write_notebook(path, [("code", IMPORTS), ("markdown", "# The model"), ("code", source + "\ndef broken(:\n")])
    client.notebook_document_did_save(
        types.DidSaveNotebookDocumentParams(notebook_document=types.NotebookDocumentIdentifier(uri=uri))
    )
    [syntax] = await cell_diagnostics(client, uris[2], lambda items: [d.code for d in items] == ["ATL001"])
    assert syntax.range.start.line == len(source.splitlines()) + 1

    client.notebook_document_did_close(
        types.DidCloseNotebookDocumentParams(
            notebook_document=types.NotebookDocumentIdentifier(uri=uri),
            cell_text_documents=[types.TextDocumentIdentifier(u) for u in uris],
        )
    )
    assert await published_until(client, uris[2], lambda items: items == []) == []  # nothing stale stays
