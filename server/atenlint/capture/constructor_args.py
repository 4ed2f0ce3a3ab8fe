"""Constructor arguments for a class nobody said how to build: candidates from what atenlint knows.

Runs inside the worker. A class whose constructor has required parameters, and for which the
user configured no `init` and no factory, gets a short list of candidate calls, best first:

1. **Call sites in the user's own code** (`Unet(dim=64, dim_mults=(1, 2, 4, 8))` in a
   script, `Block(256, heads=8)`): the class's own file first, then the other files of its
   folder, then the top of the project's roots (`train.py`, `scripts/`), read statically,
   a bounded number of files of bounded size. Only arguments that are literals, or names
   of module-level literal constants, are kept (`dict(...)` of literals too); a required
   parameter the call gives no literal for is filled as in 2.
2. **Names, annotations and defaults**, in a few fixed joint profiles (a model width with a
   head count that divides it: 64 with 8 heads, 32 with 4, 64 with 1): sizes named like
   sizes (`dim`, `d_model`, `in_channels`, `n_embd`), head counts, depths, vocabularies,
   kernels, patches and image sizes that divide, dropout 0.0, `Optional[...]` None, a
   `Literal[...]`'s first choice, `norm_layer` the class `torch.nn.LayerNorm`, a module
   parameter whose attributes the constructor reads (`model.channels`) an instance of the
   module's own class that sets them (`torch.nn.Identity()` when it is only called), and
   a config object the module's own config class (`GPT(config=GPTConfig())`) or else a
   `types.SimpleNamespace` holding the attributes the file reads off it, each filled by
   the same rules.

No choice depends on time or chance: the same code gives the same candidates. Every
candidate is one expression (`Block(dim=64, heads=8)`) of literals, `torch.nn` names,
`types.SimpleNamespace` and the module's own classes, evaluated by `evaluate_call` in the
module's namespace; the caller builds each on meta and keeps the first that makes an
`nn.Module`. A class built this way is a guess, and the answer says so.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import os
import re
import sys
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import torch

from ..ast_names import dotted_name
from ..bounded_read import read_regular_file
from ..python_parse import function_node, parse_module
from .paths import is_library_file

MAX_CANDIDATES = 6
MAX_CALL_SITES = 3  # candidates from call sites, before the name rules' profiles
# What the search for call sites may read: files (own first), bytes per file, folder depth.
MAX_SITE_FILES = 48
MAX_SITE_FILE_BYTES = 512 * 1024
_ROOT_DEPTH = 2
_SKIPPED_DIRS = {"node_modules", "site-packages", "build", "dist", "__pycache__", "venv", "env"}


@dataclass(frozen=True)
class ConstructorCall:
    """One candidate constructor call: `expression` (`Block(dim=64, heads=8)`) and where its
    arguments came from ("call site path:line", or "names")."""

    expression: str
    source: str


@dataclass(frozen=True)
class _Profile:
    """One joint choice of the sizes that must agree (a width its head count divides)."""

    size: int
    heads: int
    depth: int
    alt: int  # which alternative of a rule with several (`layers`: an int, then four stages)


PROFILES = (_Profile(64, 8, 2, 0), _Profile(32, 4, 1, 1), _Profile(64, 1, 2, 2))


def candidates(
    cls: type, module: Any, roots: Sequence[str] = (), overlays: Mapping[str, str] | None = None
) -> list[ConstructorCall]:
    """Up to MAX_CANDIDATES calls of `cls` giving every required parameter, best first; []
    when its signature cannot be read or nothing can fill a parameter. `overlays`: the
    editor's unsaved texts by absolute path, read instead of those files."""
    try:
        parameters = [p for p in constructor_parameters(cls) if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    except (TypeError, ValueError):
        return []
    if not any(p.default is p.empty for p in parameters):
        return []
    reads = _ModuleReads.of(module)
    filler = _Filler(cls, module, reads)
    out: list[ConstructorCall] = []

    def add(arguments: dict[str, str] | None, source: str) -> None:
        if arguments is None:
            return
        expression = _call_text(cls.__name__, parameters, arguments)
        if all(c.expression != expression for c in out):
            out.append(ConstructorCall(expression, source))

    for site in call_sites(cls, module, roots, overlays)[:MAX_CALL_SITES]:
        add(filler.complete(parameters, site.arguments, PROFILES[0]), f"call site {site.where}")
    for profile in PROFILES:
        add(filler.complete(parameters, {}, profile), "names")
    return out[:MAX_CANDIDATES]


def evaluate_call(expression: str, cls: type, module: Any) -> Any:
    """Evaluate a candidate in the module's namespace, with `torch`, `types` and the class
    itself bound to what the candidate means by them (a copy: the module is not touched)."""
    namespace = dict(vars(module))
    namespace.update({"torch": torch, "types": types, cls.__name__: cls})
    return eval(expression, namespace)  # an expression this module wrote from literals and names


# -- parameters a constructor forwards to its parent's -------------------------------------------

MAX_FORWARDING_DEPTH = 4  # parents followed through `**kwargs` (x-transformers needs 2)
_VAR_POSITIONAL, _VAR_KEYWORD = inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD


def constructor_parameters(cls: type) -> list[inspect.Parameter]:
    """The parameters a call of `cls` may give: its signature's, except that a constructor
    passing its `**kwargs` on to its parent's (`super().__init__(causal=False, **kwargs)`,
    `Base.__init__(self, dim, **kwargs)`) has the parent's parameters that call leaves open
    in their place, as keywords, each keeping its default, so a required one stays required
    (x-transformers' `Encoder(**kwargs)` needs `AttentionLayers`'s `dim`); likewise `*args`
    alone, forwarded by a constructor with no positional parameter of its own, gives the
    parent's positional ones, in order. Read from the constructor's source (the call in
    `__init__` that calls the parent's); raises TypeError or ValueError as
    `inspect.signature` does."""
    return _constructor_parameters(cls, 0)


def _constructor_parameters(cls: type, depth: int) -> list[inspect.Parameter]:
    parameters = list(inspect.signature(cls).parameters.values())
    var_positional = next((p.name for p in parameters if p.kind == p.VAR_POSITIONAL), None)
    var_keyword = next((p.name for p in parameters if p.kind == p.VAR_KEYWORD), None)
    if (var_positional is None and var_keyword is None) or depth >= MAX_FORWARDING_DEPTH:
        return parameters
    forwarding = _parent_call(cls)
    if forwarding is None:
        return parameters
    parent, arguments, keywords = forwarding
    stars = [i for i, a in enumerate(arguments) if isinstance(a, ast.Starred)]
    unpacked = [k for k in keywords if k.arg is None]
    forwards_kwargs = len(unpacked) == 1 and _is_name(unpacked[0].value, var_keyword)
    forwards_args = len(stars) == 1 and _is_name(cast(ast.Starred, arguments[stars[0]]).value, var_positional)
    own_positional = any(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters)
    if (stars and not forwards_args) or (unpacked and not forwards_kwargs):
        return parameters  # something else unpacked into the call: what it gives is unknown
    if not forwards_kwargs and not (forwards_args and not own_positional):
        return parameters
    try:
        inherited = _constructor_parameters(parent, depth + 1)
    except (TypeError, ValueError):
        return parameters
    parent_positional = [p for p in inherited if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    before_star = stars[0] if stars else len(arguments)
    given = {p.name for p in parent_positional[:before_star]} | {k.arg for k in keywords if k.arg is not None}
    forwarded_kinds = {
        kind for kind, forwarded in ((_VAR_KEYWORD, forwards_kwargs), (_VAR_POSITIONAL, forwards_args)) if forwarded
    }
    kept = [p for p in parameters if p.kind not in forwarded_kinds]
    own = {p.name for p in kept}
    open_ = [p for p in inherited if p.name not in given and p.name not in own]
    if forwards_kwargs:
        if any(p.kind == p.POSITIONAL_ONLY and p.default is p.empty for p in open_):
            return parameters  # only `*args` could give it, in a place the call decides
        positional: list[inspect.Parameter] = []
        named = [p.replace(kind=p.KEYWORD_ONLY) for p in open_ if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    else:  # `*args` alone, and no positional parameter of its own: the parent's, in its order
        still_open = {p.name for p in open_}
        positional = [
            p.replace(kind=p.POSITIONAL_ONLY) for p in parent_positional[before_star:] if p.name in still_open
        ]
        named = []
    variadic = [p for p in open_ if p.kind in forwarded_kinds]  # what the parent itself takes as `*args`/`**kwargs`
    out = positional + [p for p in kept if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)] + named
    return out + [p for p in kept if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)] + variadic


def _is_name(node: ast.expr, name: str | None) -> bool:
    return name is not None and isinstance(node, ast.Name) and node.id == name


def _parent_call(cls: type) -> tuple[type, list[ast.expr], list[ast.keyword]] | None:
    """The first call in `cls`'s constructor of a parent's constructor (`super().__init__(...)`,
    `super(Cls, self).__init__(...)`, `Base.__init__(self, ...)`): the class whose `__init__` it
    runs, and the call's arguments (without the explicit `self`); None when there is none, or
    the source cannot be read."""
    mro = cls.__mro__
    owner = next((c for c in mro if "__init__" in vars(c)), None)
    if owner is None or owner in (object, torch.nn.Module):
        return None
    init = vars(owner)["__init__"]
    function = function_node(init)
    if function is None:
        return None
    namespace = getattr(init, "__globals__", {})
    calls = sorted(
        (n for n in ast.walk(function) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)),
        key=lambda n: (n.lineno, n.col_offset),
    )
    for call in calls:
        func = cast(ast.Attribute, call.func)
        if func.attr != "__init__":
            continue
        target = func.value
        if isinstance(target, ast.Call) and _is_name(target.func, "super"):
            start = owner
            if target.args:  # super(Cls, self): after Cls
                named = _resolve(target.args[0], namespace)
                if named not in mro:
                    return None
                start = cast(type, named)
            parent = next((c for c in mro[mro.index(start) + 1 :] if "__init__" in vars(c)), None)
            return None if parent is None else (parent, list(call.args), list(call.keywords))
        named = _resolve(target, namespace)
        if inspect.isclass(named) and named in mro and named is not owner:
            return named, list(call.args[1:]), list(call.keywords)  # `Base.__init__(self, ...)`
    return None


def _resolve(node: ast.expr, namespace: Mapping[str, Any]) -> Any:
    """What a dotted name (`Base`, `nn.Module`) means in the constructor's module, or None."""
    name = dotted_name(node)
    if not name:
        return None
    value: Any = namespace.get(name.split(".")[0])
    for part in name.split(".")[1:]:
        value = getattr(value, part, None)
    return value


def _call_text(name: str, parameters: list[inspect.Parameter], arguments: dict[str, str]) -> str:
    parts = []
    for parameter in parameters:
        if parameter.name not in arguments:
            continue
        value = arguments[parameter.name]
        parts.append(value if parameter.kind == parameter.POSITIONAL_ONLY else f"{parameter.name}={value}")
    return f"{name}({', '.join(parts)})"


# -- call sites in the user's code -----------------------------------------------------------


@dataclass(frozen=True)
class CallSite:
    """A call of the class found in the user's code: the literal arguments it gives, by
    parameter name, as Python source (`{"dim": "64", "dim_mults": "(1, 2, 4, 8)"}`)."""

    where: str  # "file.py:12"
    arguments: dict[str, str]


def call_sites(
    cls: type, module: Any, roots: Sequence[str] = (), overlays: Mapping[str, str] | None = None
) -> list[CallSite]:
    """Calls `Name(...)` / `mod.Name(...)` of the class in the project, in a fixed order (its
    own file, its folder, the roots), that give at least one required parameter a literal."""
    try:
        parameters = constructor_parameters(cls)
    except (TypeError, ValueError):
        return []
    required = {p.name for p in parameters if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    name = cls.__name__
    found: list[CallSite] = []
    seen: set[str] = set()
    for path in _site_files(getattr(module, "__file__", None) or "", roots):
        parsed = _parsed(path, name, overlays or {})
        if parsed is None:
            continue
        tree, constants = parsed
        for call in _calls_named(tree, name):
            arguments = _literal_arguments(call, parameters, constants)
            if arguments is None or not required & set(arguments):
                continue
            key = repr(sorted(arguments.items()))
            if key not in seen:
                seen.add(key)
                found.append(CallSite(f"{os.path.basename(path)}:{call.lineno}", arguments))
    return found


def _site_files(own: str, roots: Sequence[str]) -> list[str]:
    """The files searched for call sites, own file first, at most MAX_SITE_FILES."""
    files: list[str] = []

    def add(path: str) -> bool:
        path = os.path.abspath(path)
        if path not in files and path.endswith(".py") and not is_library_file(path):
            files.append(path)
        return len(files) < MAX_SITE_FILES

    if own and not add(own):
        return files
    folders = [os.path.dirname(os.path.abspath(own))] if own else []
    for folder in folders:
        for entry in _listing(folder):
            if not add(entry):
                return files
    for root in roots:
        pending = [(os.path.abspath(root), 0)]
        while pending:
            folder, depth = pending.pop(0)
            for entry in _listing(folder):
                if not add(entry):
                    return files
            if depth + 1 < _ROOT_DEPTH:
                pending += [(sub, depth + 1) for sub in _listing(folder, folders_only=True)]
    return files


def _listing(folder: str, folders_only: bool = False) -> list[str]:
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return []
    out = []
    for entry in entries:
        if entry.name.startswith(".") or entry.name in _SKIPPED_DIRS:
            continue
        try:
            wanted = (
                entry.is_dir(follow_symlinks=False)
                if folders_only
                else entry.name.endswith(".py") and entry.is_file(follow_symlinks=False)
            )
        except OSError:
            continue
        if wanted:
            out.append(entry.path)
    return out


_TEXTS: dict[str, tuple[tuple[int, int], str | None]] = {}  # path -> (mtime and size, text)
_TREES: dict[tuple[str, int], tuple[ast.Module | None, dict[str, ast.expr]]] = {}  # (path, hash of text)
_CACHE_ENTRIES = 512  # a warm worker sees many projects: forget all past this many files


def _parsed(path: str, name: str, overlays: Mapping[str, str]) -> tuple[ast.Module, dict[str, ast.expr]] | None:
    """The file's tree and its module-level literal constants, when its text mentions
    `name(` (an open editor buffer's text first); cached by the file's size and mtime."""
    text = overlays.get(path)
    if text is None:
        text = _text(path)
    if text is None or f"{name}(" not in text:
        return None
    tree, constants = _tree(path, text)
    return None if tree is None else (tree, constants)


def _text(path: str) -> str | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    key = (stat.st_mtime_ns, stat.st_size)
    cached = _TEXTS.get(path)
    if cached is None or cached[0] != key:
        if len(_TEXTS) > _CACHE_ENTRIES:
            _TEXTS.clear()
        cached = _TEXTS[path] = (key, _read(path))
    return cached[1]


def _tree(path: str, text: str) -> tuple[ast.Module | None, dict[str, ast.expr]]:
    key = (path, hash(text))
    if key not in _TREES:
        if len(_TREES) > _CACHE_ENTRIES:
            _TREES.clear()
        _TREES[key] = _parse(text)
    return _TREES[key]


def _read(path: str) -> str | None:
    try:
        return read_regular_file(path, MAX_SITE_FILE_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _parse(text: str | None) -> tuple[ast.Module | None, dict[str, ast.expr]]:
    if text is None:
        return None, {}
    try:
        tree = parse_module(text)
    except (SyntaxError, ValueError):
        return None, {}
    constants: dict[str, ast.expr] = {}
    for statement in tree.body:
        if isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None:
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            for target in targets:
                if isinstance(target, ast.Name) and _literal(statement.value, {}) is not None:
                    constants[target.id] = statement.value
    return tree, constants


def _called_name(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _calls_named(tree: ast.Module, name: str) -> list[ast.Call]:
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and _called_name(n) == name]
    return sorted(calls, key=lambda n: (n.lineno, n.col_offset))


def _literal_arguments(
    call: ast.Call, parameters: list[inspect.Parameter], constants: dict[str, ast.expr]
) -> dict[str, str] | None:
    """The call's literal arguments by parameter name; None when the call cannot be bound
    (`*args`, `**kwargs`, more positionals than the signature takes, an unknown keyword)."""
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    by_name = {p.name: p for p in parameters}
    takes_kwargs = any(p.kind == p.VAR_KEYWORD for p in parameters)
    out: dict[str, str] = {}
    for index, argument in enumerate(call.args):
        if isinstance(argument, ast.Starred) or index >= len(positional):
            return None
        value = _literal(argument, constants)
        if value is not None:
            out[positional[index].name] = value
    for keyword in call.keywords:
        if keyword.arg is None:
            return None
        if keyword.arg not in by_name or by_name[keyword.arg].kind == inspect.Parameter.POSITIONAL_ONLY:
            if takes_kwargs:
                continue
            return None
        value = _literal(keyword.value, constants)
        if value is not None:
            out[keyword.arg] = value
    return out


def _literal(node: ast.expr, constants: dict[str, ast.expr]) -> str | None:
    """The Python source of a literal (resolving module-level constants, `dict(...)` of
    literals), or None when the value is anything else."""
    if isinstance(node, ast.Name) and node.id in constants:
        return _literal(constants[node.id], {})
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "dict"
        and not node.args
        and all(k.arg is not None for k in node.keywords)
    ):
        values = {k.arg: _literal(k.value, constants) for k in node.keywords}
        if any(v is None for v in values.values()):
            return None
        return "dict(" + ", ".join(f"{k}={v}" for k, v in values.items()) + ")"
    if isinstance(node, (ast.Tuple, ast.List)):
        items = [_literal(e, constants) for e in node.elts]
        if any(i is None for i in items):
            return None
        if isinstance(node, ast.List):
            return "[" + ", ".join(str(i) for i in items) + "]"
        return "(" + ", ".join(str(i) for i in items) + ("," if len(items) == 1 else "") + ")"
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    if value is None or isinstance(value, (bool, int, float, str)):
        return repr(value)
    return None


# -- what the module reads off a parameter -----------------------------------------------------


class _ModuleReads:
    """Attributes the module's code reads off a name (`config.n_embd`, `self.config.n_head`,
    `model.channels`), from its source; and which classes assign which `self.` attributes."""

    def __init__(self, tree: ast.Module | None):
        self.tree = tree
        self._attributes: dict[str, list[str]] = {}

    @staticmethod
    def of(module: Any) -> _ModuleReads:
        path = os.path.abspath(getattr(module, "__file__", None) or "")
        text = "".join(linecache.getlines(path)) or _text(path) if path else None
        return _ModuleReads(_tree(path, text)[0] if text else None)

    def attributes(self, name: str, within: ast.AST | None = None) -> list[str]:
        """Attributes read off `name` or `self.name` (not called as methods), sorted."""
        root = within if within is not None else self.tree
        if root is None:
            return []
        key = f"{id(root)}:{name}"
        if key not in self._attributes:
            called = {id(n.func) for n in ast.walk(root) if isinstance(n, ast.Call)}
            found = set()
            for node in ast.walk(root):
                if not isinstance(node, ast.Attribute) or id(node) in called or not isinstance(node.ctx, ast.Load):
                    continue
                owner = node.value
                if dotted_name(owner) in (name, f"self.{name}"):
                    found.add(node.attr)
            self._attributes[key] = sorted(a for a in found if not a.startswith("__"))
        return self._attributes[key]

    def class_node(self, qualname: str) -> ast.ClassDef | None:
        if self.tree is None:
            return None
        body: list[ast.stmt] = self.tree.body
        node: ast.ClassDef | None = None
        for part in qualname.split("."):
            node = next((n for n in body if isinstance(n, ast.ClassDef) and n.name == part), None)
            if node is None:
                return None
            body = node.body
        return node

    def line(self, qualname: str) -> int:
        """The line a class starts at (its first decorator's, as `inspect.getsourcelines`
        says); 0 when the source has no such class."""
        node = self.class_node(qualname)
        return 0 if node is None else min([node.lineno] + [d.lineno for d in node.decorator_list])

    def assigned(self, qualname: str) -> set[str]:
        """`self.X` attributes a class's own methods assign."""
        node = self.class_node(qualname)
        if node is None:
            return set()
        out = set()
        for child in ast.walk(node):
            targets: list[ast.expr] = []
            if isinstance(child, ast.Assign):
                targets = list(child.targets)
            elif isinstance(child, (ast.AnnAssign, ast.AugAssign)):
                targets = [child.target]
            for target in targets:
                for leaf in ast.walk(target):
                    if isinstance(leaf, ast.Attribute) and isinstance(leaf.value, ast.Name) and leaf.value.id == "self":
                        out.add(leaf.attr)
        return out


# -- names, annotations and defaults ------------------------------------------------------------

_CONFIG_NAMES = {"config", "cfg", "conf", "args", "hparams", "params", "hp", "opt", "opts", "options", "hparam"}
_MODULE_NAMES = {
    "model",
    "net",
    "network",
    "backbone",
    "encoder",
    "decoder",
    "denoise_fn",
    "unet",
    "module",
    "fn",
    "layer",
    "body",
    "base_model",
    "feature_model",
    "submodule",
    "inner",
    "wrapped",
}
# Whole names first, then rules on the name's words.
_EXACT: dict[str, str] = {
    "in_chans": "image_channels",
    "img_channels": "image_channels",
    "image_channels": "image_channels",
    "input_channels": "image_channels",
    "img_chans": "image_channels",
    "spacial_dim": "spatial",
    "spatial_dim": "spatial",
    "grid_size": "spatial",
    "num_tokens": "vocab",
    "ntoken": "vocab",
    "ntokens": "vocab",
    "n_tokens": "vocab",
    "num_embeddings": "vocab",
    "vocab": "vocab",
    "block_size": "seq",
    "n_ctx": "seq",
    "context_length": "seq",
    "context_size": "seq",
    "max_position_embeddings": "seq",
    "num_positions": "seq",
    "k": "kernel",
    "ksize": "kernel",
    "p": "probability",
    "theta": "theta",
    "base": "theta",
    "normalized_shape": "size",
    "layers": "layers",
    "depths": "stages",
    "dim_mults": "stages",
    "channel_mult": "stages",
    "eps": "eps",
    "epsilon": "eps",
    "timesteps": "steps",
    "num_timesteps": "steps",
    "n_steps": "steps",
    "activation": "activation",
    "act": "activation",
    "act_layer": "activation",
    "act_fn": "activation",
    "nonlinearity": "activation",
    "norm_layer": "norm_layer",
}
_SIZE_WORDS = {
    "dim",
    "channels",
    "chans",
    "ch",
    "features",
    "width",
    "embd",
    "embed",
    "embedding",
    "planes",
    "inplanes",
    "filters",
    "model",
    "d",
    "c",
    "nf",
    "size",
    "hidden",
    "emb",
}
_HIDDEN_NAMES = {"dim_feedforward", "intermediate_size", "ffn_dim", "ff_dim", "d_ff", "mlp_dim", "inner_dim", "d_inner"}
# A file, a checkpoint, a place: nothing a guess can give (no candidate at all).
_UNGUESSABLE_WORDS = {"path", "file", "filename", "checkpoint", "ckpt", "url", "dir", "folder", "weights"}
_BOOL_PREFIXES = ("use", "with", "is", "has", "enable", "return", "do", "apply", "learn", "learned")


def _word_rule(name: str) -> str | None:
    lowered = name.lower()
    if lowered in _EXACT:
        return _EXACT[lowered]
    words = [w for w in re.split(r"_+", lowered) if w]
    if not words:
        return None
    last = words[-1]
    if last in _UNGUESSABLE_WORDS:
        return "unguessable"
    if any(w in ("drop", "dropout", "pdrop") or w.startswith("drop") or w.endswith("drop") for w in words):
        return "probability"
    if last in ("prob", "rate") and len(words) > 1:
        return "probability"
    if last == "eps" or last == "epsilon":
        return "eps"
    if "head" in words and ("dim" in words or "size" in words) or lowered in ("dim_head", "d_head", "d_k", "d_v"):
        return "head_dim"
    if last in ("heads", "head", "nhead", "nheads"):
        return "heads"
    if last in ("groups", "group"):
        return "groups"
    if last in ("layers", "layer", "depth", "blocks", "nlayers") and (len(words) > 1 or last != "layer"):
        return "depth"
    if words[0] in _BOOL_PREFIXES and len(words) > 1:
        return "bool"
    if last == "mask":
        return "none"
    if last == "window" or "window" in words and last == "size":
        return "spatial"
    if "vocab" in words or last == "vocab":
        return "vocab"
    if last in ("classes", "class", "labels") and len(words) > 1 or lowered in ("classes", "nclasses"):
        return "classes"
    if "kernel" in words:
        return "kernel"
    if "patch" in words:
        return "patch"
    if last in ("stride", "strides"):
        return "stride"
    if last in ("padding", "pad"):
        return "padding"
    if last == "dilation":
        return "one"
    if last in ("resolution", "res") or lowered in ("image_size", "img_size", "image_res", "img_res"):
        return "image"
    if ("seq" in words or "len" in words or "length" in words or "ctx" in words) and last in ("len", "length", "ctx"):
        return "seq"
    if last in ("ratio", "mult", "expansion", "expand", "factor"):
        return "ratio"
    if ("hidden" in words and last in ("dim", "features", "channels")) or lowered in _HIDDEN_NAMES:
        return "hidden"
    if last in ("scale", "temperature", "gamma", "alpha", "beta", "std", "init_values"):
        return "scale"
    if lowered.endswith("_values") and words[0] == "init":
        return "scale"
    if last in _SIZE_WORDS or words[0] in _SIZE_WORDS and len(words) > 1 and words[0] not in ("model",):
        return "size"
    if last == "steps":
        return "steps"
    if last in ("type", "mode", "name", "kind"):
        return "none"
    return None


def _rule_value(rule: str, profile: _Profile) -> str | None:
    alternatives: dict[str, tuple[str, ...]] = {
        "image_channels": ("3",),
        "spatial": ("4",),
        "vocab": ("100",),
        "seq": ("16", "32"),
        "kernel": ("3",),
        "probability": ("0.0",),
        "theta": ("10000",),
        "layers": ("2", "(1, 1, 1, 1)", "1"),
        "stages": ("(1, 2)", "(1, 1, 1, 1)"),
        "eps": ("1e-05",),
        "steps": ("10",),
        "activation": ("torch.nn.GELU", "'gelu'"),
        "norm_layer": ("torch.nn.LayerNorm",),
        "bool": ("False",),
        "heads": (str(profile.heads),),
        "head_dim": (str(max(profile.size // profile.heads, 8)),),
        "groups": (str(profile.heads),),
        "depth": (str(profile.depth),),
        "classes": ("10",),
        "patch": ("4", "8", "16"),
        "stride": ("1",),
        "padding": ("1",),
        "one": ("1",),
        "image": ("32",),
        "ratio": ("4",),
        "hidden": (str(profile.size * 2),),
        "scale": ("1.0",),
        "size": (str(profile.size),),
        "none": ("None",),
    }
    options = alternatives.get(rule)
    if not options:
        return None
    return options[min(profile.alt, len(options) - 1)]


class _Filler:
    """Fills a class's required parameters by the rules, one profile at a time."""

    def __init__(self, cls: type, module: Any, reads: _ModuleReads, depth: int = 0):
        self.cls, self.module, self.reads, self.depth = cls, module, reads, depth

    def complete(
        self, parameters: list[inspect.Parameter], given: dict[str, str], profile: _Profile
    ) -> dict[str, str] | None:
        """`given` plus a value for every other required parameter; None if one has none."""
        out = dict(given)
        for parameter in parameters:
            if parameter.name in out or parameter.default is not parameter.empty:
                continue
            value = self.value(parameter, profile)
            if value is None:
                return None
            out[parameter.name] = value
        return out

    def value(self, parameter: inspect.Parameter, profile: _Profile) -> str | None:
        name = parameter.name
        kind, detail = self._annotation(parameter.annotation)
        lowered = name.lower()
        rule = _word_rule(name)
        if rule == "unguessable":
            return None
        if kind == "literal":
            return repr(detail[0]) if detail else None
        if kind == "optional":
            return "None"
        if kind == "class":
            return self._config_instance(detail, profile)
        if kind == "module" or (kind is None and lowered in _MODULE_NAMES):
            return self._module_instance(name, profile)
        if kind == "callable":
            return _rule_value(rule, profile) if rule in ("activation", "norm_layer") else "torch.nn.Identity"
        if lowered in _CONFIG_NAMES or lowered.endswith(("_config", "_cfg", "_args")):
            return self._config(name, profile)
        if kind == "bool":
            return "False"
        if kind == "str":
            return "None" if rule is None else _rule_value(rule, profile)
        if kind == "tuple":
            return self._sequence(rule, detail, profile, "(", ")")
        if kind == "list":
            return self._sequence(rule, detail, profile, "[", "]")
        value = _rule_value(rule, profile) if rule is not None else None
        if kind == "float":
            if value is None or not _is_number(value):
                return "1.0"
            return value if "." in value or "e" in value else f"{value}.0"
        if kind == "int":
            if value is None or not _is_number(value) or "." in value:
                return str(profile.size)
            return value
        if value is not None:
            return value
        if kind is None:
            return (str(profile.size), "None", str(profile.size))[profile.alt]
        return None

    def _sequence(self, rule: str | None, detail: Any, profile: _Profile, open_: str, close: str) -> str | None:
        if rule in ("stages", "layers"):
            value = _rule_value(rule, profile)
            if value is not None and value.startswith("("):
                return open_ + value[1:-1] + close
        length = detail if isinstance(detail, int) else 2
        element = _rule_value(rule, profile) if rule is not None else str(profile.size)
        if element is None or element.startswith(("(", "[")):
            element = "1"
        items = ", ".join([element] * length)
        return f"{open_}{items}{',' if length == 1 and open_ == '(' else ''}{close}"

    def _annotation(self, annotation: Any) -> tuple[str | None, Any]:
        """("int" | "float" | "bool" | "str" | "optional" | "literal" | "tuple" | "list" |
        "module" | "callable" | "class", detail) or (None, None) when it says nothing usable."""
        if annotation is inspect.Parameter.empty:
            return None, None
        if isinstance(annotation, type):
            return self._class_kind(annotation)
        text = annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)
        try:
            node = parse_module(text.strip()).body[0]
        except (SyntaxError, ValueError, IndexError):
            return None, None
        return self._annotation_node(node.value) if isinstance(node, ast.Expr) else (None, None)

    def _class_kind(self, annotation: type) -> tuple[str | None, Any]:
        for base, kind in ((bool, "bool"), (int, "int"), (float, "float"), (str, "str")):
            if annotation is base:
                return kind, None
        if annotation in (tuple, list):
            return ("tuple" if annotation is tuple else "list"), None
        if issubclass(annotation, torch.nn.Module):
            return "module", annotation
        if getattr(annotation, "__module__", None) == getattr(self.module, "__name__", None):
            return "class", annotation
        return None, None

    def _annotation_node(self, node: ast.expr) -> tuple[str | None, Any]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                inner = parse_module(node.value.strip()).body[0]
            except (SyntaxError, ValueError, IndexError):
                return None, None
            return self._annotation_node(inner.value) if isinstance(inner, ast.Expr) else (None, None)
        if isinstance(node, ast.Constant) and node.value is None:
            return "optional", None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            sides = [node.left, node.right]
            if any(isinstance(s, ast.Constant) and s.value is None for s in sides):
                return "optional", None
            return self._annotation_node(node.left)
        head = node.value if isinstance(node, ast.Subscript) else node
        dotted = dotted_name(head) or ""
        last = dotted.split(".")[-1] if dotted else ""
        if isinstance(node, ast.Subscript):
            arguments = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if last == "Optional":
                return "optional", None
            if last == "Union":
                if any(isinstance(a, ast.Constant) and a.value is None for a in arguments):
                    return "optional", None
                return self._annotation_node(arguments[0])
            if last == "Literal":
                values = []
                for argument in arguments:
                    try:
                        values.append(ast.literal_eval(argument))
                    except ValueError:
                        return None, None
                return "literal", values
            if last in ("Tuple", "tuple"):
                variadic = len(arguments) == 2 and isinstance(arguments[1], ast.Constant) and arguments[1].value is ...
                return "tuple", None if variadic else len(arguments)
            if last in ("List", "list", "Sequence", "Iterable"):
                return "list", None
            if last in ("Callable", "Type", "type"):
                return "callable", None
            return None, None
        if last in ("int", "float", "bool", "str"):
            return last, None
        if last in ("Tuple", "tuple"):
            return "tuple", None
        if last in ("List", "list", "Sequence"):
            return "list", None
        if last == "Callable":
            return "callable", None
        if last == "Module":
            return "module", None
        obj = vars(self.module).get(last) if last else None
        if isinstance(obj, type):
            return self._class_kind(obj)
        return None, None

    def _config_instance(self, config_cls: type, profile: _Profile) -> str | None:
        """An instance of the module's own (non-module) class a parameter is annotated with."""
        name = config_cls.__name__
        if vars(self.module).get(name) is not config_cls or self.depth > 0:
            return None
        try:
            parameters = [
                p
                for p in inspect.signature(config_cls).parameters.values()
                if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
            ]
        except (TypeError, ValueError):
            return None
        inner = _Filler(config_cls, self.module, self.reads, self.depth + 1)
        arguments = inner.complete(parameters, {}, profile)
        return None if arguments is None else _call_text(name, parameters, arguments)

    def _config(self, name: str, profile: _Profile) -> str | None:
        """The module's one config class that builds with no arguments (`GPTConfig()`), else a
        namespace of the attributes the module reads off the parameter."""
        configs = [
            obj
            for key, obj in vars(self.module).items()
            if inspect.isclass(obj)
            and obj.__module__ == self.module.__name__
            and "config" in key.lower()
            and not issubclass(obj, torch.nn.Module)
        ]
        if len(configs) == 1 and profile.alt == 0:
            built = self._config_instance(configs[0], profile)
            if built is not None:
                return built
        attributes = self.reads.attributes(name)
        if not attributes:
            return None
        values = []
        for attribute in attributes:
            rule = _word_rule(attribute)
            value = _rule_value(rule, profile) if rule is not None else None
            values.append(f"{attribute}={value if value is not None else 'None'}")
        return f"types.SimpleNamespace({', '.join(values)})"

    def _module_instance(self, name: str, profile: _Profile) -> str | None:
        """A module for a module parameter: `torch.nn.Identity()` when the constructor only
        calls it, else the first class of the module (its own, then the project's it imports)
        that assigns every attribute read off it (`model.channels`: the `Unet` that sets it)."""
        if self.depth > 0:
            return None
        node = self.reads.class_node(self.cls.__qualname__)
        attributes = self.reads.attributes(name, node) if node is not None else []
        if not attributes:
            return "torch.nn.Identity()"
        for binding, candidate in _module_classes(self.module, self.reads):
            home = sys.modules.get(candidate.__module__)
            if candidate is self.cls or home is None or "." in candidate.__qualname__:
                continue
            reads = self.reads if home is self.module else _ModuleReads.of(home)
            if not set(attributes) <= reads.assigned(candidate.__qualname__):
                continue
            try:
                parameters = [
                    p for p in constructor_parameters(candidate) if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
                ]
            except (TypeError, ValueError):
                continue
            arguments = _Filler(candidate, home, reads, self.depth + 1).complete(parameters, {}, profile)
            if arguments is not None:
                return _call_text(binding, parameters, arguments)
        return None


def source_order(module: Any) -> Callable[[type], int]:
    """A sort key putting `module`'s own classes in the order its source defines them, from
    the one parse of the module the readers here share (`inspect.getsourcelines` parses the
    whole file again for every class: in a file of 4,500 lines and 50 classes, seconds)."""
    reads = _ModuleReads.of(module)
    return lambda cls: reads.line(cls.__qualname__)


def _module_classes(module: Any, reads: _ModuleReads) -> list[tuple[str, type]]:
    """The nn.Module classes a module's namespace binds, with the name it binds each to: its
    own in source order (`reads.line`, as `source_order`), then the project's it imports (not
    a library's), by name."""
    own: list[tuple[int, str, type]] = []
    imported: list[tuple[str, type]] = []
    for binding, obj in vars(module).items():
        if not (inspect.isclass(obj) and issubclass(obj, torch.nn.Module)):
            continue
        if obj.__module__ == module.__name__:
            own.append((reads.line(obj.__qualname__), binding, obj))
            continue
        try:
            source = inspect.getsourcefile(obj)
        except TypeError:
            source = None
        if source and not is_library_file(source):
            imported.append((binding, obj))
    return [(binding, obj) for _, binding, obj in sorted(own, key=lambda item: item[0])] + sorted(
        imported, key=lambda item: item[0]
    )


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
