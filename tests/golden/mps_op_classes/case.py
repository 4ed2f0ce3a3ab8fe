"""One real torch 2.13 op for each way an MPS fallback happens."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class FallbackZoo(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool3d = nn.AdaptiveAvgPool3d((2, 2, 2))  # CompositeImplicit -> op without an MPS kernel
        self.embed = nn.Embedding(100, 16, max_norm=1.0)  # forced to the CPU by MPSFallback.mm

    def forward(self, x, volume, ids):
        s = torch.linalg.svdvals(x)  # structured: the fallback fires under `_linalg_svd.U`
        t = torch.take(x, ids)  # no MPS kernel at all
        m = torch.mode(x, dim=-1).values  # no MPS kernel at all
        p = self.pool3d(volume)
        d = F.pdist(x)  # CompositeImplicit -> _pdist_forward
        steps = torch.logspace(0, 3, 4, device=x.device)  # CompositeExplicit -> logspace.out
        e = self.embed(ids)
        return s, t, m, p, d, steps, e
