import torch
import torch.nn as nn


class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x, index):
        picked = torch.take(self.proj(x), index)
        return picked + torch.mode(x, dim=-1).values.sum()
