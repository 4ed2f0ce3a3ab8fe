"""torchvision RAFT-Small optical flow (two refinement steps): correlation pyramid, grid_sample,
coordinate grids made on the input's device inside forward, `.float()`."""
import torch
import torch.nn as nn
import torchvision


class Model(nn.Module):  # atenlint: inputs=(torch.randn(1, 3, 128, 128), torch.randn(1, 3, 128, 128))
    def __init__(self):
        super().__init__()
        self.net = torchvision.models.optical_flow.raft_small(weights=None)

    def forward(self, image1, image2):
        return self.net(image1, image2, num_flow_updates=2)[-1]


def example_inputs():
    return (torch.randn(1, 3, 128, 128), torch.randn(1, 3, 128, 128))
