"""Notebooks read from disk: the module of their code cells, and findings moved to cells.

`read_notebook_module` reads the .ipynb and builds the module of its code cells (the
pipeline then checks that text like any file's); `place_findings` moves the findings (and
their fix edits) from module lines to (cell, line in the cell), keeping where each one is
in the .ipynb file for CI formats. The language server builds the module from the cells it
is sent and places the findings itself (lsp/notebooks.py), with `cell_problems` too.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import findings as codes
from .bounded_read import NotRegularFile, read_regular_file
from .findings import Finding
from .notebook import (
    FilePositions,
    NotebookError,
    VirtualModule,
    build_module,
    cell_of,
    parse_notebook,
    place_in_cells,
    problem_findings,
)
from .sourcetext import Position, Range


@dataclass(frozen=True)
class NotebookContext:
    path: str  # absolute
    module: VirtualModule
    positions: FilePositions | None  # None when the cells come from an editor, not the file


def read_notebook_module(path: str, max_file_bytes: int) -> NotebookContext | Finding:
    """The notebook's code cells as one module, or the finding that says why it is not analysed."""
    try:
        # A notebook's outputs (images) can be large; the limit is on the code cells' text.
        raw = read_regular_file(path, max(max_file_bytes * 20, 100_000_000))
        cells = parse_notebook(raw)
    except NotRegularFile as problem:
        if problem.too_large:
            return _unreadable(
                path, codes.TOO_LARGE, "information", f"this notebook is {problem.size / 1e6:.1f} MB: not analysed"
            )
        return _unreadable(path, codes.UNDECODABLE, "information", f"not analysed: {problem.message}")
    except OSError as error:
        return _unreadable(path, codes.UNDECODABLE, "warning", f"cannot read this notebook: {error.strerror}")
    except NotebookError as error:
        return _unreadable(path, codes.UNDECODABLE, "warning", f"cannot analyse this notebook: {error}")
    module = build_module(cells)
    code_bytes = len(module.text.encode("utf-8"))
    if code_bytes > max_file_bytes:
        # The limit a .py file gets applies to the module the code cells make.
        return _unreadable(
            path, codes.TOO_LARGE, "information", f"this notebook's code is {code_bytes / 1e6:.1f} MB: not analysed"
        )
    return NotebookContext(path, module, FilePositions(raw.decode("utf-8-sig", errors="replace")))


def cell_problems(module: VirtualModule, path: str, display: str) -> list[Finding]:
    """ATL001 per cell that does not parse, at module positions (placed in cells later)."""
    out = []
    for finding in problem_findings(module.problems, path, display, None, module.cell_texts):
        cell = finding.data.pop("notebook")["cell"]
        start = module.to_module(cell, finding.range.start) or Position(0, 0)
        end = module.to_module(cell, finding.range.end) or start
        finding.range = Range(start, end)
        out.append(finding)
    return out


def _unreadable(path: str, code: str, severity: str, message: str) -> Finding:
    # The display path is set by the caller, which knows how the user named the file.
    return Finding(
        path,
        Range(Position(0, 0), Position(0, 0)),
        severity,
        code,
        message,
        abs_path=path,
        data={"notebook": {"cell": 0, "file_range": None}, "source_text": ""},
    )


def place_findings(found: list[Finding], context: NotebookContext) -> list[Finding]:
    """A notebook's findings in cell coordinates."""
    return place_in_cells(found, context.path, context.module, context.positions)


def sort_key(finding: Finding) -> tuple[str | int, ...]:
    """Findings by file, then cell (notebooks), then position: a file's order in any report."""
    cell = cell_of(finding)
    return (finding.path, -1 if cell is None else cell) + finding.sort_key()[1:]
