import torch
import torch.nn as nn

from .layers import Block, RMSNorm


class TinyLM(nn.Module):
    def __init__(self, vocab_size: int, dim: int, depth: int, heads: int):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, dim)
        self.blocks = nn.ModuleList([Block(dim, heads) for _ in range(depth)])
        self.norm = RMSNorm(dim)
        self.lm_head = nn.Linear(dim, vocab_size, bias=False)

    def forward(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.norm(x))
        # Nucleus-style filtering for sampling: keep the most likely tokens per position.
        top = torch.topk(logits, k=50, dim=-1).values[..., -1:]
        return logits.masked_fill(logits < top, float("-inf"))
