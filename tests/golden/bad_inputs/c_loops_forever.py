import torch.nn as nn

while True:
    pass


class NeverReached(nn.Module):
    def forward(self, x):
        return x
