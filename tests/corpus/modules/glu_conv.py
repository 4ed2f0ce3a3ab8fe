"""Gated convolutional language/audio block (Dauphin et al.): Conv1d + GLU + residual."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, dim: int = 16):
        super().__init__()
        self.conv = nn.Conv1d(dim, 2 * dim, 3, padding=1)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        y = F.glu(self.conv(x.transpose(1, 2)), dim=1).transpose(1, 2)
        return self.norm(x + y)


def example_inputs():
    return (torch.randn(1, 12, 16),)
