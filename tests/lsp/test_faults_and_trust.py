"""A server that never hangs, never dies with the user's code, and never runs untrusted code."""

from __future__ import annotations

import os

import pytest
import pytest_lsp
from faults import FAULTS
from harness import SERVER, copy_workspace, diagnostics, open_file, replace_text, save, start
from pytest_lsp import ClientServerConfig, LanguageClient

from ci_support import model_calls, model_source


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


# Each faulty file is its own project: only the endless loop gets a short analysis timeout
# (what it tests); the others get one no slow machine reaches, so a crash or a memory
# blow-up is never reported as a timeout. The healthy file keeps the workspace's 20 s.
PROJECT_TIMEOUT_S = {"loops": 5}
NEVER_S = 900


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient, tmp_path):
    lsp_client.root = copy_workspace(tmp_path)
    await start(lsp_client, "neovim", lsp_client.root, {"memoryLimitMb": 1500})
    yield
    await lsp_client.shutdown_session()


def write_fault_project(root: str, fault: str) -> str:
    folder = os.path.join(root, fault)
    os.makedirs(folder)
    _write(
        os.path.join(folder, "pyproject.toml"),
        f'[tool.atenlint]\ntargets = ["mps"]\ntimeout = {PROJECT_TIMEOUT_S.get(fault, NEVER_S)}\n',
    )
    path = os.path.join(folder, f"{fault}.py")
    _write(path, FAULTS[fault][1] + "\n\nclass Net(nn.Module if 'nn' in dir() else object):\n    pass\n")
    return path


@pytest.mark.asyncio
@pytest.mark.parametrize("fault", sorted(FAULTS))
async def test_a_fault_gives_one_diagnostic_and_the_next_file_is_fine(client: LanguageClient, fault):
    # How fast this happens is benchmarks/bench_faults.py's business, not an assertion here.
    uri = open_file(client, write_fault_project(client.root, fault))
    items = await diagnostics(client, uri, timeout=240)  # a failed check never answers: fail, don't hang
    assert [d.code for d in items] == [FAULTS[fault][0]], [d.message for d in items]
    healthy = os.path.join(client.root, "model.py")
    healthy_uri = open_file(client, healthy)
    assert [d.code for d in await diagnostics(client, healthy_uri)] == ["MPS001", "MPS001"]
    # and a later save of it is analysed normally by the replacement worker
    replace_text(client, healthy_uri, model_source().replace(model_calls()[0], "self.proj(x)"), 2)
    save(client, healthy_uri)
    assert [d.code for d in await diagnostics(client, healthy_uri)] == ["MPS001"]


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def restricted(lsp_client: LanguageClient, tmp_path):
    lsp_client.root = copy_workspace(tmp_path)
    await start(lsp_client, "visual-studio-code", lsp_client.root, {"trusted": False})
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
async def test_restricted_mode_never_imports_user_code(restricted: LanguageClient):
    canary = os.path.join(restricted.root, "canary.txt")
    path = os.path.join(restricted.root, "writes_canary.py")
    _write(path, f"open({canary!r}, 'w').write('imported')\n" + model_source())
    uri = open_file(restricted, path)
    items = await diagnostics(restricted, uri)
    assert sorted(d.code for d in items) == ["MPS001", "MPS001"]
    assert all(d.data["capture"] == "static" for d in items)
    assert not os.path.exists(canary)
    assert any("not trusted" in m.message for m in restricted.messages)
    # the message is shown once, not per file
    other = open_file(restricted, os.path.join(restricted.root, "model.py"))
    await diagnostics(restricted, other)
    assert sum("not trusted" in m.message for m in restricted.messages) == 1
    assert not os.path.exists(canary)
