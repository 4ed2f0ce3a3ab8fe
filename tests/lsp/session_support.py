"""A `Session` on the shared warm engine, with callbacks that record what a client would see,
and a fresh-check oracle: what `atenlint check` says about the same texts."""

from __future__ import annotations

import asyncio
import os

from atenlint.engine import SourceCache
from atenlint.lsp.session import Session, analysis_input, split_run_notes
from atenlint.lsp.settings import EditorSettings


class RecordingCallbacks:
    def __init__(self):
        self.published: dict[str, list] = {}
        self.refreshes = 0
        self.statuses: list[dict] = []
        self.shown: list[str] = []
        self.logged: list[str] = []

    def publish(self, uri, version, findings):
        self.published[uri] = list(findings)

    def refresh(self):
        self.refreshes += 1

    def status(self, status):
        self.statuses.append(status)

    def log(self, message, level="info"):
        self.logged.append(message)

    def show(self, message, level="info"):
        self.shown.append(message)


def make_session(engine, settings: EditorSettings, folders: list, pull: bool = False):
    callbacks = RecordingCallbacks()
    session = Session(callbacks, settings, folders, pull=pull)
    session.use_engine(engine)
    return session, callbacks


async def settle(session: Session, timeout: float = 60.0) -> None:
    """Until nothing is running, pending or waiting for a pause in typing."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        busy = [
            d
            for d in session.documents.values()
            if d.pending or d.debounce is not None or (d.task is not None and not d.task.done())
        ]
        if not busy:
            return
        if loop.time() > deadline:
            raise TimeoutError(f"still busy: {[d.path for d in busy]}")
        running = [d.task for d in busy if d.task is not None and not d.task.done()]
        if running:
            await asyncio.wait(running, timeout=max(0.0, deadline - loop.time()))
        else:
            await asyncio.sleep(0)  # a pending check or a debounce that is about to fire


def finding_key(finding) -> tuple:
    return (
        finding.code,
        finding.target,
        finding.range.start.line,
        finding.range.start.character,
        finding.range.end.line,
        finding.range.end.character,
        finding.message,
    )


class FreshCheck:
    """The findings a fresh check reports, per file, memoised by everything it depends on
    (the checked text, how, and the content of every file of the folder on disk)."""

    def __init__(self, engine, folder: str):
        self.engine = engine
        self.folder = folder
        self._memo: dict = {}

    def _disk(self) -> tuple:
        out = []
        for name in sorted(os.listdir(self.folder)):
            if name.endswith(".py"):
                with open(os.path.join(self.folder, name), encoding="utf-8") as handle:
                    out.append((name, handle.read()))
        return tuple(out)

    def of(self, path: str, text: str, execute: bool, overlays: tuple = ()) -> dict:
        """{path: [finding keys]} located by a fresh check of `path` with this text."""
        key = (path, text, execute, overlays, self._disk())
        if key not in self._memo:
            if execute:
                capture = self.engine.capture(path, text=text, overlays=dict(overlays))
            else:
                capture = self.engine.capture_static(path, text=text)
            findings, _ = split_run_notes(self.engine.findings([capture], SourceCache(dict(overlays, **{path: text}))))
            located: dict[str, list] = {}
            for finding in findings:
                located.setdefault(os.path.abspath(finding.abs_path or path), []).append(finding)
            self._memo[key] = {p: sorted({finding_key(f) for f in found}) for p, found in located.items()}
        return self._memo[key]

    def expected(self, session: Session) -> dict:
        """{path: sorted finding keys} for every file, from fresh checks of the open documents,
        each checked the way the trigger says (saved file, static pass of a buffer, ...)."""
        out: dict[str, set] = {}
        documents = list(session.documents.values())
        for document in documents:
            others = {d.path: d.text for d in documents if d is not document and d.text != d.saved_text}
            wanted = analysis_input(document.text, document.saved_text, others, session.settings)
            for path, keys in self.of(document.path, wanted.text, wanted.execute, wanted.overlays).items():
                out.setdefault(path, set()).update(keys)
        return {p: sorted(keys) for p, keys in out.items()}


def shown(session: Session, callbacks: RecordingCallbacks, paths: list, uri_of) -> dict:
    """{path: sorted finding keys} a client shows: the last push, or a pull's answer."""
    out = {}
    for path in paths:
        if session.pull:
            found = session.findings_for(path) if session._document_at(path) is not None else []
        else:
            found = callbacks.published.get(uri_of(path), [])
        keys = sorted({finding_key(f) for f in found})
        if keys:
            out[path] = keys
    return out


def write(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError:
        return None
