"""An object identity check with `id()` and a `copy.deepcopy` of a tensor in forward."""

import copy

import torch
from torch import nn


class Model(nn.Module):  # atenlint: inputs=torch.randn(4, 8)
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        h = self.proj(x)
        key = id(h) % 2
        snapshot = copy.deepcopy(h)
        return h + snapshot * key


def example_inputs():
    return (torch.randn(4, 8),)
