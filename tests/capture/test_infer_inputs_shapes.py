"""Inferred inputs read more of what forward says: the rank an einsum or einops pattern
gives an operand (attention over `b h i d`), and a forward that only hands `*args` on
(DINOv2's `DinoVisionTransformer.forward(*args, is_training=False, **kwargs)`)."""

from __future__ import annotations

import ast
from typing import Any

import torch

from atenlint.capture.infer_inputs import candidates, evaluate
from atenlint.capture.trace import forward_runs
from atenlint.input_hints import unpacked_rank
from atenlint.python_parse import parse_module
from support import load_module


def _first_running(module: Any, name: str) -> str | None:
    cls = getattr(module, name)
    with torch.device("meta"):
        instance = cls()
    for candidate in candidates(cls, instance, module):
        if forward_runs(instance, evaluate(candidate.expression, "meta")):
            return candidate.expression
    return None


def test_an_einsum_pattern_gives_its_operands_rank(tmp_path: Any) -> None:
    module = load_module(
        tmp_path,
        """
        import torch
        from torch import einsum, nn

        class Attend(nn.Module):
            def forward(self, q, k, v):
                scale = q.shape[-1] ** -0.5
                sim = einsum(f"b h i d, b h j d -> b h i j", q, k) * scale
                return einsum("bhij,bhjd->bhid", sim.softmax(dim=-1), v)
        """,
        "infer_attend",
    )
    # Three tensors of the same four dimensions (heads, tokens, features), the first guess
    # that runs; before, only three-dimensional guesses were tried and none ran.
    found = _first_running(module, "Attend")
    assert found is not None and found.count("torch.randn(2, ") == 3
    assert all(len(shape.split(",")) == 4 for shape in found.strip("(),").split("), "))


def test_einops_patterns_and_their_groups() -> None:
    forward = parse_module(
        "def forward(self, x, y, z):\n"
        "    a = rearrange(x, 'b (h c) x y -> b h c (x y)', h=4)\n"
        "    b = reduce(y, 'b c ... -> b c', 'mean')\n"
        "    return einsum(a, z, 'b h c n, b h c m -> b h n m')\n"
    ).body[0]
    assert isinstance(forward, ast.FunctionDef)
    assert unpacked_rank(forward, "x") == 4  # `(h c)` is one dimension
    assert unpacked_rank(forward, "y") is None  # `...`: any rank
    assert unpacked_rank(forward, "z") == 4  # einops' einsum: the pattern comes last


def test_a_forward_that_hands_args_on_gets_one_input_for_its_first_layer(tmp_path: Any) -> None:
    module = load_module(
        tmp_path,
        """
        from torch import nn

        class PatchEmbed(nn.Module):
            def __init__(self, img_size=48, patch=16):
                super().__init__()
                self.img_size = (img_size, img_size)
                self.proj = nn.Conv2d(3, 32, patch, patch)

            def forward(self, x):
                return self.proj(x).flatten(2).transpose(1, 2)

        class Backbone(nn.Module):
            def __init__(self):
                super().__init__()
                self.patch_embed = PatchEmbed()
                self.head = nn.Linear(32, 10)

            def forward_features(self, x, masks=None):
                return self.patch_embed(x).mean(1)

            def forward(self, *args, is_training=False, **kwargs):
                return self.head(self.forward_features(*args, **kwargs))
        """,
        "infer_backbone",
    )
    # The declared image size, then the common ones; channels from the stem's convolution.
    assert _first_running(module, "Backbone") == "(torch.randn(2, 3, 48, 48),)"
