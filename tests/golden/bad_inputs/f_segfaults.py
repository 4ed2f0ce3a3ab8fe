import ctypes

import torch.nn as nn

ctypes.string_at(0)


class Crashes(nn.Module):
    def forward(self, x):
        return x
