"""Tensors made on the CPU inside `forward` (a coordinate grid with device="cpu", `.float()`),
as RAFT-style code does, then grid_sample."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):  # atenlint: inputs=torch.randn(1, 2, 8, 8)
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 2, 3, padding=1)

    def forward(self, x):
        h, w = x.shape[-2:]
        ys, xs = torch.meshgrid(torch.arange(h, device="cpu"), torch.arange(w, device="cpu"), indexing="ij")
        grid = torch.stack([xs, ys], dim=-1).float()[None]
        grid = grid / torch.tensor([w - 1, h - 1], device="cpu").float() * 2 - 1
        flow = self.conv(x).permute(0, 2, 3, 1)
        return F.grid_sample(x, grid + flow, align_corners=True)


def example_inputs():
    return (torch.randn(1, 2, 8, 8),)
