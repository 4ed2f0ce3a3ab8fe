"""Capture through TorchScript: script a built module and list every aten call it makes,
with the chain of source sites that leads to it.

The uninlined graphs keep call sites (`prim::CallMethod`, `prim::CallFunction`); we walk
them with our own call stack so an op inside `torch/nn/functional.py` can be pinned to
the user's line that called it. Each callee is specialised per call site with its
constant arguments and the module's constant attributes, then constant-propagated, so
branches the call cannot take (the bicubic path of a bilinear `F.interpolate`) vanish.

Runs inside the worker: standard library and torch only.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from typing import Any, Optional

import torch

from .decompose import UNKNOWN, call_tree, resolve_overload

_SITE_RE = re.compile(r"# (?P<file>.+):(?P<line>\d+):(?P<col>\d+)\s*$")
_HEADER_RE = re.compile(r'^\s*File "(?P<file>.+)", line (?P<line>\d+)')
_CARET_RE = re.compile(r"^(?P<lead>\s*)(?P<marks>~+)(?: <--- HERE)?\s*$")
_MAX_DEPTH = 64
_PRIMITIVE_TYPES = ("bool", "int", "float", "str", "NoneType")
_LIST_MUTATORS = {"aten::append", "aten::_set_item", "aten::extend", "aten::insert", "aten::pop",
                  "aten::clear", "aten::remove", "aten::reverse", "aten::sort", "prim::Loop"}


@dataclass(frozen=True)
class Site:
    """A source position TorchScript recorded: 1-based line, 0-based UTF-8 column.

    `span_lines`/`end_col` describe how far TorchScript's own range reaches (its
    range of a call covers the callee expression), used to tell apart expressions
    that start at the same column, like `f(x)` and `f(x).g()`.
    """

    file: str
    line: int
    col: int
    span_lines: int = 1
    end_col: Optional[int] = None

    def as_json(self) -> dict:
        return {"file": self.file, "line": self.line, "col": self.col,
                "span_lines": self.span_lines, "end_col": self.end_col}


@dataclass
class ScriptedOp:
    op: str
    known: dict[str, Any]
    sites: tuple[Site, ...]
    training: bool
    tree: dict = field(default_factory=dict)


class ScriptFailure(Exception):
    """TorchScript could not compile the module; keeps its message and caret."""

    def __init__(self, message: str, site: Optional[Site], full_text: str):
        super().__init__(message)
        self.message = message
        self.site = site
        self.full_text = full_text

    def as_json(self) -> dict:
        return {"message": self.message, "site": self.site.as_json() if self.site else None,
                "details": self.full_text}


def script(instance: torch.nn.Module):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.jit.script's DeprecationWarning is not the user's concern
        try:
            return torch.jit.script(instance)
        except Exception as error:  # noqa: BLE001 - every compile failure becomes a finding
            raise _script_failure(error) from None


def _script_failure(error: Exception) -> ScriptFailure:
    text = str(error)
    lines = text.splitlines()
    site = None
    for index, line in enumerate(lines):
        header = _HEADER_RE.match(line)
        if header:
            site = _site_from_caret(header["file"], int(header["line"]), lines[index + 1:]) or site
    headline = next((ln.strip() for ln in lines if ln.strip()), type(error).__name__)
    return ScriptFailure(headline, site, text)


def _site_from_caret(file: str, line: int, snippet: list[str]) -> Optional[Site]:
    """TorchScript prints a few lines of context with `~~~~` under the range."""
    carets = []
    for index, text in enumerate(snippet):
        match = _CARET_RE.match(text)
        if match and index > 0:
            carets.append((index, match))
        elif carets and not match and index > carets[-1][0] + 1:
            break
        if text.startswith("  File ") or text.startswith("'"):
            break
    if not carets:
        return None
    first_index, first = carets[0]
    col_chars = len(first["lead"])
    source_line = snippet[first_index - 1]
    col = len(source_line[:col_chars].encode("utf-8"))
    last_index, last = carets[-1]
    end_chars = len(last["lead"]) + len(last["marks"])
    end_col = len(snippet[last_index - 1][:end_chars].encode("utf-8"))
    return Site(file, line, col, span_lines=len(carets), end_col=end_col)


def _node_site(node: Any) -> Optional[Site]:
    first_line = str(node).split("\n", 1)[0]
    match = _SITE_RE.search(first_line)
    if not match:
        return None
    file, line, col = match["file"], int(match["line"]), int(match["col"])
    span_lines, end_col = 1, None
    try:
        rendered = node.sourceRange().splitlines()
    except Exception:  # noqa: BLE001 - the range text is a refinement only
        rendered = []
    if rendered:
        caret = _site_from_caret(file, line, rendered[1:])
        if caret is not None:
            span_lines, end_col = caret.span_lines, caret.end_col
    return Site(file, line, col, span_lines, end_col)


# ---------------------------------------------------------------------------
# Specialisation


def _constant_of(value: Any) -> Any:
    """The value a graph Value is known to hold, or UNKNOWN."""
    node = value.node()
    kind = node.kind()
    if kind == "prim::Constant":
        try:
            return value.toIValue()
        except Exception:  # noqa: BLE001 - function constants and the like
            return UNKNOWN
    if kind in ("prim::ListConstruct", "prim::TupleConstruct"):
        if kind == "prim::ListConstruct" and any(use.user.kind() in _LIST_MUTATORS for use in value.uses()):
            return UNKNOWN  # e.g. `scale_factors = []` filled by later appends
        items = [_constant_of(v) for v in node.inputs()]
        if any(item is UNKNOWN for item in items):
            return UNKNOWN
        return items if kind == "prim::ListConstruct" else tuple(items)
    return UNKNOWN


def _specialise(graph: Any, constants: dict[int, Any], module: Any, training: bool) -> Any:
    """A copy of `graph` with known inputs and constant attributes substituted and folded."""
    graph = graph.copy()
    inputs = list(graph.inputs())
    nodes = list(graph.nodes())
    if not nodes:
        return graph
    mutated = {n.s("name") for n in graph.findAllNodes("prim::SetAttr")}
    with graph.insert_point_guard(nodes[0]):
        for index, value in constants.items():
            _replace_with_constant(graph, inputs[index], value)
        if module is not None and inputs:
            for node in nodes:
                if node.kind() != "prim::GetAttr" or node.input().unique() != inputs[0].unique():
                    continue
                name = node.s("name")
                if name in mutated or str(node.output().type()) not in _PRIMITIVE_TYPES:
                    continue
                value = training if name == "training" else _attribute(module, name)
                if value is not UNKNOWN:
                    _replace_with_constant(graph, node.output(), value)
    torch._C._jit_pass_constant_propagation(graph)
    torch._C._jit_pass_dce(graph)
    return graph


def _replace_with_constant(graph: Any, value: Any, constant: Any) -> None:
    try:
        replacement = graph.insertConstant(constant)
    except Exception:  # noqa: BLE001 - a value TorchScript cannot hold as a constant stays symbolic
        return
    value.replaceAllUsesWith(replacement)


def _attribute(module: Any, name: str) -> Any:
    try:
        return module.getattr(name)
    except Exception:  # noqa: BLE001
        return UNKNOWN


# ---------------------------------------------------------------------------
# The walk


class _Walker:
    def __init__(self, training: bool):
        self.training = training
        self.found: list[ScriptedOp] = []
        self.unresolved_calls: list[str] = []

    def graph(self, graph: Any, module: Any, constants: dict[int, Any], stack: tuple[Site, ...]) -> None:
        if len(stack) > _MAX_DEPTH:
            return
        graph = _specialise(graph, constants, module, self.training)
        inputs = list(graph.inputs())
        objects: dict[int, Any] = {inputs[0].unique(): module} if module is not None and inputs else {}
        self.block(graph.nodes(), objects, stack)

    def block(self, nodes: Any, objects: dict[int, Any], stack: tuple[Site, ...]) -> None:
        for node in nodes:
            kind = node.kind()
            if kind == "prim::GetAttr":
                owner = objects.get(node.input().unique())
                if owner is not None and node.output().type().kind() == "ClassType":
                    child = _attribute(owner, node.s("name"))
                    if child is not UNKNOWN:
                        objects[node.output().unique()] = child
            elif kind == "prim::CallMethod":
                self.call_method(node, objects, stack)
            elif kind == "prim::CallFunction":
                self.call_function(node, stack)
            elif "::" in kind and not kind.startswith(("prim::", "profiler::")):
                self.op(node, stack)
            for sub in node.blocks():
                self.block(sub.nodes(), objects, stack)

    def call_method(self, node: Any, objects: dict[int, Any], stack: tuple[Site, ...]) -> None:
        inputs = list(node.inputs())
        owner = objects.get(inputs[0].unique())
        name = node.s("name")
        if owner is None or not owner._has_method(name):
            self.unresolved_calls.append(f"{inputs[0].type()}.{name}")
            return
        site = _node_site(node)
        known = {i: c for i, c in enumerate((_constant_of(v) for v in inputs), start=0) if i > 0 and c is not UNKNOWN}
        self.graph(owner._get_method(name).graph, owner, known, stack + ((site,) if site else ()))

    def call_function(self, node: Any, stack: tuple[Site, ...]) -> None:
        inputs = list(node.inputs())
        qualified = str(inputs[0].type())
        function = torch.jit._state._python_cu.find_function(qualified)
        if function is None:
            self.unresolved_calls.append(qualified)
            return
        site = _node_site(node)
        known = {i - 1: c for i, c in enumerate(_constant_of(v) for v in inputs) if i > 0 and c is not UNKNOWN}
        self.graph(function.graph, None, known, stack + ((site,) if site else ()))

    def op(self, node: Any, stack: tuple[Site, ...]) -> None:
        try:
            schema = node.schema()
        except Exception:  # noqa: BLE001 - nodes without a schema are not operator calls
            return
        if schema == "(no schema)":
            return
        parsed = torch._C.parse_schema(schema)
        overload = resolve_overload(parsed.name, parsed.overload_name)
        if overload is None:
            return  # TorchScript builtins (aten::len, aten::format) are not dispatcher ops
        known = {arg.name: _constant_of(value) for arg, value in zip(parsed.arguments, node.inputs())}
        site = _node_site(node)
        self.found.append(ScriptedOp(op=_display_name(parsed), known=known,
                                     sites=stack + ((site,) if site else ()), training=self.training))


def _display_name(parsed: Any) -> str:
    return f"{parsed.name}.{parsed.overload_name}" if parsed.overload_name else parsed.name


def script_ops(scripted: Any) -> tuple[list[ScriptedOp], list[str]]:
    """Every aten call of `scripted.forward`, in eval mode and in training mode.

    The same call reached in both modes appears twice with `training` set; the
    caller merges them. Returns the calls and the method calls it could not follow.
    """
    found: list[ScriptedOp] = []
    unresolved: list[str] = []
    module = scripted._c
    for training in (False, True):
        walker = _Walker(training)
        walker.graph(module._get_method("forward").graph, module, {}, ())
        found.extend(walker.found)
        unresolved.extend(walker.unresolved_calls)
    return found, sorted(set(unresolved))


_TREE_CACHE: dict[tuple, dict] = {}


def decomposed(op_name: str, known: dict[str, Any]) -> dict:
    """The call tree for one scripted call, cached by overload and constant arguments."""
    key = (op_name, _freeze(known))
    tree = _TREE_CACHE.get(key)
    if tree is None:
        qualified, _, overload = op_name.partition(".")
        resolved = resolve_overload(qualified, overload)
        tree = {"op": op_name, "calls": None, "undecomposed": True} if resolved is None else call_tree(resolved, known)
        _TREE_CACHE[key] = tree
    return tree


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, torch.Tensor):
        return ("tensor", tuple(value.shape), str(value.dtype))
    if value is UNKNOWN:
        return "<unknown>"
    return repr(value)
