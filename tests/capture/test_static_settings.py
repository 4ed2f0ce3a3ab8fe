"""The source pass reads a branch on a constructor setting (`if self.immiscible:` where
`__init__(..., immiscible=False)` stores it) as taken only when the model is built with
another value: what it reaches there is information, not a warning, since the model as
its defaults build it never runs it (denoising-diffusion-pytorch's `torch.cdist`)."""

from __future__ import annotations

import textwrap
from typing import Any

from atenlint.capture.static import static_capture

MODEL = """
import torch
from torch import nn

class Diffusion(nn.Module):
    def __init__(self, model, immiscible=False, scale=1.0):
        super().__init__()
        self.model = model
        self.immiscible = immiscible
        self.scale = scale
        self.steps = 10

    def assign(self, x, noise):
        return torch.cdist(x, noise)

    def forward(self, x):
        noise = torch.randn_like(x)
        if self.immiscible:
            noise = noise[self.assign(x, noise).argmin(-1)]
        if not self.immiscible:
            x = torch.sigmoid(x)
        if self.steps > 5:
            x = torch.tanh(x)
        return self.model(x + noise) * self.scale
"""


def _capture(tmp_path: Any, source: str) -> list[dict[str, Any]]:
    path = tmp_path / "diffusion.py"
    path.write_text(textwrap.dedent(source).lstrip())
    answer = static_capture(
        {"path": str(path), "module": "diffusion", "roots": [str(tmp_path)], "devices": ["cpu"], "views": ["dispatch"]}
    )
    return [{**op, "_cls": cls["name"]} for cls in answer["classes"] for op in cls["ops"]]


def _conditional(ops: list[dict[str, Any]], name: str) -> set[bool]:
    return {bool(op.get("conditional")) for op in ops if op["op"].startswith(name)}


def test_a_branch_the_constructor_default_does_not_take_is_conditional(tmp_path: Any) -> None:
    ops = _capture(tmp_path, MODEL)
    assert _conditional(ops, "aten::cdist") == {True}  # only with immiscible=True
    assert _conditional(ops, "aten::sigmoid") == {False}  # the default takes it
    assert _conditional(ops, "aten::randn_like") == {False}
    # `self.steps = 10` is not a parameter's default: the source pass does not fold it.
    assert _conditional(ops, "aten::tanh") == {False}


def test_a_setting_another_method_changes_is_not_folded(tmp_path: Any) -> None:
    source = MODEL.replace(
        "    def assign(self, x, noise):",
        "    def enable(self):\n        self.immiscible = True\n\n    def assign(self, x, noise):",
    )
    ops = _capture(tmp_path, source)
    assert _conditional(ops, "aten::cdist") == {False}


def test_a_subclass_that_leaves_the_setting_to_its_base_keeps_the_default(tmp_path: Any) -> None:
    subclasses = """

class Learned(Diffusion):
    def __init__(self, model, *args, **kwargs):
        super().__init__(model, *args, **kwargs)

class Mixed(Diffusion):
    def __init__(self, model, immiscible=True):
        super().__init__(model, immiscible=immiscible)
"""
    ops = _capture(tmp_path, MODEL + subclasses)

    def of(cls: str) -> set[bool]:
        return {bool(op.get("conditional")) for op in ops if op["op"].startswith("aten::cdist") and cls in op["_cls"]}

    assert of("Learned") == {True}  # the base's default decides
    assert of("Mixed") == {False}  # it passes its own default (True) on
