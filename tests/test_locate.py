"""Site -> expression: TorchScript ranges cover a call's callee, which tells apart
expressions that start at the same column."""

from __future__ import annotations

from atenlint.locate import ExpressionLocator
from atenlint.sourcetext import SourceText

TEXT = "y = torch.take(x, i).sum() + a @ b\nz = torch.linalg.svdvals(\n    x,\n).max()\n"


def locate(line, col, span=1, end=None):
    return ExpressionLocator(SourceText(TEXT)).locate(line, col, span, end)


def test_inner_and_outer_call_at_the_same_column():
    inner = locate(1, 4, 1, 14)  # `torch.take`
    outer = locate(1, 4, 1, 24)  # `torch.take(x, i).sum`
    assert (inner.call, inner.range.end.character) == ("torch.take", 20)
    assert (outer.call, outer.range.end.character) == (".sum()", 26)


def test_operator_and_multiline_call():
    matmul = locate(1, 29, 1, 34)
    assert matmul.call == "operator @" and (matmul.range.start.character, matmul.range.end.character) == (29, 34)
    svd = locate(2, 4, 1, 24)
    assert svd.call == "torch.linalg.svdvals"
    assert (svd.range.start.line, svd.range.end.line, svd.range.end.character) == (1, 3, 1)


def test_unknown_position_falls_back_to_the_rest_of_the_line():
    located = locate(1, 2)
    assert (located.range.start.character, located.range.end.character) == (2, 34)


LINE_ONLY = "h = self.lin1(x); a = h.softmax(-1) + torch.diff(h, dim=-1).sum() & (h > 0)\n"


def locate_line(hint):
    return ExpressionLocator(SourceText(LINE_ONLY)).locate(1, -1, hint=hint)


def test_a_line_only_site_is_picked_by_the_names_its_graph_keeps():
    # A graph records file and line only; the op, the torch function or the submodule it
    # went through pick the expression on a line with several calls.
    assert locate_line(("linear", "lin1")).call == "self.lin1"
    assert locate_line(("softmax",)).call == "h.softmax"
    assert locate_line(("diff",)).call == "torch.diff"
    assert locate_line(("__and__",)).call == "operator &"
    assert locate_line(("gt",)).call == "operator >"
    add = locate_line(("add",))
    assert add.call == "operator +" and add.range.start.character == 22


def test_a_line_only_site_without_a_matching_name_takes_the_smallest_call():
    assert locate_line(("nothing_like_it",)).call == "self.lin1"
    assert locate_line(()).call == "self.lin1"
