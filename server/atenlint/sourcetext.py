"""Reading Python source the way Python does, and speaking LSP positions about it.

Python reports columns in UTF-8 bytes; LSP counts UTF-16 code units. Everything here is
pure standard library so the CLI, the server and the tests share it.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass
from functools import cached_property
from typing import Protocol, TypedDict

from .bounded_read import read_regular_file
from .python_parse import parse_module


class SpannedNode(Protocol):
    """An `ast` node with a source span (expressions, statements, keywords, arguments)."""

    lineno: int
    col_offset: int  # UTF-8 bytes
    end_lineno: int | None
    end_col_offset: int | None


class JsonPosition(TypedDict):
    line: int
    character: int


class JsonRange(TypedDict):
    """A `Range` as JSON (LSP's shape)."""

    start: JsonPosition
    end: JsonPosition


@dataclass(frozen=True)
class Position:
    line: int  # 0-based
    character: int  # UTF-16 code units

    def as_json(self) -> JsonPosition:
        return {"line": self.line, "character": self.character}


@dataclass(frozen=True)
class Range:
    start: Position
    end: Position

    def as_json(self) -> JsonRange:
        return {"start": self.start.as_json(), "end": self.end.as_json()}

    @staticmethod
    def from_json(data: JsonRange) -> Range:
        return Range(Position(**data["start"]), Position(**data["end"]))


class DecodeError(Exception):
    """The bytes are not text Python would accept (wrong encoding, bad declaration)."""

    def __init__(self, message: str, line: int = 0):
        super().__init__(message)
        self.message = message
        self.line = line  # 0-based


def decode_source(data: bytes) -> str:
    """Decode as the interpreter does: BOM, PEP 263 coding declaration, else UTF-8."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:
        raise DecodeError(f"invalid encoding declaration: {error.msg}", (error.lineno or 1) - 1) from None
    except (LookupError, UnicodeError, ValueError) as error:
        raise DecodeError(f"invalid encoding declaration: {error}") from None
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start)
        raise DecodeError(
            f"the file is not valid {encoding.upper()}: byte 0x{data[error.start]:02x} on line {line + 1} "
            f"cannot be decoded; save it as UTF-8 or declare its encoding (PEP 263)",
            line,
        ) from None
    except (LookupError, UnicodeError, ValueError, TypeError) as error:
        # `# coding: rot13`, `base64`, ...: codecs that exist but do not turn bytes into
        # source text; Python refuses to import such a file too.
        raise DecodeError(
            f"the declared encoding `{encoding}` cannot decode Python source "
            f"({type(error).__name__}: {error}); declare a text encoding such as utf-8",
            _declaration_line(data),
        ) from None
    if not isinstance(text, str):
        raise DecodeError(
            f"the declared encoding `{encoding}` does not produce text; declare a text encoding such as utf-8",
            _declaration_line(data),
        )
    return text.removeprefix("\ufeff")


def read_source(path: str, limit: int | None = None) -> str:
    """A Python file's text, read through the one bounded reader (regular files only, at
    most `limit` bytes) and decoded as the interpreter would. Raises NotRegularFile,
    OSError or DecodeError."""
    return decode_source(read_regular_file(path, limit))


def _declaration_line(data: bytes) -> int:
    """0-based line of the PEP 263 declaration (one of the first two lines)."""
    for index, line in enumerate(data.split(b"\n", 2)[:2]):
        if re.match(rb"^[ \t\f]*#.*?coding[:=]", line):
            return index
    return 0


class SourceText:
    """One file's text with position conversions and a lazily parsed AST."""

    def __init__(self, text: str, path: str = "<string>"):
        self.text = text
        self.path = path
        self.lines = python_lines(text) or [""]

    @cached_property
    def tree(self) -> ast.Module | None:
        try:
            return parse_module(self.text, filename=self.path)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            # MemoryError / RecursionError: an expression nested deeper than the parser
            # goes; Python cannot import such a file either.
            return None

    @cached_property
    def parse_problem(self) -> tuple[str, int, int] | None:
        """Why the file does not parse: (message, 0-based line, 0-based column), or None."""
        try:
            parse_module(self.text, filename=self.path)
        except SyntaxError as error:
            return error.msg, max((error.lineno or 1) - 1, 0), max((error.offset or 1) - 1, 0)
        except ValueError as error:  # null bytes
            return str(error), 0, 0
        except (RecursionError, MemoryError):
            return "an expression is nested too deeply for Python's parser", 0, 0
        return None

    def line_text(self, line0: int) -> str:
        if 0 <= line0 < len(self.lines):
            return self.lines[line0].rstrip("\r\n")
        return ""

    def utf16_from_byte(self, line0: int, byte_col: int) -> int:
        return convert_column(self.line_text(line0), byte_col, UTF8, UTF16)

    def utf16_from_char(self, line0: int, char_col: int) -> int:
        return convert_column(self.line_text(line0), char_col, UTF32, UTF16)

    def char_from_utf16(self, line0: int, units: int) -> int:
        return convert_column(self.line_text(line0), units, UTF16, UTF32)

    def offset(self, position: Position) -> int:
        """String index of an LSP position."""
        line = min(position.line, len(self.lines))
        base = sum(len(ln) for ln in self.lines[:line])
        return base + self.char_from_utf16(line, position.character)

    def node_range(self, node: SpannedNode) -> Range:
        end_line = node.end_lineno if node.end_lineno is not None else node.lineno
        end_col = node.end_col_offset if node.end_col_offset is not None else node.col_offset
        return Range(
            Position(node.lineno - 1, self.utf16_from_byte(node.lineno - 1, node.col_offset)),
            Position(end_line - 1, self.utf16_from_byte(end_line - 1, end_col)),
        )

    def line_range(self, line0: int) -> Range:
        text = self.line_text(line0)
        indent = len(text) - len(text.lstrip())
        return Range(Position(line0, utf16_length(text[:indent])), Position(line0, utf16_length(text)))

    def segment(self, node: ast.AST) -> str:
        return ast.get_source_segment(self.text, node) or ""


_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def python_lines(text: str) -> list[str]:
    """Lines as Python and LSP count them: broken at \\n, \\r\\n and \\r only (str.splitlines
    also breaks at form feeds and other separators, which would shift every later range)."""
    lines, start = [], 0
    for match in _LINE_BREAK.finditer(text):
        lines.append(text[start : match.end()])
        start = match.end()
    if start < len(text):
        lines.append(text[start:])
    return lines


def utf16_length(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


# Column units: LSP's position encodings. Python's ast counts UTF-8 bytes, str indices
# count code points (LSP's "utf-32"), and LSP's default is UTF-16 code units.
UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"
ENCODINGS = (UTF8, UTF16, UTF32)


def prefix_at(line: str, column: int, unit: str) -> str:
    """The text of `line` before `column` counted in `unit`: a UTF-8 column inside a
    character ends before it, a UTF-16 one inside a surrogate pair after it (as editors
    place the caret); past the end, the whole line."""
    if unit == UTF32:
        return line[: max(column, 0)]
    if unit == UTF8:
        return line.encode("utf-8")[: max(column, 0)].decode("utf-8", errors="ignore")
    if unit != UTF16:
        raise ValueError(f"unknown column unit {unit!r}")
    count = 0
    for index, char in enumerate(line):
        if count >= column:
            return line[:index]
        count += 2 if ord(char) > 0xFFFF else 1
    return line


def column_length(text: str, unit: str) -> int:
    """How long `text` is in `unit`."""
    if unit == UTF32:
        return len(text)
    if unit == UTF8:
        return len(text.encode("utf-8"))
    if unit != UTF16:
        raise ValueError(f"unknown column unit {unit!r}")
    return utf16_length(text)


def convert_column(line: str, column: int, from_unit: str, to_unit: str) -> int:
    """The same place on `line`, counted in another unit: the one column converter."""
    if from_unit == to_unit:
        return column
    return column_length(prefix_at(line, column, from_unit), to_unit)
