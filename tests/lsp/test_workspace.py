"""Whole-workspace checks, cross-file re-checks, project settings and the results cache."""

from __future__ import annotations

import os
import pathlib

import pytest
import pytest_lsp
from harness import SERVER, copy_workspace, diagnostics, open_file, published_until, replace_text, save, start, uri_of
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from torch_facts import mps_missing, mps_missing_two

HELPER = "import torch\n\n\ndef squash(x):\n    return x.sigmoid()\n"
USER = (
    "import torch.nn as nn\nfrom helpers import squash\n\n\nclass Head(nn.Module):\n"
    "    def forward(self, x):\n        return squash(x)\n"
)


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient, tmp_path):
    lsp_client.root = copy_workspace(tmp_path)
    for name, text in (("helpers.py", HELPER), ("head.py", USER)):
        pathlib.Path(lsp_client.root, name).write_text(text, encoding="utf-8")
    await start(lsp_client, "visual-studio-code", lsp_client.root)
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
async def test_check_workspace_publishes_every_file_with_progress(client: LanguageClient):
    result = await client.workspace_execute_command_async(types.ExecuteCommandParams(command="atenlint.checkWorkspace"))
    assert result["files"] == 3 and not result["cancelled"]
    model = uri_of(os.path.join(client.root, "model.py"))
    assert sorted(d.code for d in client.diagnostics[model]) == ["MPS001", "MPS001"]
    assert list(client.diagnostics[uri_of(os.path.join(client.root, "helpers.py"))]) == []
    (reports,) = [r for r in client.progress_reports.values() if r]
    assert reports[0].kind == "begin" and reports[-1].kind == "end"
    assert any(r.kind == "report" for r in reports)


@pytest.mark.asyncio
async def test_editing_an_imported_file_rechecks_its_importers(client: LanguageClient):
    head = uri_of(os.path.join(client.root, "head.py"))
    helpers_path = os.path.join(client.root, "helpers.py")
    open_file(client, os.path.join(client.root, "head.py"))
    assert await diagnostics(client, head) == []
    helpers = open_file(client, helpers_path)
    await diagnostics(client, helpers)
    client.diagnostics.pop(head, None)
    missing = mps_missing()  # an op with no MPS kernel in the installed torch
    changed = HELPER.replace("x.sigmoid()", missing.call.call("x.sigmoid()"))
    replace_text(client, helpers, changed, 2)
    save(client, helpers, helpers_path, changed)
    assert await diagnostics(client, head) == []  # re-checked because head.py imports helpers.py...
    (finding,) = await published_until(client, helpers, bool)  # ...and the finding shows where the call is
    assert finding.code == "MPS001" and finding.range.start.line == 4 and missing.op in finding.message


@pytest.mark.asyncio
async def test_pyproject_changes_recheck_open_files(client: LanguageClient):
    first, second = mps_missing_two()  # the ops of the model's two calls
    model = open_file(client, os.path.join(client.root, "model.py"))
    assert len(await diagnostics(client, model)) == 2
    pyproject = os.path.join(client.root, "pyproject.toml")
    text = pathlib.Path(pyproject).read_text(encoding="utf-8")
    pathlib.Path(pyproject).write_text(text + f'ignore = {{ mps = ["{first.op}"] }}\n', encoding="utf-8")
    client.diagnostics.pop(model, None)
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[types.FileEvent(uri=uri_of(pyproject), type=types.FileChangeType.Changed)]
        )
    )
    assert [d.data["call"] for d in await diagnostics(client, model)] == [second.call.function]


@pytest.mark.asyncio
async def test_unchanged_text_is_served_from_the_cache(client: LanguageClient):
    path = os.path.join(client.root, "model.py")
    model = open_file(client, path)
    first = await diagnostics(client, model)
    analysed_before = sum("analysed model.py" in m.message for m in client.log_messages)
    for _ in range(3):
        save(client, model)
        assert await diagnostics(client, model) == first
    analysed_after = sum("analysed model.py" in m.message for m in client.log_messages)
    assert analysed_after == analysed_before  # no worker round trip for an unchanged file
