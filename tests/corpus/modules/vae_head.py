"""VAE encoder head: mean and log-variance, KL term with exp and sum."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int = 16, latent: int = 4):
        super().__init__()
        self.mu = nn.Linear(dim, latent)
        self.logvar = nn.Linear(dim, latent)

    def forward(self, h):
        mu, logvar = self.mu(h), self.logvar(h)
        kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp(), dim=-1)
        return mu, kl


def example_inputs():
    return (torch.randn(2, 16),)
