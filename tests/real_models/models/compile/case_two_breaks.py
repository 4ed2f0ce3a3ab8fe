"""Two breaks of different kinds in one forward: a print and a branch on a tensor."""

import torch
from torch import nn


class Model(nn.Module):  # atenlint: inputs=torch.randn(4, 8)
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.out = nn.Linear(8, 4)

    def forward(self, x):
        h = self.proj(x)
        print("hidden", h.shape)
        if h.mean() > 0:
            h = h - h.mean()
        return self.out(h)


def example_inputs():
    return (torch.randn(4, 8),)
