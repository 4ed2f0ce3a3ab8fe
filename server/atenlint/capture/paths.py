"""Which files are the user's and which are libraries (torch, site-packages, the stdlib).

An op is reported at the innermost call site in the user's own files; library frames
only serve as related information. Runs inside the worker.
"""

from __future__ import annotations

import os
import sys
import sysconfig

import torch


def _library_prefixes() -> tuple[str, ...]:
    paths = {sysconfig.get_paths().get(key) for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    paths |= {p for p in sys.path if os.path.basename(p) in ("site-packages", "dist-packages")}
    paths.add(os.path.dirname(torch.__file__))
    return tuple(sorted(os.path.abspath(p) + os.sep for p in paths if p))


LIBRARY_PREFIXES = _library_prefixes()


def is_library_file(path: str) -> bool:
    return path.startswith("<") or os.path.abspath(path).startswith(LIBRARY_PREFIXES)
