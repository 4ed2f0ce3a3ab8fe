"""F.scaled_dot_product_attention with `dropout_p` only in training (0.0 in eval) and a causal
flag: ONNX has a symbolic from opset 14 only; in eval no dropout op is ever recorded."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):  # atenlint: inputs=torch.randn(1, 12, 32)
    def __init__(self, dim: int = 32, heads: int = 4, dropout: float = 0.1):
        super().__init__()
        self.heads = heads
        self.dropout = dropout
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout if self.training else 0.0,
                                           is_causal=True)
        return self.out(y.transpose(1, 2).contiguous().view(b, t, c))


def example_inputs():
    return (torch.randn(1, 12, 32),)
