"""`swapaxes` / `moveaxis` in a channels-last MLP block."""
import torch
import torch.nn as nn


class Model(nn.Module):  # atenlint: inputs=torch.randn(1, 8, 6, 6)
    def __init__(self):
        super().__init__()
        self.mlp = nn.Linear(8, 8)

    def forward(self, x):
        y = self.mlp(x.swapaxes(1, 3))
        return torch.moveaxis(y, 3, 1) + x


def example_inputs():
    return (torch.randn(1, 8, 6, 6),)
