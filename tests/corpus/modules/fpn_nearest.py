"""Feature pyramid top-down pathway: nearest upsampling and lateral 1x1 convolutions."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lateral = nn.Conv2d(8, 16, 1)
        self.top = nn.Conv2d(32, 16, 1)
        self.smooth = nn.Conv2d(16, 16, 3, padding=1)

    def forward(self, c4, c5):
        p5 = self.top(c5)
        p4 = self.lateral(c4) + F.interpolate(p5, scale_factor=2.0, mode="nearest")
        return self.smooth(p4), p5


def example_inputs():
    return (torch.randn(1, 8, 8, 8), torch.randn(1, 32, 4, 4))
