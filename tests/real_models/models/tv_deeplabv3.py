"""torchvision DeepLabV3 on MobileNetV3-Large: atrous conv, ASPP pooling, bilinear upsampling."""
import torch
import torch.nn as nn
import torchvision


class Model(nn.Module):  # atenlint: inputs=torch.randn(1, 3, 64, 64)
    def __init__(self):
        super().__init__()
        self.net = torchvision.models.segmentation.deeplabv3_mobilenet_v3_large(weights=None, weights_backbone=None,
                                                                            num_classes=3)

    def forward(self, image):
        return self.net(image)["out"]


def example_inputs():
    return (torch.randn(1, 3, 64, 64),)
