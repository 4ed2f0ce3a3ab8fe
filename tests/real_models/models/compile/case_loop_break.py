"""A graph break inside a `for` loop of forward itself: Dynamo cannot resume inside a loop,
so it skips the whole frame."""

import torch
from torch import nn


class Model(nn.Module):  # atenlint: inputs=torch.randn(4, 8)
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
            if x.sum() > 0:
                x = x.relu()
        return x


def example_inputs():
    return (torch.randn(4, 8),)
