"""Text edits as LSP defines them, and applying them so that nothing else in a file changes.

Lines here end at `\\n`, `\\r\\n` or `\\r` only: that is what Python's tokenizer and LSP
clients count. (`str.splitlines` also breaks at form feeds and other separators, which
would move every line after one.) Columns are UTF-16 code units, as in LSP.
"""

from __future__ import annotations

import bisect
import hashlib
import io
import re
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass

from ..finding_data import FixEdit
from ..sourcetext import (
    UTF8,
    UTF16,
    UTF32,
    DecodeError,
    Position,
    Range,
    SpannedNode,
    column_length,
    convert_column,
    decode_source,
)

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


class LineIndex:
    """Offsets (string indices) <-> LSP positions for one text."""

    def __init__(self, text: str):
        self.text = text
        self.starts = [0] + [match.end() for match in _LINE_BREAK.finditer(text)]

    def line_text(self, line: int) -> str:
        """The line's text without its line break."""
        if not 0 <= line < len(self.starts):
            return ""
        end = self.starts[line + 1] if line + 1 < len(self.starts) else len(self.text)
        return self.text[self.starts[line] : end].rstrip("\r\n")

    def offset(self, position: Position) -> int:
        if position.line >= len(self.starts):
            return len(self.text)
        text = self.line_text(position.line)
        return self.starts[position.line] + convert_column(text, position.character, UTF16, UTF32)

    def position(self, offset: int) -> Position:
        line = bisect.bisect_right(self.starts, offset) - 1
        return Position(line, column_length(self.text[self.starts[line] : offset], UTF16))

    def range(self, start: int, end: int) -> Range:
        return Range(self.position(start), self.position(end))

    def node_offsets(self, node: SpannedNode) -> tuple[int, int]:
        """String offsets of an `ast` node (whose columns are UTF-8 byte offsets)."""
        end_line = node.end_lineno if node.end_lineno is not None else node.lineno
        end_col = node.end_col_offset if node.end_col_offset is not None else node.col_offset
        return self._from_byte(node.lineno - 1, node.col_offset), self._from_byte(end_line - 1, end_col)

    def _from_byte(self, line: int, byte_col: int) -> int:
        return self.starts[line] + convert_column(self.line_text(line), byte_col, UTF8, UTF32)

    def newline(self) -> str:
        """The file's own line break (its first one), for text an edit inserts."""
        match = _LINE_BREAK.search(self.text)
        return match.group() if match else "\n"


@dataclass(frozen=True)
class TextEdit:
    """Replace `start:end` (string offsets) with `new_text`; an insertion when start == end."""

    start: int
    end: int
    new_text: str

    def as_json(self, index: LineIndex) -> FixEdit:
        return {"range": index.range(self.start, self.end).as_json(), "newText": self.new_text}

    @staticmethod
    def from_json(data: FixEdit, index: LineIndex) -> TextEdit:
        rng = Range.from_json(data["range"])
        return TextEdit(index.offset(rng.start), index.offset(rng.end), data["newText"])


class OverlapError(ValueError):
    """Two edits claim the same text."""


def overlaps(a: TextEdit, b: TextEdit) -> bool:
    """Whether two edits cannot both apply. Insertions at one point can (in list order),
    and an insertion at either end of a replaced span does not touch it."""
    if a.start == a.end and b.start == b.end:
        return False
    if a.start == a.end:
        return b.start < a.start < b.end
    if b.start == b.end:
        return a.start < b.start < a.end
    return a.start < b.end and b.start < a.end


def apply_edits(text: str, edits: Iterable[TextEdit]) -> str:
    """The text with every edit applied (edits refer to the original text). Insertions at
    one point appear in the order given, as LSP specifies; identical edits apply once."""
    ordered: list[TextEdit] = []
    for edit in edits:
        if edit not in ordered:
            ordered.append(edit)
    for i, first in enumerate(ordered):
        if not 0 <= first.start <= first.end <= len(text):
            raise ValueError(f"edit {first} is outside the text")
        for second in ordered[i + 1 :]:
            if overlaps(first, second):
                raise OverlapError(f"edits overlap: {first} and {second}")
    # Stable sort by position keeps the given order of insertions at one point; a
    # replacement sorts after the insertions at its start.
    positioned = sorted(enumerate(ordered), key=lambda item: (item[1].start, item[1].end > item[1].start, item[0]))
    pieces = []
    cursor = 0
    for _, edit in positioned:
        pieces.append(text[cursor : edit.start])
        pieces.append(edit.new_text)
        cursor = edit.end
    pieces.append(text[cursor:])
    return "".join(pieces)


@dataclass(frozen=True)
class EncodedText:
    """A source file's bytes as Python reads them: BOM, declared encoding, text."""

    data: bytes
    text: str
    encoding: str
    bom: bytes

    @staticmethod
    def read(data: bytes) -> EncodedText:
        text = decode_source(data)  # raises DecodeError
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        bom = b"\xef\xbb\xbf" if data.startswith(b"\xef\xbb\xbf") else b""
        if encoding == "utf-8-sig":
            encoding = "utf-8"
        return EncodedText(data, text, encoding, bom)

    def with_edits(self, edits: Iterable[TextEdit]) -> bytes:
        """The file's bytes with the edits spliced in: every byte outside the edited spans
        is the original byte (the same encoding, line breaks and BOM)."""
        edits = list(edits)
        expected = apply_edits(self.text, edits)
        out = bytearray()
        cursor_char, cursor_byte = 0, len(self.bom)
        out += self.data[:cursor_byte]
        unique: list[TextEdit] = []
        for edit in edits:
            if edit not in unique:
                unique.append(edit)
        positioned = sorted(enumerate(unique), key=lambda item: (item[1].start, item[1].end > item[1].start, item[0]))
        for _, edit in positioned:
            start_byte = cursor_byte + len(self.text[cursor_char : edit.start].encode(self.encoding))
            end_byte = start_byte + len(self.text[edit.start : edit.end].encode(self.encoding))
            out += self.data[cursor_byte:start_byte]
            out += edit.new_text.encode(self.encoding)
            cursor_char, cursor_byte = edit.end, end_byte
        out += self.data[cursor_byte:]
        result = bytes(out)
        # The splice must decode to exactly the edited text; anything else is a bug here.
        try:
            if decode_source(result) != expected:
                raise ValueError("splicing edits into the file's bytes did not give the edited text")
        except DecodeError as error:
            raise ValueError(f"the edited file no longer decodes: {error.message}") from None
        return result


def comment_spans(text: str) -> list[tuple[int, int]] | None:
    """String offsets of every comment in a file (None when it does not tokenize)."""
    spans = token_spans(text)
    return None if spans is None else spans[0]


Spans = list[tuple[int, int]]


def token_spans(text: str) -> tuple[Spans, Spans] | None:
    """(comments, strings that span lines) as string offsets (None when it does not tokenize)."""
    # Rows count the lines this readline hands out, whatever they end with.
    stream = io.StringIO(text, newline="")
    line_starts: list[int] = []
    consumed = [0]

    def readline() -> str:
        line = stream.readline()
        line_starts.append(consumed[0])
        consumed[0] += len(line)
        return line

    comments: Spans = []
    strings: Spans = []
    try:
        for token in tokenize.generate_tokens(readline):
            if token.type == tokenize.COMMENT:
                start = line_starts[token.start[0] - 1] + token.start[1]
                comments.append((start, start + len(token.string)))
            elif token.type == tokenize.STRING and token.start[0] != token.end[0]:
                strings.append(
                    (line_starts[token.start[0] - 1] + token.start[1], line_starts[token.end[0] - 1] + token.end[1])
                )
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    return comments, strings


def text_fingerprint(text: str) -> str:
    """Identifies the text fixes were computed on (a file edited since must be re-checked)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
