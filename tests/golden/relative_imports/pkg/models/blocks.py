import torch
import torch.nn as nn


class Residual(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.lin = nn.Linear(width, width)

    def forward(self, x):
        return x + torch.frexp(self.lin(x)).mantissa
