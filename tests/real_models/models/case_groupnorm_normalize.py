"""GroupNorm, `F.normalize` (cosine similarity head) and LayerNorm: core to every exporter."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):  # atenlint: inputs=torch.randn(2, 8, 8, 8)
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 16, 3, padding=1)
        self.norm = nn.GroupNorm(4, 16)
        self.ln = nn.LayerNorm(16)
        self.prototypes = nn.Parameter(torch.randn(5, 16))

    def forward(self, x):
        x = F.silu(self.norm(self.conv(x)))
        feats = self.ln(x.mean(dim=(2, 3)))
        return F.normalize(feats, dim=-1) @ F.normalize(self.prototypes, dim=-1).t()


def example_inputs():
    return (torch.randn(2, 8, 8, 8),)
