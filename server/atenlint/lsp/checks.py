"""The checks of open documents: what each LSP document message asks for (open, edit,
save, close, a change on disk), one check at a time per document, a superseded result
never shown, and delivery to the client (a refresh when it pulls, else a push of every
file whose diagnostics changed). The state is `state.SessionState`; the checks run in
`analysis.Analyser` on snapshots of it."""

from __future__ import annotations

import asyncio
import functools
import os
import threading
import time
from collections.abc import Callable
from typing import Protocol

from ..findings import Finding
from ..notebook import is_notebook
from ..uris import path_uri
from ..worker.pool import Cancelled
from .analysis import Analyser
from .results import AnalysisInput, DocumentResult, with_kept_slow_findings
from .state import Document, SessionState, content_hash, is_source_file, modified_since, read_saved_text
from .status import Status


class Client(Protocol):
    def publish(self, uri: str, version: int | None, findings: list[Finding]) -> None: ...
    def refresh(self) -> None: ...
    def log(self, message: str, level: str = "info") -> None: ...


class Checks:
    def __init__(
        self,
        state: SessionState,
        analyser: Analyser,
        status: Status,
        client: Client,
        pull: bool,
        ready: Callable[[], asyncio.Future[bool] | None],
    ) -> None:
        self.state = state
        self.analyser = analyser
        self.status = status
        self.callbacks = client
        self.pull = pull  # the client pulls diagnostics (textDocument/diagnostic); else we push
        self.ready = ready  # the workers' start, which checks wait for

    def open(self, uri: str, path: str, version: int | None, text: str, saved_text: str | None = None) -> None:
        """`saved_text`: what is saved of this document when its file is not Python source
        (a notebook's module); a .py file's is read from disk."""
        if saved_text is None:
            saved_text = read_saved_text(path) if is_source_file(path) else text
        self.state.documents[uri] = Document(uri, path, version, text, saved_text=saved_text)
        self.schedule(uri)
        if self.state.settings.execute_unsaved:
            self._recheck_importers_of([path])  # its buffer is now an overlay of theirs

    def change(self, uri: str, version: int | None, text: str) -> None:
        """An unsaved edit. With `onSave` nothing runs; with `onType` the buffer is checked
        after a pause (statically unless the user opted in to running unsaved code)."""
        document = self.state.documents.get(uri)
        if document is None:
            return
        document.version, document.text = version, text
        document.remember_text()
        if self.state.settings.trigger == "onType":
            self._debounce(document)

    def save(self, uri: str, text: str | None = None) -> None:
        document = self.state.documents.get(uri)
        if document is None:
            return
        if text is not None:
            document.text = text
            document.remember_text()
        document.saved_text = document.text  # didSave: the editor just wrote this buffer
        self.files_changed([document.path], reread=False)

    def close(self, uri: str) -> None:
        document = self.state.documents.pop(uri, None)
        if document is None:
            return
        if document.debounce is not None:
            document.debounce.cancel()
        if document.task is not None and not document.task.done():
            # Its check is of no use any more: a queued one never starts, a running one
            # stops (issue 21: after 500 open/close pairs a new file waited minutes).
            document.task.cancel()
            if document.cancel is not None:
                document.cancel.set()
        for waiter in document.waiters + document.partial_waiters:
            if not waiter.done():
                waiter.set_result(None)
        document.waiters, document.partial_waiters = [], []
        if not self.pull:
            # Nothing stale stays behind: only what other open files' checks located in it.
            self.callbacks.publish(uri, None, self.state.findings_for(document.path))
            shown = [r for r in (document.partial, document.result) if r is not None]
            self._publish_in({p for r in shown for p in r.foreign})
        else:
            self.callbacks.refresh()
        if self.state.settings.execute_unsaved and document.text != document.saved_text:
            self._recheck_importers_of([document.path])  # they see the file on disk again

    def files_changed(self, paths: list[str], reread: bool = True) -> None:
        """Files of the workspace changed on disk (saved, created, deleted): re-check the open
        ones among them and every open file whose last analysis depends on one of them.
        A notification of the content already notified (VS Code's watcher event ~0.4 s after
        didSave) restarts nothing and runs nothing (`_renotified`). `reread=False`: a save,
        whose document is always asked again (its saved text is the buffer now; the cache
        answers when nothing changed, and the client gets the result for its new version)."""
        paths = [os.path.abspath(p) for p in paths]
        changed = self.state.disk_changed(paths, {p: content_hash(p, {}) for p in paths})
        for path in paths:
            document = self.state.document_at(path)
            if document is not None and (path in changed or not reread):
                if reread and is_source_file(path):
                    document.saved_text = read_saved_text(path)
                self.schedule(document.uri)
            elif document is not None:
                self._renotified(document, path)
        if changed:
            self._recheck_importers_of(changed)
        repeated = [p for p in paths if p not in changed]
        for other in self.state.importers_of(repeated) if repeated else ():
            self._renotified(other, *repeated)

    def _renotified(self, document: Document, *paths: str) -> None:
        """Files it reads were notified again with the same content: a running check goes
        on (it re-runs only if one of them was written after it started); an idle document
        whose last check started after their last change keeps its result."""
        if document.busy:
            document.renotified.update(paths)
        elif not document.read_since(paths, self.state.changed_at):
            self.schedule(document.uri)

    def _recheck_importers_of(self, paths: list[str]) -> None:
        for other in self.state.importers_of(paths):
            self.schedule(other.uri)

    def recheck_all(self) -> None:
        for uri in list(self.state.documents):
            self.schedule(uri)

    def _debounce(self, document: Document) -> None:
        if document.debounce is not None:
            document.debounce.cancel()
        loop = asyncio.get_running_loop()
        document.debounce = loop.call_later(self.state.settings.on_type_delay_ms / 1000, self._typed, document.uri)

    def _typed(self, uri: str) -> None:
        document = self.state.documents.get(uri)
        if document is None:
            return
        document.debounce = None
        self.schedule(uri)
        if self.state.settings.execute_unsaved:
            self._recheck_importers_of([document.path])  # they import this buffer's text

    def schedule(self, uri: str) -> None:
        """Check the document again. A request while a check runs is never dropped: the
        running check finishes, its result is discarded, and the current state goes next."""
        document = self.state.documents.get(uri)
        if document is None:
            return
        document.pending = True
        if document.task is None or document.task.done():
            document.task = asyncio.get_running_loop().create_task(self._run(document))
        elif document.cancel is not None:
            document.cancel.set()  # the running check's result would be discarded: stop it now

    def input_for(self, document: Document) -> AnalysisInput:
        return self.state.input_for(document)

    async def _run(self, document: Document) -> None:
        try:
            while document.pending:
                document.pending = False
                document.renotified = set()
                run = document.run = object()
                cancel = document.cancel = threading.Event()
                wanted = self.state.input_for(document)
                ready = self.ready()
                if ready is not None:
                    await asyncio.shield(ready)
                started_ns, generation = time.time_ns(), self.state.disk_generation
                try:
                    result = await self.analyser.analyse(
                        document.path,
                        wanted,
                        document.version,
                        self.state.settings,
                        lambda: self.state.disk_generation,
                        functools.partial(self._deliver_partial, document, run),
                        cancel,
                    )
                except Cancelled:  # closed or superseded while it ran: nothing of it is shown
                    if self.state.documents.get(document.uri) is not document:
                        return
                    document.pending = True
                    continue
                if self.state.documents.get(document.uri) is not document:
                    return  # closed meanwhile
                if any(modified_since(p, started_ns) for p in document.renotified):
                    document.pending = True  # written while it ran: it may have read it half-written
                if any(self.state.changed_at.get(p, -1) > generation for p in result.dependencies):
                    # A file it read changed while it ran. A document with no result yet is
                    # not among the importers a change re-checks, so only this catches it.
                    document.pending = True
                if document.pending:
                    continue  # superseded while it ran (an edit, a save, a file it imports)
                result.text_version = document.version_of(result.text)
                document.checked_at = (generation, started_ns)
                previous, document.result = document.shown, result
                document.partial = None  # the full result replaces the fast targets' one
                self._deliver(document, previous)
        except Exception as error:  # noqa: BLE001 - waiters must not hang on a bug of ours
            self.status.last_error = f"{type(error).__name__}: {error}"
            self.callbacks.log(f"checking {document.path} failed: {self.status.last_error}", "error")
            document.partial = None
            for waiter in document.waiters + document.partial_waiters:
                if not waiter.done():
                    waiter.set_result(document.result)
            document.waiters, document.partial_waiters = [], []
        finally:
            document.run = None

    def _deliver_partial(self, document: Document, run: object, early: DocumentResult) -> None:
        """Show the fast targets' verdicts of the running check (on the event loop). Only for
        the check still running and not superseded: a stale partial is never shown."""
        if self.state.documents.get(document.uri) is not document or document.run is not run or document.pending:
            return
        previous = document.shown
        document.partial = with_kept_slow_findings(early, document.result)
        document.partial.text_version = document.version_of(document.partial.text)
        document.partial_run = run
        waiters, document.partial_waiters = document.partial_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(document.partial)
        self._show(document, document.partial, previous)

    def _deliver(self, document: Document, previous: DocumentResult | None = None) -> None:
        result = document.result
        waiters, document.waiters = document.waiters + document.partial_waiters, []
        document.partial_waiters = []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(result)
        if result is None:
            return
        self.status.note_run_level(result.run_notes)
        self._show(document, result, previous)

    def _show(self, document: Document, result: DocumentResult, previous: DocumentResult | None) -> None:
        """Tell the client: a refresh to a client that pulls (its every pull, of this file
        or of the files the result places findings in, serves the new union), else a push
        of this file and of every file whose placed findings changed."""
        if self.pull:
            self.callbacks.refresh()
            if is_notebook(document.path):  # clients pull no notebook cells (not tabs): push to each cell
                self.callbacks.publish(document.uri, result.version, self.state.findings_for(document.path))
            return
        self.callbacks.publish(document.uri, result.version, self.state.findings_for(document.path))
        covers = result.covers | (previous.covers if previous else frozenset())
        self._publish_in(
            set(result.foreign) | set(previous.foreign if previous else ()) | self.state.noting_unbuilt(covers)
        )

    def _publish_in(self, paths: set[str]) -> None:
        for path in paths:
            other = self.state.document_at(path)  # open or not: what it shows from others changed
            self.callbacks.publish(
                other.uri if other else path_uri(path), other.version if other else None, self.state.findings_for(path)
            )

    def is_current(self, document: Document) -> bool:
        """Whether the document's result answers a pull now. With `onSave` the last check
        stands until the next save (a pull never analyses unsaved text); with `onType` it
        must be of the current input."""
        if document.result is None or document.busy:
            return False
        if self.state.settings.trigger == "onSave":
            return True
        return document.result.input == self.state.input_for(document)

    async def result_for(self, uri: str, partial: bool = False) -> DocumentResult | None:
        """The current result for a document (pull diagnostics, hover, report): waits for
        a running or needed check; never starts one that the trigger does not call for.
        `partial`: the running check's fast-target result will do (pull diagnostics: the
        full one follows with a refresh); without it, only a full result answers."""
        document = self.state.documents.get(uri)
        if document is None:
            return None
        if self.is_current(document):
            return document.result
        if (
            partial
            and document.partial is not None
            and document.partial_run is document.run is not None
            and not document.pending
        ):
            return document.partial
        if not document.busy and document.debounce is None:
            self.schedule(uri)
        waiter: asyncio.Future[DocumentResult | None] = asyncio.get_running_loop().create_future()
        (document.partial_waiters if partial else document.waiters).append(waiter)
        return await waiter

    def last_result(self, uri: str) -> DocumentResult | None:
        """What the client shows for the document (hover): positions refer to its text."""
        document = self.state.documents.get(uri)
        return document.shown if document is not None else None
