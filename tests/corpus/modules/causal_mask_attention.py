"""Hand-written masked attention: triu causal mask, masked_fill, softmax, matmul."""
import math

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int = 16):
        super().__init__()
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)
        self.scale = 1.0 / math.sqrt(dim)

    def forward(self, x):
        t = x.size(1)
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        scores = torch.matmul(self.q(x), self.k(x).transpose(-2, -1)) * self.scale
        scores = scores.masked_fill(mask, float("-inf"))
        return torch.matmul(torch.softmax(scores, dim=-1), self.v(x))


def example_inputs():
    return (torch.randn(1, 5, 16),)
