"""Submodules, ModuleList and Sequential loops, helpers and methods called from forward."""

import torch
import torch.nn as nn


def spectral_radius(weight: torch.Tensor) -> torch.Tensor:
    # A free helper in the user's file: reported here, not at the caller. (special.ndtri has no
    # MPS kernel in any supported torch: the case keeps findings where the others gained one.)
    return torch.linalg.svdvals(weight).max() + torch.special.ndtri(weight.sigmoid()).mean()


class Gate(nn.Module):
    def forward(self, x):
        return torch.heaviside(x, torch.zeros_like(x)) * torch.special.ndtri(x.sigmoid())


class Stage(nn.Module):
    def __init__(self, width: int = 8, gated: bool = True):
        super().__init__()
        self.lin = nn.Linear(width, width)
        self.gated = gated
        self.gate = Gate()

    def forward(self, x):
        x = self.lin(x)
        if self.gated:
            x = self.gate(x)
        return x


class Network(nn.Module):
    def __init__(self):
        super().__init__()
        self.stages = nn.ModuleList([Stage(8, gated=False), Stage(8, gated=True)])
        self.tail = nn.Sequential(nn.Linear(8, 8), nn.Hardsigmoid(), nn.Linear(8, 4))

    def pick(self, x: torch.Tensor) -> torch.Tensor:
        # A method called from forward.
        return torch.take(x, torch.arange(0, x.numel(), 2, device=x.device)) + torch.mode(x.flatten()).values

    def forward(self, x):
        for stage in self.stages:
            x = stage(x)
        penalty = spectral_radius(self.stages[0].lin.weight)
        return self.tail(x), self.pick(x), penalty
