from __future__ import annotations

import pytest

from atenlint.sourcetext import DecodeError, Position, SourceText, decode_source


def test_utf16_columns_count_astral_characters_twice():
    source = SourceText('x = "𝛑ä"; torch.take(x)\n')
    byte_col = len('x = "𝛑ä"; '.encode())
    assert source.utf16_from_byte(0, byte_col) == len('x = "') + 2 + 1 + 3
    assert source.char_from_utf16(0, 8) == len('x = "𝛑ä')
    assert source.offset(Position(0, 8)) == len('x = "𝛑ä')


def test_decode_follows_python():
    assert decode_source(b"\xef\xbb\xbfx = 1\n") == "x = 1\n"
    assert decode_source("# -*- coding: latin-1 -*-\nx = 'é'\n".encode("latin-1")).endswith("'é'\n")
    with pytest.raises(DecodeError) as error:
        decode_source(b"import torch\nx = '\xe9'\n")
    assert error.value.line == 1 and "0xe9 on line 2" in error.value.message
    with pytest.raises(DecodeError):
        decode_source(b"# -*- coding: klingon -*-\n")


def test_tree_is_none_for_syntax_errors():
    assert SourceText("def f(:\n").tree is None
    assert SourceText("x = 1\n").tree is not None


def test_one_column_converter_for_every_encoding():
    from atenlint.sourcetext import UTF8, UTF16, UTF32, convert_column

    line = 'x = "𝛑ä" + y'
    # 𝛑 is one code point, two UTF-16 units, four UTF-8 bytes; ä is one, one, two.
    assert convert_column(line, 7, UTF32, UTF16) == 8
    assert convert_column(line, 7, UTF32, UTF8) == 11
    assert convert_column(line, 11, UTF8, UTF16) == 8
    assert convert_column(line, 8, UTF16, UTF32) == 7
    assert convert_column(line, 6, UTF16, UTF32) == 6  # inside the surrogate pair: after the character
    assert convert_column(line, 7, UTF8, UTF32) == 5  # inside a UTF-8 sequence: before the character
    assert convert_column(line, 99, UTF16, UTF8) == len(line.encode("utf-8"))  # past the end: the line's end
    with pytest.raises(ValueError):
        convert_column(line, 1, "utf-7", UTF16)


def test_columns_round_trip_at_every_character_boundary():
    from atenlint.sourcetext import ENCODINGS, column_length, convert_column

    line = "a𝛑ä€\t😀z"
    for index in range(len(line) + 1):
        prefix = line[:index]
        for unit in ENCODINGS:
            column = column_length(prefix, unit)
            for other in ENCODINGS:
                assert convert_column(line, column, unit, other) == column_length(prefix, other)
