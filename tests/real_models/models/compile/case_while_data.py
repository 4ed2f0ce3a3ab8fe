"""A data-dependent `while`: halve until the norm is small."""

import torch
from torch import nn


class Model(nn.Module):  # atenlint: inputs=torch.randn(4, 8)
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        h = self.proj(x)
        while h.norm() > 1.0:
            h = h / 2
        return h


def example_inputs():
    return (torch.randn(4, 8),)
