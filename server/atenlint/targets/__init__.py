"""Targets: op -> verdict, one module per backend, each judged from its own package data.

`data/` holds the few facts no installable package ships, each naming its source.
"""

from __future__ import annotations

from .mps import MpsOptions, MpsTarget
from .native_table import NativeTable


def build_targets(settings, native: NativeTable, hello: dict) -> list:
    """The targets a project asks for, ready to judge call trees."""
    built = []
    for name in settings.targets:
        if name == "mps":
            built.append(MpsTarget(native, hello.get("registered_kernels", {}).get("MPS", ()),
                                   MpsOptions(fallback_enabled=settings.mps_fallback)))
    return built
