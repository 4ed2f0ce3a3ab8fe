"""transformers ViT (2 layers, hidden 32) on 32 px images."""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
from transformers import ViTConfig, ViTModel  # noqa: E402


class Model(nn.Module):  # atenlint: inputs=torch.randn(1, 3, 32, 32)
    def __init__(self):
        super().__init__()
        self.net = ViTModel(ViTConfig(image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=2,
                                       num_attention_heads=2, intermediate_size=64))

    def forward(self, pixel_values):
        return self.net(pixel_values=pixel_values).last_hidden_state


def example_inputs():
    return (torch.randn(1, 3, 32, 32),)
