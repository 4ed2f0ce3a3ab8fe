"""Since which torch release an aten overload has an MPS kernel, from the table that
`scripts/gen_mps_history.py` derives from released wheels' `native_functions.yaml`."""

from __future__ import annotations

import functools
import json
import os
from typing import Any, TypedDict

from ..versions import major_minor as _key

DATA = os.path.join(os.path.dirname(__file__), "data", "mps_history.json")


class History(TypedDict):
    """data/mps_history.json: per overload, the release spans with an MPS kernel."""

    versions: dict[str, Any]  # release -> where its table was read from
    ops: dict[str, list[tuple[str, str | None]]]  # op -> [(first, last or None: still has one)]


@functools.lru_cache(maxsize=4)
def load(path: str = DATA) -> History:
    with open(path, encoding="utf-8") as handle:
        data: History = json.load(handle)
    return data


def releases(path: str = DATA) -> list[str]:
    return list(load(path)["versions"])


def has_kernel(op: str, version: str, path: str = DATA) -> bool | None:
    """Whether `op` had an MPS kernel in release `version` (None: release not in the table)."""
    data = load(path)
    wanted = _key(version)
    if not any(_key(v) == wanted for v in data["versions"]):
        return None
    for first, last in data["ops"].get(op, []):
        if _key(first) <= wanted and (last is None or wanted <= _key(last)):
            return True
    return False


def supported_from(op: str, installed: str, path: str = DATA) -> str | None:
    """The first release newer than `installed` from which `op` has an MPS kernel in every
    later release listed; None when no newer release has one."""
    data = load(path)
    now = _key(installed)
    for first, last in data["ops"].get(op, []):
        if _key(first) > now and last is None:
            return first
    return None


def newest(path: str = DATA) -> str:
    newest_release: str = max(load(path)["versions"], key=_key)
    return newest_release


def built_from(path: str = DATA) -> str:
    """Which wheels the table was read from, for `atenlint targets`: "torch 2.0.1, 2.1.2, ...,
    2.15.0 (16 releases)"."""
    rows = load(path)["versions"]
    ordered = sorted(rows, key=_key)
    wheels = [str(rows[minor].get("release", minor)) for minor in ordered]
    return f"torch {', '.join(wheels)} ({len(wheels)} releases)"
