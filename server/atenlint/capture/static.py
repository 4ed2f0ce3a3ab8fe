"""Capture without running the user's code: read the source with `ast`, and replay each
torch call it makes inside a tiny function of our own that TorchScript compiles.

For `F.interpolate(x, scale_factor=2.0, mode="bicubic")` in a forward, the static pass
compiles `def _call(a0: Tensor): return torch.nn.functional.interpolate(a0,
scale_factor=2.0, mode="bicubic")` (literals kept, unknown values typed from the callee's
own signature) and walks it with the same specialising walker as the script capture: the
library code torch ships is compiled and analysed, the user's code is only parsed. A
submodule `self.pool = nn.AdaptiveAvgPool3d((2, 2, 2))` is a torch class built on meta from
the literal arguments in `__init__`; helpers, methods and submodule classes defined in the
same file are followed through the AST.

Used for `atenlint check --no-exec`, the editor's Restricted Mode, and classes that can
be neither scripted nor traced. Runs inside the worker, which never imports the file.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import linecache
import os
import re
import typing
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from .. import torchcompat
from ..ast_names import dotted_name
from ..python_parse import parse_module
from ..script_typing import widen_int_literals, widen_int_literals_by_types
from ..worker.protocol import CapturedOp, ClassAnswer, FileAnswer, StaticParams, captured_op, seen_in
from ..worker.vocabulary import JIT_VIEWS, STATUS_STATIC, VIEW_COMPILE, VIEW_DISPATCH
from .compile_static import class_breaks, disabled_functions
from .decompose import resolve_overload
from .paths import is_library_file
from .script import Site, _Walker, decomposed, script_ops
from .static_flow import (
    ROOT,
    TENSOR,
    Context,
    Facts,
    Flow,
    assigned_attributes,
    class_attributes,
    constructor_settings,
    init_parameters,
)

# Fast paths torch takes only on CPU/CUDA (a device check in MultiheadAttention and
# TransformerEncoderLayer): never reached on MPS, so never reported there.
CPU_CUDA_FAST_PATHS = frozenset({"aten::_native_multi_head_attention", "aten::_transformer_encoder_layer_fwd"})

_TORCH_ROOTS = {"torch"}
_PLACEHOLDER_INTS = (8, 1, 2)
_MAX_FOLLOW_DEPTH = 12
_WRAPPER_FILE = "<atenlint-static>"
FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass
class _Names:
    """What names mean in the user's file: imports and module-level definitions."""

    # local name -> dotted torch path ("F" -> "torch.nn.functional")
    aliases: dict[str, str] = field(default_factory=dict)
    functions: dict[str, FunctionNode] = field(default_factory=dict)  # module level
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    # local name -> (absolute module, attribute) of the project
    imported: dict[str, tuple[str, str]] = field(default_factory=dict)
    modules: dict[str, str] = field(default_factory=dict)  # local name -> absolute module of the project


def _collect_names(tree: ast.Module, package: str = "") -> _Names:
    names = _Names()
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in _TORCH_ROOTS:
                    if alias.asname:
                        names.aliases[alias.asname] = alias.name
                    else:
                        names.aliases[alias.name.split(".")[0]] = alias.name.split(".")[0]
                elif alias.asname:
                    names.modules[alias.asname] = alias.name
        elif (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.level == 0
            and node.module.split(".")[0] in _TORCH_ROOTS
        ):
            for alias in node.names:
                names.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.ImportFrom):
            base = _absolute_module(node.module, node.level, package)
            if base is None:
                continue
            for alias in node.names:
                local = alias.asname or alias.name
                names.imported[local] = (base, alias.name)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.functions[node.name] = node
        elif isinstance(node, ast.ClassDef):
            names.classes[node.name] = node
    return names


def _absolute_module(module: str | None, level: int, package: str) -> str | None:
    """`from ..ops import x` inside package `pkg.models` -> "pkg.ops"."""
    if level == 0:
        return module
    parts = package.split(".") if package else []
    if level - 1 > len(parts):
        return None
    base = parts[: len(parts) - (level - 1)]
    return ".".join(base + ([module] if module else [])) or None


def _dotted(node: ast.AST) -> list[Any] | None:
    name = dotted_name(node)
    return name.split(".") if name else None


def _torch_path(node: ast.AST, names: _Names) -> str | None:
    """`F.interpolate` -> "torch.nn.functional.interpolate" when F is an alias of torch's."""
    parts = _dotted(node)
    if not parts or parts[0] not in names.aliases:
        return None
    return ".".join([names.aliases[parts[0]]] + parts[1:])


def _resolve_torch(path: str) -> Any:
    """The torch object a dotted path names (torch is a library: resolving it runs no user code)."""
    parts = path.split(".")
    obj: Any = torch
    for part in parts[1:]:
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


# ---------------------------------------------------------------------------
# Arguments


class _Unknown:
    pass


_UNKNOWN_ARG = _Unknown()


def _literal(node: ast.AST, names: _Names) -> Any:
    """A constant argument's value (literals, torch dtypes/devices), else _UNKNOWN_ARG."""
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    path = _torch_path(node, names)
    if path is not None:
        value = _resolve_torch(path)
        if isinstance(value, (torch.dtype, torch.layout, torch.memory_format, int, float)):
            return value
    if isinstance(node, (ast.Tuple, ast.List)):
        items = [_literal(e, names) for e in node.elts]
        if all(i is not _UNKNOWN_ARG for i in items):
            return tuple(items) if isinstance(node, ast.Tuple) else items
    return _UNKNOWN_ARG


def _source_literal(value: Any) -> str:
    if isinstance(value, torch.dtype):
        return str(value)  # "torch.float64"
    if isinstance(value, (torch.layout, torch.memory_format)):
        return str(value)
    return repr(value)


# ---------------------------------------------------------------------------
# Replaying one call through TorchScript


_WRAPPERS: dict[tuple[str, tuple[tuple[str, str], ...]], Any] = {}
_wrapper_ids = itertools.count()


def _annotation_text(annotation: Any) -> str | None:
    if annotation is inspect.Parameter.empty:
        return None
    if isinstance(annotation, str):
        return annotation.replace("Tensor", "torch.Tensor") if "torch." not in annotation else annotation
    text = getattr(annotation, "__name__", None) if isinstance(annotation, type) else None
    if annotation is torch.Tensor:
        return "torch.Tensor"
    if text in ("int", "float", "bool", "str"):
        return str(text)
    rendered = repr(annotation).replace("typing.", "")
    rendered = rendered.replace("<class 'torch.Tensor'>", "torch.Tensor").replace("torch.Tensor", "torch.Tensor")
    if "<" in rendered:
        return None
    return rendered.replace("Tensor", "torch.Tensor").replace("torch.torch.", "torch.")


def _parameter_types(function: Any, positional: int, keywords: list[Any]) -> tuple[list[Any], dict[str, Any]] | None:
    """TorchScript types for each argument slot, from the callee's own signature."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return None
    parameters = [
        p
        for p in signature.parameters.values()
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    by_name = signature.parameters
    positional_types = [
        (_annotation_text(p.annotation) if i < len(parameters) else None) for i, p in enumerate(parameters[:positional])
    ]
    keyword_types = {k: _annotation_text(by_name[k].annotation) if k in by_name else None for k in keywords}
    return positional_types, keyword_types


def _schema_types(qualified: str, positional: int, keywords: list[Any]) -> list[tuple[list[Any], dict[str, Any]]]:
    """Candidate argument types from the aten schemas of a builtin, most specific first."""
    out = []
    schemas = torchcompat.schemas_for_operator(qualified)
    # The default overload first: `torch.logspace(0, n - 1, n)` means Scalars, not the
    # rarely used Tensor overloads that also type-check.
    for schema in sorted(schemas, key=lambda s: s.overload_name != ""):
        if resolve_overload(schema.name, schema.overload_name) is None:
            continue  # TorchScript's own builtins (math.frexp on floats), not dispatcher ops
        arguments = [a for a in schema.arguments if not a.kwarg_only]
        if schema.overload_name.endswith("out") or len(arguments) < positional:
            continue
        names = {a.name: a for a in schema.arguments}
        if any(k not in names for k in keywords):
            continue
        positional_types = [_jit_type(a.type) for a in arguments[:positional]]
        keyword_types = {k: _jit_type(names[k].type) for k in keywords}
        out.append((positional_types, keyword_types))
    return out


_JIT_TYPE_NAMES = {
    "Tensor": "torch.Tensor",
    "number": "float",
    "Scalar": "float",
    "Device": "torch.device",
    "ScalarType": "int",
    "Layout": "int",
    "MemoryFormat": "int",
    "Generator": "torch.Generator",
}


def _jit_type(jit_type: Any) -> str | None:
    """A schema argument type as a TorchScript annotation ("Optional[Device]" ->
    "Optional[torch.device]"), or None when it has no spelling we can use."""
    text = str(jit_type).replace("SymInt", "int")
    for name, spelling in _JIT_TYPE_NAMES.items():
        text = re.sub(rf"\b{name}\b", spelling, text)
    if any(ch in text for ch in "()") or "Storage" in text or "Stream" in text:
        return None
    return text


def _replay(expression: str, slots: list[tuple[str, str]]) -> Any | None:
    """Compile `def f(slots): return expression` with TorchScript; None if it does not type."""
    key = (expression, tuple(slots))
    if key in _WRAPPERS:
        return _WRAPPERS[key]
    name = f"_atenlint_call_{next(_wrapper_ids)}"
    parameters = ", ".join(f"{slot}: {kind}" for slot, kind in slots)
    source = f"def {name}({parameters}):\n    return {expression}\n"
    filename = f"{_WRAPPER_FILE}/{name}.py"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    # The names the wrapper's annotations use, as TorchScript resolves them.
    namespace: dict[str, Any] = {
        "torch": torch,
        "List": list,
        "Optional": typing.Optional,
        "Tensor": torch.Tensor,
        "__name__": "atenlint_static",
    }
    try:
        exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - our own generated wrapper
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compiled = torch.jit.script(namespace[name])
    except Exception:  # noqa: BLE001 - the call does not type this way
        compiled = None
    _WRAPPERS[key] = compiled
    return compiled


class _Replayer:
    def __init__(self, names: _Names, device: str):
        self.names = names
        self.device = device

    def call(self, node: ast.Call) -> list[Any]:
        """The ScriptedOps of one torch call (function, method or submodule), or []."""
        path = _torch_path(node.func, self.names)
        if path is not None:
            return self._function(path, node)
        if isinstance(node.func, ast.Attribute):
            return self._method(node)
        return []

    def _arguments(
        self, node: ast.Call, first: str | None = None
    ) -> tuple[list[str], list[str], list[tuple[str, str]]] | None:
        """Source text for each argument: a literal, or a typed slot for the wrapper."""
        slots: list[str] = []
        positional: list[str] = []
        keywords: list[tuple[str, str]] = []
        if first is not None:
            positional.append(first)
        for argument in node.args:
            if isinstance(argument, ast.Starred):
                return None
            value = _literal(argument, self.names)
            if value is _UNKNOWN_ARG:
                slot = f"a{len(slots)}"
                slots.append(slot)
                positional.append(slot)
            else:
                positional.append(_source_literal(value))
        for keyword in node.keywords:
            if keyword.arg is None:
                return None
            value = _literal(keyword.value, self.names)
            if value is _UNKNOWN_ARG:
                slot = f"a{len(slots)}"
                slots.append(slot)
                keywords.append((keyword.arg, slot))
            else:
                keywords.append((keyword.arg, _source_literal(value)))
        return slots, positional, keywords

    def _function(self, path: str, node: ast.Call) -> list[Any]:
        target = _resolve_torch(path)
        if target is None or isinstance(target, type):
            return []  # a class: constructing torch modules in forward is rare; skip
        parsed = self._arguments(node)
        if parsed is None:
            return []
        slots, positional, keywords = parsed
        expression = f"{path}({', '.join(positional + [f'{k}={v}' for k, v in keywords])})"
        for types_ in self._slot_types(target, path, node, slots, positional, keywords):
            compiled = _replay(expression, list(zip(slots, types_)))
            found = self._walk(compiled) if compiled is not None else []
            if found:
                return found
        # `scale_factor=2`: Python takes an int where a float is annotated, TorchScript does not.
        widened = widen_int_literals(node, target)
        if widened is None:
            # A builtin (`dropout_p=0` to F.scaled_dot_product_attention): typed by its schemas.
            builtin = torchcompat.builtin_name(target)
            schemas = (
                _schema_types(builtin.split(".")[0], len(node.args), [k.arg for k in node.keywords]) if builtin else []
            )
            widened = next(
                (w for types in schemas[:6] if (w := widen_int_literals_by_types(node, *types)) is not None), None
            )
        return self._function(path, widened) if widened is not None else []

    def _method(self, node: ast.Call) -> list[Any]:
        if not isinstance(node.func, ast.Attribute):
            return []
        name = node.func.attr
        if not hasattr(torch.Tensor, name) or name.startswith("_"):
            return []
        parsed = self._arguments(node, first="self_")
        if parsed is None:
            return []
        slots, positional, keywords = parsed
        receiver, rest = positional[0], positional[1:]
        expression = f"{receiver}.{name}({', '.join(rest + [f'{k}={v}' for k, v in keywords])})"
        qualified = f"aten::{name}"
        candidates = _schema_types(qualified, len(rest) + 1, [k for k, _ in keywords])
        for positional_types, keyword_types in candidates[:6] or [([None] * (len(rest) + 1), {})]:
            slot_types = self._fill(slots, positional, keywords, positional_types, keyword_types)
            compiled = _replay(expression, [("self_", "torch.Tensor")] + list(zip(slots, slot_types)))
            found = self._walk(compiled) if compiled is not None else []
            if found:
                return found
        return []

    def _slot_types(
        self,
        target: Any,
        path: str,
        node: ast.Call,
        slots: list[str],
        positional: list[str],
        keywords: list[tuple[str, str]],
    ) -> Iterator[list[Any]]:
        builtin = torchcompat.builtin_name(target)
        signatures: list[tuple[list[Any], dict[str, Any]]] = []
        if builtin is not None:
            signatures = _schema_types(builtin.split(".")[0], len(positional), [k for k, _ in keywords])[:6]
        else:
            found = _parameter_types(target, len(positional), [k for k, _ in keywords])
            if found is not None:
                signatures = [found]
        tried: set[tuple[Any, ...]] = set()
        for positional_types, keyword_types in signatures:
            slot_types = tuple(self._fill(slots, positional, keywords, positional_types, keyword_types))
            if slot_types not in tried:
                tried.add(slot_types)
                yield list(slot_types)
        everything_tensor = tuple("torch.Tensor" for _ in slots)
        if everything_tensor not in tried:
            yield list(everything_tensor)

    @staticmethod
    def _fill(
        slots: list[str],
        positional: list[str],
        keywords: list[tuple[str, str]],
        positional_types: list[Any],
        keyword_types: dict[str, Any],
    ) -> list[Any]:
        slot_types: dict[str, Any] = {}
        for index, text in enumerate(positional):
            if text in slots:
                kind = positional_types[index] if index < len(positional_types) else None
                slot_types[text] = kind or "torch.Tensor"
        for name, text in keywords:
            if text in slots:
                slot_types[text] = keyword_types.get(name) or "torch.Tensor"
        return [slot_types.get(slot, "torch.Tensor") for slot in slots]

    def _walk(self, compiled: Any) -> list[Any]:
        walker = _Walker(training=False, device=self.device)
        walker.graph(compiled.graph, None, {}, ())
        found = list(walker.found)
        trainer = _Walker(training=True, device=self.device)
        trainer.graph(compiled.graph, None, {}, ())
        found += trainer.found
        return found

    def submodule(self, constructor: ast.Call) -> Any | None:
        """A torch nn.Module built on meta from the literal arguments of its constructor,
        unknown ones replaced by plausible sizes; scripted. None if that cannot be done."""
        path = _torch_path(constructor.func, self.names)
        cls = _resolve_torch(path) if path else None
        if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module)):
            return None
        args = [_literal(a, self.names) for a in constructor.args]
        kwargs = {k.arg: _literal(k.value, self.names) for k in constructor.keywords if k.arg}
        if any(isinstance(a, ast.Starred) for a in constructor.args) or any(
            k.arg is None for k in constructor.keywords
        ):
            return None
        unknown = [i for i, a in enumerate(args) if a is _UNKNOWN_ARG] + [
            k for k, v in kwargs.items() if v is _UNKNOWN_ARG
        ]
        for guess in _PLACEHOLDER_INTS if unknown else (None,):
            call_args = [guess if a is _UNKNOWN_ARG else a for a in args]
            call_kwargs = {k: (guess if v is _UNKNOWN_ARG else v) for k, v in kwargs.items()}
            scripted = _script_on_meta(cls, call_args, call_kwargs)
            if scripted is not None:
                return scripted
        return None


def _script_on_meta(cls: type, args: list[Any], kwargs: dict[str, Any]) -> Any | None:
    """The torch module `cls(*args, **kwargs)` built on meta and scripted, or None when
    these arguments do not build or script (the caller tries the next plausible size)."""
    try:
        with torch.device("meta"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return torch.jit.script(cls(*args, **kwargs))
    except Exception:  # noqa: BLE001 - any failure means: not with these arguments
        return None


# ---------------------------------------------------------------------------
# Following the user's code through the AST


# What a name in the user's project can be defined as.
_Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


class _Project:
    """The user's files the static pass may read (never import) to follow calls across
    modules: `from ..ops import step_mask`, `from . import blocks; blocks.Residual(16)`."""

    def __init__(self, roots: list[str], devices: tuple[str, ...], texts: dict[str, str] | None = None):
        self.roots = [os.path.abspath(r) for r in roots]
        self.devices = devices
        self.texts = {os.path.abspath(p): t for p, t in (texts or {}).items()}
        self._files: dict[str, _FileAnalysis | None] = {}
        self.followed_classes: set[str] = set()  # the project's classes a forward was followed into

    def module_file(self, module: str) -> str | None:
        relative = module.replace(".", os.sep)
        for root in self.roots:
            for candidate in (os.path.join(root, relative + ".py"), os.path.join(root, relative, "__init__.py")):
                if os.path.isfile(candidate) and not is_library_file(candidate):
                    return candidate
        return None

    def analysis(self, path: str, package: str) -> _FileAnalysis | None:
        path = os.path.abspath(path)
        if path not in self._files:
            self._files[path] = None
            text = self.texts.get(path)
            try:
                if text is None:
                    with open(path, encoding="utf-8") as handle:
                        text = handle.read()
                module = (
                    package
                    if path.endswith("__init__.py")
                    else ".".join(p for p in (package, os.path.splitext(os.path.basename(path))[0]) if p)
                )
                self._files[path] = _FileAnalysis(path, parse_module(text, filename=path), self, package, module)
            except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
                pass
        return self._files[path]

    def definition(self, module: str, name: str) -> tuple[_FileAnalysis, _Definition] | None:
        """(analysis, FunctionDef | ClassDef) for `module.name` in the project, or None."""
        path = self.module_file(module)
        if path is None:
            return None
        package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
        analysis = self.analysis(path, package)
        if analysis is None:
            return None
        node = analysis.names.functions.get(name) or analysis.names.classes.get(name)
        if node is not None:
            return analysis, node
        if name in analysis.names.imported:  # re-exported: `from .gated import GatedMLP` in __init__.py
            return self.definition(*analysis.names.imported[name])
        return None


class _FileAnalysis:
    def __init__(self, path: str, tree: ast.Module, project: _Project, package: str = "", module: str = ""):
        self.path = path
        self.tree = tree
        self.project = project
        # The file's import name, for naming the classes it defines ("pkg.mod.Class").
        self.module = module or ".".join(p for p in (package, os.path.splitext(os.path.basename(path))[0]) if p)
        self.names = _collect_names(tree, package)
        self._replayers: dict[str, _Replayer] = {}
        self._facts: dict[tuple[str | None, str | None], Facts] = {}
        # Names bound to modules that are not torch (np, math): calls on them are not tensor ops.
        self.module_names: dict[str, str] = {}
        for node in tree.body:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] not in _TORCH_ROOTS:
                        self.module_names[alias.asname or alias.name.split(".")[0]] = alias.name

    def facts(self, cls: ast.ClassDef | None, cls_owner: _FileAnalysis | None) -> Facts:
        """What this file's code means, for a method of `cls` (defined in `cls_owner`) or a
        plain function (cls None)."""
        key = (cls.name if cls is not None else None, cls_owner.path if cls_owner is not None else None)
        if key not in self._facts:
            facts = Facts(
                torch_path=lambda node: _torch_path(node, self.names),
                resolve_torch=_resolve_torch,
                module_names=dict(self.module_names),
                project_names=set(self.names.imported) | set(self.names.classes) | set(self.names.functions),
                functions=dict(self.names.functions),
            )
            if cls is not None and cls_owner is not None:
                init = cls_owner._methods(cls).get("__init__")
                if init is not None:
                    owner, function = init
                    owner_facts = owner.facts(None, None) if owner is not self else facts
                    facts.attributes, facts.layers = class_attributes(function, owner_facts)
                    facts.settings = {name: value for name, (_, value) in cls_owner.settings(cls).items()}
            self._facts[key] = facts
        return self._facts[key]

    def settings(
        self, cls: ast.ClassDef, methods: list[FunctionNode] | None = None, depth: int = 0
    ) -> dict[str, tuple[str, Any]]:
        """`constructor_settings` of `cls` (defined here), and of its bases for what its own
        __init__ leaves to them (`super().__init__(model, **kwargs)`): not an attribute it
        assigns, nor one stored from a parameter it takes itself (it may pass another
        default on). `methods`: the most derived class's other methods."""
        if methods is None:
            methods = [f for n, (_, f) in self._methods(cls).items() if n != "__init__"]
        init = next(
            (n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "__init__"),
            None,
        )
        found = constructor_settings(init, methods) if init is not None else {}
        parameters = init_parameters(init) if init is not None else set()
        assigned = assigned_attributes(init) if init is not None else set()
        for base in cls.bases if depth < _MAX_FOLLOW_DEPTH else ():
            resolved = self.resolve(base)
            if resolved is None:
                continue
            owner, base_cls = resolved
            if not isinstance(base_cls, ast.ClassDef):
                continue
            for name, (source, value) in owner.settings(base_cls, methods, depth + 1).items():
                if name not in found and name not in assigned and source not in parameters:
                    found[name] = (source, value)
        return found

    def replayer(self, device: str) -> _Replayer:
        if device not in self._replayers:
            self._replayers[device] = _Replayer(self.names, device)
        return self._replayers[device]

    def class_calls(self, cls: ast.ClassDef) -> list[tuple[Site, list[Any]]]:
        """(user site, ScriptedOps) for every torch call forward can reach, in any of the
        project's files."""
        out: list[tuple[Site, list[Any]]] = []
        for device in self.project.devices:
            self._follow_method(cls, "forward", device, out, set(), 0)
        return out

    def resolve(self, node: ast.AST) -> tuple[_FileAnalysis, _Definition] | None:
        """What a called name refers to in the project: (analysis, FunctionDef | ClassDef)."""
        if isinstance(node, ast.Name):
            if node.id in self.names.functions:
                return self, self.names.functions[node.id]
            if node.id in self.names.classes:
                return self, self.names.classes[node.id]
            if node.id in self.names.imported:
                return self.project.definition(*self.names.imported[node.id])
            return None
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            owner = node.value.id
            if owner in self.names.modules:
                return self.project.definition(self.names.modules[owner], node.attr)
            if owner in self.names.imported:
                module, attr = self.names.imported[owner]
                return self.project.definition(f"{module}.{attr}", node.attr)
        return None

    def _methods(self, cls: ast.ClassDef) -> dict[str, tuple[_FileAnalysis, FunctionNode]]:
        """Methods by name, bases first (bases defined anywhere in the project), each with
        the file that defines it."""
        methods: dict[str, tuple[_FileAnalysis, FunctionNode]] = {}
        for base in cls.bases:
            found = self.resolve(base)
            owner, base_cls = found if found is not None else (self, None)
            if isinstance(base_cls, ast.ClassDef):
                methods.update(
                    {name: (owner, fn) for name, (_, fn) in owner._methods(base_cls).items()}
                    if owner is not self
                    else self._methods(base_cls)
                )
        for node in cls.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                methods[node.name] = (self, node)
        return methods

    def _submodules(self, cls: ast.ClassDef) -> dict[str, list[tuple[_FileAnalysis, ast.Call]]]:
        """`self.name = <constructor call>` in __init__: name -> [(analysis, call)], every
        branch's choice (`RMSNorm(d) if cfg.rms else LayerNorm(d)` in an if/else)."""
        found: dict[str, list[tuple[_FileAnalysis, ast.Call]]] = {}
        init = self._methods(cls).get("__init__")
        if init is None:
            return found
        owner, function = init
        for node in ast.walk(function):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                for target in node.targets:
                    if (
                        isinstance(target, ast.Attribute)
                        and isinstance(target.value, ast.Name)
                        and target.value.id == "self"
                    ):
                        found.setdefault(target.attr, []).append((owner, node.value))
        return found

    def _follow_method(
        self,
        cls: ast.ClassDef,
        name: str,
        device: str,
        out: list[tuple[Site, list[Any]]],
        visited: set[Any],
        depth: int,
        context: Context = ROOT,
    ) -> None:
        key = (self.path, cls.name, name, context.key())
        if key in visited or depth > _MAX_FOLLOW_DEPTH:
            return
        visited.add(key)
        method = self._methods(cls).get(name)
        if method is not None:
            owner, function = method
            owner._body(function, cls, self, device, out, visited, depth, context)

    def _body(
        self,
        function: Any,
        cls: ast.ClassDef | None,
        cls_owner: Any,
        device: str,
        out: list[tuple[Site, list[Any]]],
        visited: set[Any],
        depth: int,
        context: Context = ROOT,
    ) -> None:
        """Every torch call in `function` (defined in this file), following the user's own
        callees. `cls_owner` is the analysis that defines `cls` (for `self.` lookups);
        `context` says whether the caller reached it only in training, in eval, or only
        with an optional argument."""
        submodules = cls_owner._submodules(cls) if cls is not None else {}
        flow = Flow(function, self.facts(cls, cls_owner), context, entry=getattr(function, "name", "") == "forward")
        for node, where in flow.calls():
            func = node.func
            if (
                isinstance(func, ast.Attribute)
                and isinstance(func.value, ast.Name)
                and func.value.id == "self"
                and cls is not None
            ):
                if func.attr in submodules:
                    for owner, constructor in submodules[func.attr]:
                        owner._submodule_call(node, constructor, self, device, out, visited, depth, where)
                else:
                    method = cls_owner._methods(cls).get(func.attr)
                    inner = _bind_training(node, method[1] if method else None, where, skip_self=True)
                    cls_owner._follow_method(cls, func.attr, device, out, visited, depth + 1, inner)
                continue
            found = self.resolve(func)
            if found is not None:
                owner, definition = found
                if isinstance(definition, ast.ClassDef):
                    continue  # building a user class in forward: its forward runs when it is called
                inner = _bind_training(node, definition, where)
                key = (owner.path, definition.name, inner.key())
                if key in visited:
                    continue
                visited.add(key)
                owner._body(definition, None, None, device, out, visited, depth + 1, inner)
                continue
            if (
                isinstance(func, ast.Attribute)
                and _torch_path(func, self.names) is None
                and flow.kinds.of(func.value, where) != TENSOR
            ):
                continue  # `cache.values()`, `np.broadcast_to(...)`, `dist.mode()`: not a tensor's method
            ops = _in_context(self._replay_in_modes(node, flow, device), where)
            if ops:
                out.append((self._site(node), ops))

    def _replay_in_modes(self, node: ast.Call, flow: Flow, device: str) -> list[Any]:
        """The ops of one torch call; an argument chosen by the mode (`dropout_p=self.p if
        self.training else 0`) is replayed with its eval value for the eval walk and its
        training value for the training walk."""
        replayer = self.replayer(device)
        per_mode = {training: _choose_by_mode(node, flow, training) for training in (False, True)}
        if per_mode[False] is None and per_mode[True] is None:
            return replayer.call(node)
        found = []
        for training, chosen in per_mode.items():
            found += [op for op in replayer.call(chosen or node) if op.training == training]
        return found

    def _submodule_call(
        self,
        call: ast.Call,
        constructor: ast.Call,
        caller: _FileAnalysis,
        device: str,
        out: list[tuple[Site, list[Any]]],
        visited: set[Any],
        depth: int,
        context: Context = ROOT,
    ) -> None:
        """`self.sub(x)` in `caller`, where `self.sub = <constructor>` is written in this file."""
        found = self.resolve(constructor.func)
        owner, cls = found if found is not None else (self, None)
        if isinstance(cls, ast.ClassDef):
            self.project.followed_classes.add(f"{owner.module}.{cls.name}")
            owner._follow_method(cls, "forward", device, out, visited, depth + 1, context)
            return
        scripted = self.replayer(device).submodule(constructor)
        if scripted is None:
            return
        try:
            captured = script_ops(scripted, (device,))
        except torchcompat.Unavailable:
            return  # no call walk on this torch (noted): the submodule's ops stay unknown
        ops = _in_context(captured.ops, context)
        if ops:
            out.append((caller._site(call), ops))

    def _site(self, node: ast.Call) -> Site:
        end = node.func
        return Site(
            self.path,
            node.lineno,
            node.col_offset,
            (end.end_lineno or end.lineno) - node.lineno + 1,
            end.end_col_offset,
        )


def _choose_by_mode(node: ast.Call, flow: Flow, training: bool) -> ast.Call | None:
    """`node` with each argument `a if <test of the mode> else b` replaced by the branch
    that mode takes; None when no argument depends on the mode."""
    changed = False

    def chosen(value: ast.expr) -> ast.expr:
        nonlocal changed
        if isinstance(value, ast.IfExp):
            test = flow.value(value.test, training)
            if isinstance(test, bool):
                changed = True
                return chosen(value.body if test else value.orelse)
        return value

    args = [chosen(a) for a in node.args]
    keywords = [ast.keyword(arg=k.arg, value=chosen(k.value)) for k in node.keywords]
    if not changed:
        return None
    return ast.copy_location(ast.Call(func=node.func, args=args, keywords=keywords), node)


def _bind_training(call: ast.Call, definition: Any, context: Context, skip_self: bool = False) -> Context:
    """The context a followed function runs in: its parameters that this call passes
    `self.training` (or a name holding it) test the mode (`drop_path(x, p, self.training)`)."""
    arguments = getattr(definition, "args", None)
    names: list[str] = []
    if arguments is not None:
        positional = [a.arg for a in arguments.posonlyargs + arguments.args][1 if skip_self else 0 :]
        for index, value in enumerate(call.args):
            if index < len(positional) and _is_training(value, context):
                names.append(positional[index])
        known = {a.arg for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs}
        names += [
            k.arg for k in call.keywords if k.arg is not None and k.arg in known and _is_training(k.value, context)
        ]
    return replace(context, training_names=tuple(names))


def _is_training(value: ast.AST, context: Context) -> bool:
    if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name):
        return value.value.id == "self" and value.attr == "training"
    return isinstance(value, ast.Name) and value.id in context.training_names


def _in_context(ops: list[Any], context: Context) -> list[Any]:
    """The ops of one call as its place in forward allows: a training-only block keeps the
    training walk's ops, an eval-only one the eval walk's; an optional branch marks them
    conditional (information, not an error). Fast paths torch never takes on MPS go."""
    from dataclasses import replace as _replace

    kept = []
    for op in ops:
        if context.training is not None and op.training != context.training:
            continue
        if op.device == "mps" and op.op in CPU_CUDA_FAST_PATHS:
            continue
        if context.optional and not op.conditional:
            op = _replace(op, conditional=True)
        kept.append(_replace(op, traced=context.tracing) if context.tracing is not None else op)
    return kept


def static_capture(request: StaticParams) -> FileAnswer:
    """Answer a `static` request: {path, module, text, classes, skip, devices, views}.
    The file is parsed, never imported."""
    path = os.path.abspath(request["path"])
    text = request.get("text")
    if text is None:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    answer: FileAnswer = {"path": path, "module": request["module"], "classes": [], "imported": []}
    try:
        tree = parse_module(text, filename=path)
    except SyntaxError:
        return answer  # the parent reports syntax errors itself
    devices = tuple(request.get("devices") or ("cpu",))
    views = tuple(request.get("views") or (VIEW_DISPATCH,))
    project = _Project(request.get("roots") or [os.path.dirname(path)], devices, {path: text})
    analysis = _FileAnalysis(path, tree, project, request["module"].rpartition(".")[0], request["module"])
    wanted = set(request.get("classes") or [])
    skip = set(request.get("skip") or [])
    # The compile view is not a call tree: its source-read graph breaks are their own record.
    tree_views = tuple(v for v in views if v != VIEW_COMPILE)
    disabled = disabled_functions(tree) if VIEW_COMPILE in views else frozenset()
    for name, cls in analysis.names.classes.items():
        if (wanted and name not in wanted) or name in skip or not _defines_forward(analysis, cls):
            continue
        found = static_class(analysis, cls, request["module"], tree_views)
        if VIEW_COMPILE in views:
            found["compile"] = class_breaks(cls, path, disabled=disabled)
        answer["classes"].append(found)
    return answer


def _defines_forward(analysis: _FileAnalysis, cls: ast.ClassDef) -> bool:
    """A module class: it has a forward, and no base is a torch class other than a module
    (`torch.autograd.Function` has a forward too; the import-and-build path skips it)."""
    for base in cls.bases:
        path = _torch_path(base, analysis.names)
        target = _resolve_torch(path) if path else None
        if isinstance(target, type) and not issubclass(target, torch.nn.Module):
            return False
    return "forward" in analysis._methods(cls)


def static_class_from_text(
    path: str,
    text: str,
    module: str,
    qualname: str,
    devices: tuple[str, ...],
    views: tuple[str, ...],
    roots: list[str] | None = None,
) -> ClassAnswer:
    """The static capture of one class (the fallback when scripting fails)."""
    tree = parse_module(text, filename=path)
    project = _Project(roots or [os.path.dirname(path)], devices, {path: text})
    analysis = _FileAnalysis(os.path.abspath(path), tree, project, module.rpartition(".")[0], module)
    cls = analysis.names.classes.get(qualname.split(".")[-1])
    if cls is None:
        return {
            "qualname": qualname,
            "name": qualname,
            "module": f"{module}.{qualname}",
            "status": STATUS_STATIC,
            "ops": [],
        }
    return static_class(analysis, cls, module, views)


def static_class(analysis: _FileAnalysis, cls: ast.ClassDef, module: str, views: tuple[str, ...]) -> ClassAnswer:
    merged: dict[tuple[Any, ...], CapturedOp] = {}
    analysis.project.followed_classes = set()
    calls = analysis.class_calls(cls)
    for site, scripted_ops in calls:
        for op in scripted_ops:
            sites = (site,) + tuple(s for s in op.sites if not s.file.startswith(_WRAPPER_FILE))
            key = (op.op, sites, repr(sorted((k, repr(v)) for k, v in op.known.items())), op.traced)
            entry = merged.get(key)
            if entry is None:
                # A call under `torch.jit.is_tracing()` reaches only the trace views (or, under
                # its negation, only the others).
                reaching = tuple(v for v in views if op.traced is None or (v in JIT_VIEWS) == op.traced)
                if not reaching:
                    continue
                entry = merged[key] = captured_op(
                    op.op,
                    [s.as_json(library=is_library_file(s.file) and s is not site) for s in sites],
                    {view: decomposed(op.op, op.known, view) for view in reaching},
                    conditional=True,
                )
            entry["conditional"] = entry.get("conditional", True) and op.conditional
            seen_in(entry, "train" if op.training else "eval", op.device)
    return {
        "qualname": cls.name,
        "name": cls.name,
        "module": f"{module}.{cls.name}",
        "status": STATUS_STATIC,
        "ops": list(merged.values()),
        "submodules": sorted(analysis.project.followed_classes),
    }
