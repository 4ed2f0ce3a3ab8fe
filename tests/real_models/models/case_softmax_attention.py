"""Hand-written attention: `attn.softmax(-1)` (dispatcher `_softmax`), scaled matmul, dropout in eval."""
import torch
import torch.nn as nn


class Model(nn.Module):  # atenlint: inputs=torch.randn(1, 10, 32)
    def __init__(self, dim: int = 32, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        b, n, c = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q @ k.transpose(-2, -1)) * (c // self.heads) ** -0.5
        attn = self.drop(attn.softmax(dim=-1))
        return self.proj((attn @ v).transpose(1, 2).reshape(b, n, c))


def example_inputs():
    return (torch.randn(1, 10, 32),)
