"""transformers BERT (2 layers, hidden 32) with an attention mask, default attention (SDPA)."""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
from transformers import BertConfig, BertModel  # noqa: E402


class Model(nn.Module):  # atenlint: inputs=(torch.randint(0, 100, (1, 8)), torch.ones(1, 8, dtype=torch.long))
    def __init__(self):
        super().__init__()
        self.net = BertModel(BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                         intermediate_size=64, max_position_embeddings=64))

    def forward(self, input_ids, attention_mask):
        return self.net(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


def example_inputs():
    return (torch.randint(0, 100, (1, 8)), torch.ones(1, 8, dtype=torch.long))
