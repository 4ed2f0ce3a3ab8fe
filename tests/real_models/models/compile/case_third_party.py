"""Untraceable calls to C extensions of the standard library: `struct.pack` and `hashlib`."""

import hashlib
import struct

import torch
from torch import nn


class Model(nn.Module):  # atenlint: inputs=torch.randn(4, 8)
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        h = self.proj(x)
        packed = struct.pack("i", 3)
        digest = hashlib.md5(packed).digest()[0]
        return h * (digest % 5)


def example_inputs():
    return (torch.randn(4, 8),)
