"""A space-to-depth stem (`F.pixel_unshuffle`, as in ESPCN-style super-resolution and
YOLOv5's Focus layer) before a small conv head. Core ML's partitioner takes
`pixel_unshuffle` (coremltools' op registry has a translation for it), but that translation
builds MIL's `pixel_unshuffle`, an iOS 16 op, while the Core ML backend converts for the
default deployment target (iOS 15): `to_edge_transform_and_lower` raises in the backend's
`preprocess`."""

import torch
import torch.nn.functional as F
from torch import nn


class Model(nn.Module):  # atenlint: inputs=torch.randn(1, 3, 32, 32)
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(12, 16, 3, padding=1)
        self.head = nn.Conv2d(16, 8, 1)

    def forward(self, image):
        folded = F.pixel_unshuffle(image, 2)
        return self.head(F.relu(self.conv(folded)))


def example_inputs():
    return (torch.randn(1, 3, 32, 32),)
