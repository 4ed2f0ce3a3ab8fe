import torch
import torch.nn as nn

from base import Backbone


class ProbitNet(Backbone):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x)
