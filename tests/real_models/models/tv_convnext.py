"""torchvision ConvNeXt made small: depthwise conv, permute, LayerNorm, layer scale, stochastic depth."""
import torch
import torch.nn as nn
import torchvision
from torchvision.models.convnext import CNBlockConfig


class Model(nn.Module):  # atenlint: inputs=torch.randn(1, 3, 32, 32)
    def __init__(self):
        super().__init__()
        self.net = torchvision.models.ConvNeXt([CNBlockConfig(16, 32, 1), CNBlockConfig(32, None, 1)], num_classes=10)

    def forward(self, image):
        return self.net(image)


def example_inputs():
    return (torch.randn(1, 3, 32, 32),)
