"""Where atenlint keeps derived tables between runs."""

from __future__ import annotations

import os
import sys


def cache_dir() -> str:
    """$ATENLINT_CACHE_DIR, else the platform's user cache folder; created on first use."""
    override = os.environ.get("ATENLINT_CACHE_DIR")
    if override:
        path = override
    elif sys.platform == "darwin":
        path = os.path.expanduser("~/Library/Caches/atenlint")
    elif os.name == "nt":
        path = os.path.join(os.environ.get("LOCALAPPDATA", os.path.expanduser("~")), "atenlint", "Cache")
    else:
        path = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "atenlint")
    os.makedirs(path, exist_ok=True)
    return path
