"""Worker process entry point, started isolated by `pool.py` (`python -I`, from its own
temporary folder, atenlint loaded from an explicit location): no file of the user's
workspace is on `sys.path` until an analysis appends the project's roots, after the
standard library and torch.

Speaks JSON lines on a private copy of the original stdout; the user's code gets
stderr as its stdout and /dev/null as its stdin, so a stray print or input() can
neither corrupt nor stall the protocol. Every analysis runs inside the sandbox
(`sandbox.py`) and is followed by a state reset (`state.py`); when the state cannot be
reset, the answer asks the parent to recycle this worker. Needs only the standard
library and torch.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
import warnings
from typing import Any, Callable, Optional


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
    from atenlint.capture.loader import protect_loaded_modules

    protect_loaded_modules()  # from now on a workspace file never stands in for these

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
        "sandbox": _install_sandbox() or _Options.sandbox,
        "run_dir": _Options.run_dir,
        "isolated": bool(sys.flags.isolated),
    }


class _Options:
    run_dir = ""
    sandbox = True


def _analyse(params: dict) -> dict:
    from atenlint.capture.file_capture import capture_file

    return _isolated(capture_file, params)


def _static(params: dict) -> dict:
    from atenlint.capture.static import static_capture

    return _isolated(static_capture, params)


class _Recycle(Exception):
    """Carries an answer whose analysis left state that could not be reset."""

    def __init__(self, answer: Any, reason: str):
        super().__init__(reason)
        self.answer, self.reason = answer, reason


def _isolated(function: Callable[[dict], dict], params: dict) -> dict:
    """Run one analysis in the sandbox, then put the worker's state back as it was."""
    from . import state
    from .sandbox import SANDBOX

    _install_sandbox()
    roots = [os.path.abspath(r) for r in params.get("roots", []) if r]
    path = params.get("path") or ""
    params, alias = _alias_awkward_name(params)
    before = state.snapshot()
    answer: dict = {}
    try:
        with SANDBOX.analysing(path, roots) as refusals:
            answer = function(params)
    finally:
        problems = state.restore(before, _user_modules(roots, before.modules), _user_files(roots, path))
    if alias is not None:
        answer = _replace_strings(answer, alias, path)
    answer["refusals"] = refusals
    error = answer.get("import_error")
    if error and error.get("type") == "SandboxRefusal":
        error["refused"] = True  # the refusal is the diagnostic (ATL012), not a failed import
    if problems:
        raise _Recycle(answer, "; ".join(problems))
    return answer


def _alias_awkward_name(params: dict) -> tuple[dict, Optional[str]]:
    """A file whose name holds a line break is imported through a plainly named link in
    the run folder: TorchScript's source locations (`# file:line:col`) cannot carry the
    break, and the answer names the real path again (`_replace_strings`)."""
    path = params.get("path") or ""
    if not any(c in os.path.basename(path) for c in "\n\r"):
        return params, None
    import hashlib

    folder = os.path.join(_Options.run_dir or os.getcwd(), "aliases")
    os.makedirs(folder, exist_ok=True)
    digest = hashlib.sha1(path.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    alias = os.path.join(folder, f"file_{digest}.py")
    if not os.path.lexists(alias):
        os.symlink(path, alias)
    params = dict(params, path=alias)
    if path in (params.get("overlays") or {}):
        params["overlays"] = dict(params["overlays"], **{alias: params["overlays"][path]})
    return params, alias


def _replace_strings(value: Any, old: str, new: str) -> Any:
    if isinstance(value, str):
        return new if value == old else value
    if isinstance(value, list):
        return [_replace_strings(v, old, new) for v in value]
    if isinstance(value, dict):
        return {k: _replace_strings(v, old, new) for k, v in value.items()}
    return value


def _user_files(roots: list[str], path: str) -> Callable[[str], bool]:
    from atenlint.capture.paths import is_library_file

    prefixes = tuple(os.path.realpath(r).rstrip(os.sep) + os.sep for r in roots + [os.path.dirname(path)] if r)

    def is_user(filename: str) -> bool:
        if not filename or filename.startswith("<"):
            return False
        real = os.path.realpath(filename)
        return real.startswith(prefixes) and not is_library_file(real)

    return is_user


def _user_modules(roots: list[str], before: dict) -> Callable[[Any], bool]:
    from atenlint.capture.paths import is_library_file

    prefixes = tuple(r.rstrip(os.sep) + os.sep for r in roots)

    def is_user(module: Any) -> bool:
        locations = [getattr(module, "__file__", None)] + list(getattr(module, "__path__", None) or [])
        locations = [os.path.abspath(p) for p in locations if isinstance(p, str) and p]
        if not locations:  # made at run time: the file's, unless a library's package holds it
            name = getattr(module, "__name__", "") or ""
            return isinstance(name, str) and name.split(".")[0] not in before
        return any(p.startswith(prefixes) and not is_library_file(p) for p in locations)

    return is_user


def _install_sandbox() -> None:
    from .sandbox import SANDBOX

    if not SANDBOX.installed and _Options.sandbox:
        SANDBOX.install(_Options.run_dir or os.getcwd())


def _loaded_packages(params: dict) -> list:
    """Top-level packages imported so far (the tests check pygls and yaml never are)."""
    return sorted({name.split(".")[0] for name in sys.modules})


def _target_data(params: dict) -> dict:
    """The installed exporters' support tables (`versions_only`: just their versions, the cache key)."""
    from atenlint.probe import registries

    from .sandbox import SANDBOX

    if params.get("versions_only"):
        return registries.versions()
    with SANDBOX.permitted():  # atenlint's own child process, never the user's code
        return registries.tables_in_subprocess()


_METHODS = {"hello": lambda params: _hello(), "analyse": _analyse, "static": _static,
            "loaded_packages": _loaded_packages, "target_data": _target_data}


def main(argv: Optional[list] = None) -> int:
    """`argv`: [run folder, "sandbox" | "no-sandbox"] (from pool.py's bootstrap)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    _Options.run_dir = os.path.realpath(argv[0]) if argv else os.getcwd()
    _Options.sandbox = (argv[1] if len(argv) > 1 else "sandbox") != "no-sandbox"
    # Bytecode of imported files goes to the run folder, never next to the user's sources.
    sys.pycache_prefix = os.path.join(_Options.run_dir, "pycache")
    protocol_in, protocol_out = _claim_stdio()
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    for line in protocol_in:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
        except ValueError:
            continue
        method = request.get("method")
        if method == "shutdown":
            break
        try:
            reply = {"id": request.get("id"), "result": _METHODS[method](request.get("params") or {})}
        except _Recycle as recycle:
            reply = {"id": request.get("id"), "result": recycle.answer, "recycle": recycle.reason}
        except BaseException as error:  # noqa: BLE001 - a failed request must not end the worker
            if isinstance(error, KeyboardInterrupt):
                raise
            reply = {"id": request.get("id"),
                     "error": {"type": type(error).__name__, "message": str(error),
                               "trace": traceback.format_exc()[-4000:]}}
        protocol_out.write(json.dumps(reply, default=repr) + "\n")
        protocol_out.flush()
    protocol_out.flush()
    # No atexit handlers or finalizers of the analysed code run on the way out.
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
