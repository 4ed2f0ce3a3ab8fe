"""Conformer convolution module: pointwise conv, GLU, depthwise conv, BatchNorm, Swish."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int = 16, kernel: int = 7):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.pointwise1 = nn.Conv1d(dim, 2 * dim, 1)
        self.glu = nn.GLU(dim=1)
        self.depthwise = nn.Conv1d(dim, dim, kernel, padding=kernel // 2, groups=dim)
        self.bn = nn.BatchNorm1d(dim)
        self.act = nn.SiLU()
        self.pointwise2 = nn.Conv1d(dim, dim, 1)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x):
        y = self.norm(x).transpose(1, 2)
        y = self.glu(self.pointwise1(y))
        y = self.act(self.bn(self.depthwise(y)))
        return x + self.dropout(self.pointwise2(y)).transpose(1, 2)


def example_inputs():
    return (torch.randn(1, 10, 16),)
