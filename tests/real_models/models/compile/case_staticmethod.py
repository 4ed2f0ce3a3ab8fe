"""A break inside a `@staticmethod` of the model called from forward."""

import torch
from torch import nn


class Model(nn.Module):  # atenlint: inputs=torch.randn(4, 8)
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    @staticmethod
    def threshold(h):
        limit = float(h.mean().item())
        return h.clamp(min=limit)

    def forward(self, x):
        h = self.proj(x)
        return self.threshold(h) + 1


def example_inputs():
    return (torch.randn(4, 8),)
