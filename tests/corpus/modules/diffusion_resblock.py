"""Diffusion UNet residual block: GroupNorm, SiLU, timestep embedding."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels: int = 16, time_dim: int = 8):
        super().__init__()
        self.norm1 = nn.GroupNorm(4, channels)
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.time = nn.Linear(time_dim, channels)
        self.norm2 = nn.GroupNorm(4, channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)
        self.act = nn.SiLU()

    def forward(self, x, t):
        h = self.conv1(self.act(self.norm1(x)))
        h = h + self.time(self.act(t))[:, :, None, None]
        return x + self.conv2(self.act(self.norm2(h)))


def example_inputs():
    return (torch.randn(1, 16, 8, 8), torch.randn(1, 8))
