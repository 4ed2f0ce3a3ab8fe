"""BatchNorm2d and a BatchNorm1d head called with batch 1: training mode raises ("Expected more
than 1 value per channel"), eval mode (what every exporter sees) runs."""
import torch
import torch.nn as nn


class Model(nn.Module):  # atenlint: inputs=torch.randn(1, 3, 16, 16)
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 8)
        self.bn_head = nn.BatchNorm1d(8)

    def forward(self, x):
        x = torch.relu(self.bn1(self.conv1(x)))
        x = self.pool(x).flatten(1)
        return self.bn_head(self.fc(x))


def example_inputs():
    return (torch.randn(1, 3, 16, 16),)
