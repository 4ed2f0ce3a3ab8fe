"""Forward consumes a generator of its own (`yield`) whose body prints."""

import torch
from torch import nn


class Model(nn.Module):  # atenlint: inputs=torch.randn(4, 8)
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(2)])

    def stages(self, x):
        for layer in self.layers:
            x = layer(x)
            print("stage", x.shape)
            yield x

    def forward(self, x):
        outs = list(self.stages(x))
        return outs[-1] + outs[0]


def example_inputs():
    return (torch.randn(4, 8),)
