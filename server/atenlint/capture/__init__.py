"""Capture: a built nn.Module -> the aten calls it makes, with the source sites that lead to them.

Everything in this package runs in the worker process and needs only the standard
library and torch.
"""
