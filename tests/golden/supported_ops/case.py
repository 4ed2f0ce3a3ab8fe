"""Common layers with MPS kernels in torch 2.13: nothing here may be reported."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class EverydayLayers(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1d = nn.Conv1d(4, 8, 3)
        self.conv2d = nn.Conv2d(3, 8, 3, padding=1)
        self.conv3d = nn.Conv3d(3, 8, 3)
        self.deconv = nn.ConvTranspose2d(8, 4, 2, stride=2)
        self.bn = nn.BatchNorm2d(8)
        self.ln = nn.LayerNorm(8)
        self.gn = nn.GroupNorm(2, 8)
        self.embed = nn.Embedding(100, 8)
        self.attn = nn.MultiheadAttention(8, 2, batch_first=True)
        self.lstm = nn.LSTM(8, 8, batch_first=True)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 10)
        self.drop = nn.Dropout(0.1)

    def forward(self, image, volume, signal, tokens):
        x = F.gelu(self.bn(self.conv2d(image)))
        x = F.max_pool2d(x, 2)
        x = self.gn(self.deconv(x))
        v = F.silu(self.conv3d(volume)).mean(dim=(2, 3, 4))
        s = torch.relu(self.conv1d(signal)).amax(dim=-1)
        t = self.ln(self.embed(tokens))
        t, _ = self.attn(t, t, t)
        t, _ = self.lstm(t)
        q = F.scaled_dot_product_attention(t, t, t, is_causal=True)
        logits = self.fc(self.drop(self.pool(x).flatten(1) + v + s + q.mean(1)))
        probs = torch.softmax(logits, dim=-1) @ torch.eye(10, device=logits.device)
        return torch.cumsum(probs, dim=-1), torch.topk(probs, 3).indices, torch.argsort(probs)
