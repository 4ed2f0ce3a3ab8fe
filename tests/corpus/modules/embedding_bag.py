"""Bag-of-words text classifier with nn.EmbeddingBag (mean)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, vocab: int = 60, dim: int = 8, classes: int = 3):
        super().__init__()
        self.bag = nn.EmbeddingBag(vocab, dim, mode="mean")
        self.fc = nn.Linear(dim, classes)

    def forward(self, tokens):
        return self.fc(self.bag(tokens))


def example_inputs():
    return (torch.randint(0, 60, (2, 6)),)
