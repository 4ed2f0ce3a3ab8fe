"""transformers CLIP vision tower (2 layers, hidden 32): quick_gelu, pre-layernorm."""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
from transformers import CLIPVisionConfig, CLIPVisionModel  # noqa: E402


class Model(nn.Module):  # atenlint: inputs=torch.randn(1, 3, 32, 32)
    def __init__(self):
        super().__init__()
        self.net = CLIPVisionModel(CLIPVisionConfig(image_size=32, patch_size=8, hidden_size=32, intermediate_size=64,
                                                     num_hidden_layers=2, num_attention_heads=2))

    def forward(self, pixel_values):
        return self.net(pixel_values=pixel_values).last_hidden_state


def example_inputs():
    return (torch.randn(1, 3, 32, 32),)
