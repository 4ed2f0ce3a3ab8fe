"""A break only in training mode: the print runs under `if self.training:` (eval: no break)."""

import torch
from torch import nn


class Model(nn.Module):  # atenlint: inputs=torch.randn(4, 8)
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        h = self.drop(self.proj(x))
        if self.training:
            print("train step", h.mean().item())
        return h


def example_inputs():
    return (torch.randn(4, 8),)
