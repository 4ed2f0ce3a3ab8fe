"""Biaffine scorer for dependency parsing, written with einsum."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int = 8):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(dim, dim) * 0.1)
        self.head = nn.Linear(dim, dim)
        self.dep = nn.Linear(dim, dim)

    def forward(self, x):
        h, d = torch.relu(self.head(x)), torch.relu(self.dep(x))
        return torch.einsum("bid,de,bje->bij", d, self.weight, h)


def example_inputs():
    return (torch.randn(1, 5, 8),)
