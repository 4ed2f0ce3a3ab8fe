"""A length read with `.item()` slices the sequence (data-dependent size), then a cumulative sum."""
import torch
import torch.nn as nn


class Model(nn.Module):  # atenlint: inputs=(torch.randn(1, 12, 8), torch.tensor([7]))
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x, length):
        n = int(length.max().item())
        return torch.cumsum(self.proj(x[:, :n]), dim=1)


def example_inputs():
    return (torch.randn(1, 12, 8), torch.tensor([7]))
