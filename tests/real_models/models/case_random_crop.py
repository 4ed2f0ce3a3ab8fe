"""A torchvision random transform inside forward: RandomResizedCrop draws its box with
`torch.empty(1).uniform_()` and `.item()`; jit.trace freezes the draw into constants."""
import torch
import torch.nn as nn
import torchvision


class Model(nn.Module):  # atenlint: inputs=torch.rand(1, 3, 24, 24)
    def __init__(self):
        super().__init__()
        self.crop = torchvision.transforms.RandomResizedCrop(16, antialias=False)
        self.conv = nn.Conv2d(3, 4, 3)

    def forward(self, image):
        return self.conv(self.crop(image))


def example_inputs():
    return (torch.rand(1, 3, 24, 24),)
