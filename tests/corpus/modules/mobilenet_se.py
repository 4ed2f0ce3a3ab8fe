"""MobileNetV3 inverted residual with squeeze-excitation and hard-swish."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class SqueezeExcite(nn.Module):
    def __init__(self, channels: int, reduced: int):
        super().__init__()
        self.fc1 = nn.Conv2d(channels, reduced, 1)
        self.fc2 = nn.Conv2d(reduced, channels, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        s = F.relu(self.fc1(s))
        return x * F.hardsigmoid(self.fc2(s))


class Model(nn.Module):
    def __init__(self, channels: int = 8, expand: int = 16):
        super().__init__()
        self.expand = nn.Conv2d(channels, expand, 1, bias=False)
        self.depthwise = nn.Conv2d(expand, expand, 3, padding=1, groups=expand, bias=False)
        self.se = SqueezeExcite(expand, 4)
        self.project = nn.Conv2d(expand, channels, 1, bias=False)
        self.act = nn.Hardswish()

    def forward(self, x):
        y = self.act(self.expand(x))
        y = self.act(self.depthwise(y))
        return x + self.project(self.se(y))


def example_inputs():
    return (torch.randn(1, 8, 16, 16),)
