"""Video classifier head with global 3-D pooling (output size 1 becomes a mean)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(3, 8, (1, 3, 3), padding=(0, 1, 1))
        self.pool = nn.AdaptiveAvgPool3d(1)
        self.fc = nn.Linear(8, 5)

    def forward(self, clip):
        return self.fc(self.pool(torch.relu(self.conv(clip))).flatten(1))


def example_inputs():
    return (torch.randn(1, 3, 4, 8, 8),)
