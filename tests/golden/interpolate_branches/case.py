"""F.interpolate compiles every mode's branch; only the branch a call takes may be judged."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 8, 3, padding=1)

    def forward(self, x):
        up = F.interpolate(x, scale_factor=2.0, mode="bilinear")
        up = F.interpolate(up, scale_factor=0.5, mode="bicubic", align_corners=False)
        up = F.interpolate(up, size=(16, 16), mode="nearest")
        smooth = F.interpolate(up, size=(8, 8), mode="bilinear", antialias=True)
        return self.conv(smooth)


class VolumeUpsampler(nn.Module):
    def forward(self, volume):
        # trilinear only exists for 5-D input: the call itself fixes the branch.
        return F.interpolate(volume, scale_factor=2.0, mode="trilinear", align_corners=False)


class AreaDownsampler(nn.Module):
    def forward(self, image):
        # mode="area" picks adaptive_avg_pool1d/2d/3d by image.dim(), which a scripted
        # module cannot know: the 3-D fallback is only a possibility (information).
        return F.interpolate(image, size=(7, 7), mode="area")
