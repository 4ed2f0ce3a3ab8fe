"""float64 has no MPS support at all: report the expression that makes the float64 tensor."""

import torch
import torch.nn as nn


# atenlint: inputs=torch.randn(4, 8)
class Float64Everywhere(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        a = self.lin(x).double()  # reported here...
        b = a * 2 + a.sum()  # ...not at every later use
        c = torch.tensor([0.5, 1.5], dtype=torch.float64)
        d = x.to(torch.float64).mean()
        e = torch.zeros(3, dtype=torch.double)
        return b, c, d, e, x.float() * 2


# atenlint: inputs=torch.randn(2, 4)
class DoubleWeights(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4).double()  # made outside forward: reported where forward first uses it

    def forward(self, x):
        return self.lin(x.double())
