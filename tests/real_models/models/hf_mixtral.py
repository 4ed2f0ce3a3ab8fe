"""transformers Mixtral (1 layer, hidden 32, 4 experts, top-2): the MoE experts' grouped
matmul (`_grouped_mm` after a `histc` of the routed tokens) and the causal mask."""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
from transformers import MixtralConfig, MixtralModel  # noqa: E402


class Model(nn.Module):  # atenlint: inputs=torch.randint(0, 100, (1, 8))
    def __init__(self):
        super().__init__()
        self.net = MixtralModel(MixtralConfig(vocab_size=100, hidden_size=32, intermediate_size=64,
                                              num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                                              num_local_experts=4, num_experts_per_tok=2,
                                              max_position_embeddings=64))

    def forward(self, input_ids):
        return self.net(input_ids=input_ids, use_cache=False).last_hidden_state


def example_inputs():
    return (torch.randint(0, 100, (1, 8)),)
