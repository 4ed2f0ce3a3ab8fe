"""Per-row lengths read with `.tolist()` to slice a Python list: `.tolist()` takes Python
values out of a tensor (a graph break)."""

import torch
from torch import nn


class Model(nn.Module):  # atenlint: inputs=torch.randn(4, 8)
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        h = self.proj(x)
        lengths = (h > 0).sum(dim=1).tolist()
        return h * sum(lengths)


def example_inputs():
    return (torch.randn(4, 8),)
