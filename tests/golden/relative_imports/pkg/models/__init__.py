from .gated import GatedMLP

__all__ = ["GatedMLP"]
