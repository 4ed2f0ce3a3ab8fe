"""Import a user's file as the module it really is, and build its nn.Module classes on meta.

Runs inside the worker: standard library and torch only. Editor buffers that are not
saved yet are served through an import hook, so the analysis sees what the user sees.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import inspect
import linecache
import os
import sys
from typing import Any, Iterator, Optional

import torch

from .paths import is_library_file


class _OverlayLoader(importlib.machinery.SourceFileLoader):
    """Loads a module from editor text instead of the file on disk."""

    def __init__(self, fullname: str, path: str, text: str):
        super().__init__(fullname, path)
        self._text = text

    def get_data(self, path: str) -> bytes:
        if os.path.abspath(path) == os.path.abspath(self.path):
            return self._text.encode("utf-8")
        return super().get_data(path)

    def path_stats(self, path: str) -> dict:
        raise OSError("editor buffers have no bytecode cache")  # forces compilation from our text


class _OverlayFinder(importlib.abc.MetaPathFinder):
    def __init__(self, overlays: dict[str, str]):
        self.overlays = {os.path.abspath(path): text for path, text in overlays.items()}

    def find_spec(self, fullname: str, path: Any = None, target: Any = None):
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.origin is None:
            return None
        origin = os.path.abspath(spec.origin)
        if origin not in self.overlays:
            return None
        spec.loader = _OverlayLoader(fullname, origin, self.overlays[origin])
        return spec


@contextlib.contextmanager
def user_import_context(roots: list[str], overlays: dict[str, str],
                        imported: Optional[list] = None) -> Iterator[None]:
    """sys.path roots and editor overlays for one analysis, undone afterwards.

    Modules imported from the user's roots are dropped afterwards so the next
    analysis sees their new text; third-party modules stay loaded (that is what
    keeps a warm worker fast). Their files are appended to `imported`: an editor
    re-checks a file when one of them changes.
    """
    saved_path = list(sys.path)
    before = set(sys.modules)
    finder = _OverlayFinder(overlays) if overlays else None
    for root in reversed(roots):
        if root not in sys.path:
            sys.path.insert(0, root)
    for path, text in overlays.items():
        # TorchScript reads source through linecache; a None mtime keeps checkcache away.
        linecache.cache[os.path.abspath(path)] = (len(text), None, text.splitlines(True), os.path.abspath(path))
    if finder is not None:
        sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        if finder is not None:
            sys.meta_path.remove(finder)
        sys.path[:] = saved_path
        for path in overlays:
            linecache.cache.pop(os.path.abspath(path), None)
        user_roots = tuple(os.path.abspath(r) + os.sep for r in roots)
        for name in set(sys.modules) - before:
            module = sys.modules.get(name)
            if _is_user_module(module, user_roots):
                sys.modules.pop(name, None)
                if imported is not None and getattr(module, "__file__", None):
                    imported.append(os.path.abspath(module.__file__))
        importlib.invalidate_caches()


def _is_user_module(module: Any, user_roots: tuple[str, ...]) -> bool:
    """Imported from the user's roots (and not from a virtualenv that happens to live there)."""
    locations = [getattr(module, "__file__", None)] + list(getattr(module, "__path__", None) or [])
    locations = [os.path.abspath(p) for p in locations if p]
    return any(p.startswith(user_roots) and not is_library_file(p) for p in locations)


def import_file(module_name: str, path: str) -> Any:
    """Import `path` under `module_name` (its real dotted name, so relative imports work)."""
    path = os.path.abspath(path)
    existing = sys.modules.get(module_name)
    if existing is not None and os.path.abspath(getattr(existing, "__file__", "") or "") != path:
        sys.modules.pop(module_name)
    module = importlib.import_module(module_name)
    if os.path.abspath(getattr(module, "__file__", "") or "") != path:
        # Another file of the same name shadows it on sys.path; load the one we were asked for.
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {path} as {module_name}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
    return module


def module_classes(module: Any, qualnames: list[str]) -> list[tuple[str, type]]:
    """The nn.Module subclasses defined in `module`: the ones the parser found plus any
    made at import time, in source order, skipping bases that define no forward."""
    found: dict[str, type] = {}
    for qualname in qualnames:
        obj: Any = module
        for part in qualname.split("."):
            obj = getattr(obj, part, None)
        if inspect.isclass(obj):
            found[qualname] = obj
    for name, obj in vars(module).items():
        if inspect.isclass(obj) and obj.__module__ == module.__name__ and name not in found:
            found[obj.__qualname__] = obj
    result = []
    for qualname, cls in found.items():
        if not issubclass(cls, torch.nn.Module) or cls.__module__ != module.__name__:
            continue
        if getattr(cls, "forward", None) is getattr(torch.nn.Module, "forward", None):
            continue  # an abstract base: its subclasses are the models
        result.append((qualname, cls))
    return sorted(result, key=lambda item: _first_line(item[1]))


def _first_line(cls: type) -> int:
    try:
        return inspect.getsourcelines(cls)[1]
    except (OSError, TypeError):
        return 0


class BuildFailure(Exception):
    def __init__(self, message: str, missing: list[str], signature: str):
        super().__init__(message)
        self.message = message
        self.missing = missing
        self.signature = signature

    def as_json(self) -> dict:
        return {"message": self.message, "missing": self.missing, "signature": self.signature}


def required_parameters(cls: type) -> tuple[list[str], str]:
    """Constructor parameters without defaults, and the signature as the user wrote it."""
    try:
        signature = inspect.signature(cls)
    except (TypeError, ValueError):
        return [], ""
    missing = [name for name, p in signature.parameters.items()
               if p.default is inspect.Parameter.empty
               and p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                              inspect.Parameter.KEYWORD_ONLY)]
    return missing, f"{cls.__name__}{signature}"


def config_factory(cls: type, module: Any, missing: list[str]) -> Optional[str]:
    """A factory expression for the common `Model(config)` pattern: each missing parameter
    annotated with a class, or named like a config, gets the module's own config class
    when that class builds with no arguments (`GPT(config=GPTConfig())`)."""
    try:
        parameters = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return None
    namespace = vars(module)
    configs = [name for name, obj in namespace.items()
               if inspect.isclass(obj) and obj.__module__ == module.__name__ and "config" in name.lower()
               and not issubclass(obj, torch.nn.Module) and not required_parameters(obj)[0]]
    arguments = []
    for name in missing:
        annotation = parameters[name].annotation
        annotated = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", None)
        if annotated in namespace and inspect.isclass(namespace[annotated]) \
                and not required_parameters(namespace[annotated])[0]:
            arguments.append(f"{name}={annotated}()")
        elif name.lower() in ("config", "cfg", "conf", "args", "hparams", "params") and len(configs) == 1:
            arguments.append(f"{name}={configs[0]}()")
        else:
            return None
    return f"{cls.__name__}({', '.join(arguments)})"


def build(cls: type, module: Any, init: Optional[str]) -> torch.nn.Module:
    """An instance of `cls` whose parameters live on the meta device (no memory, no data)."""
    missing, signature = required_parameters(cls)
    if init is None and missing:
        init = config_factory(cls, module, missing)
        if init is None:
            raise BuildFailure(f"its constructor needs {', '.join(missing)}", missing, signature)
    namespace = dict(vars(module))
    namespace.setdefault("torch", torch)
    namespace.setdefault(cls.__name__, cls)
    try:
        with torch.device("meta"):
            instance = cls() if init is None else eval(init, namespace)  # noqa: S307 - the user's own factory
    except Exception as error:  # noqa: BLE001 - any constructor failure is reported, never raised
        raise BuildFailure(f"{type(error).__name__}: {error}", missing if init is None else [], signature) from None
    if not isinstance(instance, torch.nn.Module):
        raise BuildFailure(f"`{init}` returned {type(instance).__name__}, not an nn.Module", [], signature)
    return instance


def evaluate_inputs(expression: str, module: Any) -> Any:
    namespace = dict(vars(module))
    namespace.setdefault("torch", torch)
    return eval(expression, namespace)  # noqa: S307 - the user's own example inputs
