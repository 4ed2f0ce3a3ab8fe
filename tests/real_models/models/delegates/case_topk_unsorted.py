"""Keeping the k strongest responses without ordering them (`torch.topk(..., sorted=False)`,
as detection heads do before a later sort or gather). Core ML's partitioner takes `topk`,
but coremltools' translation refuses `sorted=False` for an opset before iOS 16, and the
Core ML backend converts for the default deployment target (iOS 15): `to_edge_transform_and_lower`
raises in the backend's `preprocess`. The sorted `topk` beside it converts."""

import torch
from torch import nn


class Model(nn.Module):  # atenlint: inputs=torch.randn(2, 64, 16)
    def __init__(self):
        super().__init__()
        self.score = nn.Linear(16, 1)
        self.embed = nn.Linear(16, 8)

    def forward(self, features):
        scores = self.score(features).squeeze(-1)
        strongest, _ = torch.topk(scores, 8, dim=-1, sorted=False)
        ranked, _ = torch.topk(scores, 8, dim=-1)
        return self.embed(features).mean(1) + strongest.sum(-1, keepdim=True) + ranked[:, :1]


def example_inputs():
    return (torch.randn(2, 64, 16),)
