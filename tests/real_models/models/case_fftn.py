"""Spectral features with `torch.fft.fftn` (complex intermediate, `.abs()`)."""
import torch
import torch.nn as nn


class Model(nn.Module):  # atenlint: inputs=torch.randn(1, 4, 8, 8)
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 1)

    def forward(self, x):
        spectrum = torch.fft.fftn(x, dim=(-2, -1))
        return self.conv(spectrum.abs())


def example_inputs():
    return (torch.randn(1, 4, 8, 8),)
