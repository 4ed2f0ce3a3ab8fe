"""Ops that run deep inside torch's own Python code are reported at the user's call."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class PairwiseDistances(nn.Module):
    def forward(self, points):
        # F.pdist -> torch.pdist -> aten::_pdist_forward, two calls deep in the library.
        return F.pdist(points, p=2.0)


class PooledHead(nn.Module):
    def __init__(self):
        super().__init__()
        # nn.Module forward -> F.adaptive_avg_pool3d -> aten::_adaptive_avg_pool3d
        self.pool = nn.AdaptiveAvgPool3d((2, 2, 2))
        self.proj = nn.Linear(8 * 8, 16)

    def forward(self, volume):
        pooled = self.pool(volume)
        return self.proj(pooled.flatten(1))
