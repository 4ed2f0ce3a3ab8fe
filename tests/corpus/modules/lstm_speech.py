"""Speech command classifier: bidirectional LSTM over log-mel frames."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, mels: int = 8, hidden: int = 16, classes: int = 4):
        super().__init__()
        self.lstm = nn.LSTM(mels, hidden, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(2 * hidden, classes)

    def forward(self, frames):
        out, _ = self.lstm(frames)
        return self.fc(out[:, -1])


def example_inputs():
    return (torch.randn(1, 10, 8),)
