"""Where atenlint keeps derived tables between runs."""

from __future__ import annotations

import json
import os
import sys
from typing import Any


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


def read_json(path: str) -> Any:
    """A cached JSON value, or None when it is missing or unreadable."""
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def write_json(path: str, data: Any) -> None:
    """Write atomically (a concurrent reader never sees half a file); a cache that cannot
    be written is only slower next time."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(data, handle)
        os.replace(tmp, path)
    except OSError:
        pass
