"""A file's text before anything is captured: the editor's buffer or the file on disk,
within `max-file-size`, decoded as Python decodes it, parsed; or the one finding that says
why it is not analysed."""

from __future__ import annotations

from . import findings as codes
from .bounded_read import NotRegularFile, read_regular_file
from .captured import FileCapture
from .config import Settings
from .findings import Finding
from .python_parse import parse_module
from .sourcetext import DecodeError, Position, Range, SourceText, decode_source


class Unreadable(Exception):
    """A file that is not analysed (too large, not a regular file, not decodable): its one finding."""

    def __init__(self, code: str, severity: str, message: str, line0: int = 0, width: int = 0):
        super().__init__(message)
        self.code, self.severity, self.message, self.line0, self.width = code, severity, message, line0, width

    def finding(self, result: FileCapture) -> Finding:
        return Finding(
            result.display,
            Range(Position(self.line0, 0), Position(self.line0, self.width)),
            self.severity,
            self.code,
            self.message,
            abs_path=result.path,
        )


def read_source(path: str, text: str | None, settings: Settings) -> SourceText:
    """The file's text (the editor's buffer, or the file on disk), or `Unreadable` saying why not."""
    if text is not None:
        # An editor's buffer obeys max-file-size like a file on disk does.
        size = len(text) if len(text) * 4 <= settings.max_file_bytes else len(text.encode("utf-8", "replace"))
        if size > settings.max_file_bytes:
            raise Unreadable(
                codes.TOO_LARGE,
                "information",
                f"this file is {size / 1e6:.1f} MB, over max-file-size "
                f"({settings.max_file_bytes / 1e6:.1f} MB): not analysed",
            )
        return SourceText(text, path)
    try:
        # Regular files only, size checked before reading: a FIFO, /dev/zero or a file
        # growing without end is never read (read_regular_file opens non-blocking).
        data = read_regular_file(path, settings.max_file_bytes)
    except NotRegularFile as problem:
        if problem.too_large:
            raise Unreadable(
                codes.TOO_LARGE,
                "information",
                f"this file is {problem.size / 1e6:.1f} MB, over max-file-size "
                f"({settings.max_file_bytes / 1e6:.1f} MB): not analysed",
            ) from None
        raise Unreadable(codes.UNDECODABLE, "information", f"not analysed: {problem.message}") from None
    except OSError as error:
        raise Unreadable(codes.UNDECODABLE, "warning", f"cannot read this file: {error.strerror or error}") from None
    try:
        return SourceText(decode_source(data), path)
    except DecodeError as error:
        lines = data.split(b"\n")
        width = len(lines[error.line].decode("utf-8", errors="replace").rstrip("\r")) if error.line < len(lines) else 0
        raise Unreadable(
            codes.UNDECODABLE, "warning", f"cannot analyse this file: {error.message}", error.line, width
        ) from None


def syntax_finding(result: FileCapture, source: SourceText) -> Finding:
    """ATL001 where Python stops parsing the file."""
    try:
        parse_module(source.text, filename=result.path)
        message, line0, col = "Python cannot parse this file", 0, 0
    except SyntaxError as error:
        line0 = max((error.lineno or 1) - 1, 0)
        col = max((error.offset or 1) - 1, 0)
        message = f"Python cannot parse this file: {error.msg} (line {line0 + 1}); its modules are not analysed"
    except ValueError as error:  # null bytes
        message, line0, col = f"Python cannot parse this file: {error}", 0, 0
    except (RecursionError, MemoryError):  # nested deeper than the parser goes
        message, line0, col = (
            (
                "Python cannot parse this file: an expression is nested too deeply for "
                "Python's parser; its modules are not analysed"
            ),
            0,
            0,
        )
    width = len(source.line_text(line0))
    col = min(col, max(width - 1, 0))  # Python points one past the end for "expected ..."
    start = Position(line0, source.utf16_from_char(line0, col))
    end = Position(line0, source.utf16_from_char(line0, max(width, col + 1) if width else 0))
    return Finding(result.display, Range(start, end), "error", codes.SYNTAX_ERROR, message, abs_path=result.path)
