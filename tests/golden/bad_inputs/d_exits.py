import os

import torch.nn as nn

os._exit(3)


class NeverBuilt(nn.Module):
    def forward(self, x):
        return x
