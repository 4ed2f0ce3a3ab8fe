"""A pull client that behaves like VS Code, in process: it keeps the last full report per
document, sends `previousResultId`, applies `relatedDocuments`, and on every
`workspace/diagnostic/refresh` re-pulls each open document and the workspace. It drives a
`Session` and the server's `PullReports` exactly as the handlers in `lsp/server.py` do."""

from __future__ import annotations

import asyncio
import os

from fake_engine import FakeEngine
from lsprotocol import types
from pygls.uris import to_fs_path
from session_support import RecordingCallbacks

from atenlint.lsp import convert
from atenlint.lsp.pull import PullReports
from atenlint.lsp.session import Session, path_uri
from atenlint.lsp.settings import EditorSettings
from atenlint.lsp.state import Served
from atenlint.sourcetext import SourceText

# The issue-19 workspace: a.py's Encoder calls an op MPS lacks; b.py's Model reaches it.
ENCODER = (
    "import torch\nimport torch.nn as nn\n\n\nclass Encoder(nn.Module):\n"
    "    def __init__(self, dim):\n        super().__init__()\n        self.dim = dim\n\n"
    "    def forward(self, x):\n        return torch.special.ndtri(x)\n"
)
FIXED = ENCODER.replace("torch.special.ndtri(x)", "torch.erfinv(x)")
MODEL = (
    "import torch.nn as nn\nfrom a import Encoder\n\n\nclass Model(nn.Module):\n"
    "    def __init__(self):\n        super().__init__()\n        self.enc = Encoder(8)\n\n"
    "    def forward(self, x):\n        return self.enc(x)\n"
)


def items(served: Served) -> list[types.Diagnostic]:
    source = SourceText(served.text, served.path) if served.text is not None else None
    return [convert.diagnostic(f, source, convert.Encoding(), served.version) for f in served.findings]


class PullCallbacks(RecordingCallbacks):
    def __init__(self):
        super().__init__()
        self.client: VSCodeLikeClient | None = None

    def refresh(self):
        super().refresh()
        if self.client is not None:
            self.client.refreshed()


class VSCodeLikeClient:
    def __init__(self, session: Session):
        self.session = session
        self.reports = PullReports()
        self.ids: dict[str, str] = {}  # uri -> result id of the report it keeps
        self.shown: dict[str, list[types.Diagnostic]] = {}  # uri -> what it shows
        self.workspace_ids: dict[str, str] = {}
        self.unchanged = 0
        self._pulls: set[asyncio.Task] = set()

    def refreshed(self) -> None:
        task = asyncio.get_running_loop().create_task(self.pull_all())
        self._pulls.add(task)
        task.add_done_callback(self._pulls.discard)

    async def pull_all(self) -> None:
        for uri in list(self.session.documents):
            await self.pull(uri)
        self.pull_workspace()

    async def pull(self, uri: str) -> None:
        """`textDocument/diagnostic`, as `lsp/server.py`'s handler answers it."""
        result = await self.session.result_for(uri, partial=True)
        document = self.session.documents.get(uri)
        if result is None or document is None:
            return
        report = self.reports.document(self.session.state, uri, document.path, self.ids.get(uri), items)
        if isinstance(report, types.RelatedUnchangedDocumentDiagnosticReport):
            self.unchanged += 1
            return
        self.ids[uri] = report.result_id or ""
        self.shown[uri] = list(report.items)
        for related, sub in (report.related_documents or {}).items():
            if isinstance(sub, types.FullDocumentDiagnosticReport):
                self.shown[related] = list(sub.items)

    def pull_workspace(self) -> None:
        previous = [types.PreviousResultId(uri=u, value=v) for u, v in self.workspace_ids.items()]
        report = self.reports.workspace(
            self.session.state,
            {p.uri: p.value for p in previous},
            to_fs_path,
            items,
        )
        for item in report.items:
            self.workspace_ids[item.uri] = item.result_id or ""
            if isinstance(item, types.WorkspaceFullDocumentDiagnosticReport):
                self.shown[item.uri] = list(item.items)

    def close(self, uri: str) -> None:
        """VS Code drops a closed document's pulled diagnostics."""
        self.reports.closed(uri)
        self.session.close(uri)
        self.shown.pop(uri, None)
        self.ids.pop(uri, None)

    async def idle(self, timeout: float = 30.0) -> None:
        """Until no check runs and every pull the refreshes asked for was answered."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            busy = [d for d in self.session.documents.values() if d.busy or d.debounce is not None]
            if not busy and not self._pulls:
                return
            if loop.time() > deadline:
                raise TimeoutError(f"still busy: {[d.path for d in busy]}, {len(self._pulls)} pulls")
            await asyncio.sleep(0.005)

    def codes(self, path: str) -> list[str]:
        return sorted(str(d.code) for d in self.shown.get(path_uri(path), []))


def pull_session(engine: FakeEngine, root: str) -> tuple[Session, VSCodeLikeClient]:
    callbacks = PullCallbacks()
    session = Session(callbacks, EditorSettings(trigger="onSave"), [root], pull=True)
    session.use_engine(engine)
    client = VSCodeLikeClient(session)
    callbacks.client = client
    return session, client


def write(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.utime(path)
