"""Transformer input layer: token and learned position embeddings, LayerNorm, dropout."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, vocab: int = 100, dim: int = 16, max_len: int = 32):
        super().__init__()
        self.tokens = nn.Embedding(vocab, dim)
        self.positions = nn.Embedding(max_len, dim)
        self.norm = nn.LayerNorm(dim)
        self.drop = nn.Dropout(0.1)

    def forward(self, ids):
        positions = torch.arange(ids.size(1), device=ids.device).unsqueeze(0)
        return self.drop(self.norm(self.tokens(ids) + self.positions(positions)))


def example_inputs():
    return (torch.randint(0, 100, (1, 9)),)
