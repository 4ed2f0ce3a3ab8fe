"""A small video classifier: 3-D convolutions over (time, height, width)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class ConvBlock3d(nn.Module):
    def __init__(self, cin: int = 3, cout: int = 16):
        super().__init__()
        self.conv = nn.Conv3d(cin, cout, kernel_size=3, padding=1)
        self.norm = nn.BatchNorm3d(cout)

    def forward(self, x):
        return F.relu(self.norm(self.conv(x)))


class VideoClassifier(nn.Module):
    def __init__(self, num_classes: int = 10, num_tags: int = 500):
        super().__init__()
        self.stem = ConvBlock3d(3, 16)
        self.block = ConvBlock3d(16, 32)
        # Keeps a coarse spatio-temporal layout for the head: not a global pool.
        self.pool = nn.AdaptiveAvgPool3d((2, 4, 4))
        self.tags = nn.Embedding(num_tags, 32, max_norm=1.0)
        self.head = nn.Linear(32 * 2 * 4 * 4 + 32, num_classes)

    def forward(self, clip, tag_ids):
        features = self.pool(self.block(self.stem(clip))).flatten(1)
        tags = self.tags(tag_ids).mean(dim=1)
        return self.head(torch.cat([features, tags], dim=1))
