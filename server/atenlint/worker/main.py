"""Worker process entry point: `python -m atenlint.worker.main`.

Speaks JSON lines on a private copy of the original stdout; the user's code gets
stderr as its stdout and /dev/null as its stdin, so a stray print or input() can
neither corrupt nor stall the protocol. Needs only the standard library and torch.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
import warnings


def _claim_stdio():
    protocol_in = os.fdopen(os.dup(0), "r", encoding="utf-8")
    protocol_out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - lives as long as the process
    sys.stdout = sys.stderr
    return protocol_in, protocol_out


def _hello() -> dict:
    started = time.perf_counter()
    import importlib.util

    import torch

    from atenlint.capture import file_capture  # noqa: F401 - warm the capture code too
    from atenlint.capture.decompose import warm_up

    warm_up()

    torchgen = importlib.util.find_spec("torchgen")
    native_yaml = None
    if torchgen is not None and torchgen.submodule_search_locations:
        native_yaml = os.path.join(list(torchgen.submodule_search_locations)[0],
                                   "packaged", "ATen", "native", "native_functions.yaml")

    return {
        "torch": torch.__version__.split("+")[0],
        "torch_full": torch.__version__,
        "torch_dir": os.path.dirname(torch.__file__),
        "python": sys.version.split()[0],
        "native_yaml": native_yaml,
        "executable": sys.executable,
        "pid": os.getpid(),
        # Kernels registered from Python (torch.library) are not in native_functions.yaml.
        "registered_kernels": {key: sorted(torch._C._dispatch_get_registrations_for_dispatch_key(key))
                               for key in ("MPS", "CUDA")},
        "import_seconds": time.perf_counter() - started,
    }


def _analyse(params: dict) -> dict:
    from atenlint.capture.file_capture import capture_file

    return capture_file(params)


def _static(params: dict) -> dict:
    from atenlint.capture.static import static_capture

    return static_capture(params)


def _loaded_packages(params: dict) -> list:
    """Top-level packages imported so far (the tests check pygls and yaml never are)."""
    return sorted({name.split(".")[0] for name in sys.modules})


def _target_data(params: dict) -> dict:
    """The installed exporters' support tables (`versions_only`: just their versions, the cache key)."""
    from atenlint.probe import registries

    return registries.versions() if params.get("versions_only") else registries.tables_in_subprocess()


_METHODS = {"hello": lambda params: _hello(), "analyse": _analyse, "static": _static,
            "loaded_packages": _loaded_packages, "target_data": _target_data}


def main() -> int:
    protocol_in, protocol_out = _claim_stdio()
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    for line in protocol_in:
        if not line.strip():
            continue
        request = json.loads(line)
        method = request.get("method")
        if method == "shutdown":
            break
        try:
            reply = {"id": request.get("id"), "result": _METHODS[method](request.get("params") or {})}
        except BaseException as error:  # noqa: BLE001 - a failed request must not end the worker
            if isinstance(error, KeyboardInterrupt):
                raise
            reply = {"id": request.get("id"),
                     "error": {"type": type(error).__name__, "message": str(error),
                               "trace": traceback.format_exc()[-4000:]}}
        protocol_out.write(json.dumps(reply, default=repr) + "\n")
        protocol_out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
