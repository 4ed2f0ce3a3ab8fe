"""Rotary position embedding applied to query/key heads."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, head_dim: int = 8, max_len: int = 16):
        super().__init__()
        inv = 1.0 / (10000 ** (torch.arange(0, head_dim, 2).float() / head_dim))
        freqs = torch.outer(torch.arange(max_len).float(), inv)
        self.register_buffer("cos", torch.cat([freqs, freqs], dim=-1).cos())
        self.register_buffer("sin", torch.cat([freqs, freqs], dim=-1).sin())

    def forward(self, q):
        n = q.size(2)
        half = q.size(-1) // 2
        rotated = torch.cat([-q[..., half:], q[..., :half]], dim=-1)
        return q * self.cos[:n] + rotated * self.sin[:n]


def example_inputs():
    return (torch.randn(1, 2, 5, 8),)
