"""torchvision Faster R-CNN on MobileNetV3-Large FPN in eval: image normalisation and resize,
anchors, box coding, torchvision::nms (batched), torchvision::roi_align (MultiScaleRoIAlign)."""
import torch
import torch.nn as nn
import torchvision


class Model(nn.Module):  # atenlint: inputs=torch.rand(3, 64, 64)
    def __init__(self):
        super().__init__()
        self.net = torchvision.models.detection.fasterrcnn_mobilenet_v3_large_fpn(
            weights=None, weights_backbone=None, num_classes=3, min_size=64, max_size=64,
            rpn_pre_nms_top_n_test=50, rpn_post_nms_top_n_test=20, box_detections_per_img=10)

    def forward(self, image):
        if torch.jit.is_scripting():
            detections = self.net([image])[1]
        else:
            detections = self.net([image])
        return detections[0]["boxes"], detections[0]["scores"], detections[0]["labels"]


def example_inputs():
    return (torch.rand(3, 64, 64),)
