import torch
import torch.nn as nn

# café written in Latin-1 with no coding declaration


class Latin(nn.Module):
    def forward(self, x):
        return torch.take(x, x.long())
