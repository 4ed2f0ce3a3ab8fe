"""A method marked `torch.compiler.disable` called from forward (an island that runs eagerly)."""

import torch
from torch import nn


class Model(nn.Module):  # atenlint: inputs=torch.randn(4, 8)
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    @torch.compiler.disable
    def normalise(self, h):
        return h / h.norm(dim=-1, keepdim=True)

    def forward(self, x):
        h = self.proj(x)
        h = self.normalise(h)
        return h.relu()


def example_inputs():
    return (torch.randn(4, 8),)
