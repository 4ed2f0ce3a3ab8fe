"""A NumPy function applied to a tensor (`np.sin(x)`) in forward."""

import numpy as np
import torch
from torch import nn


class Model(nn.Module):  # atenlint: inputs=torch.randn(4, 8)
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        h = self.proj(x)
        wave = np.sin(h.detach())
        return h + torch.as_tensor(wave)


def example_inputs():
    return (torch.randn(4, 8),)
