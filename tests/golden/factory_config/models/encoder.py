import torch
import torch.nn as nn


class Encoder(nn.Module):
    """Configured in pyproject.toml."""

    def __init__(self, dim: int, depth: int):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(dim, dim) for _ in range(depth)])

    def forward(self, x):
        for layer in self.layers:
            x = torch.take(layer(x), torch.arange(x.numel(), device=x.device)).view_as(x)
        return x


class Decoder(nn.Module):
    """Not configured: atenlint says what to add."""

    def __init__(self, dim: int, vocab: int, *, tie: bool = False):
        super().__init__()
        self.out = nn.Linear(dim, vocab)

    def forward(self, x):
        return torch.mode(self.out(x), dim=-1).values


class Tokeniser(nn.Module):  # atenlint: init=Tokeniser(vocab=64)
    """Configured in the source, next to the class."""

    def __init__(self, vocab: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, 8)

    def forward(self, ids):
        return torch.special.ndtri(self.embed(ids).sigmoid())


# atenlint: init=Broken(width="wide")
class Broken(nn.Module):
    """A factory that raises is reported with the error, not silently skipped."""

    def __init__(self, width: int):
        super().__init__()
        self.lin = nn.Linear(width, width)

    def forward(self, x):
        return self.lin(x)
