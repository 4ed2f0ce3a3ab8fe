"""Breaks in a submodule's own forward (`.item()` and a print), called once from the model."""

import torch
from torch import nn


class Scaler(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        h = self.proj(x)
        peak = h.abs().max().item()
        print("peak", peak)
        return h / (peak + 1.0)


class Model(nn.Module):  # atenlint: inputs=torch.randn(4, 8)
    def __init__(self):
        super().__init__()
        self.scaler = Scaler()
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        return self.head(self.scaler(x).relu())


def example_inputs():
    return (torch.randn(4, 8),)
