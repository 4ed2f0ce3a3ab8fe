"""Language-model decoding head: top-k filtering of logits, softmax, greedy pick."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int = 16, vocab: int = 40, k: int = 5):
        super().__init__()
        self.k = k
        self.lm_head = nn.Linear(dim, vocab, bias=False)

    def forward(self, h):
        logits = self.lm_head(h[:, -1])
        values, _ = torch.topk(logits, self.k)
        logits = logits.masked_fill(logits < values[:, -1:], float("-inf"))
        probs = torch.softmax(logits, dim=-1)
        return torch.argmax(probs, dim=-1)


def example_inputs():
    return (torch.randn(1, 4, 16),)
