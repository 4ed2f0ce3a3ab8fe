"""A `try`/`except` around a break (`.item()` inside the `try`)."""

import torch
from torch import nn


class Model(nn.Module):  # atenlint: inputs=torch.randn(4, 8)
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        h = self.proj(x)
        try:
            scale = h.abs().sum().item()
        except RuntimeError:
            scale = 1.0
        return h / (scale + 1.0)


def example_inputs():
    return (torch.randn(4, 8),)
