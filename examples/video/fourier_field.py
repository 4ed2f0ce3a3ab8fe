"""A coordinate network with Fourier features and a spectral penalty on its weights."""

import torch
import torch.nn as nn


def fourier_features(coords: torch.Tensor, num_bands: int) -> torch.Tensor:
    # Octave-spaced frequencies 1, 2, 4, ... 2**(num_bands - 1).
    freqs = torch.logspace(0, num_bands - 1, num_bands, base=2.0, device=coords.device)
    angles = coords.unsqueeze(-1) * freqs * torch.pi
    return torch.cat([angles.sin(), angles.cos()], dim=-1).flatten(-2)


class FourierField(nn.Module):
    def __init__(self, in_dim: int = 3, num_bands: int = 8, hidden: int = 64):
        super().__init__()
        self.num_bands = num_bands
        self.mlp = nn.Sequential(
            nn.Linear(in_dim * num_bands * 2, hidden),
            nn.SiLU(),
            nn.Linear(hidden, 4),
        )

    def forward(self, coords):
        return self.mlp(fourier_features(coords, self.num_bands))

    def spectral_penalty(self) -> torch.Tensor:
        return torch.linalg.svdvals(self.mlp[0].weight).max()


class RegularisedField(FourierField):
    """Adds the spectral penalty to every forward pass during training."""

    def forward(self, coords):
        out = super().forward(coords)
        return out, torch.linalg.svdvals(self.mlp[2].weight).max()
