"""Text encoder: one nn.TransformerEncoderLayer (post-norm, ReLU)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int = 16):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(dim, 2, dim_feedforward=32, dropout=0.1, batch_first=True)

    def forward(self, x):
        return self.layer(x)


def example_inputs():
    return (torch.randn(1, 5, 16),)
