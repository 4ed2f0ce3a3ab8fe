"""The torch.cond fix for a branch on a tensor's value (fixes/compile_cond.py): offered at
the line where Dynamo itself reports the branch; the rewritten module compiles with
`fullgraph=True` and gives the original's outputs on inputs that take each branch (eagerly
too: torch.cond traces its branches even then); never offered where the source shows
something torch.cond refuses or the nested functions would change."""

from __future__ import annotations

import pytest
import torch
from compile_fixes_support import assert_same_and_one_graph, dynamo_breaks, offered, rewritten

FIX = "branch-with-cond"

ASSIGNED = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(4, 4)
        self.down = nn.Linear(4, 4)

    def forward(self, x):
        scale = 2.0
        if not x.mean() > 0:  # mostly negative
            h = self.up(x)
            out = torch.tanh(h) * scale
        else:
            # the other way
            h = self.down(x).relu()
            out = h + 1
        return out * 3
"""

RETURNED_ALIAS = """\
import torch as t
from torch import nn


class Model(nn.Module):
    def forward(self, x):
        if (x.abs().max()
                > 1.5):
            a = x.sum(dim=0)
            return a * 2, x.cos()
        else:
            return x.sum(dim=0) - 1, x.sin()
"""

TABS_TWO_OUTPUTS = (
    "import torch\n"
    "\n"
    "\n"
    "class Model(torch.nn.Module):\n"
    "\tdef forward(self, x):\n"
    "\t\tif x.sum() > 0:\n"
    "\t\t\tlow, high = x.clamp(max=0.5), x.exp()\n"
    "\t\telse:\n"
    "\t\t\tlow = x.neg()\n"
    "\t\t\thigh = x * x\n"
    "\t\treturn low - high\n"
)


RETURN_AFTER = """\
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            h = x * 2
            return h.relu()  # doubled
        # otherwise
        h = x - 1
        return h.abs()
"""


def _both_sides() -> list[tuple]:
    generator = torch.Generator().manual_seed(0)
    positive = torch.rand((3, 4), generator=generator) + 0.6
    return [(positive,), (-positive,), (torch.randn((3, 4), generator=generator),)]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            ASSIGNED,
            (
                "        # mostly negative\n        # the other way\n        def true_branch():\n"
                "            h = self.down(x).relu()\n            out = h + 1\n            return out\n"
                "        def false_branch():\n            h = self.up(x)\n"
            ),
        ),
        (RETURNED_ALIAS, "        return t.cond(x.abs().max()\n                > 1.5, true_branch, false_branch)"),
        (
            TABS_TWO_OUTPUTS,
            "\t\t\treturn low, high\n\t\tlow, high = torch.cond(x.sum() > 0, true_branch, false_branch)",
        ),
        (
            RETURN_AFTER,
            (
                "        # otherwise\n        def true_branch():\n            h = x * 2\n"
                "            return h.relu()  # doubled\n"
                "        def false_branch():\n            h = x - 1\n            return h.abs()\n"
                "        return torch.cond(x.sum() > 0, true_branch, false_branch)\n"
            ),
        ),
    ],
    ids=["assigned-negated-modules", "returned-alias-multiline", "tabs-two-outputs", "return-then-rest"],
)
def test_cond_keeps_one_graph_and_the_outputs(source, expected):
    inputs = _both_sides()
    breaks = dynamo_breaks(source, inputs[0])
    lines = sorted({line for line, _ in breaks})
    assert len(lines) == 1, breaks
    (line,) = lines
    reason = next(reason for at, reason in breaks if at == line)
    fixed, fix = rewritten(source, line, FIX, reason)
    assert expected in fixed, fixed
    assert fix["kind"] == "rewrite" and fix["safe"] is False and "none an input or a view of one" in fix["condition"]
    assert_same_and_one_graph(source, fixed, inputs)


def _branch(true_side: str, false_side: str, after: str = "        return y\n") -> str:
    return (
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.count = 0\n\n"
        f"    def forward(self, x):\n        y = x + 1\n        if x.sum() > 0:\n{true_side}\n        else:\n"
        f"{false_side}\n{after}"
    )


@pytest.mark.parametrize(
    ("true_side", "false_side", "after"),
    [
        ("            print(x)\n            y = x * 2", "            y = x - 1", "        return y\n"),
        ("            y = x.mul_(2)", "            y = x - 1", "        return y\n"),  # in place
        ("            self.count = 1\n            y = x * 2", "            y = x - 1", "        return y\n"),
        ("            return x * 2", "            y = x - 1", "        return y\n"),  # return in one branch only
        ("            y = y * 2", "            y = x - 1", "        return y\n"),  # read before set: unbound
        ("            y = x * 2\n            z = y", "            y = x - 1", "        return y + z\n"),  # one side
        ("            y = x", "            y = x - 1", "        return y\n"),  # an alias of an input
        ("            y = (w := x * 2)", "            y = x - 1", "        return y\n"),  # walrus
        ("            return x", "            return x - 1", ""),  # returns an input
        ("            return x * 2, x", "            return x - 1", ""),  # different numbers of values
        ("            for i in range(2):\n                y = x * i", "            y = x - 1", "        return y\n"),
        ("            y = x * 2", "            y = x - 1", "        return x\n"),  # no output read after it
    ],
)
def test_not_offered_where_torch_cond_would_refuse_or_the_meaning_changes(true_side, false_side, after):
    source = _branch(true_side, false_side, after)
    assert offered(source, 12, FIX) == []


def test_offered_for_the_same_branch_written_plainly():
    source = _branch("            y = x * 2", "            y = x - 1")
    fixed, _ = rewritten(source, 12, FIX)
    assert "        y = torch.cond(x.sum() > 0, true_branch, false_branch)\n        return y\n" in fixed
    assert_same_and_one_graph(source, fixed, _both_sides())
    assert_same_and_one_graph(source, fixed, _both_sides(), backend="aot_eager")


def test_nested_function_names_do_not_shadow_the_users():
    source = (
        _branch("            y = x * 2", "            y = x - 1")
        .replace("        y = x + 1\n", "        y = x + 1\n        true_branch = 3\n")
        .replace("        return y\n", "        return y + true_branch\n")
    )
    fixed, _ = rewritten(source, 13, FIX)
    assert "def true_branch_2():" in fixed and "torch.cond(x.sum() > 0, true_branch_2, false_branch)" in fixed
    assert_same_and_one_graph(source, fixed, _both_sides())


def test_not_offered_for_an_elif():
    source = _branch("            y = x * 2", "            y = x - 1").replace(
        "        if x.sum() > 0:\n", "        if x.shape[0] > 5:\n            y = x + 2\n        elif x.sum() > 0:\n"
    )
    assert offered(source, 14, FIX) == []


def test_windows_line_breaks_are_kept():
    source = RETURN_AFTER.replace("\n", "\r\n")
    fixed, _ = rewritten(source, 6, FIX)
    expected, _ = rewritten(RETURN_AFTER, 6, FIX)
    assert fixed == expected.replace("\n", "\r\n")
