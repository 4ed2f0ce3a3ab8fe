"""The language server on a hostile workspace (issue 12), trusted and untrusted, started
in the project root as Neovim, Emacs and CI start it: two FIFOs and a /dev/zero link
never hang or exhaust the server, a symlink out of the workspace is not followed,
shadowing modules in the working folder never run, a parent folder's pyproject.toml is
not read, an import-time `os.system` is one diagnostic, and an untrusted session never
runs the interpreter the workspace points it at."""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import sys
import tempfile
import textwrap

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "lsp"))
from harness import diagnostics, open_file, start, uri_of

from torch_facts import mps_missing, with_mps_missing

# Calls an op with no MPS kernel in the installed torch (torch_facts): its one finding.
GOOD = with_mps_missing(
    textwrap.dedent("""
    import torch
    import torch.nn as nn


    class Good(nn.Module):
        def forward(self, x):
            return MISSING(x)
""").lstrip()
)
INSTALLS = textwrap.dedent("""
    import os
    import torch.nn as nn
    try:
        import ultralytics  # noqa: F401
    except ImportError:
        os.system("pip install -U ultralytics")


    class Detector(nn.Module):
        def forward(self, x):
            return x.relu()
""").lstrip()


def _hostile_workspace() -> tuple[str, str, str]:
    """Made when the module is imported: the servers start in it, before any test runs."""
    base = tempfile.mkdtemp(prefix="atenlint-hostile-lsp-")
    root, canaries, outside = (os.path.join(base, name) for name in ("ws", "canaries", "outside"))
    for folder in (root, canaries, outside):
        os.mkdir(folder)

    def put(path: str, text: str) -> None:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)

    put(
        os.path.join(base, "pyproject.toml"),
        f'[tool.atenlint]\nignore = {{mps = ["{mps_missing().op}"]}}\n'
        '[tool.atenlint.modules."good.Good"]\n'
        f"init = \"__import__('os').mkdir({canaries!r} + '/init') or Good()\"\n",
    )
    put(os.path.join(root, "good.py"), GOOD)
    put(os.path.join(root, "installs.py"), INSTALLS)
    for name in ("json", "typing", "random"):
        put(os.path.join(root, f"{name}.py"), f"open({canaries!r} + '/{name}', 'w').close()\n")
    os.symlink("/dev/zero", os.path.join(root, "zero.py"))
    os.mkfifo(os.path.join(root, "fifo_one.py"))
    os.mkfifo(os.path.join(root, "fifo_two.py"))
    put(os.path.join(outside, "evil.py"), f"open({canaries!r} + '/outside', 'w').close()\n" + GOOD)
    os.symlink(os.path.join(outside, "evil.py"), os.path.join(root, "linked_out.py"))
    # An "interpreter" checked into the workspace: a script that writes a canary when run.
    python = os.path.join(root, ".venv", "bin", "python")
    os.makedirs(os.path.dirname(python))
    put(python, f'#!/bin/sh\ntouch {canaries}/interpreter\nexec {sys.executable} "$@"\n')
    os.chmod(python, os.stat(python).st_mode | stat.S_IXUSR)
    return base, root, canaries


BASE, ROOT, CANARIES = _hostile_workspace()
ATENLINT = os.path.join(os.path.dirname(sys.executable), "atenlint")
# Start `atenlint serve` with the project root as its working folder.
SERVER = [
    sys.executable,
    "-c",
    "import os, sys; os.chdir(sys.argv[1]); os.execv(sys.argv[2], sys.argv[2:])",
    ROOT,
    ATENLINT,
    "serve",
]


@pytest.fixture(scope="module", autouse=True)
def _cleanup():
    yield
    shutil.rmtree(BASE, ignore_errors=True)


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def trusted(lsp_client: LanguageClient):
    await start(lsp_client, "neovim", ROOT, {"trusted": True, "timeout": 60})
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def untrusted(lsp_client: LanguageClient):
    await start(lsp_client, "emacs", ROOT, {"trusted": False, "python": os.path.join(ROOT, ".venv", "bin", "python")})
    yield
    await lsp_client.shutdown_session()


async def check_workspace(client: LanguageClient) -> dict:
    return await client.workspace_execute_command_async(types.ExecuteCommandParams(command="atenlint.checkWorkspace"))


@pytest.mark.asyncio
async def test_trusted_workspace_check_survives_hostile_files(trusted: LanguageClient):
    result = await check_workspace(trusted)
    assert not result["cancelled"]
    good = [d.code for d in trusted.diagnostics[uri_of(os.path.join(ROOT, "good.py"))]]
    assert good == ["MPS001"]  # the parent folder's `ignore` and `init` were not read
    (refusal,) = trusted.diagnostics[uri_of(os.path.join(ROOT, "installs.py"))]
    assert refusal.code == "ATL012" and refusal.range.start.line == 5
    assert "tried to run `pip install -U ultralytics`" in refusal.message
    for name in ("zero.py", "fifo_one.py", "fifo_two.py", "linked_out.py"):
        assert (
            uri_of(os.path.join(ROOT, name)) not in trusted.diagnostics
            or not trusted.diagnostics[uri_of(os.path.join(ROOT, name))]
        )
    # the session goes on: an edited file is analysed normally afterwards
    uri = open_file(trusted, os.path.join(ROOT, "good.py"))
    assert [d.code for d in await diagnostics(trusted, uri)] == ["MPS001"]
    assert os.listdir(CANARIES) == []


@pytest.mark.asyncio
async def test_untrusted_session_never_runs_the_workspace_interpreter(untrusted: LanguageClient):
    uri = open_file(untrusted, os.path.join(ROOT, "good.py"))
    items = await diagnostics(untrusted, uri)
    assert [d.code for d in items] == ["MPS001"] and items[0].data["capture"] == "static"
    result = await check_workspace(untrusted)
    assert not result["cancelled"]
    assert any("its interpreter" in m.message and "is not run" in m.message for m in untrusted.messages)
    assert os.listdir(CANARIES) == []


@pytest.mark.asyncio
async def test_requests_on_unopened_devices_and_fifos_answer_without_reading_them(untrusted: LanguageClient):
    # pygls reads an unopened document whole on first use: /dev/zero grew the server without
    # bound and a FIFO stopped it answering. Every read goes through the bounded reader.
    empty = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0))
    for uri in ["file:///dev/zero"] + [uri_of(os.path.join(ROOT, n)) for n in ("zero.py", "fifo_one.py")]:
        actions = await asyncio.wait_for(
            untrusted.text_document_code_action_async(
                types.CodeActionParams(
                    text_document=types.TextDocumentIdentifier(uri=uri),
                    range=empty,
                    context=types.CodeActionContext(diagnostics=[]),
                )
            ),
            timeout=60,
        )
        assert not actions
        answer = await asyncio.wait_for(
            untrusted.workspace_execute_command_async(
                types.ExecuteCommandParams(command="atenlint.report", arguments=[uri])
            ),
            timeout=60,
        )
        assert "Not a readable" in answer["markdown"] or "Not a file" in answer["markdown"]
    # still answering, with the real file's finding
    uri = open_file(untrusted, os.path.join(ROOT, "good.py"))
    assert [d.code for d in await diagnostics(untrusted, uri)] == ["MPS001"]
