"""Image preprocessing: antialiased bicubic downscale, then normalisation."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1))

    def forward(self, image):
        small = F.interpolate(image, size=(16, 16), mode="bicubic", antialias=True, align_corners=False)
        return (small - self.mean) / self.std


def example_inputs():
    return (torch.rand(1, 3, 32, 32),)
