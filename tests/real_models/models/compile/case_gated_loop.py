"""A stack of gated blocks in a loop, each branching on its activations (a break per pass, in a
submodule's own `forward`), a router whose `forward` is `torch.compiler.disable`d, and a
`bincount` whose output size depends on the values (Dynamo's "dynamic shape operator")."""

import torch
from torch import nn


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 16)

    def forward(self, x):
        h = self.proj(x)
        if h.max() > 0:
            h = h.relu()
        return h


class Router(nn.Module):
    @torch.compiler.disable
    def forward(self, x):
        return x.argmax(-1)


class Model(nn.Module):  # atenlint: inputs=torch.randn(2, 4, 16)
    def __init__(self):
        super().__init__()
        self.gates = nn.ModuleList([Gate() for _ in range(3)])
        self.router = Router()

    def forward(self, x):
        for gate in self.gates:
            x = x + gate(x)
        route = self.router(x)
        counts = torch.bincount(route.flatten(), minlength=16)
        return x * counts.float().mean()


def example_inputs():
    return (torch.randn(2, 4, 16),)
