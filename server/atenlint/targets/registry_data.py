"""The installed exporters' support tables, asked of the worker (it alone may import torch
and the optional packages) and cached on disk by the packages' exact versions."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..cache import cache_dir, read_json, write_json

if TYPE_CHECKING:
    from ..worker.pool import WorkerPool

_TIMEOUT = 300.0


def _no_log(message: str) -> None:
    pass


def load(pool: WorkerPool, log: Callable[[str], None] = _no_log) -> dict[str, Any]:
    versions: dict[str, Any] = pool.request("target_data", {"versions_only": True}, _TIMEOUT)
    digest = hashlib.sha256(json.dumps(versions, sort_keys=True).encode()).hexdigest()[:16]
    path = os.path.join(cache_dir(), f"target-data-{digest}.json")
    cached = read_json(path)
    if isinstance(cached, dict) and cached.get("versions") == versions:
        return cached
    data: dict[str, Any] = pool.request("target_data", {}, _TIMEOUT)
    log(f"exporter registries read in {data.get('seconds', 0):.1f}s ({_describe(versions)})")
    if data.get("versions") == versions:
        write_json(path, data)
    return data


def _describe(versions: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in versions.items() if k != "format" and v)


def section(data: dict[str, Any] | None, name: str) -> dict[str, Any]:
    """One registry's table, or an unavailable marker with the reason."""
    if data is None:
        return {"available": False, "reason": "the exporter registries could not be read"}
    table: dict[str, Any] = data.get(name) or {"available": False, "reason": f"no {name} data"}
    return table
