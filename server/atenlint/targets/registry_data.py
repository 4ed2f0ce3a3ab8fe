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
    from ..worker.protocol import TargetDataParams

_TIMEOUT = 300.0


def _no_log(message: str) -> None:
    pass


_ATTEMPTS = 2  # a read that fails (first seen under heavy load) is tried once more

SECTIONS = ("core_aten", "onnx_torchscript", "onnx_dynamo", "executorch", "coreml")


class RegistryUnavailable(Exception):
    """An installed exporter's support table could not be read, twice: atenlint's own
    failure, never a verdict (an empty allow-list would make every op an error, and a
    "not judged" note would hide that the target was asked for)."""

    def __init__(self, target: str, cause: str):
        super().__init__(f"cannot read the support table for {target}: {cause}")
        self.target = target
        self.cause = cause


def load(pool: WorkerPool, log: Callable[[str], None] = _no_log) -> dict[str, Any]:
    """The tables, from the disk cache or the worker; a failed read is retried once, then
    raises RegistryUnavailable. A table that failed is returned marked `failed` (its
    target raises when it is built) and never cached."""
    versions: dict[str, Any] = _ask(pool, {"versions_only": True}, log)
    digest = hashlib.sha256(json.dumps(versions, sort_keys=True).encode()).hexdigest()[:16]
    path = os.path.join(cache_dir(), f"target-data-{digest}.json")
    cached = read_json(path)
    if isinstance(cached, dict) and cached.get("versions") == versions and not failed_sections(cached):
        return cached
    data: dict[str, Any] = {}
    for attempt in range(_ATTEMPTS):
        data = _ask(pool, {}, log)
        if not failed_sections(data):
            break
        if attempt + 1 < _ATTEMPTS:
            log(f"reading the exporter registries failed ({_causes(data)}): trying again")
    log(f"exporter registries read in {data.get('seconds', 0):.1f}s ({_describe(versions)})")
    if data.get("versions") == versions and not failed_sections(data):
        write_json(path, data)
    return data


def _ask(pool: WorkerPool, params: TargetDataParams, log: Callable[[str], None]) -> Any:
    from ..worker.pool import RequestError, WorkerFailure

    for attempt in range(_ATTEMPTS):
        try:
            return pool.request("target_data", params, _TIMEOUT)
        except (RequestError, WorkerFailure) as error:
            cause = str(error)
            if attempt + 1 < _ATTEMPTS:
                log(f"reading the exporter registries failed ({cause}): trying again")
    raise RegistryUnavailable("the exporter registries", cause)


def failed_sections(data: dict[str, Any]) -> dict[str, str]:
    """Tables of installed packages whose read raised: section -> cause."""
    out = {}
    for name in SECTIONS:
        table = data.get(name)
        if isinstance(table, dict) and table.get("failed"):
            out[name] = str(table.get("reason"))
    return out


def _causes(data: dict[str, Any]) -> str:
    return "; ".join(f"{name}: {cause}" for name, cause in failed_sections(data).items())


def require(data: dict[str, Any] | None, target: str, names: tuple[str, ...]) -> None:
    """Raise RegistryUnavailable when a table `target` is judged with failed to read."""
    for name, cause in failed_sections(data or {}).items():
        if name in names:
            raise RegistryUnavailable(target, f"{name}: {cause}")


def _describe(versions: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in versions.items() if k != "format" and v)


def section(data: dict[str, Any] | None, name: str) -> dict[str, Any]:
    """One registry's table, or an unavailable marker with the reason."""
    if data is None:
        return {"available": False, "reason": "the exporter registries could not be read"}
    table: dict[str, Any] = data.get(name) or {"available": False, "reason": f"no {name} data"}
    return table
