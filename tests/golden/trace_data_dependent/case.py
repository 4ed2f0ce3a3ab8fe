"""Data-dependent shapes: boolean masks and nonzero trace on fake tensors without crashing."""

import torch
import torch.nn as nn


# atenlint: inputs=(torch.randn(6, 4), torch.randn(6) > 0)
class MaskedPool(nn.Module):
    def forward(self, x, keep):
        kept = x[keep]
        where = torch.nonzero(keep).flatten()
        count = int(keep.sum())
        return kept.mean(0), torch.take(x, where), torch.mode(x[:count], dim=0).values
