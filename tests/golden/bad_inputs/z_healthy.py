import torch
import torch.nn as nn


class StillChecked(nn.Module):
    def forward(self, x):
        return torch.heaviside(x, x)
