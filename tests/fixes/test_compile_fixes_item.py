"""`.item()` breaks get an explanation, not a rewrite (fixes/compile_item.py). The facts it
states are checked here on the installed torch: the break names capture_scalar_outputs,
a `torch._check_is_size` / `torch._check` after the call leaves it, the config (or
fullgraph=True) removes it without changing the outputs."""

from __future__ import annotations

import torch
from compile_fixes_support import dynamo_breaks, finding, load
from fixes_support import fixes_of

from atenlint.fixes.apply import choose

FIX = "capture-item-scalars"

SIZED = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        n = x.sum().int().item()
        return torch.zeros(n) + x.mean()
"""
CHECKED = SIZED.replace(
    "        return", "        torch._check_is_size(n)\n        torch._check(n >= 0)\n        return"
)


def test_the_explanation_states_what_the_installed_dynamo_does():
    x = torch.ones(2, 3)
    ((line, reason),) = dynamo_breaks(SIZED, (x,))
    assert line == 7 and "capture_scalar_outputs" in reason
    assert [at for at, _ in dynamo_breaks(CHECKED, (x,))] == [7]  # the checks do not remove it
    with torch._dynamo.config.patch(capture_scalar_outputs=True):
        assert dynamo_breaks(SIZED, (x,)) == []
    expected = load(SIZED)()(x)
    torch._dynamo.reset()
    try:
        compiled = torch.compile(load(SIZED)(), fullgraph=True, backend="eager")(x)
    finally:
        torch._dynamo.reset()
    assert torch.equal(compiled, expected)

    fixes = fixes_of(SIZED, finding(SIZED, line, reason))
    (explained,) = [f for f in fixes if f["id"] == FIX]
    assert explained["kind"] == "explain" and explained["edits"] == []
    assert "capture_scalar_outputs = True" in explained["description"]
    assert "fullgraph=True" in explained["description"] and "torch._check" in explained["description"]
    # An explanation edits nothing: `--fix` never picks it.
    finding_ = finding(SIZED, line, reason)
    finding_.fixes = fixes
    assert choose([finding_], unsafe=True) == []


def test_offered_for_the_source_readers_item_break_and_nothing_else():
    message = "torch.compile splits the graph of `Model` here: `Tensor.item()` (a Python value out of a tensor)"
    item = finding(SIZED, 7, code="COMPILE002")
    item.message = message
    assert [f["id"] for f in fixes_of(SIZED, item)] == [FIX]
    other = finding(SIZED, 8, code="COMPILE002")
    other.message = message  # no `.item()` on that line
    assert fixes_of(SIZED, other) == []
    branch = finding(SIZED, 7)  # the branch wording, on the item line
    assert FIX not in [f["id"] for f in fixes_of(SIZED, branch)]


def test_a_config_patch_decorator_on_forward_is_no_exact_fix():
    """Why the remedy writes no `@torch._dynamo.config.patch(capture_scalar_outputs=True)` on
    `forward`: the default torch.compile then keeps the number in one graph, but
    torch.compile(fullgraph=True), which compiled the undecorated module whole, raises."""
    decorated = SIZED.replace(
        "    def forward", "    @torch._dynamo.config.patch(capture_scalar_outputs=True)\n    def forward"
    )
    x = torch.ones(2, 3)
    assert dynamo_breaks(decorated, (x,)) == []
    torch._dynamo.reset()
    try:
        torch.compile(load(SIZED)(), fullgraph=True, backend="eager")(x)
        raised = None
        try:
            torch.compile(load(decorated)(), fullgraph=True, backend="eager")(x)
        except Exception as error:  # noqa: BLE001 - Dynamo's Unsupported, whatever its class here
            raised = error
    finally:
        torch._dynamo.reset()
    assert raised is not None
