"""`&` on bool tensors (padding mask & causal mask, as BERT-style mask code does), masked_fill."""
import torch
import torch.nn as nn


class Model(nn.Module):  # atenlint: inputs=(torch.randn(1, 8, 16), torch.ones(1, 8, dtype=torch.long))
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 16)

    def forward(self, x, attention_mask):
        t = x.shape[1]
        padding = attention_mask[:, None, :].bool()
        causal = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()[None]
        mask = padding & causal
        scores = self.proj(x) @ x.transpose(1, 2)
        scores = scores.masked_fill(~mask, -1e4)
        return scores.softmax(-1) @ x


def example_inputs():
    return (torch.randn(1, 8, 16), torch.ones(1, 8, dtype=torch.long))
