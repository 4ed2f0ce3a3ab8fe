"""Names in Python syntax trees: pure `ast`, so both the parent (locate.py) and the
worker's source pass (capture/static.py) can use it without importing each other's side."""

from __future__ import annotations

import ast


def dotted_name(node: ast.AST) -> str | None:
    """`torch.linalg.svdvals` for a pure Name/Attribute chain, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None
