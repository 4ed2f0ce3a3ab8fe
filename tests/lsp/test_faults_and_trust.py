"""A server that never hangs, never dies with the user's code, and never runs untrusted code."""

from __future__ import annotations

import os
import time

import pytest
import pytest_lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from harness import SERVER, copy_workspace, diagnostics, open_file, replace_text, save, start

HEALTHY = open(os.path.join(os.path.dirname(__file__), "workspace", "model.py"), encoding="utf-8").read()

FAULTS = {
    "loops": ("ATL005", "import torch.nn as nn\nwhile True:\n    pass\n"),
    "exits": ("ATL006", "import os\nimport torch.nn as nn\nos._exit(3)\n"),
    "aborts": ("ATL006", "import torch\nfrom torch._subclasses.fake_tensor import FakeTensorMode\n"
                         "with FakeTensorMode():\n"
                         "    weight = torch.nn.Parameter(torch.empty(2, 3, device='mps'))\n"
                         "    (weight * 2).sum().backward()\n"),
    "hogs_memory": ("ATL006", "import time\nblob = bytearray(4 * 1024 ** 3)\ntime.sleep(60)\n"),
}


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient, tmp_path):
    lsp_client.root = copy_workspace(tmp_path)
    await start(lsp_client, "neovim", lsp_client.root, {"timeout": 5, "memoryLimitMb": 1500})
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
@pytest.mark.parametrize("fault", sorted(FAULTS))
async def test_a_fault_gives_one_diagnostic_and_the_next_file_is_fine(client: LanguageClient, fault):
    code, body = FAULTS[fault]
    bad = os.path.join(client.root, f"{fault}.py")
    with open(bad, "w", encoding="utf-8") as handle:
        handle.write(body + "\n\nclass Net(nn.Module if 'nn' in dir() else object):\n    pass\n")
    started = time.monotonic()
    uri = open_file(client, bad)
    items = await diagnostics(client, uri, timeout=60)
    assert [d.code for d in items] == [code], [d.message for d in items]
    assert time.monotonic() - started < 40
    healthy = os.path.join(client.root, "model.py")
    healthy_uri = open_file(client, healthy)
    assert [d.code for d in await diagnostics(client, healthy_uri)] == ["MPS001", "MPS001"]
    # and a later save of it is analysed normally by the replacement worker
    replace_text(client, healthy_uri, HEALTHY.replace("torch.take(self.proj(x), index)", "self.proj(x)"), 2)
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
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(f"open({canary!r}, 'w').write('imported')\n" + HEALTHY)
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
