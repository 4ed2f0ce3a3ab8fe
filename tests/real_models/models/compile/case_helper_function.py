"""Breaks inside module-level helper functions called from forward: the user's line is the
helper's line, not the call's."""

import torch
from torch import nn


def clamp_positive(h):
    if h.min() < 0:
        h = h - h.min()
    return h


def report(h):
    print("mean", h.mean())
    return h


class Model(nn.Module):  # atenlint: inputs=torch.randn(4, 8)
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        h = self.proj(x)
        h = clamp_positive(h)
        h = report(h)
        return h * 2


def example_inputs():
    return (torch.randn(4, 8),)
