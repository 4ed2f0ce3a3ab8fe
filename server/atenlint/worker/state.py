"""Clean state per file: what one analysed file may change in the warm worker, put back.

A file that sets `torch.set_default_dtype(torch.float64)`, installs a `warnings` filter,
enters a mode, monkeypatches `torch.nn.functional` or replaces `sys.modules["json"]` at
import would otherwise change the results of every later file. `snapshot()` records the
interpreter- and torch-wide state before a file; `restore()` puts it back afterwards and
returns the reasons (if any) why it could not, in which case the worker is recycled.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import gc
import logging
import os
import signal
import sys
import threading
import types
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from .. import torchcompat

if TYPE_CHECKING:
    from _typeshed.importlib import PathEntryFinderProtocol  # sys.path_importer_cache's values


@dataclass
class _Flag:
    name: str
    get: Callable[[], Any]
    set: Callable[[Any], None]


def _flags() -> list[_Flag]:
    """torch's global switches (each one read and written through torch's own API)."""
    flags = [
        _Flag("default dtype", torch.get_default_dtype, torch.set_default_dtype),
        _Flag("grad mode", torch.is_grad_enabled, _set_grad_enabled),
        _Flag(
            "anomaly detection",
            lambda: (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()),
            lambda v: torch.set_anomaly_enabled(*v),
        ),
        _Flag(
            "deterministic algorithms",
            lambda: (
                torch.are_deterministic_algorithms_enabled(),
                torch.is_deterministic_algorithms_warn_only_enabled(),
            ),
            lambda v: torch.use_deterministic_algorithms(v[0], warn_only=v[1]),
        ),
        _Flag("float32 matmul precision", torch.get_float32_matmul_precision, torch.set_float32_matmul_precision),
        _Flag("intra-op threads", torch.get_num_threads, torch.set_num_threads),
        _Flag("recursion limit", sys.getrecursionlimit, sys.setrecursionlimit),
        _Flag("switch interval", sys.getswitchinterval, sys.setswitchinterval),
    ]
    for label, private in (
        ("TorchScript enabled", torchcompat.jit_enabled_flag()),
        ("print options", torchcompat.print_options_flag()),
    ):
        if private is not None:  # else noted: torchcompat.WORKER_STATE
            flags.append(_Flag(label, *private))
    for label, module, names in (
        ("cudnn", torch.backends.cudnn, ("enabled", "benchmark", "deterministic", "allow_tf32")),
        ("mkldnn", torch.backends.mkldnn, ("enabled",)),
        (
            "cuda.matmul",
            torch.backends.cuda.matmul,
            ("allow_tf32", "allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction"),
        ),
    ):
        for name in names:
            if _readable(module, name):  # else a flag this torch does not have
                flags.append(_attribute_flag(f"torch.backends.{label}.{name}", module, name))
    if hasattr(sys, "get_int_max_str_digits"):
        flags.append(_Flag("int max str digits", sys.get_int_max_str_digits, sys.set_int_max_str_digits))
    return flags


def _readable(owner: Any, name: str) -> bool:
    try:
        getattr(owner, name)
    except Exception:  # noqa: BLE001 - a property that raises on this build is absent too
        return False
    return True


def _set_grad_enabled(value: Any) -> None:
    torch.set_grad_enabled(value)


def _attribute_flag(label: str, owner: Any, name: str) -> _Flag:
    def get() -> Any:
        return getattr(owner, name)

    def put(value: Any) -> None:
        setattr(owner, name, value)

    return _Flag(label, get, put)


_FLAGS: list[_Flag] | None = None

# (name, its attributes, set one, delete one)
_Namespace = tuple[str, Mapping[str, Any], Callable[[str, Any], None], Callable[[str], None]]


def _namespace_of(name: str, owner: Any) -> _Namespace:
    def put(key: str, value: Any) -> None:
        setattr(owner, key, value)

    def remove(key: str) -> None:
        delattr(owner, key)

    return name, vars(owner), put, remove


def _namespaces() -> list[_Namespace]:
    """Library namespaces that analysed code likes to monkeypatch."""
    out = [_namespace_of("builtins", builtins)]
    for module in (torch, torch.nn, torch.nn.functional, torch.nn.init, torch.jit):
        out.append(_namespace_of(module.__name__, module))
    for cls in (torch.Tensor, torch.nn.Module, torch.nn.Parameter):
        out.append(_namespace_of(f"{cls.__module__}.{cls.__qualname__}", cls))
    return out


@dataclass
class Snapshot:
    flags: dict[str, object]  # by flag name: its value before the analysis
    default_device: Any
    mode_depths: tuple[int, int] | None  # (torch function modes, dispatch modes); None: unknown
    inference_mode: bool
    warning_filters: list[Any]
    warning_hooks: tuple[Any, ...]
    logging_state: tuple[Any, ...]
    sys_hooks: tuple[Any, ...]
    sys_path: list[Any]
    meta_path: list[Any]
    path_hooks: list[Any]
    path_importer_cache: dict[str, PathEntryFinderProtocol | None]
    modules: dict[str, types.ModuleType]
    environ: dict[str, str]
    cwd: str
    signals: dict[int, Any]
    namespaces: dict[str, dict[str, object]]  # a library namespace's attributes by name
    threads: set[Any]
    script_classes: set[Any] = field(default_factory=set)


def snapshot() -> Snapshot:
    global _FLAGS
    if _FLAGS is None:
        _FLAGS = _flags()
    flags = {}
    for flag in _FLAGS:
        with contextlib.suppress(Exception):  # a flag that cannot be read is not restored either
            flags[flag.name] = flag.get()
    root = logging.getLogger()
    return Snapshot(
        flags=flags,
        default_device=_default_device(),
        mode_depths=torchcompat.mode_stack_depths(),
        inference_mode=torch.is_inference_mode_enabled(),
        warning_filters=list(warnings.filters),
        warning_hooks=(warnings.showwarning, warnings.formatwarning),
        logging_state=(list(root.handlers), root.level, logging.root.manager.disable),
        sys_hooks=(
            sys.excepthook,
            sys.displayhook,
            sys.unraisablehook,
            threading.excepthook,
            sys.gettrace(),
            sys.getprofile(),
            sys.stdout,
            sys.stderr,
            sys.stdin,
            sys.breakpointhook,
        ),
        sys_path=list(sys.path),
        meta_path=list(sys.meta_path),
        path_hooks=list(sys.path_hooks),
        path_importer_cache=dict(sys.path_importer_cache),
        modules=dict(sys.modules),
        environ=dict(os.environ),
        cwd=os.getcwd(),
        signals={s: signal.getsignal(s) for s in _catchable_signals()},
        namespaces={name: dict(namespace) for name, namespace, _, _ in _namespaces()},
        threads={t.ident for t in threading.enumerate()} | _LIBRARY_THREADS,
        script_classes=_script_classes(),
    )


def _script_classes() -> set[Any]:
    try:
        return set(torchcompat.script_classes())
    except torchcompat.Unavailable:  # restore() then asks for a fresh worker
        return set()


def _default_device() -> Any:
    try:
        return torch.get_default_device()
    except Exception:  # noqa: BLE001 - a torch without it
        return None


def _catchable_signals() -> list[int]:
    out: list[int] = []
    for number in signal.valid_signals():
        if number in (signal.SIGKILL, signal.SIGSTOP):
            continue
        try:
            signal.getsignal(number)
        except (ValueError, OSError):
            continue
        out.append(number)
    return out


def restore(
    before: Snapshot, user_module: Callable[[Any], bool], user_file: Callable[[str], bool] = lambda path: False
) -> list[str]:
    """Put everything back as `before` had it; the reasons the worker must be recycled
    (state that cannot be restored), empty when it was all restored."""
    problems: list[str] = []

    def attempt(what: str, action: Callable[[], None]) -> None:
        try:
            action()
        except Exception as error:  # noqa: BLE001 - say what could not be restored, recycle
            problems.append(f"{what} could not be restored ({type(error).__name__}: {error})")

    attempt("signal handlers", lambda: _restore_signals(before))
    # The default device is a mode on the stack: leave it through torch's API first.
    attempt("the default device", lambda: _restore_default_device(before))
    attempt("the mode stacks", lambda: _restore_modes(before, problems))
    if torch.is_inference_mode_enabled() != before.inference_mode:
        problems.append("it left inference mode switched")
    for flag in _FLAGS or ():
        if flag.name in before.flags:
            attempt(flag.name, functools.partial(_restore_flag, flag, before.flags[flag.name]))
    attempt("warnings filters", lambda: _restore_warnings(before))
    attempt("logging", lambda: _restore_logging(before))
    attempt("sys hooks", lambda: _restore_sys_hooks(before))
    attempt("import state", lambda: _restore_import_state(before, user_module))
    attempt("environment", lambda: _restore_environ(before))
    attempt("working folder", lambda: _restore_cwd(before.cwd))
    attempt("patched library attributes", lambda: _restore_namespaces(before, user_module))
    attempt("the TorchScript caches", lambda: _forget_script_types(before, user_module))
    gc.collect()
    leftover = _leftover_threads(before, user_file)
    if leftover:
        problems.append(
            f"it left {len(leftover)} thread{'s' if len(leftover) > 1 else ''} running "
            f"({', '.join(sorted(leftover)[:3])})"
        )
    return problems


def _restore_flag(flag: _Flag, value: Any) -> None:
    if flag.get() != value:
        flag.set(value)


def _restore_cwd(cwd: str) -> None:
    if os.getcwd() != cwd:
        os.chdir(cwd)


def _restore_signals(before: Snapshot) -> None:
    signal.alarm(0)
    if hasattr(signal, "setitimer"):
        for timer in (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, signal.ITIMER_PROF):
            signal.setitimer(timer, 0)
    import faulthandler

    with contextlib.suppress(Exception):
        faulthandler.cancel_dump_traceback_later()
    for number, handler in before.signals.items():
        if signal.getsignal(number) is not handler and handler is not None:
            signal.signal(number, handler)


def _restore_modes(before: Snapshot, problems: list[Any]) -> None:
    """Modes the file entered and never left (`torch.device("cuda").__enter__()`, a
    TorchDispatchMode pushed at import) come off the stacks."""
    if before.mode_depths is None:
        return  # this torch does not tell (noted: torchcompat.MODE_STACKS)
    after = torchcompat.pop_modes(*before.mode_depths)
    if after is not None and (after[0] < before.mode_depths[0] or after[1] < before.mode_depths[1]):
        problems.append("it removed atenlint's own torch modes")


def _restore_default_device(before: Snapshot) -> None:
    if _default_device() != before.default_device:
        torch.set_default_device(
            None if before.default_device in (None, torch.device("cpu")) else before.default_device
        )


def _restore_warnings(before: Snapshot) -> None:
    filters: Any = warnings.filters  # a list at run time (typeshed says Sequence)
    filters[:] = before.warning_filters
    warnings.showwarning, warnings.formatwarning = before.warning_hooks
    mutated: Callable[[], None] | None = getattr(warnings, "_filters_mutated", None)
    if mutated is not None:  # tells the C warnings module its cache is stale
        mutated()


def _restore_logging(before: Snapshot) -> None:
    root = logging.getLogger()
    handlers, level, disable = before.logging_state
    root.handlers[:] = handlers
    root.setLevel(level)
    logging.disable(disable)


def _restore_sys_hooks(before: Snapshot) -> None:
    (
        sys.excepthook,
        sys.displayhook,
        sys.unraisablehook,
        threading.excepthook,
        trace,
        profile,
        sys.stdout,
        sys.stderr,
        sys.stdin,
        sys.breakpointhook,
    ) = before.sys_hooks
    sys.settrace(trace)
    sys.setprofile(profile)
    threading.settrace(None)
    threading.setprofile(None)


def _restore_import_state(before: Snapshot, user_module: Callable[[Any], bool]) -> None:
    sys.path[:] = before.sys_path
    sys.meta_path[:] = before.meta_path
    sys.path_hooks[:] = before.path_hooks
    sys.path_importer_cache.clear()
    sys.path_importer_cache.update(before.path_importer_cache)
    # Library modules the file replaced or removed come back; the file's own modules go
    # (the next analysis sees their new text); libraries imported for the first time stay.
    for name, module in before.modules.items():
        if sys.modules.get(name) is not module:
            sys.modules[name] = module
    for name in [n for n in sys.modules if n not in before.modules]:
        if user_module(sys.modules[name]):
            del sys.modules[name]


def _restore_environ(before: Snapshot) -> None:
    if dict(os.environ) == before.environ:
        return
    for name in [n for n in os.environ if n not in before.environ]:
        del os.environ[name]
    for name, value in before.environ.items():
        if os.environ.get(name) != value:
            os.environ[name] = value


def _restore_namespaces(before: Snapshot, user_module: Callable[[Any], bool]) -> None:
    for name, namespace, put, remove in _namespaces():
        saved = before.namespaces[name]
        for key, value in saved.items():
            if namespace.get(key, _MISSING) is not value:
                put(key, value)
        for key in [k for k in namespace if k not in saved]:
            value = namespace[key]
            # A submodule imported for the first time is torch's own doing, not a patch.
            if not (type(value).__name__ == "module" and not user_module(value)):
                remove(key)


_MISSING = object()


def _forget_script_types(before: Snapshot, user_module: Callable[[Any], bool]) -> None:
    """TorchScript caches compiled types by Python class: the file's classes (dead once
    its modules are dropped) would otherwise stay compiled for the life of the worker."""
    store = torchcompat.concrete_types()  # raises Unavailable: "could not be restored", recycle
    for cls in [c for c in store if _defined_by_user(c, user_module)]:
        del store[cls]
    new_classes = [c for c in torchcompat.script_classes() if c not in before.script_classes]
    torchcompat.forget_script_classes(new_classes)
    _Counter.files += 1
    if new_classes or _Counter.files % FULL_SCRIPT_RESET_EVERY == 0:
        # Module types and their methods live in TorchScript's global compilation unit
        # under fresh mangled names per import: they are only freed by clearing it, which
        # invalidates every cached type, so the type store and class state go with it
        # (as torch's own test suite does between tests). Library module types are
        # compiled again on first use: done every few files, not after each.
        gc.collect()
        torchcompat.clear_script_state()


# Files between two full TorchScript resets (each costs recompiling the library modules
# the next file uses; without them the worker grows by some 30 KB per file).
FULL_SCRIPT_RESET_EVERY = 25


class _Counter:
    files = 0


def _defined_by_user(cls: Any, user_module: Callable[[Any], bool]) -> bool:
    module = sys.modules.get(getattr(cls, "__module__", None) or "")
    return module is None or user_module(module)


def _leftover_threads(before: Snapshot, user_file: Callable[[str], bool], grace: float = 0.2) -> list[str]:
    """Threads of the file's own code still running after a short grace. A library's
    long-lived helper thread (tqdm's monitor, a thread pool) is the library's business
    and stays: it is counted as the worker's from then on."""
    new = [t for t in threading.enumerate() if t.ident not in before.threads and t.is_alive()]
    for thread in new:
        thread.join(grace / max(len(new), 1))
    frames = sys._current_frames()
    leftover = []
    for thread in new:
        if not thread.is_alive():
            continue
        if _runs_user_code(thread, frames.get(thread.ident) if thread.ident is not None else None, user_file):
            leftover.append(thread.name)
        else:
            before.threads.add(thread.ident)
            _LIBRARY_THREADS.add(thread.ident)
    return leftover


_LIBRARY_THREADS: set[Any] = set()


def _runs_user_code(thread: threading.Thread, frame: Any, user_file: Callable[[str], bool]) -> bool:
    """The thread's target is the file's own code, or its stack is in it right now."""
    for function in (
        getattr(thread, "_target", None),
        getattr(thread, "function", None),
        getattr(type(thread), "run", None),
    ):
        code = getattr(function, "__code__", None)
        if code is not None and user_file(code.co_filename):
            return True
    while frame is not None:
        if user_file(frame.f_code.co_filename):
            return True
        frame = frame.f_back
    return False
