"""The same layer decomposes differently by its arguments: only (2, 2, 2) falls back."""

import torch.nn as nn
import torch.nn.functional as F


class GlobalPool(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool3d(1)  # a plain mean over D, H, W: supported

    def forward(self, volume):
        return self.pool(volume).flatten(1) + F.adaptive_avg_pool3d(volume, (1, 1, 1)).flatten(1)


class GridPool(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool3d((2, 2, 2))  # a real adaptive pool: no MPS kernel

    def forward(self, volume):
        return self.pool(volume).flatten(1)
