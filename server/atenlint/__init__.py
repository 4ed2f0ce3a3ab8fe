"""atenlint: find the PyTorch operators your nn.Module code uses that will not run on your target backend."""

__version__ = "0.1.0"
