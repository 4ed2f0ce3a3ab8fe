"""A check the editor no longer wants stops in the worker (issue 21: after 500 open/close
pairs of a slow file a new file was answered after 91 s), and so does the file in flight
of a cancelled Check Workspace. Real server, real worker, a file
whose import never ends and a time limit of a day: only the cancel can end its analysis,
and the single warm worker could answer nothing else while that analysis ran. Counts and
order are asserted, never how long anything took; a bounded wait only turns a hang into
a failure."""

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
    replace_text,
    save,
    start,
    until_published,
    uri_of,
)
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from atenlint.worker.pool import _children as children_of
from ci_support import model_source
from support import process_running

DAY = 86_400  # the largest time limit the settings allow
LOOPS = "while True:\n    pass\n"  # at import, before the classes: the static outline still sees them
PAIRS = 250


def _worker(client: LanguageClient) -> int:
    (worker,) = children_of(client._server.pid)  # one warm worker: `workers` is 1
    return worker


async def _analysis_child(worker: int) -> int:
    """The child the warm worker forked for the file being analysed now."""
    for _ in range(2400):  # polls /proc for the event; bounded only to fail a hang
        children = [child for child in children_of(worker) if process_running(child)]
        if children:
            return children[0]
        await asyncio.sleep(0.05)
    raise AssertionError("the worker never forked an analysis child")


async def _ended(pid: int) -> bool:
    for _ in range(2400):
        if not process_running(pid):
            return True
        await asyncio.sleep(0.05)
    return False


def _count(client: LanguageClient, prefix: str) -> int:
    return sum(m.message.startswith(prefix) for m in client.log_messages)


def _codes(items: list[types.Diagnostic]) -> list:
    return sorted(str(d.code) for d in items)


def _workspace(tmp_path) -> str:
    """The LSP workspace (targets: mps) with slow.py (model.py's source after an endless
    loop) and fresh.py (model.py's source)."""
    root = copy_workspace(tmp_path)
    with open(os.path.join(root, "slow.py"), "w", encoding="utf-8") as handle:
        handle.write(LOOPS + model_source())
    with open(os.path.join(root, "fresh.py"), "w", encoding="utf-8") as handle:
        handle.write(model_source())
    return root


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient, tmp_path):
    root = _workspace(tmp_path)
    lsp_client.root = root
    await start(lsp_client, "neovim", root, {"trusted": True, "timeout": DAY, "workers": 1})
    yield
    await lsp_client.shutdown_session()


async def _expected(client: LanguageClient) -> list:
    """model.py's codes, which fresh.py (the same source) must get; also waits for the warm
    worker and the targets it prepares, so every analysis child after this is a file's."""
    uri = open_file(client, os.path.join(client.root, "model.py"))
    codes = _codes(await diagnostics(client, uri, timeout=600))
    client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri)))
    assert codes and "ATL005" not in codes
    return codes


@pytest.mark.asyncio
async def test_closing_a_document_stops_its_running_check(client: LanguageClient):
    expected = await _expected(client)
    worker = _worker(client)
    slow = os.path.join(client.root, "slow.py")
    uri = ""
    # Closed while its analysis runs: the analysis child is killed, the warm worker stays.
    for version in (1, 2, 3):
        uri = open_file(client, slow, version=version)
        child = await _analysis_child(worker)
        client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)))
        assert await _ended(child)
    # Hundreds of pairs, as an editor cycling through files sends them.
    for version in range(4, 4 + PAIRS):
        open_file(client, slow, version=version)
        client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)))
    # A new file is answered by the one warm worker, which the looping import would hold for a day.
    fresh = open_file(client, os.path.join(client.root, "fresh.py"))
    assert _codes(await diagnostics(client, fresh, timeout=600)) == expected
    assert _worker(client) == worker  # never restarted for a cancel
    assert await until_published(client, lambda: _count(client, "stopped the check of slow.py") >= 3, 120)
    # No check of slow.py ran to its end, so none published a timeout or crash (ATL005/ATL006).
    assert _count(client, "analysed slow.py") == 0
    assert not client.diagnostics.get(uri)


@pytest.mark.asyncio
async def test_a_newer_version_stops_the_check_of_the_older(client: LanguageClient):
    expected = await _expected(client)
    worker = _worker(client)
    slow = os.path.join(client.root, "slow.py")
    uri = open_file(client, slow, version=1)
    child = await _analysis_child(worker)
    # The user removes the loop and saves: the running check of version 1 is superseded.
    replace_text(client, uri, model_source(), 2)
    save(client, uri, slow, model_source())
    assert await _ended(child)
    items = await published_until(client, uri, lambda items: bool(items), timeout=600)
    assert _codes(items) == expected and client.versions[uri] == 2
    # The new version's check only. Its unsaved text may have been read from source first
    # (a static check of the change, before the save arrived, on a loaded machine), and a
    # check re-run because the save's write landed while it ran is served from the result
    # cache; neither imports anything, so neither is counted.
    imported = [m.message for m in client.log_messages if m.message.startswith("analysed slow.py")]
    served = [
        m.message for m in client.log_messages if "slow.py" in m.message and "served from the result cache" in m.message
    ]
    assert len([m for m in imported if "(static" not in m]) - len(served) == 1, (imported, served)
    assert _count(client, "stopped the check of slow.py") >= 1
    assert _worker(client) == worker


def _cpu_seconds(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


async def _spinning_child(worker: int) -> int:
    """The analysis child that runs the endless import: the one that has computed for a
    second (a short-lived child of the warm worker's own never does)."""
    for _ in range(6000):
        spinning = [child for child in children_of(worker) if process_running(child) and _cpu_seconds(child) >= 1.0]
        if spinning:
            return spinning[0]
        await asyncio.sleep(0.05)
    raise AssertionError("no analysis child ever spun")


def _only_slow_workspace(tmp_path) -> str:
    root = os.path.join(str(tmp_path), "only_slow")
    os.makedirs(os.path.join(root, ".git"))
    with open(os.path.join(root, "pyproject.toml"), "w", encoding="utf-8") as handle:
        handle.write('[tool.atenlint]\ntargets = ["mps"]\n')
    with open(os.path.join(root, "slow.py"), "w", encoding="utf-8") as handle:
        handle.write(LOOPS + model_source())
    return root


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def scanner(lsp_client: LanguageClient, tmp_path):
    lsp_client.root = _only_slow_workspace(tmp_path)
    await start(lsp_client, "neovim", lsp_client.root, {"trusted": True, "timeout": DAY, "workers": 1})
    yield
    await lsp_client.shutdown_session()


def _write_model(root: str) -> str:
    path = os.path.join(root, "model.py")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(model_source())
    return path


@pytest.mark.asyncio
async def test_cancelling_check_workspace_stops_the_file_in_flight(scanner: LanguageClient):
    future = asyncio.ensure_future(
        scanner.workspace_execute_command_async(types.ExecuteCommandParams(command="atenlint.checkWorkspace"))
    )
    assert await until_published(scanner, lambda: bool(children_of(scanner._server.pid)), 600)
    worker = _worker(scanner)
    child = await _spinning_child(worker)  # slow.py, the only file, is in flight
    msg_id = next(reversed(scanner.protocol._request_futures))
    scanner.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
    with pytest.raises(Exception) as raised:
        await asyncio.wait_for(future, 600)
    assert "cancel" in str(raised.value).lower()
    assert await _ended(child)
    # The one warm worker, which the endless import would hold for a day, answers a new file.
    uri = open_file(scanner, _write_model(scanner.root))
    codes = _codes(await diagnostics(scanner, uri, timeout=600))
    assert codes and "ATL005" not in codes and "ATL006" not in codes
    assert _worker(scanner) == worker
    assert await until_published(scanner, lambda: _count(scanner, "stopped the check of slow.py") == 1, 120)
    assert not scanner.diagnostics.get(uri_of(os.path.join(scanner.root, "slow.py")))  # no ATL005 for it
