"""Spatial transformer: a localisation net predicts an affine warp, applied with grid_sample."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.MaxPool2d(2), nn.ReLU())
        self.fc = nn.Linear(4 * 8 * 8, 6)

    def forward(self, x):
        theta = self.fc(self.features(x).flatten(1)).view(-1, 2, 3)
        grid = F.affine_grid(theta, [x.size(0), 1, 16, 16], align_corners=False)
        return F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)


def example_inputs():
    return (torch.randn(2, 1, 16, 16),)
