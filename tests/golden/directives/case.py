import torch
import torch.nn as nn


class Suppressed(nn.Module):
    def forward(self, x, i):
        a = torch.take(x, i)  # atenlint: ignore[aten::take]
        b = torch.mode(x).values  # atenlint: ignore
        c = torch.heaviside(x, x)  # atenlint: ignore[aten::take] (a different op: still reported)
        d = torch.frexp(x).mantissa  # atenlint: ignore[MPS001]
        return a, b, c, d


class Skipped(nn.Module):  # atenlint: skip
    def forward(self, x):
        return torch.poisson(x)


class Misspelled(nn.Module):  # atenlint: int=Misspelled()
    def forward(self, x):
        return torch.special.ndtri(x)
