"""torchvision SSDlite320 on MobileNetV3-Large in eval: depthwise heads, anchors, batched nms."""
import torch
import torch.nn as nn
import torchvision


class Model(nn.Module):  # atenlint: inputs=torch.rand(3, 64, 64)
    def __init__(self):
        super().__init__()
        self.net = torchvision.models.detection.ssdlite320_mobilenet_v3_large(
            weights=None, weights_backbone=None, num_classes=3, detections_per_img=10, topk_candidates=50)

    def forward(self, image):
        if torch.jit.is_scripting():
            detections = self.net([image])[1]
        else:
            detections = self.net([image])
        return detections[0]["boxes"], detections[0]["scores"], detections[0]["labels"]


def example_inputs():
    return (torch.rand(3, 64, 64),)
