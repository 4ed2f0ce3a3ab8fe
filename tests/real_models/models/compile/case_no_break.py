"""A block with shape-only Python control flow and torch.where: nothing breaks."""

import torch
from torch import nn


class Model(nn.Module):  # atenlint: inputs=torch.randn(4, 8)
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.norm = nn.LayerNorm(8)

    def forward(self, x):
        h = self.proj(x)
        if h.shape[0] > 1:
            h = self.norm(h)
        for _ in range(2):
            h = torch.where(h > 0, h, h * 0.1)
        return h


def example_inputs():
    return (torch.randn(4, 8),)
