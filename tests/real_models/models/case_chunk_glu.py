"""`.chunk()` into gates (a GLU feed-forward) and `torch.chunk` on a conv output."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):  # atenlint: inputs=torch.randn(1, 6, 32)
    def __init__(self, dim: int = 32):
        super().__init__()
        self.up = nn.Linear(dim, 4 * dim)
        self.down = nn.Linear(2 * dim, dim)
        self.conv = nn.Conv1d(6, 12, 3, padding=1)

    def forward(self, x):
        value, gate = self.up(x).chunk(2, dim=-1)
        x = self.down(value * F.gelu(gate))
        a, b = torch.chunk(self.conv(x), 2, dim=1)
        return a * torch.sigmoid(b)


def example_inputs():
    return (torch.randn(1, 6, 32),)
