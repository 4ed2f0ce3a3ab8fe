"""`torch.diff` along time (a velocity feature): the TorchScript ONNX exporter has no symbolic."""
import torch
import torch.nn as nn


class Model(nn.Module):  # atenlint: inputs=torch.randn(2, 10, 6)
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(12, 8)

    def forward(self, x):
        velocity = torch.diff(x, dim=1, prepend=x[:, :1])
        return self.proj(torch.cat([x, velocity], dim=-1))


def example_inputs():
    return (torch.randn(2, 10, 6),)
