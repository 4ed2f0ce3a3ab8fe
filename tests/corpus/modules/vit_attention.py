"""ViT: patch embedding, class token, one pre-norm encoder block with nn.MultiheadAttention."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int = 32, heads: int = 4, patch: int = 4):
        super().__init__()
        self.patch = nn.Conv2d(3, dim, patch, stride=patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, image):
        tokens = self.patch(image).flatten(2).transpose(1, 2)
        tokens = torch.cat([self.cls.expand(tokens.size(0), -1, -1), tokens], dim=1)
        h = self.norm1(tokens)
        tokens = tokens + self.attn(h, h, h, need_weights=False)[0]
        return tokens + self.mlp(self.norm2(tokens))


def example_inputs():
    return (torch.randn(1, 3, 16, 16),)
