"""Positions, edits, byte-exact application, and rendering templates over argument text."""

from __future__ import annotations

import ast

import pytest

from atenlint.fixes.edits import EncodedText, LineIndex, OverlapError, TextEdit, apply_edits, comment_spans
from atenlint.fixes.template import RenderError, Value, expand_optional, parse_value, render, trimmed_edit
from atenlint.sourcetext import Position

# -- positions ---------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["a = 1\nb = 2\n", "a = 1\r\nb = 2\r\n", "a = 1\rb = 2\r", "a\n\x0c\nb = 2\n"])
def test_lines_break_where_python_breaks_them(text):
    index = LineIndex(text)
    tree = ast.parse(text)
    last = tree.body[-1]
    start, _ = index.node_offsets(last)
    assert text[start:].startswith("b = 2")
    assert index.position(start).line == last.lineno - 1


def test_positions_count_utf16_units():
    text = "s = '𝄞é'; y = take(x)\n"
    index = LineIndex(text)
    offset = text.index("take")
    position = index.position(offset)
    assert position == Position(0, offset + 1)  # the clef is two UTF-16 units, one str index
    assert index.offset(position) == offset
    node = ast.parse(text).body[1].value
    assert index.node_offsets(node) == (offset, offset + len("take(x)"))


# -- applying edits ----------------------------------------------------------------------


def test_insertions_at_one_point_keep_their_order_and_duplicates_apply_once():
    text = "import torch\nx = 1\n"
    first, second = TextEdit(13, 13, "import math\n"), TextEdit(13, 13, "import warnings\n")
    assert apply_edits(text, [first, second, first]) == "import torch\nimport math\nimport warnings\nx = 1\n"


def test_overlapping_edits_are_refused():
    with pytest.raises(OverlapError):
        apply_edits("abcdef", [TextEdit(1, 4, "X"), TextEdit(3, 5, "Y")])
    assert apply_edits("abcdef", [TextEdit(1, 3, "X"), TextEdit(3, 3, "+"), TextEdit(3, 5, "Y")]) == "aX+Yf"


def test_edits_keep_every_other_byte():
    source = "# -*- coding: latin-1 -*-\r\nname = 'Andr\xe9'\r\ny = torch.take(x, i)  # caf\xe9\r\n"
    data = source.encode("latin-1")
    encoded = EncodedText.read(data)
    start = encoded.text.index("torch.take(x, i)")
    edit = TextEdit(start, start + len("torch.take(x, i)"), "x.reshape(-1)[i]")
    result = encoded.with_edits([edit])
    prefix = source[:start].encode("latin-1")
    suffix = source[start + len("torch.take(x, i)") :].encode("latin-1")
    assert result == prefix + b"x.reshape(-1)[i]" + suffix


def test_edits_keep_a_byte_order_mark():
    data = b"\xef\xbb\xbfx = torch.take(a, b)\n"
    encoded = EncodedText.read(data)
    start = encoded.text.index("torch")
    result = encoded.with_edits([TextEdit(start, start + 5, "th")])
    assert result == b"\xef\xbb\xbfx = th.take(a, b)\n"


def test_comments_are_found_in_files_with_any_line_breaks():
    text = "a = f(x,  # one\r  y)\rb = 2  # two\r"
    spans = comment_spans(text)
    assert [text[s:e] for s, e in spans] == ["# one", "# two"]


# -- templates ----------------------------------------------------------------------------


def value(text: str) -> Value:
    return Value(text, parse_value(text))


@pytest.mark.parametrize(
    "argument, expected",
    [
        ("x", "x.reshape(-1)[i]"),
        ("a + b", "(a + b).reshape(-1)[i]"),
        ("-x", "(-x).reshape(-1)[i]"),
        ("3", "(3).reshape(-1)[i]"),
        ("self.table[0]", "self.table[0].reshape(-1)[i]"),
        ("f(\n    a,  # why\n)", "f(\n    a,  # why\n).reshape(-1)[i]"),
        ("a if c else b", "(a if c else b).reshape(-1)[i]"),
        ("(x for x in y)", "((x for x in y)).reshape(-1)[i]"),
    ],
)
def test_arguments_get_parentheses_only_where_needed(argument, expected):
    assert render("{input}.reshape(-1)[{index}]", {"input": value(argument), "index": value("i")}) == expected


def test_arguments_in_call_positions_stay_as_written():
    rendered = render(
        "{torch}.where({input} == 0, {values}, {input})",
        {"torch": Value("th"), "input": value("a + b"), "values": value("v if c else w")},
    )
    assert rendered == "th.where((a + b) == 0, v if c else w, a + b)"


def test_a_rendering_that_would_change_meaning_is_refused():
    with pytest.raises(RenderError):
        render("{a}.b", {"a": Value("x +", parse_value("x"))})


def test_optional_groups_keep_only_written_arguments():
    template = "f({a}[?, dtype={dtype}?][?, device={device}?])"
    assert expand_optional(template, {"a", "device"}) == "f({a}, device={device})"


@pytest.mark.parametrize(
    "old, new, expected",
    [
        ("x", "x.cpu()", (1, 1, ".cpu()")),
        ("torch.take(x, i)", "x.reshape(-1)[i]", (0, 16, "x.reshape(-1)[i]")),
        ("torch.logspace(0, 3)", "torch.pow(10.0, torch.linspace(0, 3))", (6, 19, "pow(10.0, torch.linspace(0, 3)")),
        ("self.pool(x)", "F.avg_pool3d(x, (2, 2, 2))", (0, 11, "F.avg_pool3d(x, (2, 2, 2)")),
        ("alpha", "alphabet", (0, 5, "alphabet")),
    ],
)
def test_trimmed_edits_never_split_a_name(old, new, expected):
    head, tail, piece = trimmed_edit(old, new)
    assert (head, tail, piece) == expected
    assert old[:head] + piece + old[tail:] == new
