"""A transformer block whose helpers Dynamo does not trace: a `torch.compiler.disable`d
statistics function, a logging call, a NumPy round trip and a C-extension call (`zlib`)."""

import logging
import zlib

import numpy as np
import torch
from torch import nn

log = logging.getLogger("compile_case_disabled_helpers")


@torch.compiler.disable
def activation_stats(x):
    return x.abs().mean(dim=-1, keepdim=True)


class Model(nn.Module):  # atenlint: inputs=torch.randn(2, 8, 16)
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(16)
        self.attention = nn.MultiheadAttention(16, 2, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 16))

    def forward(self, x):
        h = self.norm(x)
        h = x + self.attention(h, h, h, need_weights=False)[0]
        scale = activation_stats(h)
        log.warning("block output %s", tuple(h.shape))
        h = h + self.mlp(self.norm(h)) / scale
        bias = torch.from_numpy(np.tanh(h.detach().numpy()))
        seed = zlib.crc32(b"block") % 7
        return h + bias * seed


def example_inputs():
    return (torch.randn(2, 8, 16),)
