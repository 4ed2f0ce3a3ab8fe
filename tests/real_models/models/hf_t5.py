"""transformers T5 encoder-decoder (2 layers, d_model 32): relative position buckets, RMS norm."""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
from transformers import T5Config, T5Model  # noqa: E402


class Model(nn.Module):  # atenlint: inputs=(torch.randint(0, 100, (1, 8)), torch.randint(0, 100, (1, 4)))
    def __init__(self):
        super().__init__()
        self.net = T5Model(T5Config(vocab_size=100, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=2,
                                     decoder_start_token_id=0))

    def forward(self, input_ids, decoder_input_ids):
        out = self.net(input_ids=input_ids, decoder_input_ids=decoder_input_ids, use_cache=False)
        return out.last_hidden_state


def example_inputs():
    return (torch.randint(0, 100, (1, 8)), torch.randint(0, 100, (1, 4)))
