"""The pygls language server: each handler translates one LSP message into a call on the
`Session` (state and scheduling) and converts results with `convert`. Nothing here
analyses anything.

The analysis side (the session, conversions, notebooks: most of atenlint) is imported
after the `initialize` answer has gone out (`load_analysis`), never before it: an editor
sends nothing else until it has that answer, and the workers' start does not wait for
those imports either (`_start_session`)."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import os
import re
import threading
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, BinaryIO, TypedDict
from urllib.parse import unquote

from lsprotocol import types
from pygls.exceptions import FeatureAlreadyRegisteredError, JsonRpcServerNotInitialized
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import to_fs_path

from .. import __version__
from ..uris import path_uri
from .capabilities import FIX_ALL_KIND, NOTEBOOK_SYNC
from .prestart import RelayedLog, early_pool

if TYPE_CHECKING:
    from ..findings import Finding
    from ..sourcetext import SourceText
    from ..worker.pool import WorkerPool
    from . import convert
    from .notebooks import NotebookDocuments
    from .pull import PullReports
    from .session import Session
    from .state import Served

STATUS_NOTIFICATION = "atenlint/status"
CHECK_WORKSPACE = "atenlint.checkWorkspace"
REPORT = "atenlint.report"
_LOG_LEVEL = {
    "error": types.MessageType.Error,
    "warning": types.MessageType.Warning,
    "info": types.MessageType.Info,
    "debug": types.MessageType.Log,
}

MessageId = int | str  # a JSON-RPC request id

# The id of the request a handler serves (handlers' tasks inherit it from `_handle_request`).
_REQUEST_ID: contextvars.ContextVar[MessageId | None] = contextvars.ContextVar("atenlint_request_id", default=None)


class WorkspaceCheckSummary(TypedDict):
    """The answer to `atenlint.checkWorkspace` (the VS Code client shows it)."""

    files: int
    findings: int
    cancelled: bool
    message: str | None  # why the check saw what it saw (no folder, no Python files), if anything


class ReportAnswer(TypedDict):
    """The answer to `atenlint.report`."""

    markdown: str


_analysis_loaded = False


def load_analysis() -> None:
    """Import the analysis side of the server, once. Called right after the `initialize`
    answer (`_start_session`); each function imports what it uses of it where it uses it
    (a lookup in `sys.modules` once loaded), so a test's server or a message that came
    before `initialize` finds it too."""
    global _analysis_loaded
    if not _analysis_loaded:
        from . import convert, notebooks, session  # noqa: F401 - imported for their side: loaded now

        _analysis_loaded = True


class AtenlintProtocol(LanguageServerProtocol):
    """pygls answers `$/cancelRequest` for `workspace/executeCommand` without reaching the
    command's own task (it runs under another id), and warns about every cancel of a request
    already answered (VS Code cancels pulls it no longer needs). Here a cancel also reaches
    whatever registered for that request id, and a late one is not worth a warning."""

    def _handle_request(self, msg_id: MessageId, method_name: str, params: Any) -> None:
        token = _REQUEST_ID.set(msg_id)
        try:
            super()._handle_request(msg_id, method_name, params)
        finally:
            _REQUEST_ID.reset(token)

    def _handle_cancel_notification(self, msg_id: MessageId) -> None:
        if isinstance(self._server, AtenlintServer):
            self._server.request_cancelled(msg_id)
        if msg_id not in self._request_futures:
            return  # answered already: nothing to cancel
        super()._handle_cancel_notification(msg_id)


class AtenlintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "atenlint",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            notebook_document_sync=NOTEBOOK_SYNC,
            protocol_cls=AtenlintProtocol,
        )
        self.cancellations: dict[MessageId, threading.Event] = {}  # request id -> the event a running check watches
        self._session: Session | None = None  # created after `initialize` has been answered
        # Made on first use (`load_analysis`): their classes belong to the analysis side.
        self._notebooks: NotebookDocuments | None = None
        self._encoding: convert.Encoding | None = None
        self._pulls: PullReports | None = None
        self.supports_refresh = False
        self.supports_configuration = False
        self.versioned_edits = False  # the client applies `documentChanges` (quick fixes carry versions)
        # Per file: (what was served, the text, the encoding) -> its diagnostics converted for code actions.
        self.known: dict[str, tuple[tuple[str, str, str], KnownDiagnostics]] = {}
        self.loop: asyncio.AbstractEventLoop | None = None
        # Workers `serve` started from the raw `initialize` before pygls was imported.
        self.prestarted: tuple[WorkerPool, RelayedLog] | None = None

    @property
    def session(self) -> Session:
        """The session `initialize` started. Every other message comes after it (LSP's
        rule); one that does not is answered with ServerNotInitialized, never a crash."""
        if self._session is None:
            raise JsonRpcServerNotInitialized("atenlint: the server has not received `initialize` yet")
        return self._session

    @property
    def notebooks(self) -> NotebookDocuments:
        if self._notebooks is None:
            from .notebooks import NotebookDocuments

            self._notebooks = NotebookDocuments()
        return self._notebooks

    @property
    def encoding(self) -> convert.Encoding:
        """The position encoding agreed at `initialize` (UTF-16 until then)."""
        if self._encoding is None:
            from .convert import Encoding

            self._encoding = Encoding()
        return self._encoding

    @encoding.setter
    def encoding(self, encoding: convert.Encoding) -> None:
        self._encoding = encoding

    @property
    def pulls(self) -> PullReports:
        if self._pulls is None:
            from .pull import PullReports

            self._pulls = PullReports()
        return self._pulls

    def start_session(self, session: Session, pool: WorkerPool | None = None) -> None:
        """`pool`: workers already starting for these settings (`_early_pool`)."""
        self._session = session
        session.start(pool)  # workers warm up in the background

    def stop_session(self) -> None:
        if self._session is not None:
            self._session.shutdown()

    def request_cancelled(self, msg_id: MessageId) -> None:
        event = self.cancellations.get(msg_id)
        if event is not None:
            event.set()

    # -- Callbacks for the session (called on the event loop thread) ------
    def publish(self, uri: str, version: int | None, findings: list[Finding]) -> None:
        from . import convert, notebooks

        if notebooks.publish_cells(self, uri, findings):  # a notebook: on each cell's URI
            return
        path = _path(uri)
        source = self.shown_source(uri)
        version_of_text = self.session.state.served(path).version if path is not None else None
        diagnostics = [convert.diagnostic(f, source, self.encoding, version_of_text) for f in findings]
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, version=version, diagnostics=diagnostics)
        )

    def refresh(self) -> None:
        if self.supports_refresh:
            self.workspace_diagnostic_refresh(None)

    def status(self, status: dict[str, Any]) -> None:
        self.call_on_loop(self.protocol.notify, STATUS_NOTIFICATION, status)

    def log(self, message: str, level: str = "info") -> None:
        self.call_on_loop(
            self.window_log_message,
            types.LogMessageParams(type=_LOG_LEVEL.get(level, types.MessageType.Info), message=message),
        )

    def show(self, message: str, level: str = "info") -> None:
        self.call_on_loop(
            self.window_show_message,
            types.ShowMessageParams(type=_LOG_LEVEL.get(level, types.MessageType.Info), message=message),
        )

    def call_on_loop(self, function: Callable[..., object], *args: object) -> None:
        """Messages may come from worker threads; the transport belongs to the loop."""
        if self.loop is not None and threading.current_thread() is not threading.main_thread():
            if not self.loop.is_closed():
                self.loop.call_soon_threadsafe(function, *args)
        else:
            function(*args)

    def shown_source(self, uri: str) -> SourceText | None:
        """The text the file's shown results were computed on (the saved file while the
        buffer has unsaved edits under `onSave`): positions convert against it."""
        from ..sourcetext import SourceText

        path = _path(uri)
        text = self.session.source_text_for(path) if path is not None else None
        if path is not None and text is not None:
            return SourceText(text, path)
        return self.source(uri)

    def source(self, uri: str) -> SourceText | None:
        """The document's text: the open buffer, else the file on disk (a regular file of
        bounded size only: a URI may name a device or a FIFO)."""
        from ..sourcetext import SourceText
        from .state import read_saved_text

        document = self.session.documents.get(uri)
        if document is not None:
            return SourceText(document.text, document.path)
        path = _path(uri)
        text = read_saved_text(path) if path is not None else None
        return SourceText(text, path) if path is not None and text is not None else None

    def client_text(self, uri: str) -> tuple[int | None, str] | None:
        """A document's version and text as the client has it open, else the file on disk
        through the bounded reader: pygls would read any path whole (`/dev/zero`, a FIFO)."""
        document = self.workspace.text_documents.get(unquote(uri))  # pygls keys them so
        if document is not None:
            return document.version, document.source
        source = self.source(uri)
        return (None, source.text) if source is not None else None

    def items(self, served: Served) -> list[types.Diagnostic]:
        """A served file's diagnostics, positions converted against the text they refer to."""
        from ..sourcetext import SourceText
        from . import convert
        from .state import read_saved_text

        text = served.text if served.text is not None else read_saved_text(served.path)
        source = SourceText(text, served.path) if text is not None else None
        return [convert.diagnostic(f, source, self.encoding, served.version) for f in served.findings]


server = AtenlintServer()


# Notebook documents: notebooks.py.
@server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
def notebook_did_open(ls: AtenlintServer, params: types.DidOpenNotebookDocumentParams) -> None:
    from . import notebooks

    notebooks.did_open(ls, params)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
def notebook_did_change(ls: AtenlintServer, params: types.DidChangeNotebookDocumentParams) -> None:
    from . import notebooks

    notebooks.did_change(ls, params)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
def notebook_did_save(ls: AtenlintServer, params: types.DidSaveNotebookDocumentParams) -> None:
    from . import notebooks

    notebooks.did_save(ls, params)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
def notebook_did_close(ls: AtenlintServer, params: types.DidCloseNotebookDocumentParams) -> None:
    from . import notebooks

    notebooks.did_close(ls, params)


def _path(uri: str) -> str | None:
    path = to_fs_path(uri)
    return os.path.abspath(path) if path else None


def _python_path(uri: str, language_id: str | None = None) -> str | None:
    """The file path of a Python document (None: another language, or not a file)."""
    if language_id == "python" or uri.endswith((".py", ".pyi")):
        return _path(uri)
    return None


@server.feature(types.INITIALIZE)
def initialize(ls: AtenlintServer, params: types.InitializeParams) -> None:
    ls.loop = asyncio.get_running_loop()
    capabilities = params.capabilities
    encoding = ls.workspace.position_encoding or types.PositionEncodingKind.Utf16
    text_document = capabilities.text_document
    workspace = capabilities.workspace
    ls.supports_refresh = bool(workspace and workspace.diagnostics and workspace.diagnostics.refresh_support)
    # Pull only when we can also tell the client to re-pull (a file it imports changed, a
    # slow analysis finished); otherwise push. One mechanism per session: a client that
    # pulls and also receives pushes shows every squiggle twice.
    pull = bool(text_document and text_document.diagnostic) and ls.supports_refresh
    if pull:
        _register_pull_diagnostics(ls)  # pygls builds the capabilities from the features after this handler
    ls.supports_configuration = bool(workspace and workspace.configuration)
    edits = workspace.workspace_edit if workspace else None
    ls.versioned_edits = bool(edits and edits.document_changes)
    uris = [f.uri for f in params.workspace_folders or []] or ([params.root_uri] if params.root_uri else [])
    folders = [path for path in map(_path, uris) if path]
    # The answer goes out when this returns; the session starts on the loop's next turn,
    # before any later message is read (an editor sends nothing before it has the answer).
    ls.loop.call_soon(_start_session, ls, params.initialization_options, folders, pull, encoding)


def _start_session(
    ls: AtenlintServer, options: Any, folders: list[str], pull: bool, encoding: types.PositionEncodingKind | str
) -> None:
    """After the `initialize` answer: begin the workers' start (their torch import is the
    longest wait of a cold server), then import the analysis side meanwhile and make the
    session, which adopts those workers."""
    from .settings import editor_settings

    settings = editor_settings(options)
    pool = _adopt_prestarted(ls) or early_pool(settings, bool(folders), ls.log)
    load_analysis()
    from .convert import Encoding
    from .session import Session

    ls.encoding = Encoding(encoding)
    ls.log(
        f"atenlint {__version__}: {'pull' if pull else 'push'} diagnostics, position encoding "
        f"{ls.encoding.name}, workers run {settings.python}"
    )
    ls.start_session(Session(ls, settings, folders, pull=pull), pool)


def _adopt_prestarted(ls: AtenlintServer) -> WorkerPool | None:
    """The workers `serve` began starting before pygls was imported (`prestart.py`), their
    log from now on the client's."""
    prestarted, ls.prestarted = ls.prestarted, None
    if prestarted is None:
        return None
    pool, log = prestarted
    log.attach(ls.log)
    return pool


def _register_pull_diagnostics(ls: AtenlintServer) -> None:
    """Pull diagnostics are offered only to a client that pulls: registered here, through
    pygls's own decorator, so that `initialize`'s capabilities include them."""
    try:
        ls.feature(types.TEXT_DOCUMENT_DIAGNOSTIC, PULL_OPTIONS)(document_diagnostic)
        ls.feature(types.WORKSPACE_DIAGNOSTIC)(workspace_diagnostic)
    except FeatureAlreadyRegisteredError:
        pass  # a second initialize in the same process: they are registered already


@server.feature(types.INITIALIZED)
async def initialized(ls: AtenlintServer, params: types.InitializedParams) -> None:
    ls.session.announce()
    await _pull_configuration(ls)
    if _dynamic_watchers(ls):
        await ls.client_register_capability_async(
            types.RegistrationParams(
                registrations=[
                    types.Registration(
                        id=str(uuid.uuid4()),
                        method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                        register_options=types.DidChangeWatchedFilesRegistrationOptions(
                            watchers=[
                                types.FileSystemWatcher(glob_pattern="**/pyproject.toml"),
                                types.FileSystemWatcher(glob_pattern="**/*.py"),
                            ]
                        ),
                    )
                ]
            )
        )


def _dynamic_watchers(ls: AtenlintServer) -> bool:
    workspace = ls.client_capabilities.workspace
    watched = workspace.did_change_watched_files if workspace else None
    return bool(watched and watched.dynamic_registration)


async def _pull_configuration(ls: AtenlintServer) -> None:
    if not ls.supports_configuration:
        return
    try:
        sections = await ls.workspace_configuration_async(
            types.ConfigurationParams(items=[types.ConfigurationItem(section="atenlint")])
        )
    except Exception as error:  # noqa: BLE001 - a client that cannot answer keeps the initial options
        ls.log(f"workspace/configuration failed: {error}", "warning")
        return
    _apply_editor_settings(ls, sections[0] if sections else None)


def _apply_editor_settings(ls: AtenlintServer, section: object) -> None:
    """New `atenlint.*` settings from the client. The session decides what they change
    (a new interpreter gets new workers once the running analyses are done); the server
    only asks for the re-check."""
    from .settings import editor_settings

    if (
        isinstance(section, dict)
        and section
        and ls.session.configure(editor_settings(section, base=ls.session.settings))
    ):
        ls.session.recheck_all()


@server.feature(types.SHUTDOWN)
def shutdown(ls: AtenlintServer, params: None) -> None:
    ls.stop_session()


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: AtenlintServer, params: types.DidOpenTextDocumentParams) -> None:
    document = params.text_document
    path = _python_path(document.uri, document.language_id)
    if path is not None:
        ls.session.open(document.uri, path, document.version, document.text)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: AtenlintServer, params: types.DidChangeTextDocumentParams) -> None:
    uri = params.text_document.uri
    if uri in ls.session.documents:
        ls.session.change(uri, params.text_document.version, ls.workspace.get_text_document(uri).source)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
def did_save(ls: AtenlintServer, params: types.DidSaveTextDocumentParams) -> None:
    uri = params.text_document.uri
    path = _path(uri)
    if path and os.path.basename(path) == "pyproject.toml":
        ls.session.project_settings_changed()
        ls.session.recheck_all()
    elif uri in ls.session.documents:
        ls.session.save(uri, ls.workspace.get_text_document(uri).source)
    elif path:
        ls.session.files_changed([path])


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: AtenlintServer, params: types.DidCloseTextDocumentParams) -> None:
    ls.pulls.closed(params.text_document.uri)
    _forget_known(ls, params.text_document.uri)
    ls.session.close(params.text_document.uri)


def _forget_known(ls: AtenlintServer, uri: str) -> None:
    """A closed file's converted diagnostics are not kept (a long session opens many files)."""
    path = _path(uri)
    if path is not None:
        ls.known.pop(path, None)


@server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def did_change_watched_files(ls: AtenlintServer, params: types.DidChangeWatchedFilesParams) -> None:
    projects = [c for c in params.changes if c.uri.endswith("pyproject.toml")]
    if projects:
        ls.session.project_settings_changed()
        ls.session.recheck_all()
        return
    ls.session.files_changed([p for p in (_path(c.uri) for c in params.changes) if p])


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
async def did_change_configuration(ls: AtenlintServer, params: types.DidChangeConfigurationParams) -> None:
    if ls.supports_configuration:
        await _pull_configuration(ls)
    else:
        _apply_editor_settings(ls, params.settings)


PULL_OPTIONS = types.DiagnosticOptions(identifier="atenlint", inter_file_dependencies=True, workspace_diagnostics=True)


# Registered at `initialize` only for a client that pulls (see `_register_pull_diagnostics`).
async def document_diagnostic(
    ls: AtenlintServer, params: types.DocumentDiagnosticParams
) -> types.DocumentDiagnosticReport:
    from . import notebooks

    uri = params.text_document.uri
    if notebooks.is_cell(ls, uri):
        return await notebooks.cell_diagnostics(ls, params)
    path = _path(uri)
    if uri not in ls.session.documents:
        path = _python_path(uri)
        if path is None:
            return types.RelatedFullDocumentDiagnosticReport(items=[])
        opened = ls.client_text(uri)
        if opened is None:
            return types.RelatedFullDocumentDiagnosticReport(items=[])
        ls.session.open(uri, path, *opened)
    # The fast targets' result of a running check answers at once; a refresh brings the full one.
    result = await ls.session.result_for(uri, partial=True)
    if result is None or path is None or uri not in ls.session.documents:
        return types.RelatedFullDocumentDiagnosticReport(items=[])
    return ls.pulls.document(ls.session.state, uri, path, params.previous_result_id, ls.items)


def workspace_diagnostic(
    ls: AtenlintServer, params: types.WorkspaceDiagnosticParams
) -> types.WorkspaceDiagnosticReport:
    previous = {p.uri: p.value for p in params.previous_result_ids or []}
    return ls.pulls.workspace(ls.session.state, previous, _path, ls.items)


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL_KIND], resolve_provider=False),
)
def code_action(ls: AtenlintServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
    from . import convert, notebooks

    uri = params.text_document.uri
    if notebooks.is_cell(ls, uri):
        return notebooks.code_actions(ls, params)
    document = ls.session.documents.get(uri)
    if document is not None:
        text = document.text
    else:
        opened = ls.client_text(uri)
        if opened is None:
            return None
        text = opened[1]
    known = _known_diagnostics(ls, _path(uri), uri, text)
    only = list(params.context.only) if params.context.only is not None else None
    diagnostics = list(params.context.diagnostics)
    actions = convert.code_actions(
        uri,
        text,
        diagnostics,
        only,
        ls.encoding,
        [d for _, d in known],
        params.range,
        known,
        ls.session.folders,
        ls.versioned_edits,
    )
    if not only or types.CodeActionKind.QuickFix in only:
        actions += _inputs_action(ls, uri, text, params.range.start.line, document.version if document else None)
    return actions or None


KnownDiagnostics = list[tuple[types.Diagnostic, "convert.DiagnosticData"]]


def _known_diagnostics(ls: AtenlintServer, path: str | None, uri: str, text: str) -> KnownDiagnostics:
    """The server's own diagnostics, for clients that do not echo `data` (Vim + ALE). Once the
    buffer changed since the check their positions are stale: then only the diagnostics the
    client echoes carry fixes, each stamped with the version it was computed for.

    Converted once per served result (`ls.known`): an editor asks for code actions at every
    cursor move, and converting every finding again (headlines, details, positions) was most
    of each request's time."""
    from ..sourcetext import SourceText
    from . import convert

    shown = ls.session.source_text_for(path) if path else None
    if path is None or (shown is not None and shown != text):
        return []
    served = ls.session.state.served(path)
    key = (served.result_id, ls.encoding.name, text)
    cached = ls.known.get(path)
    if cached is not None and cached[0] == key:
        return list(cached[1])
    source = SourceText(text, path)
    known = [
        (convert.diagnostic(f, source, ls.encoding, served.version), convert.diagnostic_data(f, served.version))
        for f in served.findings
    ]
    ls.known[path] = (key, known)
    return list(known)


# The lines `inputs_suggest.code_action_edit` answers on: a class header (its `class` line or
# a decorator) or a `def forward` line. Any other line has no inputs action, so the file is
# not parsed for it (code actions are asked at every cursor move).
_INPUTS_ACTION_LINE = re.compile(r"\s*(?:class\b|@|(?:async\s+)?def\s+forward\b)")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # the line breaks of Python's tokenizer and of LSP positions


@functools.lru_cache(maxsize=32)  # the same buffer and line asked again (the cursor stays on a class line): once
def _inputs_edit(text: str, line: int) -> tuple[str, int, str] | None:
    from ..inputs_suggest import code_action_edit

    return code_action_edit(text, line)


def _inputs_action(ls: AtenlintServer, uri: str, text: str, line: int, version: int | None) -> list[types.CodeAction]:
    """Example inputs read off forward's signature (pure: atenlint.inputs_suggest), at column 0;
    computed on the buffer as it is now, so valid for its current version only."""
    from . import convert

    lines = _LINE_BREAK.split(text)
    if not 0 <= line < len(lines) or not _INPUTS_ACTION_LINE.match(lines[line]):
        return []
    suggestion = _inputs_edit(text, line)
    if suggestion is None:
        return []
    title, at_line, new_text = suggestion
    at = types.Range(types.Position(at_line, 0), types.Position(at_line, 0))
    action = types.CodeAction(
        title=title,
        kind=types.CodeActionKind.QuickFix,
        edit=types.WorkspaceEdit(changes={uri: [types.TextEdit(range=at, new_text=new_text)]}),
    )
    return [convert.stamped(action, uri, {"version": version}, ls.versioned_edits)]


@server.feature(types.TEXT_DOCUMENT_HOVER)
def hover(ls: AtenlintServer, params: types.HoverParams) -> types.Hover | None:
    from . import convert
    from .results import call_site_at, findings_at

    uri = params.text_document.uri
    source = ls.shown_source(uri)
    position = ls.encoding.from_client(params.position, source)
    result = ls.session.last_result(uri)
    site = call_site_at(result, position.line, position.character)
    if site is None:
        return None
    # Remedies that are advice rather than edits (how to enable the CPU fallback) live here.
    notes = [
        fix.get("description") or fix.get("title")
        for finding in findings_at(result, position.line, position.character)
        for fix in finding.fixes
        if not fix.get("edits")
    ]
    markdown = _hover_markdown_ok(ls)
    return types.Hover(
        contents=types.MarkupContent(
            kind=types.MarkupKind.Markdown if markdown else types.MarkupKind.PlainText,
            value=convert.hover_markdown(site, _torch_version(ls), notes, markdown=markdown),
        ),
        range=ls.encoding.to_client(site.range, source),
    )


def _torch_version(ls: AtenlintServer) -> str:
    engine = ls.session.engine
    return engine.torch_version if engine is not None else "?"


def _hover_markdown_ok(ls: AtenlintServer) -> bool:
    """Markdown unless the client says it renders plain text only (or prefers it)."""
    text_document = ls.client_capabilities.text_document
    formats = text_document.hover.content_format if text_document and text_document.hover else None
    return not formats or formats[0] == types.MarkupKind.Markdown


@server.command(CHECK_WORKSPACE)
async def check_workspace(ls: AtenlintServer, *args: object) -> WorkspaceCheckSummary:
    token = str(uuid.uuid4())
    cancelled = threading.Event()
    request_id = _REQUEST_ID.get()
    if request_id is not None:
        ls.cancellations[request_id] = cancelled  # `$/cancelRequest` sets it: the thread stops at the next file
    try:
        return await _check_workspace(ls, token, cancelled)
    finally:
        if request_id is not None:
            ls.cancellations.pop(request_id, None)


async def _create_progress(ls: AtenlintServer, token: str, cancelled: threading.Event) -> bool:
    """Start work-done progress for the check; False when the client has none to show."""
    try:
        await ls.work_done_progress.create_async(token)
    except Exception as error:  # noqa: BLE001 - a client without work-done progress still gets the results
        ls.log(f"no progress for Check Workspace: {error}", "debug")
        return False
    ls.work_done_progress.begin(
        token, types.WorkDoneProgressBegin(title="atenlint: checking the workspace", cancellable=True, percentage=0)
    )
    future = ls.work_done_progress.tokens.get(token)
    if future is not None:
        future.add_done_callback(lambda f: cancelled.set() if f.cancelled() else None)
    return True


async def _check_workspace(ls: AtenlintServer, token: str, cancelled: threading.Event) -> WorkspaceCheckSummary:
    session = ls.session  # the one this check runs in, even if the client re-initializes meanwhile
    created = await _create_progress(ls, token, cancelled)

    def progress(done: int, total: int, name: str) -> None:  # called on the checking thread
        if created:
            ls.call_on_loop(
                ls.work_done_progress.report,
                token,
                types.WorkDoneProgressReport(
                    message=f"{done + 1}/{total} {name}", percentage=int(100 * done / max(total, 1)), cancellable=True
                ),
            )

    loop = asyncio.get_running_loop()
    session.workspace_check_started()
    try:
        # `$/cancelRequest` cancels this coroutine; the thread stops at the next file.
        results = await asyncio.shield(
            loop.run_in_executor(session._executor, session.check_workspace, progress, cancelled)
        )
    except asyncio.CancelledError:
        cancelled.set()
        if created:
            ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message="cancelled"))
        raise
    finally:
        session.workspace_check_ended()
    if not session.pull:
        for path, result in results.items():
            ls.publish(path_uri(path), None, result.findings)
    ls.refresh()
    note = session.workspace_note
    if note:
        ls.show(f"atenlint: {note}", "warning" if not results else "info")
    if created:
        ls.work_done_progress.end(
            token,
            types.WorkDoneProgressEnd(message="cancelled" if cancelled.is_set() else f"{len(results)} files checked"),
        )
    return {
        "files": len(results),
        "findings": sum(len(r.findings) for r in results.values()),
        "cancelled": cancelled.is_set(),
        "message": note,
    }


@server.command(REPORT)
async def report(ls: AtenlintServer, *args: object) -> ReportAnswer:
    uri = args[0] if args else None
    if isinstance(uri, list):
        uri = uri[0] if uri else None
    if not isinstance(uri, str):
        return {"markdown": "No file given."}
    path = _path(uri)
    if path is None:
        return {"markdown": f"Not a file: {uri}"}
    if uri not in ls.session.documents:
        opened = ls.client_text(uri)
        if opened is None:
            return {"markdown": f"Not a readable Python file: {path}"}
        ls.session.open(uri, path, *opened)
    result = await ls.session.result_for(uri)
    from .. import output  # the CLI's report formats: imported by the first report only

    return {
        "markdown": output.report_markdown_for(
            path, result.call_sites if result else [], result.findings if result else [], _torch_version(ls)
        )
    }


def serve(
    stdin: BinaryIO | None = None,
    stdout: BinaryIO | None = None,
    prestarted: tuple[WorkerPool, RelayedLog] | None = None,
) -> int:
    """Serve on stdio (`stdin`/`stdout`: what `handshake.early_initialize` hands over;
    `prestarted`: workers already starting for the first session, `prestart.py`)."""
    server.prestarted = prestarted
    server.start_io(stdin, stdout)
    return 0
