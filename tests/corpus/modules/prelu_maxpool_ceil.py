"""Face-detector stem (MTCNN P-Net): PReLU and max pooling with ceil_mode."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 10, 3)
        self.prelu1 = nn.PReLU(10)
        self.pool1 = nn.MaxPool2d(2, 2, ceil_mode=True)
        self.conv2 = nn.Conv2d(10, 16, 3)
        self.prelu2 = nn.PReLU(16)

    def forward(self, x):
        return self.prelu2(self.conv2(self.pool1(self.prelu1(self.conv1(x)))))


def example_inputs():
    return (torch.randn(1, 3, 15, 15),)
