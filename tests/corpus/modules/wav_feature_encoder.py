"""wav2vec 2.0 feature encoder: strided 1-D convolutions, GroupNorm, GELU."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int = 16):
        super().__init__()
        self.conv0 = nn.Conv1d(1, dim, 10, stride=5, bias=False)
        self.norm0 = nn.GroupNorm(dim, dim)
        self.conv1 = nn.Conv1d(dim, dim, 3, stride=2, bias=False)
        self.act = nn.GELU()

    def forward(self, wav):
        x = self.act(self.norm0(self.conv0(wav.unsqueeze(1))))
        return self.act(self.conv1(x)).transpose(1, 2)


def example_inputs():
    return (torch.randn(1, 400),)
