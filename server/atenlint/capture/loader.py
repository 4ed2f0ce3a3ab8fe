"""Import a user's file as the module it really is, and build its nn.Module classes on meta.

Runs inside the worker: standard library and torch only. Editor buffers that are not
saved yet are served through an import hook, so the analysis sees what the user sees.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import inspect
import linecache
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

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

    def path_stats(self, path: str) -> dict[str, Any]:
        raise OSError("editor buffers have no bytecode cache")  # forces compilation from our text


class _WorkspaceFinder(importlib.abc.MetaPathFinder):
    """Finds the project's own modules in its roots, and serves editor buffers.

    The roots are on sys.path *after* the standard library and site-packages, so a
    workspace `json.py`, `typing.py` or `torch.py` never shadows the real one. This
    finder, first on sys.meta_path, still lets the project's own top-level modules win
    over unrelated installed packages of the same name (a project's `utils` package),
    except for protected names: the standard library, torch and everything loaded
    before the first analysis (torch's own imports), which always come from the library.
    """

    def __init__(self, roots: list[str], overlays: dict[str, str]):
        self.roots = list(roots)
        self.overlays = {os.path.abspath(path): text for path, text in overlays.items()}

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if path is None:  # a top-level name
            if is_protected_name(fullname):
                return None
            spec = importlib.machinery.PathFinder.find_spec(fullname, self.roots)
        else:
            spec = importlib.machinery.PathFinder.find_spec(fullname, path) if self.overlays else None
        if spec is None or spec.origin is None:
            return spec if path is None else None
        origin = os.path.abspath(spec.origin)
        if origin in self.overlays:
            spec.loader = _OverlayLoader(fullname, origin, self.overlays[origin])
        return spec


_PROTECTED: set[str] = set()
_ACTIVE_OVERLAYS: dict[str, str] = {}
_ACTIVE_ROOTS: list[str] = []


def protect_loaded_modules() -> None:
    """Everything imported so far (torch and what it pulled in) and every package torch
    depends on (which it may import later, lazily) stay the library's."""
    _PROTECTED.update(name.split(".")[0] for name in list(sys.modules))
    _PROTECTED.update(_dependency_modules("torch"))
    # Packages torch (and atenlint's exporters) import lazily without declaring them.
    _PROTECTED.update(name for name in _LAZY_LIBRARIES if importlib.util.find_spec(name) is not None)


_LAZY_LIBRARIES = (
    "numpy",
    "onnx",
    "onnxscript",
    "onnxruntime",
    "coremltools",
    "executorch",
    "triton",
    "optree",
    "packaging",
    "scipy",
    "opt_einsum",
    "expecttest",
)


def _dependency_modules(distribution: str) -> set[str]:
    """Top-level module names of a distribution's requirements, transitively."""
    import re
    from importlib import metadata

    names: set[str] = set()
    seen: set[str] = set()
    pending = [distribution]
    while pending:
        name = re.sub(r"[-_.]+", "-", pending.pop()).lower()
        if name in seen:
            continue
        seen.add(name)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        top_level = dist.read_text("top_level.txt")
        if top_level:
            names.update(line.strip() for line in top_level.splitlines() if line.strip())
        else:
            for file in dist.files or ():
                parts = file.parts
                if parts and not parts[0].endswith((".dist-info", ".egg-info", ".data")) and parts[0] != "..":
                    names.add(parts[0][:-3] if parts[0].endswith(".py") else parts[0].split(".")[0])
        for requirement in dist.requires or ():
            match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
            if match and "extra ==" not in requirement:
                pending.append(match.group(0))
    return {n for n in names if n.isidentifier()}


def is_protected_name(name: str) -> bool:
    top = name.split(".")[0]
    if not _PROTECTED:
        protect_loaded_modules()
    return top in _PROTECTED or top in getattr(sys, "stdlib_module_names", ()) or top in sys.builtin_module_names


@contextlib.contextmanager
def user_import_context(
    roots: list[str], overlays: dict[str, str], imported: list[Any] | None = None
) -> Iterator[None]:
    """sys.path roots and editor overlays for one analysis, undone afterwards.

    sys.path is built explicitly: the interpreter's own entries (standard library,
    site-packages with torch) first, then the project's roots. Modules imported from
    the user's roots are dropped afterwards so the next analysis sees their new text,
    and library modules the analysis replaced in sys.modules are put back; third-party
    modules imported for the first time stay loaded (that is what keeps a warm worker
    fast). The user's files are appended to `imported`: an editor re-checks a file when
    one of them changes.
    """
    saved_path = list(sys.path)
    saved_modules = dict(sys.modules)
    roots = [os.path.abspath(r) for r in roots if r]
    finder = _WorkspaceFinder(roots, overlays)
    sys.path[:] = [p for p in saved_path if os.path.abspath(p or os.curdir) not in roots and p not in ("", ".")] + [
        r for r in roots if r not in saved_path
    ]
    for path, text in overlays.items():
        # TorchScript reads source through linecache; a None mtime keeps checkcache away.
        linecache.cache[os.path.abspath(path)] = (len(text), None, text.splitlines(True), os.path.abspath(path))
    sys.meta_path.insert(0, finder)
    importlib.invalidate_caches()
    previous_overlays = dict(_ACTIVE_OVERLAYS)
    previous_roots = list(_ACTIVE_ROOTS)
    previous_stand_ins = list(_STAND_INS)
    _ACTIVE_OVERLAYS.clear()
    _ACTIVE_OVERLAYS.update(finder.overlays)
    _ACTIVE_ROOTS[:] = roots
    _STAND_INS.clear()
    try:
        yield
    finally:
        _remove_stand_ins(_STAND_INS)
        if imported is not None:
            # The __init__.py files that were not run: installing or fixing them changes the answer.
            imported.extend(stand_in.file for stand_in in _STAND_INS)
        _STAND_INS[:] = previous_stand_ins
        _ACTIVE_ROOTS[:] = previous_roots
        _ACTIVE_OVERLAYS.clear()
        _ACTIVE_OVERLAYS.update(previous_overlays)
        if finder in sys.meta_path:
            sys.meta_path.remove(finder)
        sys.path[:] = saved_path
        for path in overlays:
            linecache.cache.pop(os.path.abspath(path), None)
        user_roots = tuple(r + os.sep for r in roots)
        for name in list(sys.modules):
            module = sys.modules.get(name)
            if saved_modules.get(name) is module:
                continue
            if name in saved_modules and not _is_user_module(saved_modules[name], user_roots):
                sys.modules[name] = saved_modules[name]  # a library module the file shadowed
            elif _is_user_module(module, user_roots):
                sys.modules.pop(name, None)
            else:
                continue
            file = getattr(module, "__file__", None)
            if imported is not None and isinstance(file, str) and file:
                imported.append(os.path.abspath(file))
        for name, module in saved_modules.items():
            if name not in sys.modules and not _is_user_module(module, user_roots):
                sys.modules[name] = module
        importlib.invalidate_caches()


def _is_user_module(module: Any, user_roots: tuple[str, ...]) -> bool:
    """Imported from the user's roots (and not from a virtualenv that happens to live there)."""
    candidates: list[Any] = [getattr(module, "__file__", None), *_package_paths(module)]
    locations = [os.path.abspath(p) for p in candidates if isinstance(p, str) and p]
    return any(p.startswith(user_roots) and not is_library_file(p) for p in locations)


def _package_paths(module: Any) -> list[Any]:
    """A package's folders without recomputing them: iterating a namespace package's
    `__path__` looks its parent up in sys.modules, which raises KeyError ('ldm') once the
    parent was dropped first — the order of a set, so it failed on some runs only."""
    try:
        paths = getattr(module, "__path__", None)
    except Exception:  # noqa: BLE001 - a module with a broken __getattr__
        return []
    if paths is None:
        return []
    cached = getattr(paths, "_path", None)  # importlib's _NamespacePath keeps its last answer here
    if isinstance(cached, list):
        return list(cached)
    try:
        return list(paths)
    except Exception:  # noqa: BLE001 - a custom __path__ that cannot be listed
        return []


def import_file(module_name: str, path: str, overlays: dict[str, Any] | None = None) -> Any:
    """Import `path` under `module_name` (its real dotted name, so relative imports work).

    A file whose name is a library's (`json.py`, `torch.py`) is executed from its own
    path under that name for this analysis only: `user_import_context` puts the
    library's module back afterwards.
    """
    path = os.path.abspath(path)
    try:
        return _import_file_once(module_name, path, overlays)
    except ModuleNotFoundError as error:
        return _import_past_failing_packages(module_name, path, overlays, error)


def _import_file_once(module_name: str, path: str, overlays: dict[str, Any] | None) -> Any:
    existing = sys.modules.get(module_name)
    if existing is not None and _origin(existing) == path and not is_stand_in(existing):
        return existing
    if is_protected_name(module_name) or existing is not None:
        return _exec_shadowing(module_name, path, overlays)
    module = importlib.import_module(module_name)
    if _origin(module) != path:
        # Another file of the same name shadows it on sys.path; load the one we were asked for.
        module = _exec_shadowing(module_name, path, overlays)
    return module


@dataclass(frozen=True)
class StandIn:
    """A package of the user's whose `__init__.py` was not run for this analysis: it (or a
    parent's) imports `missing`, which is not installed, and the analysed file is one of its
    submodules. `error` is what its import raised; `file` its `__init__.py`."""

    package: str
    missing: str
    file: str
    error: ModuleNotFoundError
    module: Any = field(repr=False, compare=False)


_STAND_INS: list[StandIn] = []
_STAND_IN_MARK = "__atenlint_stand_in__"


def import_stand_ins() -> list[StandIn]:
    """The packages stood in by a bare package module in the current `user_import_context`
    (empty when every package imported as itself)."""
    return list(_STAND_INS)


def is_stand_in(module: Any) -> bool:
    """Whether `module` is atenlint's bare stand-in for a package, not the package itself."""
    try:
        return isinstance(getattr(module, _STAND_IN_MARK, None), str)
    except Exception:  # noqa: BLE001 - a module with a broken __getattr__ is not ours
        return False


def _import_past_failing_packages(
    module_name: str, path: str, overlays: dict[str, Any] | None, first: ModuleNotFoundError
) -> Any:
    """Import `module_name` when a package above it cannot be imported because its
    `__init__.py` (or what that imports) needs a package that is not installed: CLIP's
    `clip/__init__.py` imports PIL, `clip/model.py` only torch. The failing packages are
    stood in by bare package modules (their folder, no `__init__.py` run), one level at a
    time, as far as the failures go; then the file itself is imported. When it still fails
    (the file itself needs the package, or a name its package's `__init__.py` defines), the
    first error is raised: the one Python gives."""
    from .building import missing_package

    error = first
    added: list[StandIn] = []
    for _ in range(module_name.count(".")):
        package = _failing_ancestor(module_name)
        missing = missing_package(error, tuple(_ACTIVE_ROOTS))
        stand_in = _install_stand_in(package, missing, error) if package and missing else None
        if stand_in is None:
            break
        added.append(stand_in)
        try:
            module = _import_file_once(module_name, path, overlays)
        except ModuleNotFoundError as again:
            error = again
            continue
        except KeyboardInterrupt:
            _remove_stand_ins(added)
            raise
        except BaseException:  # noqa: BLE001 - what the stand-in changed is not Python's answer
            break
        _STAND_INS.extend(added)
        return module
    _remove_stand_ins(added)
    raise first


def _failing_ancestor(module_name: str) -> str | None:
    """The outermost package above `module_name` that is not in sys.modules after a failed
    import: the one whose `__init__.py` raised (Python drops a module that fails)."""
    parts = module_name.split(".")
    for depth in range(1, len(parts)):
        name = ".".join(parts[:depth])
        if name not in sys.modules:
            return name
    return None


def _install_stand_in(package: str, missing: str, error: ModuleNotFoundError) -> StandIn | None:
    """A bare module for `package` in sys.modules: its spec, `__file__` and `__path__` (so
    its submodules import from its folder), its `__init__.py` not run. None when it is not
    a regular package of the user's roots."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None or not spec.submodule_search_locations:
        return None
    origin = os.path.abspath(spec.origin)
    roots = tuple(root + os.sep for root in _ACTIVE_ROOTS)
    if os.path.basename(origin) != "__init__.py" or not origin.startswith(roots) or is_library_file(origin):
        return None
    module = importlib.util.module_from_spec(spec)
    setattr(module, _STAND_IN_MARK, missing)
    module.__doc__ = (
        f"atenlint's stand-in for the package {package!r}: its __init__.py was not run (it needs {missing!r})"
    )

    def __getattr__(name: str) -> Any:  # the module-level hook of PEP 562
        raise AttributeError(
            f"module {package!r} has no attribute {name!r}: atenlint stood it in for the package, whose "
            f"__init__.py was not run (it needs `{missing}`, which is not installed)"
        )

    setattr(module, "__getattr__", __getattr__)  # noqa: B010 - a module attribute, not a method
    for name in [n for n in sys.modules if n.startswith(package + ".")]:
        # Submodules the failed attempt imported belong to the package that failed: imported again below.
        if _origin(sys.modules[name]).startswith(os.path.dirname(origin) + os.sep):
            sys.modules.pop(name, None)
    sys.modules[package] = module
    parent_name, _, child = package.rpartition(".")
    parent = sys.modules.get(parent_name) if parent_name else None
    if parent is not None:
        setattr(parent, child, module)
    return StandIn(package, missing, origin, error, module)


def _remove_stand_ins(stand_ins: list[StandIn]) -> None:
    for stand_in in reversed(stand_ins):
        _remove_stand_in(stand_in)


def _remove_stand_in(stand_in: StandIn) -> None:
    if sys.modules.get(stand_in.package) is stand_in.module:
        del sys.modules[stand_in.package]
    parent_name, _, child = stand_in.package.rpartition(".")
    parent = sys.modules.get(parent_name) if parent_name else None
    if parent is not None and getattr(parent, child, None) is stand_in.module:
        delattr(parent, child)


def _origin(module: Any) -> str:
    return os.path.abspath(getattr(module, "__file__", "") or "") if getattr(module, "__file__", None) else ""


def _exec_shadowing(module_name: str, path: str, overlays: dict[str, Any] | None = None) -> Any:
    """Execute `path` as `module_name`, whatever sys.path would find under that name."""
    parent = module_name.rpartition(".")[0]
    if parent and parent not in sys.modules:
        importlib.import_module(parent)
    text = (overlays if overlays is not None else _ACTIVE_OVERLAYS).get(path)
    loader = _OverlayLoader(module_name, path, text) if text is not None else None
    is_package = os.path.basename(path) == "__init__.py"
    spec = importlib.util.spec_from_file_location(
        module_name, path, loader=loader, submodule_search_locations=[os.path.dirname(path)] if is_package else None
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path} as {module_name}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    return sys.modules.get(module_name, module)


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
    from .constructor_args import source_order

    order = source_order(module)
    return sorted(result, key=lambda item: order(item[1]))


class BuildFailure(Exception):
    """A class could not be built. `kind` says whose move it is: "arguments" (give a
    factory), "factory" (the factory is wrong), "missing_package" (install `package`),
    "meta" (the constructor fails on meta and on the CPU), "memory" (too big for a CPU build)."""

    def __init__(
        self,
        message: str,
        missing: list[str],
        signature: str,
        kind: str = "meta",
        package: str | None = None,
        site: dict[str, Any] | None = None,
    ):
        super().__init__(message)
        self.message = message
        self.missing = missing
        self.signature = signature
        self.kind = kind
        self.package = package
        self.site = site

    def as_json(self) -> dict[str, Any]:
        return {
            "message": self.message,
            "missing": self.missing,
            "signature": self.signature,
            "kind": self.kind,
            "package": self.package,
            "site": self.site,
        }


def required_parameters(cls: type) -> tuple[list[str], str]:
    """Constructor parameters without defaults (with those of a parent's constructor it
    passes its `**kwargs` on to, `constructor_args.constructor_parameters`), and the
    signature as the user wrote it."""
    from .constructor_args import constructor_parameters

    try:
        signature = inspect.signature(cls)
        parameters = constructor_parameters(cls)
    except (TypeError, ValueError):
        return [], ""
    missing = [
        p.name
        for p in parameters
        if p.default is inspect.Parameter.empty
        and p.kind
        in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    ]
    return missing, f"{cls.__name__}{signature}"


def config_factory(cls: type, module: Any, missing: list[str]) -> str | None:
    """A factory expression for the common `Model(config)` pattern: each missing parameter
    annotated with a class, or named like a config, gets the module's own config class
    when that class builds with no arguments (`GPT(config=GPTConfig())`)."""
    try:
        parameters = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return None
    namespace = vars(module)
    configs = [
        name
        for name, obj in namespace.items()
        if inspect.isclass(obj)
        and obj.__module__ == module.__name__
        and "config" in name.lower()
        and not issubclass(obj, torch.nn.Module)
        and not required_parameters(obj)[0]
    ]
    arguments = []
    for name in missing:
        # A parameter of a parent's constructor, reached through `**kwargs`, is not in this one's.
        annotation = parameters[name].annotation if name in parameters else inspect.Parameter.empty
        annotated = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", None)
        if (
            annotated in namespace
            and inspect.isclass(namespace[annotated])
            and not required_parameters(namespace[annotated])[0]
        ):
            arguments.append(f"{name}={annotated}()")
        elif name.lower() in ("config", "cfg", "conf", "args", "hparams", "params") and len(configs) == 1:
            arguments.append(f"{name}={configs[0]}()")
        else:
            return None
    return f"{cls.__name__}({', '.join(arguments)})"


@dataclass
class BuildRecord:
    """How the last class was built, for the inputs that follow (a factory function for
    inputs gets the built model) and for the report (`path`: which build was used)."""

    cls: type
    module: Any
    instance: torch.nn.Module
    config: dict[str, Any]
    path: str
    moved: list[Any] = field(default_factory=list)
    # Built with constructor arguments atenlint inferred (constructor_args.py): the call used,
    # and what the constructor needs (for the report when the guess cannot be analysed).
    arguments: str | None = None
    missing: list[str] = field(default_factory=list)
    signature: str = ""


# The trace path asks for inputs by expression only; the build it follows is kept here.
# A file's classes are all built before any is traced: each class's capture makes its own
# build current again (`current_build`) while its inputs are evaluated.
_last_build: BuildRecord | None = None


def last_build() -> BuildRecord | None:
    return _last_build


@contextlib.contextmanager
def current_build(record: BuildRecord | None) -> Iterator[None]:
    """Make `record` the build the inputs that follow are for: a file's classes are all
    built before any is traced, so each class's inputs name its own build, not the last."""
    global _last_build
    saved = _last_build
    _last_build = record
    try:
        yield
    finally:
        _last_build = saved


def build(
    cls: type,
    module: Any,
    init: str | None,
    config: dict[str, Any] | None = None,
    *,
    infer_arguments: bool = False,
    roots: Sequence[str] = (),
) -> torch.nn.Module:
    """An instance of `cls` whose parameters live on the meta device (no memory, no data).

    `init` is an expression, a `pkg.module:function` reference, or None (the factories
    file, then the config-class guess, then `cls()`). When meta cannot run the
    constructor, it is built on the CPU under a memory cap and moved to meta.

    `infer_arguments`: when nothing says how to build a class whose constructor needs
    arguments, try the calls `constructor_args.candidates` infers (call sites in `roots`,
    then name rules) in their order, and keep the first that builds; the record says so."""
    from .building import (
        BUILD_CPU,
        BUILD_META,
        CPU_BUILD_MEMORY_MB,
        factory_function,
        is_memory_error,
        memory_cap,
        missing_package,
    )

    global _last_build
    _last_build = None
    config = dict(config or {})
    missing, signature = required_parameters(cls)
    key = config.get("key") or f"{module.__name__}.{cls.__qualname__}"
    try:
        function = factory_function("init", init, config, cls.__qualname__)
    except Exception as error:  # noqa: BLE001 - a wrong reference is the user's to fix: say so
        raise BuildFailure(
            f"the factory `{init or config.get('factories')}` could not be loaded ({type(error).__name__}: {error})",
            [],
            signature,
            kind="factory",
            package=missing_package(error),
            site=_user_site(error),
        ) from None
    available = {"cls": cls, "config": dict(config.get("options") or {}), "module": module, "key": key}
    if function is None and init is None and missing:
        init = config_factory(cls, module, missing)
        if init is None:
            if infer_arguments:
                return _build_inferred(cls, module, config, missing, signature, roots)
            raise BuildFailure(f"its constructor needs {', '.join(missing)}", missing, signature, kind="arguments")
    namespace = dict(vars(module))
    namespace.setdefault("torch", torch)
    namespace.setdefault(cls.__name__, cls)

    def make() -> Any:
        if function is not None:
            made = _call_factory(function, available)
            if made is not None:
                return made
            if missing:  # the generic factory declined this class
                raise _Declined()
            return cls()
        return cls() if init is None else eval(init, namespace)

    path = BUILD_META
    try:
        with torch.device("meta"):
            instance = make()
    except _Declined:
        raise BuildFailure(
            f"its constructor needs {', '.join(missing)}", missing, signature, kind="arguments"
        ) from None
    except Exception as error:  # noqa: BLE001 - any constructor failure is reported, never raised
        package = missing_package(error)
        if package is not None:
            raise _not_installed(error, package, signature) from None
        meta_error = f"{type(error).__name__}: {_first_line(error)}"
        meta_site = _user_site(error)
        try:
            with memory_cap(CPU_BUILD_MEMORY_MB):
                instance = make()
            path = BUILD_CPU
        except Exception as cpu_error:  # noqa: BLE001 - the meta failure stays the message
            if is_memory_error(cpu_error):
                raise BuildFailure(
                    f"building it on the meta device failed ({meta_error}), and on the CPU it "
                    f"needs more than {CPU_BUILD_MEMORY_MB} MB; give a factory with smaller "
                    f"sizes",
                    [],
                    signature,
                    kind="memory",
                    site=meta_site,
                ) from None
            raise BuildFailure(
                meta_error, missing if init is None and function is None else [], signature, kind="meta", site=meta_site
            ) from None
    if not isinstance(instance, torch.nn.Module):
        made_by = init or getattr(function, "__name__", "the factory")
        raise BuildFailure(
            f"`{made_by}` returned {type(instance).__name__}, not an nn.Module", [], signature, kind="factory"
        )
    path, moved = _moved_to_meta(instance, path)
    _last_build = BuildRecord(cls, module, instance, config, path, moved)
    return instance


def _moved_to_meta(instance: torch.nn.Module, path: str) -> tuple[str, list[Any]]:
    """Tensors the constructor made off meta, moved there, and the build path that says so."""
    from .building import BUILD_META, BUILD_META_MOVED, move_to_meta

    try:
        moved = move_to_meta(instance)
    except Exception:  # noqa: BLE001 - tensors that refuse to move: script capture does not need them
        moved = []
    return (BUILD_META_MOVED if moved and path == BUILD_META else path), moved


def _not_installed(error: BaseException, package: str, signature: str) -> BuildFailure:
    """The constructor imports a package that is not installed: install it (ATL002's advice)."""
    return BuildFailure(
        f"building it imports `{getattr(error, 'name', package)}`, which is not installed",
        [],
        signature,
        kind="missing_package",
        package=package,
        site=_user_site(error),
    )


# Inferred arguments are small: a guess that meta cannot build gets this much memory on the
# CPU, for at most this many of its candidates (the others are tried on meta only).
INFERRED_CPU_BUILD_MB = 512
INFERRED_CPU_BUILDS = 2


def _build_inferred(
    cls: type, module: Any, config: dict[str, Any], missing: list[str], signature: str, roots: Sequence[str]
) -> torch.nn.Module:
    """The first of the inferred constructor calls that builds an nn.Module, on meta (or, for
    a constructor meta cannot run, on the CPU under a small cap), in the candidates' order;
    BuildFailure "arguments" (as with no inference) when none does."""
    from .building import BUILD_CPU, BUILD_META, memory_cap, meta_cannot_run, missing_package
    from .constructor_args import candidates, evaluate_call

    global _last_build
    try:
        tried = candidates(cls, module, roots, _ACTIVE_OVERLAYS)
    except Exception:  # noqa: BLE001 - a class whose source or signature cannot be read: no guess
        tried = []
    cpu_builds = 0
    for candidate in tried:
        path = BUILD_META
        try:
            with torch.device("meta"):
                instance = evaluate_call(candidate.expression, cls, module)
        except Exception as error:  # noqa: BLE001 - a guess the constructor refuses: the next one
            package = missing_package(error)
            if package is not None:
                raise _not_installed(error, package, signature) from None
            if cpu_builds >= INFERRED_CPU_BUILDS or not meta_cannot_run(error):
                continue
            cpu_builds += 1
            try:
                with memory_cap(INFERRED_CPU_BUILD_MB):
                    instance = evaluate_call(candidate.expression, cls, module)
            except Exception:  # noqa: BLE001, S112 - the guess fails on the CPU too: the next one
                continue
            path = BUILD_CPU
        if not isinstance(instance, torch.nn.Module):
            continue
        path, moved = _moved_to_meta(instance, path)
        _last_build = BuildRecord(
            cls,
            module,
            instance,
            config,
            path,
            moved,
            arguments=candidate.expression,
            missing=missing,
            signature=signature,
        )
        return instance
    tried_note = f" (none of {len(tried)} inferred argument sets built it)" if tried else ""
    raise BuildFailure(f"its constructor needs {', '.join(missing)}{tried_note}", missing, signature, kind="arguments")


class _Declined(Exception):
    """The factories file's generic `init` returned None for this class."""


def _call_factory(function: Any, available: dict[str, Any]) -> Any:
    from .building import call_with

    return call_with(function, available, first="cls")


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0][:300] if text else type(error).__name__


def _user_site(error: BaseException) -> dict[str, Any] | None:
    """The innermost frame of the user's code in a traceback: where to point."""
    import traceback

    atenlint_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        filename = os.path.abspath(frame.filename)
        if (
            not is_library_file(filename)
            and not filename.startswith(atenlint_dir + os.sep)
            and not frame.filename.startswith("<")
        ):
            return {"file": filename, "line": frame.lineno, "text": (frame.line or "").strip()}
    return None


def evaluate_inputs(expression: str, module: Any, on_meta: bool = False) -> Any:
    """The example inputs: an expression, or a `pkg.module:function` reference called with
    the built model; with the class's `kwargs` (expression or reference) beside them.
    `on_meta` (the caller evaluates under `torch.device("meta")`): an expression that is
    only calls of torch's plain factories with literal sizes is made by `literal_meta_inputs`:
    the same tensors, without running torch's Python meta kernels."""
    from .building import CallArguments, call_with, factory_function

    record = _last_build if _last_build is not None and _last_build.module is module else None
    config = record.config if record is not None else {}
    namespace = dict(vars(module))
    namespace.setdefault("torch", torch)
    available = {
        "model": record.instance if record else None,
        "cls": record.cls if record else None,
        "config": dict(config.get("options") or {}),
        "module": module,
        "key": config.get("key"),
    }
    qualname = record.cls.__qualname__ if record else ""

    def value(kind: str, text: str | None) -> Any:
        function = factory_function(kind, text, config, qualname) if (text or config.get("factories")) else None
        if function is not None:
            return call_with(function, available, first="model")
        if text is None:
            return None
        made = literal_meta_inputs(text, namespace) if on_meta else None
        return made if made is not None else eval(text, namespace)

    inputs = value("inputs", expression)
    kwargs_setting = config.get("kwargs")
    if kwargs_setting is None and not config.get("factories"):
        return inputs
    try:
        kwargs = value("kwargs", kwargs_setting)
    except Exception as error:  # noqa: BLE001 - say it was the kwargs, not the inputs
        raise type(error)(f"(in kwargs `{kwargs_setting}`) {error}") from None
    if kwargs is None:
        return inputs
    if not isinstance(kwargs, dict) or not all(isinstance(k, str) for k in kwargs):
        raise TypeError(f"kwargs must give a dict of keyword arguments, not {type(kwargs).__name__}")
    args = () if inputs is None else inputs if isinstance(inputs, tuple) else (inputs,)
    return CallArguments(tuple(args), kwargs)


# torch's factories whose meta result is given by their literal arguments alone (shape and
# dtype; a meta tensor has no values): name -> the dtype when none is given (None: torch's
# default dtype). The meta kernels of randn and randint are Python references that call
# `torch._check`, whose first call imports torch.fx.experimental.symbolic_shapes and sympy
# (about 0.4 s): made with `torch.empty` instead, a run that only traces with torch.jit.trace
# never imports them (the others are here so that a tuple mixing them is made the same way).
_META_FACTORIES: dict[str, torch.dtype | None] = {
    "randn": None,
    "rand": None,
    "zeros": None,
    "ones": None,
    "empty": None,
    "randint": torch.int64,
}
# The functions themselves, as torch defines them (read before any user code runs): a file
# that replaced one (`torch.randn = ...`) has its expression evaluated as written.
_TORCH_FACTORIES = {name: getattr(torch, name) for name in _META_FACTORIES}


def literal_meta_inputs(expression: str, namespace: dict[str, Any]) -> Any:
    """The value `expression` has under `torch.device("meta")`, made without running it,
    when it is a call of one of torch's plain factories (`torch.randn(1, 3, 224, 224)`,
    `torch.randint(0, 1000, (1, 16))`, `dtype=torch.float16`) with literal sizes, or a tuple
    of such calls: each a `torch.empty` of the same shape and dtype on meta, as the factory
    would give it. None for anything else (evaluated as written)."""
    from ..python_parse import parse_expression

    try:
        tree = parse_expression(expression.strip()).body
    except (SyntaxError, ValueError):
        return None
    if namespace.get("torch", torch) is not torch:
        return None
    calls = tree.elts if isinstance(tree, ast.Tuple) else [tree]
    made = []
    for call in calls:
        tensor = _literal_factory_call(call)
        if tensor is None:
            return None
        made.append(tensor)
    return tuple(made) if isinstance(tree, ast.Tuple) else made[0]


def _literal_factory_call(node: Any) -> torch.Tensor | None:
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "torch"
        and node.func.attr in _META_FACTORIES
        and getattr(torch, node.func.attr, None) is _TORCH_FACTORIES[node.func.attr]
    ):
        return None
    name = node.func.attr
    dtype = _META_FACTORIES[name]
    for keyword in node.keywords:
        given = _literal_dtype(keyword.value) if keyword.arg == "dtype" else None
        if given is None:
            return None
        dtype = given
    args = node.args
    if name == "randint":
        # randint(high, size) or randint(low, high, size): torch refuses low >= high.
        bounds = [_literal_int(a) for a in args[:-1]]
        if not 1 <= len(bounds) <= 2 or any(b is None for b in bounds):
            return None
        low, high = (0, bounds[0]) if len(bounds) == 1 else (bounds[0], bounds[1])
        if low is None or high is None or low >= high:
            return None
        if dtype is None or dtype.is_floating_point or dtype.is_complex or dtype == torch.bool:
            return None
        shape = _literal_shape(args[-1:], sequence_only=True)
    else:
        if dtype is not None and name in ("randn", "rand") and not dtype.is_floating_point:
            return None
        shape = _literal_shape(args)
    if shape is None:
        return None
    return torch.empty(shape, dtype=dtype, device="meta")


def _literal_int(node: Any) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int and node.value >= 0:
        return node.value
    return None


def _literal_shape(args: list[Any], sequence_only: bool = False) -> tuple[int, ...] | None:
    """The sizes given as `f(1, 3, 8)` or `f((1, 3, 8))` / `f([1, 3, 8])`, all literal ints."""
    if len(args) == 1 and isinstance(args[0], (ast.Tuple, ast.List)):
        args = args[0].elts
    elif sequence_only or not args:
        return None
    sizes = [_literal_int(a) for a in args]
    return None if any(s is None for s in sizes) else tuple(s for s in sizes if s is not None)


def _literal_dtype(node: Any) -> torch.dtype | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "torch":
        found = getattr(torch, node.attr, None)
        if isinstance(found, torch.dtype):
            return found
    return None
