import torch
import torch.nn as nn

from acme.nets.heads import CountHead


class CountModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = CountHead()

    def forward(self, x):
        rates = self.head(x)
        return torch.poisson(rates)
