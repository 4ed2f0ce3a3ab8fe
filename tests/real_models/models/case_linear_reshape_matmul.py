"""nn.Linear on a 3-D input, `.reshape()`, `@` and `.float()`: all exported by every target
(the dispatcher view shows `_unsafe_view` and `_to_copy`; the toolchains never see them)."""
import torch
import torch.nn as nn


class Model(nn.Module):  # atenlint: inputs=torch.randn(2, 8, 16)
    def __init__(self):
        super().__init__()
        self.lin1 = nn.Linear(16, 32)
        self.lin2 = nn.Linear(32, 16)

    def forward(self, x):
        h = self.lin1(x)
        h = h.reshape(2, 8, 4, 8).reshape(2, 8, 32)
        scores = h @ h.transpose(1, 2)
        return self.lin2(scores.float() @ h)


def example_inputs():
    return (torch.randn(2, 8, 16),)
