"""A gated block written with a Python lambda: fine in eager mode, not in TorchScript."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int = 8):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        gate = lambda t: torch.sigmoid(t) * t
        return gate(self.fc(x))


def example_inputs():
    return (torch.randn(2, 8),)
