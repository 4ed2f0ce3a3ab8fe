"""What the server declares in its `initialize` answer, importable without the analysis
side of atenlint: the answer waits for nothing heavier than pygls (issue 22)."""

from __future__ import annotations

from lsprotocol import types

# The code action kind of "fix all atenlint problems in this file".
FIX_ALL_KIND = "source.fixAll.atenlint"

# Every notebook type ("*": Jupyter's, VS Code's interactive window, ...), its Python cells.
NOTEBOOK_SYNC = types.NotebookDocumentSyncOptions(
    notebook_selector=[
        types.NotebookDocumentFilterWithCells(notebook="*", cells=[types.NotebookCellLanguage(language="python")])
    ],
    save=True,
)
