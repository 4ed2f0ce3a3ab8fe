"""TorchScript cannot compile these; with inputs they are traced, without they are read."""

import torch
import torch.nn as nn


# atenlint: inputs=torch.randn(2, 8)
class LambdaActivation(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.act = lambda t: torch.special.ndtri(t.sigmoid())

    def forward(self, x):
        return self.act(self.lin(x))


class KwargsForward(nn.Module):
    """No inputs: analysed statically (one information diagnostic says what that misses)."""

    def forward(self, x, **options):
        scale = options.get("scale", 1.0)
        return torch.heaviside(x, x) * scale


# atenlint: inputs=(torch.randn(3, 4),)
class RegistryOfPaths(nn.Module):
    def __init__(self):
        super().__init__()
        self.paths = {"fast": nn.Identity(), "slow": nn.Linear(4, 4)}  # a plain dict: not scriptable

    def forward(self, x):
        out = self.paths["slow"](x)
        return torch.take(out, torch.arange(3))
