"""Columns count UTF-16 code units: the squiggle must sit on the call, not before it.

The calls are ops with no MPS kernel in any supported torch (2.13-2.15), so every release
reports them: `ö` and `ß` are one code unit each, `𝛑` (outside the Basic Multilingual Plane)
two, and the second finding of the line sits after both."""

import torch
import torch.nn as nn


class Messwert(nn.Module):
    def forward(self, größe):
        # Ein Kommentar über Größen und 𝛑.
        return {"größe 𝛑": torch.special.log_ndtr(größe)}["größe 𝛑"] + torch.special.ndtri(größe.sigmoid())


class MultiLine(nn.Module):
    def forward(self, x):
        return torch.mode(
            x, dim=-1,
        ).values.max() + torch.special.airy_ai(
            x).sum()
