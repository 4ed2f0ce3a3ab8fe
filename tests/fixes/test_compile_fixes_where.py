"""The torch.where fix for a data-dependent select (fixes/compile_select.py): offered at the
line where Dynamo itself reports the branch, the rewritten module compiles with
`fullgraph=True` and gives the original's outputs on inputs that take each side; never
offered where computing both sides could change anything or the test is no tensor."""

from __future__ import annotations

import pytest
import torch
from compile_fixes_support import assert_same_and_one_graph, dynamo_breaks, offered, rewritten

FIX = "select-with-where"

STATEMENT = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        if x.sum() > 0:  # mostly positive
            y = torch.relu(x) * 2
            # the other side
        else:
            y = x.abs() - 1
        return y + 1
"""

EXPRESSION_ALIAS = """\
import torch as t
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        out = (x * 3 if t.sum(x) > 0 else
               nn.functional.gelu(x))
        return out.sum(dim=0)
"""

FROM_IMPORT = """\
from torch import nn, where


class Model(nn.Module):
    def forward(self, x):
        return x.exp() if not x.mean() >= 0.5 else x.sigmoid()
"""

TABS_NESTED_TWO_NAMES = (
    "import torch\n"
    "\n"
    "\n"
    "class Model(torch.nn.Module):\n"
    "\tdef __init__(self):\n"
    "\t\tsuper().__init__()\n"
    "\t\tself.steps = 2\n"
    "\n"
    "\tdef forward(self, x):\n"
    "\t\ttotal = x\n"
    "\t\tif self.steps > 1:\n"
    "\t\t\tif (x.max() >\n"
    "\t\t\t\t\t0.7):\n"
    "\t\t\t\ta = (total\n"
    "\t\t\t\t     * 2)\n"
    "\t\t\t\tb = x.clamp(min=0)\n"
    "\t\t\telse:\n"
    "\t\t\t\tb = x.neg()\n"
    "\t\t\t\ta = total + self.steps\n"
    "\t\t\ttotal = a + b\n"
    "\t\treturn total\n"
)


RETURN_AFTER = """\
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x * 2  # doubled
        # otherwise
        return x - 1
"""

KEPT_PARAMETER = """\
import torch


class Model(torch.nn.Module):
    def forward(self, x, y):
        if x.any():
            y = y * x
        return y
"""


def _both_sides(shape=(3, 4)) -> list[tuple]:
    generator = torch.Generator().manual_seed(0)
    positive = torch.rand(shape, generator=generator) + 0.6
    return [(positive,), (-positive,), (torch.randn(shape, generator=generator),)]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (STATEMENT, "        # mostly positive\n        # the other side\n        y = torch.where(x.sum() > 0, "),
        (EXPRESSION_ALIAS, "out = (t.where(t.sum(x) > 0, x * 3, nn.functional.gelu(x)))"),
        (FROM_IMPORT, "return where(x.mean() >= 0.5, x.sigmoid(), x.exp())"),
        (TABS_NESTED_TWO_NAMES, "\t\t\ttake_first = (x.max() >\n\t\t\t\t\t0.7)\n\t\t\ta = where"),
        (
            RETURN_AFTER,
            "        # doubled\n        # otherwise\n        return torch.where(x.sum() > 0, x * 2, x - 1)\n",
        ),
    ],
    ids=["statement", "expression-alias", "from-import-negated", "tabs-nested-two-names", "return-after"],
)
def test_where_keeps_one_graph_and_the_outputs(source, expected):
    inputs = _both_sides()
    # The break is where Dynamo itself reports it, with its own reason.
    breaks = dynamo_breaks(source, inputs[0])
    lines = sorted({line for line, _ in breaks})
    assert len(lines) == 1, breaks
    (line,) = lines
    reason = next(reason for at, reason in breaks if at == line)
    fixed, fix = rewritten(source, line, FIX, reason)
    expected = expected.replace("a = where", "a = torch.where")
    assert expected in fixed, fixed
    # Right only while both sides have one shape and dtype: never preferred.
    assert fix["kind"] == "rewrite" and fix["safe"] is False and "one shape, dtype and device" in fix["condition"]
    assert "0-dim" not in fix["condition"]  # every test here is a whole-tensor reduction
    assert_same_and_one_graph(source, fixed, inputs)


def test_offered_for_a_branch_read_from_the_source_with_the_test_condition():
    source = STATEMENT.replace("x.sum() > 0", "x[0, 0] > 0")
    fixed, fix = rewritten(source, 7, FIX)  # COMPILE002 wording
    assert "y = torch.where(x[0, 0] > 0, torch.relu(x) * 2, x.abs() - 1)" in fixed
    assert "the test is a 0-dim tensor" in fix["condition"]
    assert_same_and_one_graph(source, fixed, _both_sides())
    assert_same_and_one_graph(source, fixed, _both_sides(), backend="aot_eager")


def test_an_if_without_else_keeps_a_bound_name():
    fixed, _ = rewritten(KEPT_PARAMETER, 6, FIX)
    assert "        y = torch.where(x.any(), y * x, y)\n        return y\n" in fixed
    generator = torch.Generator().manual_seed(0)
    y = torch.randn(3, 4, generator=generator)
    inputs = [(torch.zeros(3, 4), y), (torch.rand(3, 4, generator=generator), y)]
    assert_same_and_one_graph(KEPT_PARAMETER, fixed, inputs)
    # Set only in the branch: unbound otherwise, so nothing to keep.
    unbound = KEPT_PARAMETER.replace("y = y * x", "z = y * x").replace("return y", "return z")
    assert offered(unbound, 6, FIX) == []


def test_adds_the_torch_import_when_the_file_has_none():
    source = (
        "from torch.nn import Module\n\n\nclass Model(Module):\n    def forward(self, x):\n"
        "        return x + 1 if x.sum() > 0 else x - 1\n"
    )
    fixed, _ = rewritten(source, 6, FIX)
    assert fixed.startswith("from torch.nn import Module\nimport torch\n")
    assert "return torch.where(x.sum() > 0, x + 1, x - 1)" in fixed
    assert_same_and_one_graph(source, fixed, _both_sides())


def _branch(true_side: str, false_side: str, test: str = "x.sum() > 0") -> str:
    return (
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.lin = nn.Linear(4, 4)\n\n"
        f"    def forward(self, x, n=1):\n        y = x\n        if {test}:\n{true_side}\n        else:\n"
        f"{false_side}\n        return y\n"
    )


@pytest.mark.parametrize(
    ("true_side", "false_side", "test"),
    [
        ("            y = self.lin(x)", "            y = x", "x.sum() > 0"),  # a module call may keep state
        ("            y = x.add_(1)", "            y = x", "x.sum() > 0"),  # in place
        ("            y = x * 2", "            z = x", "x.sum() > 0"),  # different names
        ("            return x * 2", "            y = x", "x.sum() > 0"),  # return in one branch only
        ("            y = (w := x * 2)", "            y = x", "x.sum() > 0"),  # walrus
        ("            y = x[5]", "            y = x", "x.sum() > 0"),  # indexing can raise
        ("            y = torch.rand_like(x)", "            y = x", "x.sum() > 0"),  # random: both sides draw
        ("            y = 0.0", "            y = x", "x.sum() > 0"),  # a number would become a tensor
        ("            y = x * 2\n            z = y + 1", "            z = x\n            y = x", "x.sum() > 0"),
        ("            y = x * 2", "            y = x", "x.sum() > 0 and n > 0"),  # `and` short-circuits
        ("            y = x * 2", "            y = x", "n > 0"),  # a Python number, no tensor
        ("            y = x * 2", "            y = x", "x.sum().item() > 0"),  # a Python number
        ("            y = x * 2", "            y = x", "x.sum()"),  # not boolean: torch.where refuses it
        ("            y = x // 0", "            y = x", "x.sum() > 0"),  # raises for integer tensors
        ("            print(x)\n            y = x", "            y = x", "x.sum() > 0"),  # a side effect
    ],
)
def test_not_offered_where_computing_both_sides_could_change_anything(true_side, false_side, test):
    source = _branch(true_side, false_side, test)
    assert offered(source, 12, FIX) == []


def test_not_offered_without_a_value_to_keep_for_elif_or_for_another_break_kind():
    # Without `else`, `w` is unbound where the test is false: nothing to keep.
    no_else = _branch("            w = x * 2", "            w = x").replace("        else:\n            w = x\n", "")
    assert offered(no_else, 12, FIX) == []
    # An `elif` chain without a final `else` keeps nothing either.
    chained = _branch("            y = x * 2", "            y = x + 1").replace(
        "        else:\n", "        elif x.mean() > 1:\n"
    )
    assert offered(chained, 12, FIX) == []
    as_elif = _branch("            y = x", "            y = x - 1").replace(
        "        if x.sum() > 0:\n", "        if n > 5:\n            y = x + 2\n        elif x.sum() > 0:\n"
    )
    assert offered(as_elif, 14, FIX) == []  # rewriting the `elif` line alone would leave the `if` above
    plain = _branch("            y = x * 2", "            y = x - 1")
    assert offered(plain, 12, FIX) != []
    # The same line reported for another reason (a print on it, say) is no select.
    assert offered(plain, 12, FIX, reason="Unsupported Tensor.item() call with capture_scalar_outputs=False") == []


ELIF_CHAIN = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        if x.sum() > 1:
            y = x * 2
            z = x + 1
        elif not x.mean() > 0:  # mostly negative
            y = x - 1
            z = x.abs()
        elif (x > 5).any():
            y = x.exp()
            z = x
        else:
            y = x.abs()
            z = -x
        return y + z
"""

ELIF_RETURNS = """\
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 1:
            return x * 2
        elif x.sum() > 0:
            return x - 1
        else:
            return x.abs()
"""


def _each_branch() -> list[tuple]:
    """Inputs that take each branch of the chains above."""
    return [
        (torch.ones(3, 4),),
        (torch.full((3, 4), 0.05),),
        (-torch.ones(3, 4),),
        (torch.tensor([[6.0, -6.0, 0.01, 0.0]]).repeat(3, 1),),
    ]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            ELIF_CHAIN,
            (
                "        # mostly negative\n        take_branch = x.sum() > 1\n        take_branch_2 = x.mean() > 0\n"
                "        take_branch_3 = (x > 5).any()\n        y = torch.where(take_branch, x * 2, torch.where(take_branch_2, "
                "torch.where(take_branch_3, x.exp(), x.abs()), x - 1))\n"
            ),
        ),
        (ELIF_RETURNS, "        return torch.where(x.sum() > 1, x * 2, torch.where(x.sum() > 0, x - 1, x.abs()))\n"),
    ],
    ids=["two-names-negated", "returns"],
)
def test_an_elif_chain_is_one_nested_where_from_any_of_its_breaks(source, expected):
    """Dynamo breaks at the `if` and at each `elif` it reaches: each offers the whole chain
    as nested torch.where, which compiles as one graph and gives the original's outputs on
    inputs that take every branch."""
    inputs = _each_branch()
    lines = sorted({line for args in inputs for line, _ in dynamo_breaks(source, args)})
    assert len(lines) == len(source.split("if ")) - 1, lines  # the `if` and every `elif`
    fixes = {line: rewritten(source, line, FIX, "generic_jump TensorVariable()") for line in lines}
    (fixed,) = {text for text, _ in fixes.values()}
    assert expected in fixed, fixed
    _, fix = fixes[lines[0]]
    assert fix["safe"] is False and "every side gives tensors of one shape" in fix["condition"]
    assert_same_and_one_graph(source, fixed, inputs)


def test_an_elif_chain_whose_later_test_could_change_state_is_not_offered():
    """A later test is computed even where an earlier one holds: a module call there (state,
    such as BatchNorm's statistics) or a function of another module is refused."""
    for test in ("self.gate(x).sum() > 0", "torch.nn.functional.dropout(x).sum() > 0"):
        source = ELIF_RETURNS.replace("elif x.sum() > 0", f"elif {test}")
        assert offered(source, 7, FIX, "generic_jump TensorVariable()") == []


def test_a_data_dependent_while_is_not_offered():
    """No rewrite of a `while` on a tensor's value is exact (how many passes is the data's)."""
    source = (
        "import torch\n\n\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
        "        while x.norm() > 1:\n            x = x / 2\n        return x\n"
    )
    assert dynamo_breaks(source, (torch.ones(3, 4),))[0][0] == 6
    for fix_id in (FIX, "branch-with-cond"):
        assert offered(source, 6, fix_id, "generic_jump TensorVariable()") == []


def test_windows_line_breaks_are_kept():
    source = STATEMENT.replace("\n", "\r\n")
    fixed, _ = rewritten(source, 7, FIX)
    expected, _ = rewritten(STATEMENT, 7, FIX)
    assert fixed == expected.replace("\n", "\r\n")
