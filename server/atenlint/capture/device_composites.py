"""Composites a device runs whole: `torch.linalg.svd` on MPS.

`aten::linalg_svd` is CompositeImplicitAutograd, so on a CPU, meta or fake tensor it
decomposes into `aten::_linalg_svd` before any dispatch mode sees it. But MPSFallback.mm
registers `linalg_svd` itself for MPS (to the CPU fallback), and a backend kernel wins over
the composite: on a Mac the call never decomposes, runs on the CPU and warns "The operator
'aten::linalg_svd' is not currently supported on the MPS backend and will fall back to run
on the CPU". The scripted graph keeps `aten::linalg_svd`; so must a trace, or the same call
gets two verdicts (MPS002 without inputs, MPS001 for `_linalg_svd.U` with them).

The composites concerned are the forced fallbacks of `targets/data/mps_forced_fallbacks.json`
(the release nearest the installed torch) that are composites in this torch. Runs in the
worker: the standard library and torch only.
"""

from __future__ import annotations

import functools
import json
import os
from typing import Any

import torch

from .. import torchcompat
from ..versions import major_minor

_FORCED = os.path.join(os.path.dirname(os.path.dirname(__file__)), "targets", "data", "mps_forced_fallbacks.json")


@functools.lru_cache(maxsize=1)
def kept_composites(path: str = _FORCED) -> frozenset[str]:
    """Base names ("aten::linalg_svd") of the composites a device backend registers whole."""
    try:
        with open(path, encoding="utf-8") as handle:
            versions: dict[str, dict[str, list[str]]] = json.load(handle)["versions"]
    except (OSError, ValueError, KeyError):
        return frozenset()
    wanted = major_minor(torch.__version__)
    known = sorted(versions, key=major_minor)
    usable = [v for v in known if major_minor(v) <= wanted] or known[:1]
    if not usable:
        return frozenset()
    names = {op.split(".", 1)[0] for op in versions[usable[-1]]["ops"]}
    return frozenset(name for name in names if _is_composite(name))


def _is_composite(name: str) -> bool:
    namespace, _, op = name.partition("::")
    packet = getattr(getattr(torch.ops, namespace, None), op, None)
    overload = getattr(packet, "default", None)
    if overload is None:
        return False
    try:
        return torchcompat.op_has_kernel(overload, "CompositeImplicitAutograd")
    except Exception:  # noqa: BLE001 - an op this torch does not know the way the data says
        return False


def kept_composite(function: Any) -> str | None:
    """The composite a device runs whole that this Python-level torch call is, or None."""
    name = torchcompat.builtin_name(function)
    if name is None:
        return None
    base = name.split(".", 1)[0]
    return base if base in kept_composites() else None
