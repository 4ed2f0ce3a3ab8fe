"""Diagnostics users leave in forward: a `logging.getLogger(__name__).info` call and a
`warnings.warn`."""

import logging
import warnings

import torch
from torch import nn


class Model(nn.Module):  # atenlint: inputs=torch.randn(4, 8)
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        h = self.proj(x)
        logging.getLogger(__name__).info("projected %s", tuple(h.shape))
        h = h.relu()
        warnings.warn("this block is deprecated")
        return h * 2


def example_inputs():
    return (torch.randn(4, 8),)
