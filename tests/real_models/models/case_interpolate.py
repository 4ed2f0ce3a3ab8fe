"""Bilinear and bicubic `F.interpolate` (export keeps bilinear as core ATen, decomposes bicubic)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):  # atenlint: inputs=torch.randn(1, 3, 8, 8)
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 3, padding=1)

    def forward(self, x):
        up = F.interpolate(self.conv(x), scale_factor=2.0, mode="bilinear", align_corners=False)
        return up + F.interpolate(x, size=(16, 16), mode="bicubic", align_corners=False)


def example_inputs():
    return (torch.randn(1, 3, 8, 8),)
