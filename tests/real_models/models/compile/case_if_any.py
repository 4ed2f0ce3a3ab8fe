"""`if x.any():` on a tensor, with an `else`."""

import torch
from torch import nn


class Model(nn.Module):  # atenlint: inputs=torch.randn(4, 8)
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        h = self.proj(x)
        if (h > 3).any():
            h = h.clamp(max=3)
        else:
            h = h * 1.5
        return h


def example_inputs():
    return (torch.randn(4, 8),)
