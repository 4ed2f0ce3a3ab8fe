"""transformers Llama (2 layers, hidden 32, grouped-query attention): rotary embeddings, RMS norm, SiLU MLP."""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
from transformers import LlamaConfig, LlamaModel  # noqa: E402


class Model(nn.Module):  # atenlint: inputs=torch.randint(0, 100, (1, 8))
    def __init__(self):
        super().__init__()
        self.net = LlamaModel(LlamaConfig(vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                           num_attention_heads=2, num_key_value_heads=1,
                                           max_position_embeddings=64))

    def forward(self, input_ids):
        return self.net(input_ids=input_ids, use_cache=False).last_hidden_state


def example_inputs():
    return (torch.randint(0, 100, (1, 8)),)
