"""torchvision's own ops: `torchvision.ops.nms` and `roi_align` (library ops with ONNX symbolics
that torchvision registers when imported)."""
import torch
import torch.nn as nn
import torchvision


class Model(nn.Module):  # atenlint: inputs=(torch.rand(1, 4, 16, 16), torch.rand(6, 4) * 8)
    def __init__(self):
        super().__init__()
        self.head = nn.Conv2d(4, 4, 1)

    def forward(self, features, corners):
        boxes = torch.cat([corners[:, :2], corners[:, :2] + corners[:, 2:] + 1], dim=1)
        scores = boxes.sum(dim=1)
        keep = torchvision.ops.nms(boxes, scores, 0.5)
        rois = torch.cat([torch.zeros_like(boxes[:, :1]), boxes], dim=1)
        pooled = torchvision.ops.roi_align(self.head(features), rois, (2, 2), spatial_scale=1.0, sampling_ratio=2)
        return pooled, keep


def example_inputs():
    torch.manual_seed(0)
    return (torch.rand(1, 4, 16, 16), torch.rand(6, 4) * 8)
