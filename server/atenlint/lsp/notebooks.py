"""LSP 3.17 notebook documents: a notebook is analysed as the module of its code cells,
and its diagnostics are published on each cell's own URI (pushed even to a client that
pulls diagnostics for files: VS Code's never pulls cells).

The session sees a notebook as one document whose text is that module (path: the
.ipynb file); `NotebookDocuments` keeps, per notebook, the cells' URIs and the module's
map back to cells, and turns the session's findings into per-cell findings. The
handlers (`did_open` ..., registered by server.py) are a few lines over it; pygls keeps the
cells' texts.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any, Protocol

from lsprotocol import types
from pygls.uris import to_fs_path
from pygls.workspace import Workspace

from ..findings import Finding
from ..fixes.safe_write import editor_refusal
from ..notebook import Cell, NotebookError, VirtualModule, build_module, cell_of, place_in_cells, read_notebook
from ..notebook_check import cell_problems
from ..sourcetext import Range, SourceText
from ..uris import path_uri
from . import convert
from .capabilities import NOTEBOOK_SYNC
from .session import Session

# One cell as the handlers read it from pygls: (cell uri, kind "code"|"markdown", language id, text).
CellDocument = tuple[str, str, str, str]


@dataclass
class NotebookView:
    uri: str
    path: str
    cell_uris: list[str]  # by cell index, markdown cells included
    cell_texts: dict[str, str]  # cell uri -> text
    module: VirtualModule
    published: set[str] = field(default_factory=set)  # cell URIs that were last given diagnostics
    # module text -> module, the last few (results may lag edits)
    recent: dict[str, VirtualModule] = field(default_factory=dict)
    # module text -> each cell's document version for that text (as `recent`)
    versions: dict[str, dict[str, int]] = field(default_factory=dict)
    # each cell's version for the diagnostics last published (their quick fixes are stamped with it)
    published_versions: dict[str, int] = field(default_factory=dict)

    def module_for(self, text: str | None) -> VirtualModule:
        """The module a result was computed on: the current cells', a recent one, or the
        notebook as saved (with `onSave` the saved notebook is what was checked)."""
        if text is None or text == self.module.text:
            return self.module
        if text in self.recent:
            return self.recent[text]
        try:
            saved = build_module(read_notebook(self.path))
        except NotebookError:
            return self.module
        return saved if saved.text == text else self.module


class NotebookDocuments:
    """Open notebooks, their cells and modules (no pygls here: the handlers feed it)."""

    def __init__(self) -> None:
        self.views: dict[str, NotebookView] = {}

    def update(
        self, uri: str, path: str, cells: list[CellDocument], versions: dict[str, int] | None = None
    ) -> NotebookView:
        """`cells`: (cell uri, kind "code"|"markdown", language id, text) in notebook order;
        `versions`: each cell document's version (the client's), where known."""
        module = build_module(
            [Cell(index, kind, text, language) for index, (_, kind, language, text) in enumerate(cells)]
        )
        previous = self.views.get(uri)
        view = NotebookView(
            uri,
            path,
            [c[0] for c in cells],
            {c[0]: c[3] for c in cells},
            module,
            set(previous.published) if previous else set(),
            dict(previous.recent) if previous else {},
            dict(previous.versions) if previous else {},
            dict(previous.published_versions) if previous else {},
        )
        view.recent[module.text] = module
        view.versions[module.text] = dict(versions or {})
        while len(view.recent) > 8:
            view.versions.pop(next(iter(view.recent)), None)
            view.recent.pop(next(iter(view.recent)))
        self.views[uri] = view
        return view

    def remove(self, uri: str) -> NotebookView | None:
        return self.views.pop(uri, None)

    def of_cell(self, cell_uri: str) -> NotebookView | None:
        return next((view for view in self.views.values() if cell_uri in view.cell_texts), None)

    @staticmethod
    def per_cell(view: NotebookView, findings: list[Finding], text: str | None = None) -> dict[str, list[Finding]]:
        """The notebook's findings (positions in the module `text`, by default the current
        cells') as copies placed in their cells, by cell URI; findings in other files are
        left out (they are published on those)."""
        module = view.module_for(text)
        copies = [
            dataclasses.replace(f, data=f.data.copy(), fixes=list(f.fixes), related=list(f.related))
            for f in findings
            if os.path.abspath(f.abs_path or f.path) == view.path
        ]
        copies += cell_problems(module, view.path, os.path.basename(view.path))
        out: dict[str, list[Finding]] = {
            uri: [] for index, uri in enumerate(view.cell_uris) if index in module.cell_texts
        }
        for finding in place_in_cells(copies, view.path, module, None):
            cell = cell_of(finding)
            if cell is not None and 0 <= cell < len(view.cell_uris):
                out.setdefault(view.cell_uris[cell], []).append(finding)
        return out


# -- handlers (registered by server.py) -----------------------------------------------------


class NotebookHost(Protocol):
    """What the handlers use of the server (the server is one; this module never imports it)."""

    @property
    def notebooks(self) -> NotebookDocuments: ...

    encoding: convert.Encoding
    versioned_edits: bool  # the client applies `documentChanges`: edits carry cell versions

    @property
    def workspace(self) -> Workspace: ...

    @property
    def session(self) -> Session: ...

    def text_document_publish_diagnostics(self, params: types.PublishDiagnosticsParams) -> None: ...


def _cells(ls: NotebookHost, notebook: types.NotebookDocument) -> list[CellDocument]:
    cells = []
    for cell in notebook.cells:
        document = ls.workspace.get_text_document(cell.document)
        kind = "code" if cell.kind == types.NotebookCellKind.Code else "markdown"
        cells.append((cell.document, kind, document.language_id or "python", document.source))
    return cells


def _cell_versions(ls: NotebookHost, notebook: types.NotebookDocument) -> dict[str, int]:
    versions = {}
    for cell in notebook.cells:
        version = ls.workspace.get_text_document(cell.document).version
        if isinstance(version, int):
            versions[cell.document] = version
    return versions


def _sync(ls: NotebookHost, uri: str) -> NotebookView | None:
    notebook = ls.workspace.get_notebook_document(notebook_uri=uri)
    path = to_fs_path(uri)
    if notebook is None or not path:
        return None
    return ls.notebooks.update(uri, os.path.abspath(path), _cells(ls, notebook), _cell_versions(ls, notebook))


# The notebook document messages (server.py registers them; this module is imported after
# the `initialize` answer).
def did_open(ls: NotebookHost, params: types.DidOpenNotebookDocumentParams) -> None:
    view = _sync(ls, params.notebook_document.uri)
    if view is not None:
        ls.session.open(view.uri, view.path, params.notebook_document.version, view.module.text)


def did_change(ls: NotebookHost, params: types.DidChangeNotebookDocumentParams) -> None:
    view = _sync(ls, params.notebook_document.uri)
    if view is not None:
        ls.session.change(view.uri, params.notebook_document.version, view.module.text)


def did_save(ls: NotebookHost, params: types.DidSaveNotebookDocumentParams) -> None:
    view = _sync(ls, params.notebook_document.uri)
    if view is not None:
        ls.session.save(view.uri, view.module.text)


def did_close(ls: NotebookHost, params: types.DidCloseNotebookDocumentParams) -> None:
    uri = params.notebook_document.uri
    view = ls.notebooks.remove(uri)
    ls.session.close(uri)
    if view is not None:  # nothing stale stays in any cell (pushed in either mode)
        for cell_uri in view.published:
            ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=cell_uri, diagnostics=[]))


def publish_cells(ls: NotebookHost, uri: str, findings: list[Finding]) -> bool:
    """Publish a notebook's findings on its cells; False when `uri` is not a notebook."""
    view = ls.notebooks.views.get(uri)
    if view is None:
        return False
    text = ls.session.source_text_for(view.path)
    per_cell = NotebookDocuments.per_cell(view, findings, text)
    # The cells' versions for the text these findings were computed on (that module's, as
    # per_cell places them): a quick fix is stamped with them, so the client rejects it
    # once a cell it edits has moved on.
    versions = view.versions.get(view.module_for(text).text, {})
    for cell_uri in sorted(view.published - set(per_cell)):  # cells deleted since: nothing stale stays
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=cell_uri, diagnostics=[]))
    for cell_uri, found in per_cell.items():
        source = SourceText(view.cell_texts.get(cell_uri, ""), view.path)
        version = versions.get(cell_uri)
        ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(
                uri=cell_uri, diagnostics=[convert.diagnostic(f, source, ls.encoding, version) for f in found]
            )
        )
    view.published = set(per_cell)
    view.published_versions = dict(versions)
    return True


def is_cell(ls: NotebookHost, uri: str) -> bool:
    return ls.notebooks.of_cell(uri) is not None


async def cell_diagnostics(
    ls: NotebookHost, params: types.DocumentDiagnosticParams
) -> types.RelatedFullDocumentDiagnosticReport:
    """textDocument/diagnostic for a cell: always empty. A cell's diagnostics are pushed
    in either mode (VS Code's client pulls only documents shown in text tabs, never
    cells), and a client that pulled them too would show each one twice."""
    return types.RelatedFullDocumentDiagnosticReport(result_id="atenlint-cells-are-pushed", items=[])


def code_actions(ls: NotebookHost, params: types.CodeActionParams) -> list[types.CodeAction] | None:
    """Quick fixes in a cell: a fix's edits may touch other cells (an import in the first
    one), so each edit goes to its own cell's URI. Offered only where the notebook (and a
    fix's other file) may be edited (`_editable`); for a client that applies
    `documentChanges`, each cell's edits carry that cell's version."""
    uri = params.text_document.uri
    view = ls.notebooks.of_cell(uri)
    if view is None:
        return None
    only = params.context.only
    if only and not any(
        types.CodeActionKind.QuickFix == k or types.CodeActionKind.QuickFix.startswith(f"{k}.") for k in only
    ):
        return None
    bounds = list(ls.session.folders) or convert.project_of(path_uri(view.path))
    actions: list[types.CodeAction] = []
    for diag in params.context.diagnostics:
        # What the client echoes of `convert.diagnostic_data` (JSON: checked as it is read).
        data: dict[str, Any] | None = diag.data if isinstance(diag.data, dict) else None
        if not data or diag.source != "atenlint":
            continue
        stale, versions = _versions_for(view, uri, data) if ls.versioned_edits else (False, None)
        if stale:
            continue  # computed for cells the user has edited since: its positions are stale
        found: list[types.CodeAction] = []
        for fix in data.get("fixes") or []:
            changes = _fix_changes(ls, view, fix.get("edits") or [])
            if changes:
                found.append(
                    types.CodeAction(
                        title=fix.get("title", "Apply atenlint fix"),
                        kind=types.CodeActionKind.QuickFix,
                        diagnostics=[diag],
                        is_preferred=convert.is_preferred_fix(fix),
                        edit=types.WorkspaceEdit(changes=changes),
                    )
                )
        found.extend(_ignore_actions(ls, view, uri, diag, data))
        actions.extend(_stamped(action, view, versions) for action in found if _editable(action, view, bounds))
    return actions or None


def _versions_for(view: NotebookView, uri: str, data: dict[str, Any]) -> tuple[bool, dict[str, int] | None]:
    """(stale, the cell versions to stamp this diagnostic's edits with): those of the last
    publication when the diagnostic is from it; None when the data names no version (an
    older server's: its edits stay plain); stale when it names another."""
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        return False, None
    if view.published_versions.get(uri) != version:
        return True, None
    return False, view.published_versions


def _stamped(action: types.CodeAction, view: NotebookView, versions: dict[str, int] | None) -> types.CodeAction:
    """The action's edits as `documentChanges`: each cell's with its version (another
    file, pyproject.toml, with none)."""
    if versions is None or action.edit is None or not action.edit.changes:
        return action
    action.edit = types.WorkspaceEdit(
        document_changes=[
            types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(
                    uri=edit_uri, version=versions.get(edit_uri) if edit_uri in view.cell_texts else None
                ),
                edits=list(edits),
            )
            for edit_uri, edits in action.edit.changes.items()
        ]
    )
    return action


def _editable(action: types.CodeAction, view: NotebookView, bounds: list[str]) -> bool:
    """Whether every file the action edits may be edited from the editor: the notebook
    for its cells, and any other file (`fixes.safe_write.editor_refusal`)."""
    for edit_uri in (action.edit.changes if action.edit is not None else None) or {}:
        in_cell = edit_uri in view.cell_texts
        path = view.path if in_cell else to_fs_path(edit_uri)
        if not path or editor_refusal(os.path.abspath(path), bounds, open_document=in_cell) is not None:
            return False
    return True


def _fix_changes(ls: NotebookHost, view: NotebookView, edits: list[dict[str, Any]]) -> dict[str, list[types.TextEdit]]:
    changes: dict[str, list[types.TextEdit]] = {}
    for edit in edits:
        rng = Range.from_json(edit["range"])
        if "path" in edit:  # another file (pyproject.toml): its range is plain
            changes.setdefault(path_uri(edit["path"]), []).append(
                types.TextEdit(range=ls.encoding.to_client(rng, None), new_text=edit["newText"])
            )
            continue
        cell = edit.get("cell")
        if not isinstance(cell, int) or not 0 <= cell < len(view.cell_uris):
            return {}
        cell_uri = view.cell_uris[cell]
        source = SourceText(view.cell_texts.get(cell_uri, ""), view.path)
        changes.setdefault(cell_uri, []).append(
            types.TextEdit(range=ls.encoding.to_client(rng, source), new_text=edit["newText"])
        )
    return changes


def _ignore_actions(
    ls: NotebookHost, view: NotebookView, uri: str, diag: types.Diagnostic, data: dict[str, Any]
) -> list[types.CodeAction]:
    ops, target = data.get("ops") or [], data.get("target")
    if not ops or not target:
        return []
    source = SourceText(view.cell_texts.get(uri, ""), view.path)
    label = ", ".join(ops)
    rng, text = convert.ignore_comment_edit(source, Range.from_json(data["range"]).start.line, ops)
    actions = [
        types.CodeAction(
            title=f"Ignore {label} on this line",
            kind=types.CodeActionKind.QuickFix,
            diagnostics=[diag],
            edit=types.WorkspaceEdit(
                changes={uri: [types.TextEdit(range=ls.encoding.to_client(rng, source), new_text=text)]}
            ),
        )
    ]
    project = convert.ignore_in_project_edit(view.path, target, ops, ls.session.folders)
    if project is not None:
        pyproject, project_range, new_text = project
        actions.append(
            types.CodeAction(
                title=f"Ignore {label} for target {target} in this project",
                kind=types.CodeActionKind.QuickFix,
                diagnostics=[diag],
                edit=types.WorkspaceEdit(
                    changes={
                        path_uri(pyproject): [
                            types.TextEdit(
                                range=ls.encoding.to_client(Range.from_json(project_range), None), new_text=new_text
                            )
                        ]
                    }
                ),
            )
        )
    return actions


__all__ = [
    "NOTEBOOK_SYNC",
    "NotebookDocuments",
    "cell_diagnostics",
    "code_actions",
    "did_change",
    "did_close",
    "did_open",
    "did_save",
    "is_cell",
    "publish_cells",
]
