"""Columns count UTF-16 code units: the squiggle must sit on the call, not before it."""

import torch
import torch.nn as nn


class Messwert(nn.Module):
    def forward(self, größe):
        # Ein Kommentar über Größen und 𝛑.
        return {"größe 𝛑": torch.take(größe, torch.tensor([0]))}["größe 𝛑"] + torch.heaviside(größe, größe)


class MultiLine(nn.Module):
    def forward(self, x):
        return torch.linalg.svdvals(
            x,
        ).max() + torch.take(
            x, torch.tensor([1]))
