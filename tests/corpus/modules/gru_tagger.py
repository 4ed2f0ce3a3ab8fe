"""Sequence tagger: embedding, GRU, per-token log-softmax."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, vocab: int = 50, dim: int = 16, tags: int = 5):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.gru = nn.GRU(dim, dim, batch_first=True)
        self.out = nn.Linear(dim, tags)

    def forward(self, tokens):
        h, _ = self.gru(self.embed(tokens))
        return torch.log_softmax(self.out(h), dim=-1)


def example_inputs():
    return (torch.randint(0, 50, (1, 7)),)
