"""Pull diagnostics: the reports `textDocument/diagnostic` and `workspace/diagnostic`
answer, built from what the session serves for each file (its own findings and those other
files' results place in it). A report's `resultId` is a digest of exactly what it serves,
so `unchanged` is answered only when the client already shows that.

A finding placed in a file that is not open reaches the client twice over: in the
`relatedDocuments` of the pulled report of the file whose result placed it, and in the
workspace pull. Both are withdrawn (an empty full report) once no result places it any
more: the producing file was re-checked without it, or closed."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from lsprotocol import types

from ..uris import path_uri
from .state import Served, SessionState

# What the items of a served file are, in the client's encoding (the server converts).
Converter = Callable[[Served], list[types.Diagnostic]]


def _digest(*parts: object) -> str:
    return hashlib.sha1(repr(parts).encode("utf-8", errors="surrogatepass")).hexdigest()[:20]


class PullReports:
    """What a pulling client was last told about files that are not open (per URI, the id
    of the report it holds), so a withdrawal reaches it too."""

    def __init__(self) -> None:
        self.related: dict[str, set[str]] = {}  # document uri -> paths its last full report carried
        self.outside: dict[str, str] = {}  # uri of a file not open -> the result id it was last served

    def document(
        self, state: SessionState, uri: str, path: str, previous_id: str | None, items: Converter
    ) -> types.RelatedFullDocumentDiagnosticReport | types.RelatedUnchangedDocumentDiagnosticReport:
        own = state.served(path)
        open_paths = {d.path for d in state.documents.values()}
        paths = (state.placed_by(path) | self.related.get(uri, set())) - open_paths - {path}
        related = {p: state.served(p) for p in sorted(paths)}
        result_id = _digest(own.result_id, [(p, s.result_id) for p, s in related.items()])
        if previous_id == result_id:
            return types.RelatedUnchangedDocumentDiagnosticReport(result_id=result_id)
        self.related[uri] = {p for p, s in related.items() if s.findings}
        reports: dict[str, types.FullDocumentDiagnosticReport | types.UnchangedDocumentDiagnosticReport] = {}
        for p, served in related.items():
            reports[path_uri(p)] = types.FullDocumentDiagnosticReport(result_id=served.result_id, items=items(served))
            self.outside[path_uri(p)] = served.result_id
        return types.RelatedFullDocumentDiagnosticReport(
            result_id=result_id, items=items(own), related_documents=reports or None
        )

    def closed(self, uri: str) -> None:
        """The document is closed: what its reports carried is withdrawn by the workspace pull."""
        self.related.pop(uri, None)

    def workspace(
        self,
        state: SessionState,
        previous: dict[str, str],
        path_of: Callable[[str], str | None],
        items: Converter,
    ) -> types.WorkspaceDiagnosticReport:
        """Every file that is not open and has findings (Check Workspace's, or placed there
        by an open file's result), and an empty report for each that the client holds
        findings of and has none now."""
        open_uris = set(state.documents)
        candidates = {path_uri(p): p for p in state.outside_paths()}
        for uri in [*previous, *self.outside]:
            path = path_of(uri)
            if path is not None and uri not in candidates:
                candidates[uri] = path
        reports: list[types.WorkspaceDocumentDiagnosticReport] = []
        for uri, path in sorted(candidates.items()):
            if uri in open_uris or state.document_at(path) is not None:
                continue  # open documents are reported by textDocument/diagnostic
            served = state.served(path)
            held = previous.get(uri, self.outside.get(uri))
            if not served.findings and (held is None or held == served.result_id):
                continue  # nothing to show, nothing shown
            self.outside[uri] = served.result_id
            if previous.get(uri) == served.result_id:
                reports.append(
                    types.WorkspaceUnchangedDocumentDiagnosticReport(uri=uri, result_id=served.result_id, version=None)
                )
                continue
            reports.append(
                types.WorkspaceFullDocumentDiagnosticReport(
                    uri=uri, version=None, result_id=served.result_id, items=items(served)
                )
            )
        return types.WorkspaceDiagnosticReport(items=reports)
