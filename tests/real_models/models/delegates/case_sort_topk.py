"""Re-ranking candidates by score, ties broken by a little noise: `torch.sort` of the scores,
then the best few by `topk`. `sort` is core ATen and survives to_edge, but the portable kernel
library has no `sort.values` kernel: the ExecuTorch program does not load there ("Missing
operator"). The noise (`rand`) is an op Core ML's partitioner leaves to the CPU."""

import torch
from torch import nn


class Model(nn.Module):  # atenlint: inputs=torch.randn(2, 16, 8)
    def __init__(self):
        super().__init__()
        self.score = nn.Linear(8, 1)
        self.head = nn.Linear(4, 2)

    def forward(self, candidates):
        scores = self.score(candidates).squeeze(-1)
        scores = scores + 1e-6 * torch.rand(scores.shape)
        ranked, _ = torch.sort(scores, dim=-1, descending=True)
        best, _ = torch.topk(scores, 4, dim=-1)
        return self.head(ranked[:, :4] + best)


def example_inputs():
    return (torch.randn(2, 16, 8),)
