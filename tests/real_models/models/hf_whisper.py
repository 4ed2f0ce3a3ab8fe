"""transformers Whisper (1+1 layers, d_model 32, 8 mel bins): conv1d front end, encoder-decoder."""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
from transformers import WhisperConfig, WhisperModel  # noqa: E402


class Model(nn.Module):  # atenlint: inputs=(torch.randn(1, 8, 32), torch.randint(0, 100, (1, 4)))
    def __init__(self):
        super().__init__()
        self.net = WhisperModel(WhisperConfig(vocab_size=100, num_mel_bins=8, d_model=32, encoder_layers=1,
                                               decoder_layers=1, encoder_attention_heads=2,
                                               decoder_attention_heads=2, encoder_ffn_dim=64,
                                               decoder_ffn_dim=64, max_source_positions=16,
                                               max_target_positions=16, pad_token_id=0,
                                               bos_token_id=1, eos_token_id=2,
                                               decoder_start_token_id=1))

    def forward(self, input_features, decoder_input_ids):
        out = self.net(input_features=input_features, decoder_input_ids=decoder_input_ids, use_cache=False)
        return out.last_hidden_state


def example_inputs():
    return (torch.randn(1, 8, 32), torch.randint(0, 100, (1, 4)))
