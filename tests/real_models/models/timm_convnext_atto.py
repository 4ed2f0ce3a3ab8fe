"""timm ConvNeXt-Atto: depthwise conv, LayerNorm2d, GELU."""
import timm
import torch
import torch.nn as nn


class Model(nn.Module):  # atenlint: inputs=torch.randn(1, 3, 64, 64)
    def __init__(self):
        super().__init__()
        self.net = timm.create_model("convnext_atto", pretrained=False, num_classes=10)

    def forward(self, image):
        return self.net(image)


def example_inputs():
    return (torch.randn(1, 3, 64, 64),)
