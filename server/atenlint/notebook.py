"""Jupyter notebooks as one Python module: the code cells in order, with a map back to cells.

A notebook runs its code cells in one namespace, so atenlint analyses them as one
module whose lines are the cells' lines, one after another: a position in the module
maps to (cell, position in the cell) and back by line arithmetic alone. What IPython
would do instead of Python is never run: line magics and shell escapes (`%time`,
`!pip install`, `x = !ls`, `obj?`) become `pass` at their indentation, a cell magic
(`%%bash`, `%%writefile`) blanks its cell unless its body is Python (`%%time`), and a
cell that does not parse is left out and reported, as running it would fail alone.

Pure standard library: the CLI, the language server and the tests share it.
"""

from __future__ import annotations

import ast
import bisect
import json
import os
import re
import shutil
import sys
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .bounded_read import NotRegularFile, read_regular_file
from .python_parse import parse_module
from .sourcetext import Position, Range, utf16_length

if TYPE_CHECKING:
    from .finding_data import Fix, FixEdit
    from .findings import Finding
    from .fixes.edits import TextEdit
    from .worker.pool import WorkerPool
    from .worker.protocol import AnalyseParams

NOTEBOOK_SUFFIX = ".ipynb"
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
# Cell magics whose body is Python that IPython runs in the notebook's namespace.
PYTHON_CELL_MAGICS = {"time", "timeit", "capture", "prun", "debug"}
_HELP_LINE = re.compile(r"^\s*\?{0,2}[A-Za-z_][\w.]*(\(\))?\?{0,2}\s*$")
_SHELL_ASSIGNMENT = re.compile(r"^\s*[A-Za-z_][\w.]*(\s*,\s*[A-Za-z_][\w.]*)*\s*=\s*[%!]")
_PYTHON_LANGUAGES = {"python", "python3", "ipython", "ipython3", "py"}


def is_notebook(path: str) -> bool:
    return str(path).lower().endswith(NOTEBOOK_SUFFIX)


class NotebookError(Exception):
    """The file is not a notebook atenlint can read (bad JSON, no cells, another language)."""


@dataclass(frozen=True)
class Cell:
    index: int  # among all cells, markdown included
    kind: str  # "code" | "markdown" | "raw"
    source: str
    language: str = "python"


@dataclass(frozen=True)
class CellSpan:
    cell: int  # index among all cells
    first_line: int  # the module line where the cell's line 0 is
    line_count: int


@dataclass(frozen=True)
class CellProblem:
    """A code cell left out of the module: Python cannot parse it."""

    cell: int
    range: Range  # in the cell
    message: str


@dataclass
class VirtualModule:
    text: str
    spans: list[CellSpan]  # in module order (code cells only)
    problems: list[CellProblem] = field(default_factory=list)
    cell_texts: dict[int, str] = field(default_factory=dict)  # cell index -> its source as written

    def span_at(self, line: int) -> CellSpan | None:
        starts = [s.first_line for s in self.spans]
        index = bisect.bisect_right(starts, line) - 1
        if index < 0:
            return None
        span = self.spans[index]
        return span if line < span.first_line + span.line_count else None

    def to_cell(self, position: Position) -> tuple[int, Position] | None:
        """(cell index, position in that cell) of a module position, or None past the end."""
        span = self.span_at(position.line)
        if span is None:
            return None
        return span.cell, Position(position.line - span.first_line, position.character)

    def range_to_cell(self, rng: Range) -> tuple[int, Range] | None:
        """A module range in one cell; a range running into the next cell ends with its
        first cell's last line (a finding is shown where it starts)."""
        start = self.to_cell(rng.start)
        if start is None:
            return None
        cell, begin = start
        end = self.to_cell(rng.end)
        if end is not None and end[0] == cell:
            return cell, Range(begin, end[1])
        span = next(s for s in self.spans if s.cell == cell)
        last = span.line_count - 1
        width = utf16_length(_lines(self.cell_texts.get(cell, ""))[last]) if last >= 0 else 0
        return cell, Range(begin, Position(last, width))

    def to_module(self, cell: int, position: Position) -> Position | None:
        for span in self.spans:
            if span.cell == cell:
                return Position(span.first_line + min(position.line, span.line_count - 1), position.character)
        return None


# -- reading ---------------------------------------------------------------------------


def read_notebook(path: str, limit: int | None = None) -> list[Cell]:
    return parse_notebook(read_notebook_bytes(path, limit))


def read_notebook_bytes(path: str, limit: int | None = None) -> bytes:
    """A regular file's bytes (never a FIFO or a device), at most `limit` of them."""
    try:
        return read_regular_file(path, limit)
    except NotRegularFile as problem:
        raise NotebookError(f"not analysed: {problem.message}") from None
    except OSError as error:
        raise NotebookError(f"cannot read this notebook: {error.strerror or error}") from None


def parse_notebook(data: bytes) -> list[Cell]:
    """The cells of an nbformat 4 notebook (the format Jupyter and VS Code write)."""
    try:
        document = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as error:
        raise NotebookError(f"this notebook is not valid UTF-8 (byte {error.start})") from None
    except ValueError as error:
        raise NotebookError(f"this notebook is not valid JSON: {error}") from None
    except RecursionError:
        # json recurses per nesting level: a hostile notebook of nested arrays.
        raise NotebookError("this notebook is not valid JSON: nested too deeply") from None
    if not isinstance(document, dict):
        raise NotebookError("this notebook is not a JSON object")
    if "worksheets" in document:
        raise NotebookError("this notebook is in nbformat 3; open and save it in Jupyter to convert it to nbformat 4")
    cells = document.get("cells")
    if not isinstance(cells, list):
        raise NotebookError("this notebook has no `cells` list (not nbformat 4)")
    language = notebook_language(document.get("metadata"))
    out = []
    for index, cell in enumerate(cells):
        if not isinstance(cell, dict):
            raise NotebookError(f"cell {index + 1} is not a JSON object")
        source = cell.get("source", "")
        if isinstance(source, list):
            if not all(isinstance(part, str) for part in source):
                raise NotebookError(f"cell {index + 1}: `source` must be a string or a list of strings")
            source = "".join(source)
        elif not isinstance(source, str):
            raise NotebookError(f"cell {index + 1}: `source` must be a string or a list of strings")
        source = without_lone_surrogates(source)
        metadata = cell.get("metadata")
        vscode = metadata.get("vscode") if isinstance(metadata, dict) else None
        cell_language = str((vscode.get("languageId") if isinstance(vscode, dict) else None) or language)
        out.append(Cell(index, str(cell.get("cell_type", "code")), source, cell_language))
    return out


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def without_lone_surrogates(text: str) -> str:
    """`text` with each lone surrogate (JSON allows the escape `\\ud83d` alone; it is not
    text, and cannot be encoded, hashed or sent) made U+FFFD: one code point and one UTF-16
    unit each, so every position in the cell stays where it was."""
    return _LONE_SURROGATE.sub("\ufffd", text)


def notebook_language(metadata: object) -> str:
    """The notebook's language from its metadata (as JSON gave it: anything)."""
    if not isinstance(metadata, dict):
        return "python"
    for key, field_name in (("kernelspec", "language"), ("language_info", "name")):
        section = metadata.get(key)
        language = section.get(field_name) if isinstance(section, dict) else None
        if isinstance(language, str):
            return language
    return "python"


def is_python_language(language: str) -> bool:
    return language.lower() in _PYTHON_LANGUAGES


# -- the module --------------------------------------------------------------------------


def _lines(text: str) -> list[str]:
    """Lines as LSP counts them (a trailing line break opens an empty last line)."""
    return _LINE_BREAK.split(text)


def build_module(cells: list[Cell]) -> VirtualModule:
    """The module the notebook's Python code cells make, in order."""
    lines: list[str] = []
    spans: list[CellSpan] = []
    problems: list[CellProblem] = []
    texts: dict[int, str] = {}
    for cell in cells:
        if cell.kind != "code" or not is_python_language(cell.language):
            continue
        texts[cell.index] = cell.source
        cell_lines = python_cell_lines(cell.source)
        problem = _parse_problem(cell.index, "\n".join(cell_lines), cell.source)
        if problem is not None:
            if problem.message:
                problems.append(problem)
            cell_lines = [""] * len(cell_lines)
        if any(_has_code(line) for line in lines):
            # Jupyter compiles each cell alone; one module allows `from __future__` only at its top.
            cell_lines = ["pass" if _FUTURE_IMPORT.match(line) else line for line in cell_lines]
        spans.append(CellSpan(cell.index, len(lines), len(cell_lines)))
        lines.extend(cell_lines)
    return VirtualModule("\n".join(lines) + "\n", spans, problems, texts)


_FUTURE_IMPORT = re.compile(r"^from\s+__future__\s+import\s+[\w\s,]+(#.*)?$")


def _has_code(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


def python_cell_lines(source: str) -> list[str]:
    """The cell's lines with IPython-only syntax made inert, line for line."""
    original = _lines(source)
    first = next((i for i, line in enumerate(original) if line.strip()), None)
    if first is not None and original[first].lstrip().startswith("%%"):
        name = original[first].lstrip()[2:].split(maxsplit=1)
        if not name or name[0] not in PYTHON_CELL_MAGICS:
            return [""] * len(original)  # %%bash, %%writefile, %%html ...: not Python
        lines = list(original)
        lines[first] = ""
        return _inert_magics(lines, first + 1)
    return _inert_magics(list(original), 0)


def _inert_magics(lines: list[str], begin: int) -> list[str]:
    scanner = _StatementScanner()
    continuing_magic = False
    for index in range(begin, len(lines)):
        line = lines[index]
        if continuing_magic:
            continuing_magic = line.rstrip().endswith("\\")
            lines[index] = ""
            continue
        if scanner.at_statement_start() and _is_ipython_line(line):
            indent = line[: len(line) - len(line.lstrip())]
            continuing_magic = line.rstrip().endswith("\\")
            lines[index] = f"{indent}pass"
            continue
        scanner.feed(line)
    return lines


def _is_ipython_line(line: str) -> bool:
    stripped = line.strip()
    if not stripped or stripped.startswith("#"):
        return False
    if stripped[0] in "%!":
        return True
    if _SHELL_ASSIGNMENT.match(line):
        return True
    return "?" in stripped and bool(_HELP_LINE.match(line))


class _StatementScanner:
    """Just enough tokenizing to know whether the next line starts a statement (not
    inside brackets, a triple-quoted string or after a backslash), so that a `%` or `!`
    at the start of a line inside a string or a call is left alone."""

    def __init__(self) -> None:
        self.depth = 0
        self.triple: str | None = None
        self.backslash = False

    def at_statement_start(self) -> bool:
        return self.depth == 0 and self.triple is None and not self.backslash

    def feed(self, line: str) -> None:
        self.backslash = False
        i, n = 0, len(line)
        while i < n:
            if self.triple is not None:
                end = line.find(self.triple, i)
                while end > 0 and line[end - 1] == "\\" and not _escaped_backslash(line, end - 1):
                    end = line.find(self.triple, end + 1)
                if end < 0:
                    return
                i = end + 3
                self.triple = None
                continue
            char = line[i]
            if char == "#":
                return
            if char in "\"'":
                if line.startswith(char * 3, i):
                    self.triple = char * 3
                    i += 3
                    continue
                i += 1
                while i < n and line[i] != char:
                    i += 2 if line[i] == "\\" else 1
                i += 1
                continue
            if char in "([{":
                self.depth += 1
            elif char in ")]}":
                self.depth = max(self.depth - 1, 0)
            elif char == "\\" and i == len(line.rstrip()) - 1:
                self.backslash = True
            i += 1


def _escaped_backslash(line: str, index: int) -> bool:
    count = 0
    while index >= 0 and line[index] == "\\":
        count += 1
        index -= 1
    return count % 2 == 0


def _parse_problem(cell: int, text: str, original: str) -> CellProblem | None:
    """None when the cell parses; a problem (with an empty message for cells that are
    valid IPython but not a module, such as top-level `await`) when it does not."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        try:
            # compile, not just parse: `await`/`return` outside a function only fail here.
            compile(text, "<cell>", "exec", dont_inherit=True)
            return None
        except SyntaxError as error:
            try:
                compile(text, "<cell>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
                return CellProblem(cell, Range(Position(0, 0), Position(0, 0)), "")  # top-level await
            except SyntaxError:
                pass
            line0 = max((error.lineno or 1) - 1, 0)
            lines = _lines(original)
            line_text = lines[line0] if line0 < len(lines) else ""
            column = min(max((error.offset or 1) - 1, 0), len(line_text))
            start = Position(line0, utf16_length(line_text[:column]))
            end = Position(line0, utf16_length(line_text) if column < len(line_text) else start.character)
            return CellProblem(
                cell,
                Range(start, end),
                f"Python cannot parse this cell: {error.msg} (line {line0 + 1} of the cell); "
                f"the cell is left out of the analysis",
            )
        except (ValueError, MemoryError, RecursionError) as error:
            return CellProblem(
                cell,
                Range(Position(0, 0), Position(0, 0)),
                f"Python cannot parse this cell ({error}); the cell is left out of the analysis",
            )


# -- where the module is imported from ---------------------------------------------------


def module_name_for(path: str) -> str:
    """An importable name for the notebook's module: its file name as an identifier, unless
    that would shadow a module already importable (`torch.ipynb`, `test.ipynb`)."""
    stem = os.path.basename(path)[: -len(NOTEBOOK_SUFFIX)]
    name = re.sub(r"\W", "_", stem) or "notebook"
    if name[0].isdigit():
        name = f"_{name}"
    if name in sys.stdlib_module_names or name in sys.builtin_module_names or _importable(name):
        name = f"{name}_ipynb"
    return name


def _importable(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def module_location(path: str, project_root: str | None) -> tuple[str, list[str]]:
    """The module name and sys.path roots the notebook's cells run with: its own folder
    first (Jupyter's working directory), then the project root and its src/."""
    directory = os.path.dirname(os.path.abspath(path))
    roots = [directory]
    if project_root:
        for extra in (project_root, os.path.join(project_root, "src")):
            extra = os.path.abspath(extra)
            if os.path.isdir(extra) and extra not in roots:
                roots.append(extra)
    return module_name_for(path), roots


def request_importing_copy(pool: WorkerPool, method: str, request: AnalyseParams, timeout: float) -> dict[str, Any]:
    """Send an `analyse` request for a notebook: the worker imports a private `.py` copy
    of the module text (a notebook has no file Python can import), and every path in its
    answer is turned back into the notebook's."""
    notebook = request["path"]
    text = request.get("overlays", {}).get(notebook)
    if text is None:
        raise ValueError("a notebook request needs the module text")
    directory = tempfile.mkdtemp(prefix="atenlint-notebook-")
    copy = os.path.join(directory, f"{request['module'].split('.')[-1]}.py")
    try:
        with open(copy, "w", encoding="utf-8") as handle:
            handle.write(text)
        overlays = {p: t for p, t in request.get("overlays", {}).items() if p != notebook}
        overlays[copy] = text
        sent: AnalyseParams = {
            **request,
            "path": copy,
            "roots": [directory] + list(request.get("roots", [])),
            "overlays": overlays,
        }
        answer = pool.request(method, sent, timeout)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    replaced: dict[str, Any] = _replace_path(answer, copy, notebook)
    return replaced


def _replace_path(value: Any, old: str, new: str) -> Any:
    """`value` (decoded JSON) with every string equal to `old` replaced by `new`."""
    if isinstance(value, str):
        return new if value == old else value
    if isinstance(value, list):
        return [_replace_path(v, old, new) for v in value]
    if isinstance(value, dict):
        return {k: _replace_path(v, old, new) for k, v in value.items()}
    return value


# -- where a cell's text is in the .ipynb file ---------------------------------------------


class FilePositions:
    """Maps (cell, position in the cell) to the .ipynb file's own line and UTF-16 column,
    by reading where each cell's `source` strings are in the JSON text (so CI annotations
    land on the right line of the file GitHub shows)."""

    def __init__(self, raw: str):
        self.raw = raw
        self.line_starts = [0] + [m.end() for m in _LINE_BREAK.finditer(raw)]
        self.cells: dict[int, list[int]] = {}  # cell -> raw offset of each decoded source character
        self.ends: dict[int, int] = {}  # cell -> raw offset just after its last source string
        self.source_spans: dict[int, tuple[int, int]] = {}  # cell -> raw span of its whole `source` value
        try:
            _JsonPositions(raw, self).value(0, ())
        except (IndexError, ValueError):
            self.cells.clear()
            self.source_spans.clear()

    def position(self, cell: int, position: Position, cell_text: str) -> Position | None:
        offsets = self.cells.get(cell)
        if offsets is None:
            return None
        lines = _lines(cell_text)
        if position.line >= len(lines):
            return None
        starts = [0] + [m.end() for m in _LINE_BREAK.finditer(cell_text)]
        line_text = lines[position.line]
        units, char = 0, 0
        while char < len(line_text) and units < position.character:
            units += 2 if ord(line_text[char]) > 0xFFFF else 1
            char += 1
        index = starts[position.line] + char
        raw_offset = offsets[index] if index < len(offsets) else self.ends.get(cell, 0)
        line = bisect.bisect_right(self.line_starts, raw_offset) - 1
        return Position(line, utf16_length(self.raw[self.line_starts[line] : raw_offset]))

    def range(self, cell: int, rng: Range, cell_text: str) -> Range | None:
        start = self.position(cell, rng.start, cell_text)
        end = self.position(cell, rng.end, cell_text)
        if start is None or end is None:
            return None
        return Range(start, end)


_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
# NaN and Infinity are not JSON, but Python's json module writes and reads them.
_JSON_SCALAR = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?|true|false|null|NaN|-?Infinity")


class _JsonPositions:
    """A JSON reader that only records the raw offsets of `cells[i].source` characters."""

    def __init__(self, raw: str, into: FilePositions):
        self.raw, self.into = raw, into

    def _skip(self, i: int) -> int:
        while i < len(self.raw) and self.raw[i] in " \t\r\n\ufeff":
            i += 1
        return i

    def value(self, i: int, path: tuple[str | int, ...]) -> int:
        i = self._skip(i)
        end = self._value(i, path)
        if len(path) == 3 and path[0] == "cells" and isinstance(path[1], int) and path[2] == "source":
            self.into.source_spans[path[1]] = (i, end)
        return end

    def _value(self, i: int, path: tuple[str | int, ...]) -> int:
        char = self.raw[i]
        if char == "{":
            i = self._skip(i + 1)
            if self.raw[i] == "}":
                return i + 1
            while True:
                key, i = self.string(self._skip(i), None)
                i = self._skip(i)
                if self.raw[i] != ":":
                    raise ValueError("expected ':'")
                i = self._skip(self.value(i + 1, path + (key,)))
                if self.raw[i] == "}":
                    return i + 1
                if self.raw[i] != ",":
                    raise ValueError("expected ','")
                i += 1
        if char == "[":
            i = self._skip(i + 1)
            index = 0
            if self.raw[i] == "]":
                return i + 1
            while True:
                i = self._skip(self.value(i, path + (index,)))
                index += 1
                if self.raw[i] == "]":
                    return i + 1
                if self.raw[i] != ",":
                    raise ValueError("expected ','")
                i += 1
        if char == '"':
            cell = None
            if len(path) >= 3 and path[0] == "cells" and isinstance(path[1], int) and path[2] == "source":
                cell = path[1]
            _, end = self.string(i, cell)
            if cell is not None:
                self.into.ends[cell] = end - 1
            return end
        match = _JSON_SCALAR.match(self.raw, i)
        if match is None:
            raise ValueError("unexpected character")
        return match.end()

    def string(self, i: int, cell: int | None) -> tuple[str, int]:
        """The decoded string starting at the quote at `i`, and the offset after it."""
        offsets = self.into.cells.setdefault(cell, []) if cell is not None else None
        out: list[str] = []
        i += 1
        while True:
            char = self.raw[i]
            if char == '"':
                return "".join(out), i + 1
            start = i
            if char == "\\":
                code = self.raw[i + 1]
                if code == "u":
                    value = int(self.raw[i + 2 : i + 6], 16)
                    i += 6
                    if 0xD800 <= value < 0xDC00 and self.raw.startswith("\\u", i):
                        low = int(self.raw[i + 2 : i + 6], 16)
                        if 0xDC00 <= low < 0xE000:
                            value = 0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00)
                            i += 6
                    decoded = chr(value)
                else:
                    decoded = _ESCAPES[code]
                    i += 2
            else:
                decoded = char
                i += 1
            out.append(decoded)
            if offsets is not None:
                offsets.append(start)


# -- findings in cells ------------------------------------------------------------------


def place_in_cells(
    findings: list[Finding], path: str, module: VirtualModule, positions: FilePositions | None
) -> list[Finding]:
    """The notebook's findings with ranges (and fix edits) in cell coordinates:
    `data["notebook"] = {"cell", "file_range"}`, `data["source_text"]` what the finding
    covers (baselines fingerprint it). Fixes whose edits span cells are dropped."""
    from .baseline import range_text
    from .sourcetext import SourceText

    path = os.path.abspath(path)
    source = SourceText(module.text, path)
    out: list[Finding] = []
    for finding in findings:
        if os.path.abspath(finding.abs_path or finding.path) != path or "notebook" in finding.data:
            out.append(finding)
            continue
        placed = module.range_to_cell(finding.range)
        if placed is None:
            out.append(finding)
            continue
        finding.data.setdefault("source_text", range_text(source, finding))
        cell, rng = placed
        finding.range = rng
        file_range = positions.range(cell, rng, module.cell_texts.get(cell, "")) if positions else None
        finding.data["notebook"] = {"cell": cell, "file_range": file_range.as_json() if file_range else None}
        finding.fixes = [fix for fix in (_fix_in_cells(fix, module, cell) for fix in finding.fixes) if fix is not None]
        out.append(finding)
    return out


_IMPORT_INSERTION = re.compile(r"\A(\r?\n)?(import [\w.]+( as \w+)?|from [\w.]+ import [\w., ]+)(\r?\n)?\Z")


def _fix_in_cells(fix: Fix, module: VirtualModule, fixed_cell: int) -> Fix | None:
    edits: list[FixEdit] = []
    for edit in fix.get("edits") or []:
        if "path" in edit:
            edits.append(edit)  # another file (pyproject.toml): unchanged
            continue
        rng = Range.from_json(edit["range"])
        start, end = module.to_cell(rng.start), module.to_cell(rng.end)
        if start is None or end is None or start[0] != end[0]:
            return None
        if rng.start == rng.end and _IMPORT_INSERTION.match(edit["newText"]):
            home = import_cell(module, fixed_cell)
            if home != start[0]:
                edits.append(_import_in_cell(module, home, edit["newText"].strip("\r\n")))
                continue
        edits.append({"cell": start[0], "range": Range(start[1], end[1]).as_json(), "newText": edit["newText"]})
    placed = fix.copy()
    placed["edits"] = edits
    return placed


def import_cell(module: VirtualModule, fixed_cell: int) -> int:
    """The cell an import a fix adds belongs in: the first code cell that already holds
    imports, when it comes before the fixed cell; else the fixed cell itself. Never an
    unrelated cell: re-running only the fixed cell (or the imports cell a notebook is
    started with) must define the name."""
    for span in module.spans:
        if span.cell == fixed_cell:
            break
        tree = _cell_tree(module.cell_texts.get(span.cell, ""))
        if tree is not None and any(isinstance(s, (ast.Import, ast.ImportFrom)) for s in tree.body):
            return span.cell
    return fixed_cell


def _cell_tree(source: str) -> ast.Module | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        try:
            return parse_module("\n".join(python_cell_lines(source)))
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return None


def _import_in_cell(module: VirtualModule, cell: int, statement: str) -> FixEdit:
    """An edit adding `statement` after the cell's leading imports (as in a file)."""
    from .fixes.edits import LineIndex
    from .fixes.imports import insertion_point

    source = module.cell_texts.get(cell, "")
    lines = python_cell_lines(source)
    inert = "\n".join(lines)  # line for line the cell, with IPython syntax made inert
    tree = _cell_tree(source)
    if tree is None:
        at, before, after = 0, "", "\n"
    else:
        at, before, after = insertion_point(tree, LineIndex(inert))
    if at >= len(inert) and inert:
        # After the cell's last line: its own text decides the column, not the inert copy.
        last = _lines(source)[-1]
        where = Position(len(lines) - 1, utf16_length(last))
        before = "" if last == "" else "\n"
        after = "\n" if last == "" else ""
    else:
        where = LineIndex(inert).position(at)
    return {"cell": cell, "range": Range(where, where).as_json(), "newText": f"{before}{statement}{after}"}


def problem_findings(
    problems: list[CellProblem], path: str, display: str, positions: FilePositions | None, texts: dict[int, str]
) -> list[Finding]:
    """ATL001 for each code cell Python cannot parse."""
    from . import findings as codes
    from .findings import Finding

    out: list[Finding] = []
    for problem in problems:
        file_range = positions.range(problem.cell, problem.range, texts.get(problem.cell, "")) if positions else None
        out.append(
            Finding(
                display,
                problem.range,
                "error",
                codes.SYNTAX_ERROR,
                problem.message,
                abs_path=os.path.abspath(path),
                data={
                    "notebook": {"cell": problem.cell, "file_range": file_range.as_json() if file_range else None},
                    "source_text": _lines(texts.get(problem.cell, ""))[problem.range.start.line]
                    if problem.range.start.line < len(_lines(texts.get(problem.cell, "")))
                    else "",
                },
            )
        )
    return out


def cell_of(finding: Finding | None) -> int | None:
    """The cell a finding placed by `place_in_cells` is in."""
    notebook = finding.data.get("notebook") if finding is not None else None
    return notebook["cell"] if notebook is not None else None


# -- --fix on cells ------------------------------------------------------------------------


AppliedCellFix = tuple["Finding", "Fix"]  # (finding, the fix applied)
SkippedCellFix = tuple["Finding", str]  # (finding, why its fix was not applied)


def fix_cells(
    raw: bytes, fixes: list[AppliedCellFix], fingerprint_of: Callable[[str], str]
) -> tuple[bytes | None, list[AppliedCellFix], list[SkippedCellFix]]:
    """The notebook file `raw` with the fixes applied (edits in cell coordinates): (the new
    bytes, or None when nothing applies; applied; skipped as (finding, reason)). Fixes apply
    only while the notebook's module text is still the one analysed.

    Only the edited cells' `source` values change: the rest of the JSON text is kept as
    written (numbers such as `1e400`, escapes, key order, indentation, line breaks, BOM),
    since writing the document back through `json` would change what it cannot represent."""
    from .fixes.edits import LineIndex, apply_edits, overlaps
    from .fixes.edits import TextEdit as Edit

    try:
        bom = raw.startswith(b"\xef\xbb\xbf")
        text = raw.decode("utf-8-sig")
        document = json.loads(text)  # the sources as written, lone surrogates included
        cells = parse_notebook(raw)
    except (ValueError, NotebookError) as error:
        return None, [], [(finding, f"cannot read the notebook: {error}") for finding, _ in fixes]
    current = fingerprint_of(build_module(cells).text)
    sources = {cell.index: cell.source for cell in cells}
    taken: dict[int, list[TextEdit]] = {}
    applied: list[AppliedCellFix] = []
    skipped: list[SkippedCellFix] = []
    for finding, fix in fixes:
        if finding.data.get("text_sha256") != current:
            skipped.append((finding, "the notebook changed since it was analysed"))
            continue
        edits: list[tuple[int, TextEdit]] | None = []
        for edit in fix["edits"]:
            cell = edit.get("cell")
            if not isinstance(cell, int) or cell not in sources or edits is None:
                edits = None
                break
            edits.append((cell, Edit.from_json(edit, LineIndex(sources[cell]))))
        if edits is None:
            skipped.append((finding, "the fix edits no cell of this notebook"))
            continue
        if any(overlaps(new, old) and new != old for cell, new in edits for old in taken.get(cell, [])):
            skipped.append((finding, "overlaps another fix; applied on the next pass"))
            continue
        for cell, cell_edit in edits:
            if cell_edit not in taken.setdefault(cell, []):
                taken[cell].append(cell_edit)
        applied.append((finding, fix))
    if not applied:
        return None, applied, skipped
    spans = FilePositions(text).source_spans
    if any(cell not in spans for cell in taken):
        reason = "atenlint cannot find the cell's source in the file's JSON text"
        return None, [], skipped + [(finding, reason) for finding, _ in applied]
    # Splice from the end so earlier spans keep their offsets.
    for cell in sorted(taken, key=lambda c: spans[c][0], reverse=True):
        begin, end = spans[cell]
        written = document["cells"][cell]["source"]
        original = "".join(written) if isinstance(written, list) else written
        # Offsets are the same in the written source and the analysed one: a lone
        # surrogate and the U+FFFD it was analysed as are one code point each.
        new_source = apply_edits(original, taken[cell])
        text = text[:begin] + _source_json(new_source, text[begin:end], isinstance(written, list)) + text[end:]
    return ("\ufeff" if bom else "").encode("utf-8") + text.encode("utf-8"), applied, skipped


def _json_string(text: str) -> str:
    """A JSON string as Jupyter writes it (no ASCII escaping), with lone surrogates escaped
    (`\\ud83d`), the only way JSON can hold them."""
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(text, ensure_ascii=False))


def _source_json(source: str, written: str, as_list: bool) -> str:
    """The JSON text of a cell's new `source`, laid out as the `written` value was."""
    if not as_list:
        return _json_string(source)
    lines = [m.group(0) for m in re.finditer(r"[^\n]*\n|[^\n]+$", source)]
    strings = [m.span() for m in re.finditer(r'"(?:[^"\\]|\\.)*"', written)]
    if strings:
        opening = written[1 : strings[0][0]]  # "\n    ": what comes after "["
        closing = written[strings[-1][1] : -1]  # "\n   ": what comes before "]"
        separator = written[strings[0][1] : strings[1][0]] if len(strings) > 1 else "," + opening
    else:
        opening, closing, separator = "", "", ", "
    if not lines:
        return "[]"
    return "[" + opening + separator.join(_json_string(line) for line in lines) + closing + "]"


def saved_module_text(path: str) -> str | None:
    """The module text of the notebook as saved on disk (None: unreadable or not a notebook)."""
    try:
        return build_module(read_notebook(path)).text
    except NotebookError:
        return None
