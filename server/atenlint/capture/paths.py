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


_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
# torch's own machinery (dispatch, tracing, export, decomposition, module call plumbing):
# never "where the op is called". A frame here is skipped when a stack is read back to the
# user's call, by the dispatcher trace (trace.py) and by the toolchain graphs (graphs.py)
# alike; a torch frame not listed (`nn/functional.py`) stays, as a library site.
TORCH_PLUMBING = tuple(
    os.path.join(_TORCH_DIR, p)
    for p in (
        "_compile.py",
        "_decomp/",
        "_dynamo/",
        "_export/",
        "_functorch/",
        "_jit_internal.py",
        "_library/",
        "_meta_registrations.py",
        "_ops.py",
        "_prims_common/",
        "_refs/",
        "_subclasses/",
        "_tensor.py",
        "export/",
        "fx/",
        "jit/",
        "nn/modules/module.py",
        "onnx/",
        "overrides.py",
        "utils/_contextlib.py",
        "utils/_python_dispatch.py",
        "utils/_stats.py",
    )
)
