"""x-vector TDNN: dilated 1-D convolutions and statistics pooling (mean and std)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, feats: int = 8, dim: int = 16):
        super().__init__()
        self.tdnn1 = nn.Conv1d(feats, dim, 5, dilation=1)
        self.tdnn2 = nn.Conv1d(dim, dim, 3, dilation=2)
        self.embed = nn.Linear(2 * dim, 8)

    def forward(self, x):
        h = torch.relu(self.tdnn2(torch.relu(self.tdnn1(x))))
        stats = torch.cat([h.mean(dim=2), h.std(dim=2)], dim=1)
        return self.embed(stats)


def example_inputs():
    return (torch.randn(1, 8, 30),)
