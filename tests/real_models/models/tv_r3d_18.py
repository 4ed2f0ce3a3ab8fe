"""torchvision video ResNet3D-18: conv3d, BatchNorm3d, adaptive_avg_pool3d to 1."""
import torch
import torch.nn as nn
import torchvision


class Model(nn.Module):  # atenlint: inputs=torch.randn(1, 3, 4, 32, 32)
    def __init__(self):
        super().__init__()
        self.net = torchvision.models.video.r3d_18(weights=None, num_classes=10)

    def forward(self, image):
        return self.net(image)


def example_inputs():
    return (torch.randn(1, 3, 4, 32, 32),)
