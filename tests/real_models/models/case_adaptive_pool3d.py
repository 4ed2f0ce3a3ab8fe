"""Video head with `nn.AdaptiveAvgPool3d((2, 2, 2))`: not a global mean, so a real adaptive pool."""
import torch
import torch.nn as nn


class Model(nn.Module):  # atenlint: inputs=torch.randn(1, 3, 6, 10, 10)
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(3, 8, 3, padding=1)
        self.pool = nn.AdaptiveAvgPool3d((2, 2, 2))
        self.fc = nn.Linear(64, 4)

    def forward(self, video):
        return self.fc(self.pool(torch.relu(self.conv(video))).flatten(1))


def example_inputs():
    return (torch.randn(1, 3, 6, 10, 10),)
