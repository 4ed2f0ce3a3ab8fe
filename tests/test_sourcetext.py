from __future__ import annotations

import pytest

from atenlint.sourcetext import DecodeError, Position, SourceText, decode_source


def test_utf16_columns_count_astral_characters_twice():
    source = SourceText('x = "𝛑ä"; torch.take(x)\n')
    byte_col = len('x = "𝛑ä"; '.encode("utf-8"))
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
