"""A small detection head in the style users write: it prints a debug shape, reads the number
of confident boxes with `.item()` and `.tolist()`, and branches on a score (graph breaks of four
kinds in one forward), then a data-dependent `nonzero` selection."""

import torch
from torch import nn


class Model(nn.Module):  # atenlint: inputs=torch.randn(1, 3, 32, 32)
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, stride=2))
        self.scores = nn.Conv2d(8, 1, 1)
        self.boxes = nn.Conv2d(8, 4, 1)

    def forward(self, image):
        features = self.backbone(image)
        print("features", features.shape)
        scores = self.scores(features).sigmoid().flatten(1)
        boxes = self.boxes(features).flatten(2).transpose(1, 2)
        confident = int((scores > 0.5).sum().item())
        sizes = boxes.shape[1:]
        corners = boxes[0, : max(confident, 1)].tolist()
        if scores.mean() > 0.5:
            boxes = boxes * 2
        keep = torch.nonzero(scores[0] > 0.5).flatten()
        return boxes[0, keep], len(corners) + sizes[0]


def example_inputs():
    return (torch.randn(1, 3, 32, 32),)
