"""Video classifier head: 3-D convolution and adaptive pooling to a 2x2x2 grid."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(3, 8, 3, padding=1)
        self.pool = nn.AdaptiveAvgPool3d((2, 2, 2))
        self.fc = nn.Linear(64, 5)

    def forward(self, clip):
        return self.fc(self.pool(torch.relu(self.conv(clip))).flatten(1))


def example_inputs():
    return (torch.randn(1, 3, 4, 8, 8),)
