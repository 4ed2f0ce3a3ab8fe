# -*- coding: latin-1 -*-
import torch
import torch.nn as nn

# café: declared, so Python reads it fine


class Declared(nn.Module):
    def forward(self, x):
        return torch.mode(x).values
