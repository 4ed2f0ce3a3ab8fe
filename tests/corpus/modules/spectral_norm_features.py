"""Graph/structure features: singular values of a learned similarity matrix."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int = 8):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.proj(x)
        sim = h @ h.transpose(-2, -1)
        return torch.linalg.svdvals(sim)


def example_inputs():
    return (torch.randn(1, 6, 8),)
