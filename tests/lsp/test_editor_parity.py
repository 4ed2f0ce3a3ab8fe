"""One product: for the examples, a file that times out and one that crashes the worker,
what `atenlint check --format json` reports equals what the real server pushes to a push
client and what a pull client that behaves like VS Code is shown (same files, ranges, codes
and targets), every file open (issue 19). Also a class that cannot be built alone but is
built by another file's model: neither side notes that it cannot be built."""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest
import pytest_lsp
from harness import SERVER, open_file, pulling_capabilities, register_extras
from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from test_server_pull import VSCodeLike

from support import REPO

pytestmark = pytest.mark.timeout(600)

NET = (
    "import torch\n{prelude}from torch import nn\n\n\nclass Net(nn.Module):\n"
    "    def forward(self, x):\n        return torch.special.ndtri(x)\n"
)

Shown = tuple[str, int, int, int, int, str, str | None]


def _workspace(tmp_path: pathlib.Path) -> str:
    root = tmp_path / "ws"
    shutil.copytree(os.path.join(REPO, "examples"), root)
    faults = root / "faults"
    faults.mkdir()
    # A short limit so the looping file times out quickly; both sides read this table.
    (faults / "pyproject.toml").write_text('[tool.atenlint]\ntargets = ["mps"]\ntimeout = 4\n')
    (faults / "loops.py").write_text(NET.format(prelude="while True:\n    pass\n"))
    (faults / "crashes.py").write_text(NET.format(prelude="import os\nos._exit(3)\n"))
    # `Encoder` cannot be built alone (no guess passes its check), but `b.Model` builds it:
    # the CLI's report of both files has no "cannot be built" note on it (merge_results),
    # and neither may the editor with both files open.
    cross = root / "cross"
    cross.mkdir()
    (cross / "pyproject.toml").write_text('[tool.atenlint]\ntargets = ["mps"]\n')
    (cross / "a.py").write_text(
        "import torch\nfrom torch import nn\n\n\nclass Encoder(nn.Module):\n"
        "    def __init__(self, dim, passphrase):\n        super().__init__()\n"
        "        if passphrase != 'open sesame':\n            raise ValueError('wrong passphrase')\n"
        "        self.proj = nn.Linear(dim, dim)\n\n"
        "    def forward(self, x):\n        return torch.special.ndtri(self.proj(x))\n"
    )
    (cross / "b.py").write_text(
        "from torch import nn\n\nfrom a import Encoder\n\n\nclass Model(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.enc = Encoder(8, 'open sesame')\n\n"
        "    def forward(self, x):\n        return self.enc(x)\n"
    )
    return str(root)


def _files(root: str) -> list[str]:
    return sorted(str(p) for p in pathlib.Path(root).rglob("*.py"))


def _cli(root: str) -> list[Shown]:
    out = subprocess.run(
        [sys.executable, "-m", "atenlint", "check", ".", "--format", "json"],
        check=False,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=500,
    )
    assert out.returncode in (0, 1), out.stderr
    shown = []
    for item in json.loads(out.stdout)["diagnostics"]:
        start, end = item["range"]["start"], item["range"]["end"]
        path = os.path.realpath(os.path.join(root, item["path"]))
        shown.append(
            (path, start["line"], start["character"], end["line"], end["character"], item["code"], item["target"])
        )
    return sorted(shown)


def _shown(by_uri: dict[str, list[types.Diagnostic]]) -> list[Shown]:
    out = []
    for uri, items in by_uri.items():
        path = os.path.realpath(to_fs_path(uri) or uri)
        for d in items:
            target = d.data.get("target") if isinstance(d.data, dict) else None
            r = d.range
            out.append((path, r.start.line, r.start.character, r.end.line, r.end.character, str(d.code), target))
    return sorted(out)


async def _initialize(client: LanguageClient, root: str, capabilities: types.ClientCapabilities) -> None:
    register_extras(client)
    root_uri = from_fs_path(root)
    result = await client.initialize_session(
        types.InitializeParams(
            capabilities=capabilities,
            root_uri=root_uri,
            workspace_folders=[types.WorkspaceFolder(uri=root_uri, name="ws")],
        )
    )
    client.server_caps = result.capabilities


async def _settle_push(client: LanguageClient, uris: list[str], timeout: float = 400.0) -> None:
    """Until every open file has a push, the server is idle, and nothing new came for a while."""
    loop = asyncio.get_running_loop()
    deadline, seen, quiet_since = loop.time() + timeout, -1, None
    while loop.time() < deadline:
        events = len(client.events)
        idle = bool(client.statuses) and client.statuses[-1].get("state") == "idle"
        if events != seen or not idle or any(uri not in client.diagnostics for uri in uris):
            seen, quiet_since = events, None
        elif quiet_since is None:
            quiet_since = loop.time()
        elif loop.time() - quiet_since > 1.5:
            return
        await asyncio.sleep(0.1)
    raise TimeoutError("the server never settled")


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient):
    yield lsp_client
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
async def test_a_pull_client_like_vscode_is_shown_what_the_cli_finds(client: LanguageClient, tmp_path):
    root = _workspace(tmp_path)
    cli = _cli(root)
    codes = {shown[5] for shown in cli}
    assert {"MPS001", "MPS002", "ATL005", "ATL006"} <= codes, codes  # the comparison covers both failures
    cross_a = os.path.realpath(os.path.join(root, "cross", "a.py"))
    assert [s[5] for s in cli if s[0] == cross_a] == ["MPS001"]  # b.Model's finding; no ATL003

    await _initialize(client, root, pulling_capabilities())
    editor = VSCodeLike(client)
    for path in _files(root):
        editor.open.append(open_file(client, path))
    for uri in editor.open:
        await editor.pull(uri)
    await editor.settle(timeout=400.0)
    assert _shown({uri: items for uri, items in editor.shown.items() if items}) == cli


@pytest.mark.asyncio
async def test_a_push_client_is_shown_what_the_cli_finds(client: LanguageClient, tmp_path):
    root = _workspace(tmp_path)
    cli = _cli(root)
    await _initialize(client, root, client_capabilities("neovim"))
    uris = [open_file(client, path) for path in _files(root)]
    await _settle_push(client, uris)
    shown = {uri: list(items) for uri, items in client.diagnostics.items() if items}
    assert _shown(shown) == cli
