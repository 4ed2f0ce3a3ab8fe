"""Drive the real `atenlint serve` over stdio like an editor does, whatever the
client's capabilities say it does (push or pull diagnostics, position encodings)."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from collections.abc import Callable

from lsprotocol import types
from pygls.uris import from_fs_path
from pytest_lsp import LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, default_feature

from ci_support import model_source

HERE = os.path.dirname(os.path.abspath(__file__))
WORKSPACE = os.path.join(HERE, "workspace")
CLIENTS = ["visual-studio-code", "neovim", "emacs"]
SERVER = [sys.executable, "-m", "atenlint", "serve"]


def copy_workspace(tmp_path) -> str:
    """The workspace (its `pyproject.toml`) with `model.py`: a model calling two ops that have
    no MPS kernel in the installed torch (`ci_support.model_source()`: `model_calls()` are
    the calls, on lines 11 and 12 (LSP lines 10 and 11), in the same columns on every torch)."""
    root = os.path.join(str(tmp_path), "ws")
    shutil.copytree(WORKSPACE, root)
    with open(os.path.join(root, "model.py"), "w", encoding="utf-8") as handle:
        handle.write(model_source())
    return root


def _wake(client: LanguageClient) -> None:
    """Wake every wait on `client` (`until_published`): something it may wait for arrived."""
    event = getattr(client, "published", None)
    if event is not None:
        event.set()
        client.published = asyncio.Event()


def _woken_by(method: str, record: Callable | None = None) -> None:
    """pytest-lsp's own handler of `method` for every client, then record and wake.
    `default_feature` is pytest-lsp's way to replace a handler of the clients it makes."""
    original = DEFAULT_CLIENT_FEATURES[method]

    @default_feature(method)
    def handler(client: LanguageClient, params):
        result = original(client, params)
        if record is not None and hasattr(client, "events"):
            record(client, params)
        _wake(client)
        return result


def _record_publish(client: LanguageClient, params) -> None:
    client.versions[params.uri] = params.version  # the version each publish was for
    client.events.append(("publish", params.uri, params.version))


_woken_by(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, _record_publish)
_woken_by(types.WORKSPACE_DIAGNOSTIC_REFRESH)
_woken_by(types.WINDOW_LOG_MESSAGE)


def register_extras(client: LanguageClient) -> None:
    """What real editors answer that pytest-lsp's client does not by default."""
    client.statuses = []
    client.versions = {}
    client.events = []  # ("publish", uri, version) and ("status", state), in arrival order
    # Set (and replaced) at every publish, status, log message or refresh: waits wake on it.
    client.published = asyncio.Event()

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register(params):
        return None

    @client.feature("atenlint/status")
    def status(params):
        status = params._asdict() if hasattr(params, "_asdict") else dict(params)
        client.statuses.append(status)
        client.events.append(("status", status.get("state")))
        _wake(client)


async def start(client: LanguageClient, spec: str, root: str, options: dict | None = None) -> None:
    register_extras(client)
    client.server_caps = (
        await client.initialize_session(
            types.InitializeParams(
                capabilities=client_capabilities(spec),
                root_uri=from_fs_path(root),
                workspace_folders=[types.WorkspaceFolder(uri=from_fs_path(root), name="ws")],
                initialization_options=options or {},
            )
        )
    ).capabilities


def uses_pull(client: LanguageClient) -> bool:
    return client.server_caps.diagnostic_provider is not None


def uri_of(path: str) -> str:
    return from_fs_path(path)


def open_file(client: LanguageClient, path: str, text: str | None = None, version: int = 1) -> str:
    uri = uri_of(path)
    if text is None:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    client.diagnostics.pop(uri, None)
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="python", version=version, text=text)
        )
    )
    return uri


def replace_text(client: LanguageClient, uri: str, text: str, version: int) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


def save(client: LanguageClient, uri: str, path: str | None = None, text: str | None = None) -> None:
    if path is not None and text is not None:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
    client.diagnostics.pop(uri, None)
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri)))


async def diagnostics(client: LanguageClient, uri: str, timeout: float = 90.0) -> list[types.Diagnostic]:
    """The document's current diagnostics: pulled, or the next push."""
    if uses_pull(client):
        report = await asyncio.wait_for(
            client.text_document_diagnostic_async(
                types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri))
            ),
            timeout,
        )
        return list(report.items)
    if not await until_published(client, lambda: uri in client.diagnostics, timeout):
        raise TimeoutError(f"no diagnostics for {uri} within {timeout}s")
    return list(client.diagnostics[uri])


async def until_published(client: LanguageClient, condition: Callable[[], bool], timeout: float) -> bool:
    """Wait until `condition()` holds, re-checking it at each publishDiagnostics, status,
    log message or diagnostic refresh (no polling); False when `timeout` seconds pass first."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        published = client.published  # taken before the check: a publish after it sets this one
        if condition():
            return True
        remaining = deadline - loop.time()
        if remaining <= 0:
            return False
        try:
            await asyncio.wait_for(published.wait(), remaining)
        except asyncio.TimeoutError:
            return condition()


def apply_edits(text: str, edits: list[types.TextEdit], encoding: str = "utf-16") -> str:
    """Apply TextEdits (positions in the negotiated encoding) the way an editor does."""
    lines = text.splitlines(keepends=True)

    def offset(position: types.Position) -> int:
        line_text = lines[position.line] if position.line < len(lines) else ""
        column = position.character
        if encoding == "utf-16":
            units, index = 0, 0
            while index < len(line_text) and units < column:
                units += 2 if ord(line_text[index]) > 0xFFFF else 1
                index += 1
            column = index
        elif encoding == "utf-8":
            column = len(line_text.encode("utf-8")[:column].decode("utf-8", errors="ignore"))
        return sum(len(x) for x in lines[: position.line]) + column

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        start, end = offset(edit.range.start), offset(edit.range.end)
        text = text[:start] + edit.new_text + text[end:]
        lines = text.splitlines(keepends=True)
    return text


def encoding_of(client: LanguageClient) -> str:
    encoding = client.server_caps.position_encoding or "utf-16"
    return str(getattr(encoding, "value", encoding))


async def published_until(client: LanguageClient, uri: str, predicate, timeout: float = 90.0) -> list:
    """Wait for a push whose diagnostics satisfy `predicate` (later analyses may refine
    what an earlier publish said)."""

    def satisfied() -> bool:
        items = client.diagnostics.get(uri)
        return items is not None and bool(predicate(list(items)))

    if not await until_published(client, satisfied, timeout):
        raise TimeoutError(f"diagnostics for {uri} never satisfied the condition; last: {client.diagnostics.get(uri)}")
    return list(client.diagnostics[uri])


def is_final_publish(client: LanguageClient, uri: str, version: int, since: int = 0) -> bool:
    """The last publish for `uri`, among the events from index `since` on, is for `version`
    and came from a finished check, and no check runs now.

    The server publishes the fast targets' diagnostics while the export targets still run
    (its status says "busy" then), and the full result after its status went back to
    "idle". So a publish whose latest preceding status is "idle" is a full result."""
    last_status = None
    final = False
    for index, event in enumerate(client.events):
        if event[0] == "status":
            last_status = event[1]
        elif event[1] == uri and index >= since:
            final = event[2] == version and last_status == "idle"
    return final and last_status == "idle"


async def final_diagnostics(
    client: LanguageClient, uri: str, version: int, since: int = 0, timeout: float = 90.0
) -> list:
    """The full (not fast-targets-only) push for exactly this document version, published
    after event index `since` (take `len(client.events)` before the change or save)."""
    if not await until_published(client, lambda: is_final_publish(client, uri, version, since), timeout):
        raise TimeoutError(f"no final diagnostics for {uri} version {version}; events: {client.events[-8:]}")
    return list(client.diagnostics[uri])


def edits_of(action: types.CodeAction, uri: str) -> list[types.TextEdit]:
    """The action's edits of `uri`: `documentChanges` (versioned, for clients that take
    them) or plain `changes`."""
    edit = action.edit
    if edit is None:
        return []
    if edit.document_changes:
        return [
            e
            for change in edit.document_changes
            if isinstance(change, types.TextDocumentEdit) and change.text_document.uri == uri
            for e in change.edits
        ]
    return list((edit.changes or {}).get(uri, []))


def edit_version(action: types.CodeAction, uri: str) -> int | None:
    """The document version `action`'s edit of `uri` is stamped with (None: unversioned)."""
    for change in (action.edit.document_changes if action.edit else None) or []:
        if isinstance(change, types.TextDocumentEdit) and change.text_document.uri == uri:
            return change.text_document.version
    return None


def pulling_capabilities() -> types.ClientCapabilities:
    """VS Code's recorded capabilities plus pull diagnostics with refresh (as VS Code >= 1.74)."""
    capabilities = client_capabilities("visual-studio-code")
    capabilities.text_document.diagnostic = types.DiagnosticClientCapabilities(dynamic_registration=False)
    capabilities.workspace.diagnostics = types.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
    return capabilities
