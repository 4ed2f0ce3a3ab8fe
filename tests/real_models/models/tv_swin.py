"""torchvision Swin Transformer made small: shifted windows (roll, pad, masks), relative position bias."""
import torch
import torch.nn as nn
import torchvision


class Model(nn.Module):  # atenlint: inputs=torch.randn(1, 3, 32, 32)
    def __init__(self):
        super().__init__()
        self.net = torchvision.models.SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[1, 2],
                                                 window_size=[4, 4], num_classes=10)

    def forward(self, image):
        return self.net(image)


def example_inputs():
    return (torch.randn(1, 3, 32, 32),)
