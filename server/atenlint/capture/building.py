"""Building a user's class for capture when the plain meta build is not enough.

Runs inside the worker (standard library and torch). Three ways, tried in order:

1. on the meta device (no memory, any size);
2. on meta, then moving tensors the constructor made on the CPU anyway to meta
   (`torch.Tensor(pixel_mean)` and `torch.tensor(...)` ignore the default device), so a
   trace does not stop at "Tensor on device cpu is not on the expected device meta";
3. on the CPU at the configured sizes, under a memory cap, then moved to meta, for
   constructors meta cannot run (`.to_sparse()`, `.item()`, numpy on a tensor).

Also resolves factories and inputs written as functions (`pkg.module:function`, or
`init_<Class>` in the project's factories file) and calls them with what they ask for.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import os
import sys
import types
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import torch

from ..factories import FunctionReference, class_hook_names, parse_reference

if TYPE_CHECKING:  # Python 3.11's typing.Self, for 3.10 too
    from typing_extensions import Self

# A CPU build allocates real weights: cap it so a 7B-parameter config fails cleanly.
CPU_BUILD_MEMORY_MB = int(os.environ.get("ATENLINT_CPU_BUILD_MB", "3072"))

BUILD_META = "meta"
BUILD_META_MOVED = "meta-moved"  # built on meta; tensors the constructor made on the CPU moved to meta
BUILD_CPU = "cpu"  # built on the CPU at the configured sizes (meta could not), then moved to meta


def missing_package(error: BaseException, roots: tuple[Any, ...] = ()) -> str | None:
    """The top-level package a ModuleNotFoundError names, unless it is the user's own (a
    folder or file of that name in the project's roots: a path problem, not an install) or
    an installed package that lacks the submodule (`transformers.models.x` from another
    release: installing it again would not help)."""
    if not (isinstance(error, ModuleNotFoundError) and error.name):
        return None
    top = error.name.split(".")[0]
    for root in roots:
        if os.path.isdir(os.path.join(root, top)) or os.path.isfile(os.path.join(root, top + ".py")):
            return None
    if top != error.name and _installed(top):
        return None
    return top


def _installed(name: str) -> bool:
    if name in sys.modules:
        return True
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a broken or half-imported package
        return False


class CallArguments(tuple[Any, ...]):
    """Example inputs for `forward(*args, **kwargs)`: a tuple, so paths that only know
    positional inputs still work, with the keyword inputs beside it."""

    kwargs: dict[str, Any]

    def __new__(cls, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None) -> Self:
        instance = super().__new__(cls, args)
        instance.kwargs = dict(kwargs or {})
        return instance

    def __repr__(self) -> str:
        return f"CallArguments({tuple(self)!r}, {self.kwargs!r})"


# ---------------------------------------------------------------------------
# Functions named in the configuration


_FILE_MODULES: dict[str, tuple[float, types.ModuleType]] = {}  # path -> (its mtime when read, the module)


def load_reference(reference: FunctionReference, base_dir: str | None) -> Callable[..., Any]:
    """The function a reference names: imported by module name from the user's roots
    (already on sys.path), or loaded from a file relative to the configuration."""
    if reference.is_file:
        path = reference.module
        if not os.path.isabs(path) and base_dir:
            path = os.path.join(base_dir, path)
        module = load_factories_file(path)
    else:
        module = importlib.import_module(reference.module)
    obj: Any = module
    for part in reference.attribute.split("."):
        if not hasattr(obj, part):
            raise AttributeError(f"`{reference.module}` has no `{reference.attribute}`")
        obj = getattr(obj, part)
    if not callable(obj):
        raise TypeError(f"`{reference}` is not a function")
    function: Callable[..., Any] = obj
    return function


def load_factories_file(path: str) -> Any:
    """A factories file, imported once per analysis under a private module name."""
    path = os.path.abspath(path)
    cached = _FILE_MODULES.get(path)
    if cached is not None and cached[0] == _mtime(path):
        return cached[1]
    if not os.path.isfile(path):
        raise FileNotFoundError(f"the factories file {path} does not exist")
    name = "_atenlint_factories_" + str(abs(hash(path)))
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load the factories file {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look their module up
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(name, None)
    _FILE_MODULES[path] = (_mtime(path), module)
    return module


def _mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0


def call_with(function: Callable[..., Any], available: dict[str, Any], first: str) -> Any:
    """Call a user's factory with the values it asks for by parameter name (`cls`,
    `config`, `model`, `module`, `key`); a first parameter with another name gets `first`."""
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return function(available[first])
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for index, parameter in enumerate(parameters):
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        if parameter.name in available:
            value = available[parameter.name]
        elif index == 0:
            value = available[first]
        elif parameter.default is not parameter.empty:
            continue
        else:
            raise TypeError(
                f"{function.__name__}() asks for `{parameter.name}`; a factory may take "
                f"{', '.join(f'`{n}`' for n in available)}"
            )
        if parameter.kind == parameter.KEYWORD_ONLY:
            kwargs[parameter.name] = value
        else:
            args.append(value)
    return function(*args, **kwargs)


def factory_function(
    kind: str, setting: str | None, config: dict[str, Any], qualname: str
) -> Callable[..., Any] | None:
    """The function that makes `kind` ("init", "inputs", "kwargs") for a class: the one
    its setting names, else one the factories file defines for it, else None."""
    reference = parse_reference(setting)
    base_dir = config.get("base_dir")
    if reference is not None:
        return load_reference(reference, base_dir)
    if setting is None and config.get("factories"):
        module = load_factories_file(config["factories"])
        for name in class_hook_names(kind, qualname):
            hook = getattr(module, name, None)
            if callable(hook):
                found: Callable[..., Any] = hook
                return found
    return None


# ---------------------------------------------------------------------------
# The build itself


def meta_cannot_run(error: BaseException) -> bool:
    """A failure of the meta device itself (`.item()`, numpy, a kernel without a meta
    implementation, a CPU tensor mixed with meta ones), not of the arguments: the CPU may
    build it, fake tensors may run it. Any other failure is the code's own and comes back
    the same on fake tensors, which run the same meta kernels and the same Python."""
    return isinstance(error, NotImplementedError) or "meta" in str(error).lower()


def non_meta_tensors(instance: torch.nn.Module) -> list[str]:
    """Parameters, buffers and plain tensor attributes not on meta (`pixel_mean`)."""
    found = []
    for module_name, module in instance.named_modules():
        prefix = f"{module_name}." if module_name else ""
        slots = list(module.named_parameters(recurse=False)) + list(module.named_buffers(recurse=False))
        for name, value in slots:
            if value is not None and value.device.type != "meta":
                found.append(prefix + name)
        for name, value in vars(module).items():
            if isinstance(value, torch.Tensor) and value.device.type != "meta":
                found.append(prefix + name)
    return found


def move_to_meta(instance: torch.nn.Module) -> list[str]:
    """Move every tensor of the instance to meta; the names moved (those that were not)."""
    moved = non_meta_tensors(instance)
    if not moved:
        return moved
    instance.to("meta")
    for module in instance.modules():
        for name, value in list(vars(module).items()):
            if isinstance(value, torch.Tensor) and value.device.type != "meta":
                with contextlib.suppress(Exception):  # a tensor subclass that refuses: leave it
                    setattr(module, name, value.to("meta"))
    return moved


@contextlib.contextmanager
def memory_cap(megabytes: int) -> Iterator[None]:
    """Address space allowed to grow by `megabytes` at most, undone afterwards: a CPU
    build that would allocate more fails with a MemoryError-like RuntimeError instead
    of taking the machine."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows: the parent's RSS limit still applies
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = _address_space_bytes() + megabytes * 1024 * 1024
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    applied = False
    try:
        if soft == resource.RLIM_INFINITY or limit < soft:
            resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
            applied = True
    except (ValueError, OSError):
        pass
    try:
        yield
    finally:
        if applied:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _address_space_bytes() -> int:
    try:
        with open("/proc/self/statm") as handle:
            pages = int(handle.read().split()[0])
        return pages * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 8 * 1024**3


def is_memory_error(error: BaseException) -> bool:
    text = str(error)
    return (
        isinstance(error, MemoryError)
        or "can't allocate memory" in text
        or "not enough memory" in text
        or "out of memory" in text.lower()
    )
