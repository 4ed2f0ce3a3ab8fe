"""Notebooks through the engine: capture the cells' module, then report in cells.

`capture_notebook` reads the .ipynb, builds the module of its code cells and captures
it like any file whose text is given; `place_findings` moves the findings (and their
fix edits) from module lines to (cell, line in the cell), keeping where each one is in
the .ipynb file for CI formats. The language server uses the same two steps.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import findings as codes
from .config import ConfigError
from .discover import NotRegularFile, read_regular_file
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

if TYPE_CHECKING:
    from .engine import Engine, FileCapture


@dataclass
class NotebookContext:
    path: str  # absolute
    display: str
    module: VirtualModule
    positions: FilePositions | None  # None when the cells come from an editor, not the file


def capture_notebook(
    engine: Engine, path: str, display: str, execute: bool, contexts: dict[str, NotebookContext]
) -> FileCapture:
    """The FileCapture of a notebook's code cells; records its context in `contexts`."""
    from .engine import FileCapture

    started = time.perf_counter()
    absolute = os.path.abspath(path)
    try:
        settings = engine.resolver.for_file(absolute)
    except ConfigError:
        return engine.capture(absolute, text="", display=display, execute=execute)  # reports ATL010
    empty = FileCapture(absolute, display, settings, None, None)
    try:
        # A notebook's outputs (images) can be large; the limit is on the code cells' text.
        raw = read_regular_file(absolute, max(settings.max_file_bytes * 20, 100_000_000))
        cells = parse_notebook(raw)
    except NotRegularFile as problem:
        if problem.too_large:
            return _unreadable(
                empty, codes.TOO_LARGE, "information", f"this notebook is {problem.size / 1e6:.1f} MB: not analysed"
            )
        return _unreadable(empty, codes.UNDECODABLE, "information", f"not analysed: {problem.message}")
    except OSError as error:
        return _unreadable(empty, codes.UNDECODABLE, "warning", f"cannot read this notebook: {error.strerror}")
    except NotebookError as error:
        return _unreadable(empty, codes.UNDECODABLE, "warning", f"cannot analyse this notebook: {error}")
    module = build_module(cells)
    positions = FilePositions(raw.decode("utf-8-sig", errors="replace"))
    contexts[absolute] = NotebookContext(absolute, display, module, positions)
    capture = capture_module(engine, absolute, display, module, execute)
    capture.seconds = time.perf_counter() - started
    return capture


def capture_module(
    engine: Engine,
    path: str,
    display: str,
    module: VirtualModule,
    execute: bool,
    overlays: dict[str, str] | None = None,
) -> FileCapture:
    """Capture a notebook's module text (from the file or an editor's cells)."""
    capture = engine.capture(path, text=module.text, overlays=overlays, display=display, execute=execute)
    capture.module_findings.extend(cell_problems(module, path, display))
    return capture


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


def _unreadable(capture: FileCapture, code: str, severity: str, message: str) -> FileCapture:
    capture.module_findings.append(
        Finding(
            capture.display,
            Range(Position(0, 0), Position(0, 0)),
            severity,
            code,
            message,
            abs_path=capture.path,
            data={"notebook": {"cell": 0, "file_range": None}, "source_text": ""},
        )
    )
    return capture


def place_findings(found: list[Finding], contexts: dict[str, NotebookContext]) -> list[Finding]:
    """Every notebook's findings in cell coordinates, sorted by cell, then position."""
    for path, context in contexts.items():
        found = place_in_cells(found, path, context.module, context.positions)
    return sorted(found, key=sort_key)


def sort_key(finding: Finding) -> tuple[str | int, ...]:
    cell = cell_of(finding)
    return (finding.path, -1 if cell is None else cell) + finding.sort_key()[1:]
