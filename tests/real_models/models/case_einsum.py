"""`torch.einsum` for a bilinear interaction and a batched contraction (ONNX Einsum from opset 12)."""
import torch
import torch.nn as nn


class Model(nn.Module):  # atenlint: inputs=(torch.randn(2, 5, 8), torch.randn(2, 7, 8))
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(8, 8))

    def forward(self, a, b):
        scores = torch.einsum("bid,de,bje->bij", a, self.weight, b)
        return torch.einsum("bij,bjd->bid", scores.softmax(-1), b)


def example_inputs():
    return (torch.randn(2, 5, 8), torch.randn(2, 7, 8))
