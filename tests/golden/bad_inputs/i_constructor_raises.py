import torch
import torch.nn as nn


class LoadsWeights(nn.Module):
    def __init__(self, path: str = "/nonexistent/weights.pt"):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.load_state_dict(torch.load(path))

    def forward(self, x):
        return self.lin(x)
