"""nn.MultiheadAttention (batch_first) in a TransformerEncoderLayer: on CPU in eval under no_grad
it takes the `_native_multi_head_attention` fast path, as a real export does."""
import torch
import torch.nn as nn


class Model(nn.Module):  # atenlint: inputs=torch.randn(1, 10, 32)
    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(32, 4, batch_first=True)
        self.norm = nn.LayerNorm(32)

    def forward(self, x):
        h = self.norm(x)
        return x + self.attn(h, h, h, need_weights=False)[0]


def example_inputs():
    return (torch.randn(1, 10, 32),)
