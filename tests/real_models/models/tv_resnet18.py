"""torchvision ResNet-18 (random weights): conv, BatchNorm, max pool, adaptive average pool."""
import torch
import torch.nn as nn
import torchvision


class Model(nn.Module):  # atenlint: inputs=torch.randn(1, 3, 64, 64)
    def __init__(self):
        super().__init__()
        self.net = torchvision.models.resnet18(weights=None, num_classes=10)

    def forward(self, image):
        return self.net(image)


def example_inputs():
    return (torch.randn(1, 3, 64, 64),)
