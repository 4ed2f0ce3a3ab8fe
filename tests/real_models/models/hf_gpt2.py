"""transformers GPT-2 (2 layers, hidden 32): causal mask, Conv1D projections, gelu_new."""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
from transformers import GPT2Config, GPT2Model  # noqa: E402


class Model(nn.Module):  # atenlint: inputs=torch.randint(0, 100, (1, 8))
    def __init__(self):
        super().__init__()
        self.net = GPT2Model(GPT2Config(vocab_size=100, n_positions=64, n_embd=32, n_layer=2, n_head=2,
                                         bos_token_id=0, eos_token_id=0))

    def forward(self, input_ids):
        return self.net(input_ids=input_ids, use_cache=False).last_hidden_state


def example_inputs():
    return (torch.randint(0, 100, (1, 8)),)
