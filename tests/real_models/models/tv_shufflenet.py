"""torchvision ShuffleNetV2 x0.5: channel shuffle (transpose + reshape), chunk."""
import torch
import torch.nn as nn
import torchvision


class Model(nn.Module):  # atenlint: inputs=torch.randn(1, 3, 64, 64)
    def __init__(self):
        super().__init__()
        self.net = torchvision.models.shufflenet_v2_x0_5(weights=None, num_classes=10)

    def forward(self, image):
        return self.net(image)


def example_inputs():
    return (torch.randn(1, 3, 64, 64),)
