"""Segment Anything's `SamOnnxModel` pattern: `forward` decorated `@torch.no_grad()`, so
torch.export records its body inside a grad-mode wrapper (`wrap_with_set_grad_enabled`)
whose nodes carry the wrapper's generated frames, not the user's, and TorchScript cannot
compile the decorator's wrapper at all. Every finding must still be at the user's line (the
`diff` the TorchScript ONNX exporter and coremltools reject); the full reduction `max()`
(`aten::max.default`) is what `to_edge` accepts at this ExecuTorch version."""

import torch
from torch import nn


class Model(nn.Module):  # atenlint: inputs=torch.randn(2, 8, 16)
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 4)

    @torch.no_grad()
    def forward(self, x):
        scores = self.proj(x)
        best = scores.max()
        return scores / best, torch.diff(scores, dim=-1)


def example_inputs():
    return (torch.randn(2, 8, 16),)
