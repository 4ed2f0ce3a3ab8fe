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
from collections.abc import Callable
from typing import Any, cast

from .protocol import PROTOCOL_VERSION, FileAnswer, Hello, ProtocolError, check_request, error_reply, partial, reply

PartialSink = Callable[[FileAnswer], None]


def _claim_stdio() -> tuple[Any, Any]:
    protocol_in = os.fdopen(os.dup(0), "r", encoding="utf-8")
    protocol_out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - lives as long as the process
    sys.stdout = sys.stderr
    return protocol_in, protocol_out


def _hello() -> Hello:
    started = time.perf_counter()
    import importlib.util

    import torch

    from atenlint import torchcompat
    from atenlint.capture import file_capture  # noqa: F401 - warm the capture code too
    from atenlint.capture.decompose import warm_up

    warm_up()
    from atenlint.capture.loader import protect_loaded_modules

    protect_loaded_modules()  # from now on a workspace file never stands in for these

    torchgen = importlib.util.find_spec("torchgen")
    native_yaml = None
    if torchgen is not None and torchgen.submodule_search_locations:
        native_yaml = os.path.join(
            next(iter(torchgen.submodule_search_locations)), "packaged", "ATen", "native", "native_functions.yaml"
        )

    return {
        "protocol": PROTOCOL_VERSION,
        "torch": torch.__version__.split("+")[0],
        "torch_full": torch.__version__,
        "torch_dir": os.path.dirname(torch.__file__),
        "python": sys.version.split()[0],
        "native_yaml": native_yaml,
        "executable": sys.executable,
        "pid": os.getpid(),
        # Kernels registered from Python (torch.library) are not in native_functions.yaml.
        "registered_kernels": {key: sorted(torchcompat.registrations_for_key(key)) for key in ("MPS", "CUDA")},
        # The capabilities this torch lacks (private APIs it moved), each with what is lost.
        "torch_degraded": torchcompat.probe_all(),
        "import_seconds": time.perf_counter() - started,
        "sandbox": _sandbox_installed(),
        "run_dir": _Options.run_dir,
        "isolated": bool(sys.flags.isolated),
    }


class _Options:
    run_dir = ""
    sandbox = True


def _analyse(params: dict[str, Any], send_partial: PartialSink | None = None) -> FileAnswer:
    from atenlint.capture.file_capture import capture_file

    if send_partial is None or not params.get("partial"):
        return _isolated(lambda p, _: capture_file(p), params)
    return _isolated(lambda p, sink: capture_file(p, on_partial=sink), params, send_partial)


def _static(params: dict[str, Any], send_partial: PartialSink | None = None) -> FileAnswer:
    from atenlint.capture.static import static_capture

    return _isolated(lambda p, _: static_capture(p), params)


class _Recycle(Exception):
    """Carries an answer whose analysis left state that could not be reset."""

    def __init__(self, answer: Any, reason: str):
        super().__init__(reason)
        self.answer, self.reason = answer, reason


# An analysis gets the request's params and where to offer its partial answer (a plain dict).
Analysis = Callable[[dict[str, Any], Callable[[dict[str, Any]], None]], Any]


def _isolated(function: Analysis, params: dict[str, Any], send_partial: PartialSink | None = None) -> FileAnswer:
    """Run one analysis in the sandbox, then put the worker's state back as it was.
    `send_partial`: where the dispatcher-view answer goes when the analysis offers it
    (at most once, with the real path and the refusals so far)."""
    from . import state
    from .sandbox import SANDBOX

    _install_sandbox()
    roots = [os.path.abspath(r) for r in params.get("roots", []) if r]
    path = params.get("path") or ""
    params, alias = _alias_awkward_name(params)
    before = state.snapshot()
    answer: dict[str, Any] = {}
    sent = [send_partial is None]

    def on_partial(early: dict[str, Any]) -> None:
        if sent[0] or send_partial is None or not isinstance(early, dict):
            return
        sent[0] = True
        early = _mark_refused(dict(early, partial=True, refusals=_refusals_so_far()))
        send_partial(cast(FileAnswer, _replace_strings(early, alias, path) if alias is not None else early))

    try:
        with SANDBOX.analysing(path, roots) as refusals:
            answer = function(params, on_partial)
    finally:
        problems = state.restore(before, _user_modules(roots, before.modules), _user_files(roots, path))
    if alias is not None:
        answer = _replace_strings(answer, alias, path)
    answer["refusals"] = refusals
    _note_degradations(answer)
    _mark_refused(answer)
    if problems:
        raise _Recycle(answer, "; ".join(problems))
    return answer  # type: ignore[return-value]  # the capture code builds a FileAnswer


def _note_degradations(answer: dict[str, Any]) -> None:
    """The torch capabilities found missing so far (torchcompat), when any: what this
    answer could not see, in words."""
    from atenlint import torchcompat

    degraded = torchcompat.degradations()
    if degraded:
        answer["torch_degraded"] = degraded


def _mark_refused(answer: dict[str, Any]) -> dict[str, Any]:
    error = answer.get("import_error")
    if error and error.get("type") == "SandboxRefusal":
        error["refused"] = True  # the refusal is the diagnostic (ATL012), not a failed import
    return answer


def _refusals_so_far() -> list[Any]:
    """What the sandbox refused so far in this analysis (the final answer has them all):
    the partial answer carries them too, so its ATL012 diagnostics do not blink."""
    from .sandbox import SANDBOX

    pending = getattr(SANDBOX, "_refusals", None)  # the sandbox's own record of this analysis
    if not isinstance(pending, dict):
        return []
    try:
        return [refusal.as_json() for refusal in list(pending.values())]
    except Exception:  # noqa: BLE001 - a partial answer without them is still right
        return []


def _alias_awkward_name(params: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
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


def _user_modules(roots: list[str], before: Any) -> Callable[[Any], bool]:
    from atenlint.capture.paths import is_library_file

    prefixes = tuple(r.rstrip(os.sep) + os.sep for r in roots)

    def is_user(module: Any) -> bool:
        found = [getattr(module, "__file__", None), *list(getattr(module, "__path__", None) or [])]
        locations = [os.path.abspath(p) for p in found if isinstance(p, str) and p]
        if not locations:  # made at run time: the file's, unless a library's package holds it
            name = getattr(module, "__name__", "") or ""
            return isinstance(name, str) and name.split(".")[0] not in before
        return any(p.startswith(prefixes) and not is_library_file(p) for p in locations)

    return is_user


def _sandbox_installed() -> bool:
    _install_sandbox()
    return _Options.sandbox


def _install_sandbox() -> None:
    from .sandbox import SANDBOX

    if not SANDBOX.installed and _Options.sandbox:
        SANDBOX.install(_Options.run_dir or os.getcwd())


def _loaded_packages(params: dict[str, Any]) -> list[str]:
    """Top-level packages imported so far (the tests check pygls and yaml never are)."""
    return sorted({name.split(".")[0] for name in sys.modules})


def _target_data(params: dict[str, Any]) -> Any:
    """The installed exporters' support tables (`versions_only`: just their versions, the cache key)."""
    from atenlint.probe import registries

    from .sandbox import SANDBOX

    if params.get("versions_only"):
        return registries.versions()
    with SANDBOX.permitted():  # atenlint's own child process, never the user's code
        return registries.tables_in_subprocess()


Handler = Callable[[dict[str, Any], PartialSink | None], Any]
_METHODS: dict[str, Handler] = {
    "hello": lambda params, _: _hello(),
    "analyse": _analyse,
    "static": _static,
    "loaded_packages": lambda params, _: _loaded_packages(params),
    "target_data": lambda params, _: _target_data(params),
}


def _write(out: Any, message: Any) -> None:
    out.write(json.dumps(message, default=repr) + "\n")
    out.flush()


def _answer(line: str, out: Any) -> bool:
    """Answer one request line (partials first, then one reply); False on shutdown."""
    try:
        raw = json.loads(line)
    except ValueError:
        return True  # not a message: the parent only sends JSON lines
    raw_id = raw.get("id") if isinstance(raw, dict) else None
    request_id = raw_id if isinstance(raw_id, int) and not isinstance(raw_id, bool) else None
    try:
        request = check_request(raw)
    except ProtocolError as error:
        _write(out, error_reply(request_id, "ProtocolError", str(error)))
        return True
    if request["method"] == "shutdown":
        return False

    def send_partial(answer: FileAnswer) -> None:
        if request_id is not None:
            _write(out, partial(request_id, answer))

    try:
        message = reply(request_id, _METHODS[request["method"]](request.get("params") or {}, send_partial))
    except _Recycle as recycle:
        message = reply(request_id, recycle.answer, recycle.reason)
    except BaseException as error:  # a failed request must not end the worker
        if isinstance(error, KeyboardInterrupt):
            raise
        message = error_reply(request_id, type(error).__name__, str(error), traceback.format_exc()[-4000:])
    _write(out, message)
    return True


def main(argv: list[str] | None = None) -> int:
    """`argv`: [run folder, "sandbox" | "no-sandbox"] (from pool.py's bootstrap)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    _Options.run_dir = os.path.realpath(argv[0]) if argv else os.getcwd()
    _Options.sandbox = (argv[1] if len(argv) > 1 else "sandbox") != "no-sandbox"
    # No bytecode is written next to the user's sources (nor anywhere). Not a pycache_prefix
    # in the run folder: Python then reads bytecode only from there, so every worker would
    # compile torch._dynamo and the rest from source again (2.7x the CPU of a start).
    sys.dont_write_bytecode = True
    protocol_in, protocol_out = _claim_stdio()
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    for line in protocol_in:
        if line.strip() and not _answer(line, protocol_out):
            break
    protocol_out.flush()
    # No atexit handlers or finalizers of the analysed code run on the way out.
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
