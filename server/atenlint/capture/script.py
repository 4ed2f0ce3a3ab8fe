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

import ast
import dataclasses
import functools
import importlib
import importlib.util
import inspect
import itertools
import os
import re
import textwrap
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, cast

import torch

from .. import torchcompat
from ..python_parse import parse_module
from ..worker import protocol
from ..worker.vocabulary import (
    EXPORT_VIEWS,
    JIT_VIEWS,
    VIEW_DISPATCH,
    VIEW_EXECUTORCH,
    VIEW_EXPORT,
    VIEW_ONNX_EXPORT,
)
from .decompose import UNKNOWN, Node, call_tree, resolve_overload
from .export_decompose import executorch_changes, export_tree, functional_name, onnx_export_tree
from .paths import is_library_file

_SITE_RE = re.compile(r"# (?P<file>.+):(?P<line>\d+):(?P<col>\d+)\s*$")
_HEADER_RE = re.compile(r'^\s*File "(?P<file>.+)", line (?P<line>\d+)')
_CARET_RE = re.compile(r"^(?P<lead>\s*)(?P<marks>~+)(?: <--- HERE)?\s*$")
_MAX_DEPTH = 64
_PRIMITIVE_TYPES = ("bool", "int", "float", "str", "NoneType")
_LIST_MUTATORS = {
    "aten::append",
    "aten::_set_item",
    "aten::extend",
    "aten::insert",
    "aten::pop",
    "aten::clear",
    "aten::remove",
    "aten::reverse",
    "aten::sort",
    "prim::Loop",
}


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
    end_col: int | None = None
    exact: bool = False  # the extent is the whole expression (a trace's co_positions), not TorchScript's
    # Only the line is known (col -1, a graph's recorded stack): names the call on that line
    # may have (the op, the library function or submodule it went through), to pick it.
    hint: tuple[Any, ...] = ()

    def as_json(self, library: bool | None = None) -> protocol.Site:
        """The protocol's record (`library`: the site is inside an installed library)."""
        out: protocol.Site = {
            "file": self.file,
            "line": self.line,
            "col": self.col,
            "span_lines": self.span_lines,
            "end_col": self.end_col,
            "exact": self.exact,
        }
        if self.hint:
            out["hint"] = [str(h) for h in self.hint]
        if library is not None:
            out["library"] = library
        return out


@dataclass
class ScriptedOp:
    op: str
    known: dict[str, Any]
    sites: tuple[Site, ...]
    training: bool
    device: str
    # Reached only through a library branch decided at run time (F.interpolate picks the
    # 1-D, 2-D or 3-D kernel by `input.dim()`), which a script capture cannot decide.
    conditional: bool = False
    # Reached only when `torch.jit.is_tracing()` is this value (the source pass): True, only
    # the toolchains that convert a trace see it; False, only the others.
    traced: bool | None = None


class ScriptFailure(Exception):
    """TorchScript could not compile the module; keeps its message and caret."""

    def __init__(self, message: str, site: Site | None, full_text: str):
        super().__init__(message)
        self.message = message
        self.site = site
        self.full_text = full_text

    def as_json(self) -> protocol.ErrorInfo:
        return {"message": self.message, "site": self.site.as_json() if self.site else None, "details": self.full_text}


def script(instance: torch.nn.Module) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.jit.script's DeprecationWarning is not the user's concern
        try:
            return torch.jit.script(instance)
        except Exception as error:  # noqa: BLE001 - every compile failure becomes a finding
            forget_module_types()
            raise _script_failure(error, instance) from None


def forget_module_types() -> None:
    """A failed compile leaves half-defined module types in TorchScript's cache, and the
    next class that contains the same submodule then fails with "Can't redefine method":
    start a fresh store (new types get fresh mangled names)."""
    torchcompat.reset_concrete_type_store()


# A Python object's default repr names its address (`<function BertConfig.__init__ at
# 0x7f47cbe76e80>`), which differs from run to run: a finding quoting it would too.
_OBJECT_ADDRESS_RE = re.compile(r" at 0x[0-9a-fA-F]+>")


def _script_failure(error: Exception, instance: torch.nn.Module | None = None) -> ScriptFailure:
    text = _OBJECT_ADDRESS_RE.sub(">", str(error))
    lines = text.splitlines()
    headline = next((ln.strip() for ln in lines if ln.strip()), type(error).__name__)
    site = _failure_site(lines)
    if instance is not None and (site is None or is_library_file(site.file)):
        # No frame of the error is in the user's files (`Conv2d.forward` in torch's conv.py,
        # compiled for a user's subclass): the user's class it was compiling stands for it.
        site = _compiled_class_site(lines, instance) or site
    return ScriptFailure(headline.rstrip(":").rstrip(), site, text)


_COMPILED_RE = re.compile(r"'(?P<name>[\w.]+)' is being compiled since it was called from '(?P<caller>[\w.]+)'")


def _compiled_class_site(lines: list[str], instance: torch.nn.Module) -> Site | None:
    """The `class` statement of the user's class whose methods TorchScript was compiling
    when it stopped: the outermost one its "is being compiled since it was called from"
    lines name (`'MyConv._conv_forward' ... called from 'MyConv.forward'`), among the
    classes of the instance's modules defined outside libraries; else the instance's own
    class, when it is the user's. None when neither is."""
    named: list[str] = []
    for line in lines:
        for match in _COMPILED_RE.finditer(line):
            named += [match["name"].rsplit(".", 1)[0], match["caller"].rsplit(".", 1)[0]]
    classes: dict[str, type] = {}
    for module in instance.modules():
        classes.setdefault(type(module).__name__, type(module))
    for name in reversed(named):  # the callers are printed after the callees: outermost last
        found = classes.get(name.rsplit(".", 1)[-1])
        site = _class_statement(found) if found is not None else None
        if site is not None:
            return site
    return _class_statement(type(instance))


def _class_statement(cls: type) -> Site | None:
    """Where `class Name` is written, when that is in the user's files."""
    try:
        file = inspect.getsourcefile(cls)
        source, first = inspect.getsourcelines(cls)
    except (OSError, TypeError):
        return None
    if file is None or is_library_file(file):
        return None
    for offset, text in enumerate(source):
        stripped = text.lstrip()
        if stripped.startswith("class "):
            col = len(text[: len(text) - len(stripped)].encode("utf-8"))
            end = col + len(("class " + cls.__name__).encode("utf-8"))
            return Site(os.path.abspath(file), first + offset, col, end_col=end)
    return None


def _failure_site(lines: list[str]) -> Site | None:
    """Where TorchScript stopped: the first frame's caret is the failing expression; the
    frames after it ("... is being compiled since it was called from ...") are its callers,
    outermost last. The last one may be torch's own code (`Conv2d.forward` calling a
    subclass's `_conv_forward`), so the innermost frame in the user's files is the site;
    a failure wholly inside library code keeps its innermost frame here (`_script_failure`
    then puts it at the user's class TorchScript was compiling)."""
    sites = []
    for index, line in enumerate(lines):
        header = _HEADER_RE.match(line)
        if header:
            site = _site_from_caret(header["file"], int(header["line"]), lines[index + 1 :])
            if site is not None:
                sites.append(site)
    users = [site for site in sites if not is_library_file(site.file)]
    chosen = users or sites
    return chosen[0] if chosen else None


def _site_from_caret(file: str, line: int, snippet: list[str]) -> Site | None:
    """TorchScript prints a few lines of context with `~~~~` under the range."""
    carets = []
    for index, text in enumerate(snippet):
        match = _CARET_RE.match(text)
        if match and index > 0:
            carets.append((index, match))
        elif carets and not match and index > carets[-1][0] + 1:
            break
        if text.startswith(("  File ", "'")):
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


def _node_site(node: Any) -> Site | None:
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


_DEVICE_PREDICATES = {
    "prim::is_cuda": "cuda",
    "prim::is_mps": "mps",
    "prim::is_cpu": "cpu",
    "prim::is_xpu": "xpu",
    "prim::is_meta": "meta",
}


def _specialise(
    graph: Any,
    constants: dict[int, Any],
    module: Any,
    training: bool,
    device: str,
    depth: int = 0,
    types: dict[int, Any] | None = None,
) -> Any:
    """A copy of `graph` with known inputs, constant attributes and the assumed device
    substituted and folded (so `x.device.type in ["cpu", "cuda"]` decides a branch), and
    calls to functions that return a constant for these arguments replaced by it (so
    `all([_check_arg_device(x) for x in args])` decides MultiheadAttention's fast path)."""
    graph = graph.copy()
    inputs = list(graph.inputs())
    nodes = list(graph.nodes())
    if not nodes:
        return graph
    for index, value_type in (types or {}).items():
        # The caller passes a Tensor where the callee accepts Tensor?: `x is not None` is decided.
        inputs[index].setType(value_type)
    mutated = {n.s("name") for n in graph.findAllNodes("prim::SetAttr")}
    with graph.insert_point_guard(nodes[0]):
        for index, value in constants.items():
            _replace_with_constant(graph, inputs[index], value)
        if module is not None and inputs:
            for node in graph.findAllNodes("prim::GetAttr"):
                if node.input().unique() != inputs[0].unique():
                    continue
                name = node.s("name")
                if name in mutated or str(node.output().type()) not in _PRIMITIVE_TYPES:
                    continue
                value = training if name == "training" else _attribute(module, name)
                if value is not UNKNOWN:
                    _replace_with_constant(graph, node.output(), value)
        for node in graph.findAllNodes("prim::device"):
            _replace_with_constant(graph, node.output(), torch.device(device))
        for kind, predicate_device in _DEVICE_PREDICATES.items():
            for node in graph.findAllNodes(kind):
                _replace_with_constant(graph, node.output(), predicate_device == device)
        for node in graph.findAllNodes("prim::is_quantized"):
            # atenlint judges float models (it builds them so): a quantized-tensor branch
            # (torchvision nms's `int_repr`) is never taken.
            _replace_with_constant(graph, node.output(), False)
    if types:
        torchcompat.run_pass("peephole", graph)
    torchcompat.run_pass("constant_propagation", graph)
    torchcompat.run_pass("dce", graph)
    if depth < _MAX_FOLD_DEPTH and _fold_constant_calls(graph, training, device, depth):
        torchcompat.run_pass("constant_propagation", graph)
        torchcompat.run_pass("dce", graph)
    return graph


_MAX_FOLD_DEPTH = 6
_CONSTANT_RESULTS: dict[tuple[Any, ...], tuple[Any, ...] | None] = {}


def _fold_constant_calls(graph: Any, training: bool, device: str, depth: int) -> bool:
    folded = False
    for node in graph.findAllNodes("prim::CallFunction"):
        qualified = str(node.inputsAt(0).type())
        known = {i - 1: c for i, c in enumerate(_constant_of(v) for v in node.inputs()) if i > 0 and c is not UNKNOWN}
        function = torchcompat.compiled_function(qualified)
        types = _refined_types(node, function)
        key = (qualified, _freeze(known), training, device, tuple(sorted((i, str(t)) for i, t in types.items())))
        if key not in _CONSTANT_RESULTS or not qualified.startswith("__torch__.torch."):
            results = None
            if function is not None:
                callee = _specialise(function.graph, known, None, training, device, depth + 1, types)
                values = tuple(_constant_of(v) for v in callee.return_node().inputs())
                results = None if any(v is UNKNOWN for v in values) else values
            _CONSTANT_RESULTS[key] = results
        results = _CONSTANT_RESULTS[key]
        if results is None:
            continue
        first = next(iter(graph.nodes()))
        with graph.insert_point_guard(first):
            for output, value in zip(node.outputs(), results):
                _replace_with_constant(graph, output, value)
        folded = True
    return folded


def _refined_types(call: Any, function: Any, first_argument: int = 1) -> dict[int, Any]:
    """Callee inputs declared Optional that this call site passes a definite Tensor."""
    if function is None:
        return {}
    refined = {}
    parameters = list(function.graph.inputs())
    for index, value in enumerate(list(call.inputs())[first_argument:]):
        if index < len(parameters) and str(parameters[index].type()) == "Tensor?" and str(value.type()) == "Tensor":
            refined[index] = value.type()
    return refined


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
    def __init__(self, training: bool, device: str):
        self.training = training
        self.device = device
        self.found: list[ScriptedOp] = []
        self.unresolved_calls: list[str] = []
        self.modules_seen: set[str] = set()

    def graph(
        self,
        graph: Any,
        module: Any,
        constants: dict[int, Any],
        stack: tuple[Site, ...],
        conditional: bool = False,
        types: dict[int, Any] | None = None,
    ) -> Any | None:
        if len(stack) > _MAX_DEPTH:
            return None
        graph = _specialise(graph, constants, module, self.training, self.device, types=types)
        inputs = list(graph.inputs())
        objects: dict[int, Any] = {inputs[0].unique(): module} if module is not None and inputs else {}
        self.block(graph.nodes(), objects, stack, conditional)
        return graph

    def block(self, nodes: Any, objects: dict[int, Any], stack: tuple[Site, ...], conditional: bool) -> None:
        for node in nodes:
            kind = node.kind()
            if kind == "prim::GetAttr":
                owner = objects.get(node.input().unique())
                if owner is not None and node.output().type().kind() == "ClassType":
                    child = _attribute(owner, node.s("name"))
                    if child is not UNKNOWN:
                        objects[node.output().unique()] = child
            elif kind == "prim::CallMethod":
                self.call_method(node, objects, stack, conditional)
            elif kind == "prim::CallFunction":
                self.call_function(node, stack, conditional)
            elif "::" in kind and not kind.startswith(("prim::", "profiler::")):
                self.op(node, stack, conditional)
            inner = conditional or (kind == "prim::If" and _decided_at_run_time(node))
            for sub in node.blocks():
                self.block(sub.nodes(), objects, stack, inner)

    def call_method(self, node: Any, objects: dict[int, Any], stack: tuple[Site, ...], conditional: bool) -> None:
        inputs = list(node.inputs())
        owner = objects.get(inputs[0].unique())
        name = node.s("name")
        method_graph = (
            torchcompat.script_method_graph(owner, name)
            if owner is not None and torchcompat.is_script_module_object(owner)
            else None
        )
        if method_graph is None:
            # A TorchScript class instance (torchvision's BoxCoder) is not a module: its
            # methods are compiled functions we do not walk.
            self.unresolved_calls.append(f"{inputs[0].type()}.{name}")
            return
        self.modules_seen.add(_python_qualname(torchcompat.script_type_name(owner)))
        site = _node_site(node)
        known = {i: c for i, c in enumerate(_constant_of(v) for v in inputs) if i > 0 and c is not UNKNOWN}
        self.graph(method_graph, owner, known, stack + ((site,) if site else ()), conditional)

    def call_function(self, node: Any, stack: tuple[Site, ...], conditional: bool) -> None:
        inputs = list(node.inputs())
        qualified = str(inputs[0].type())
        function = torchcompat.compiled_function(qualified)
        if function is None:
            self.unresolved_calls.append(qualified)
            return
        site = _node_site(node)
        known = {i - 1: c for i, c in enumerate(_constant_of(v) for v in inputs) if i > 0 and c is not UNKNOWN}
        types = _refined_types(node, function)
        inner = stack + ((site,) if site else ())
        if len(inner) > _MAX_DEPTH:
            return
        # A free function's calls depend only on its arguments: walk it once per distinct
        # call (F.batch_norm in every block of a deep network) and replay the result.
        key = (
            qualified,
            _freeze(known),
            tuple(sorted((i, str(t)) for i, t in types.items())),
            self.training,
            self.device,
            conditional,
        )
        cacheable = qualified.startswith("__torch__.torch.")  # user code may change under the same name
        relative = _FUNCTION_WALKS.get(key) if cacheable else None
        if relative is None:
            walker = _Walker(self.training, self.device)
            specialised = walker.graph(function.graph, None, known, (), conditional, types)
            if specialised is not None:
                walker.dropped_calls(qualified, specialised, (), conditional)
            relative = (walker.found, walker.unresolved_calls)
            if cacheable:
                _FUNCTION_WALKS[key] = relative
        found, unresolved = relative
        self.found.extend(dataclasses.replace(op, sites=inner + op.sites) for op in found)
        self.unresolved_calls.extend(unresolved)

    def dropped_calls(self, qualified: str, graph: Any, stack: tuple[Site, ...], conditional: bool) -> None:
        """Calls the TorchScript compiler removed as dead code but eager mode makes."""
        hidden = _dead_builtin_calls(qualified)
        if not hidden:
            return
        lines = _graph_lines(graph)
        for call in hidden:
            if call.always or any(call.block_start <= line <= call.block_end for line in lines.get(call.file, ())):
                for op in call.ops:
                    self.found.append(
                        ScriptedOp(
                            op=op,
                            known={},
                            sites=stack + (call.site,),
                            training=self.training,
                            device=self.device,
                            conditional=conditional,
                        )
                    )

    def op(self, node: Any, stack: tuple[Site, ...], conditional: bool) -> None:
        try:
            schema = node.schema()
        except Exception:  # noqa: BLE001 - nodes without a schema are not operator calls
            return
        if schema == "(no schema)":
            return
        parsed = torchcompat.parse_schema(schema)
        overload = resolve_overload(parsed.name, parsed.overload_name)
        if overload is None:
            return  # TorchScript builtins (aten::len, aten::format) are not dispatcher ops
        known = {arg.name: _constant_of(value) for arg, value in zip(parsed.arguments, node.inputs())}
        site = _node_site(node)
        self.found.append(
            ScriptedOp(
                op=_display_name(parsed),
                known=known,
                sites=stack + ((site,) if site else ()),
                training=self.training,
                device=self.device,
                conditional=conditional,
            )
        )


@dataclass(frozen=True)
class _HiddenCall:
    site: Site
    file: str
    block_start: int
    block_end: int
    always: bool
    ops: tuple[str, ...]


def _graph_lines(graph: Any) -> dict[str, set[int]]:
    """Source lines that still have nodes in a (specialised) graph, per file."""
    lines: dict[str, set[int]] = {}
    for node in graph.findAllNodes("prim::Constant", False) + _all_nodes(graph.block()):
        match = _SITE_RE.search(str(node).split("\n", 1)[0])
        if match:
            lines.setdefault(match["file"], set()).add(int(match["line"]))
    return lines


def _all_nodes(block: Any) -> list[Any]:
    out = []
    for node in block.nodes():
        out.append(node)
        for sub in node.blocks():
            out.extend(_all_nodes(sub))
    return out


@functools.cache
def _dead_builtin_calls(qualified: str) -> tuple[_HiddenCall, ...]:
    """Calls in a library function to TorchScript builtins that are not dispatcher ops and
    whose result is unused, so the compiler drops them: `F.embedding(max_norm=...)` calls
    `_no_grad_embedding_renorm_`, which eager mode runs as `aten::embedding_renorm_`."""
    function = _python_function(qualified)
    if function is None:
        return ()
    builtins = torchcompat.builtin_table()
    try:
        lines, first = inspect.getsourcelines(function)
        file = inspect.getsourcefile(function) or ""
    except (OSError, TypeError):
        return ()
    tree = parse_module(textwrap.dedent("".join(lines)))
    indent = len(lines[0]) - len(lines[0].lstrip())  # what dedent removed
    found = []
    for block_start, block_end, always, statement in _statements_with_blocks(tree.body[0], first):
        if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)):
            continue
        callee = _resolve_dotted(statement.value.func, function.__globals__)
        name = builtins.get(id(callee)) if callee is not None else None
        if name is None or _is_dispatcher_op(name):
            continue
        ops = _ops_called_by(callee)
        if ops:
            line = first + statement.value.lineno - 1
            col = statement.value.col_offset + indent
            found.append(_HiddenCall(Site(file, line, col), file, block_start, block_end, always, ops))
    return tuple(found)


def _statements_with_blocks(function_def: Any, first_line: int) -> Iterator[tuple[int, int, bool, ast.stmt]]:
    """(block first line, block last line, block is the function body, statement) in file lines."""

    def walk(body: list[ast.stmt], start: int, end: int, always: bool) -> Iterator[tuple[int, int, bool, ast.stmt]]:
        for statement in body:
            yield start, end, always, statement
            for field_name in ("body", "orelse", "finalbody"):
                inner = getattr(statement, field_name, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    yield from walk(
                        inner,
                        first_line + inner[0].lineno - 1,
                        first_line + (inner[-1].end_lineno or inner[-1].lineno) - 1,
                        False,
                    )

    yield from walk(function_def.body, first_line, first_line + function_def.end_lineno - 1, True)


def _python_function(qualified: str) -> Any | None:
    parts = re.sub(r"\.___torch_mangle_\d+", "", qualified).split(".")
    if parts[:1] != ["__torch__"]:
        return None
    module_name, attr = ".".join(parts[1:-1]), parts[-1]
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError):
        return None


def _resolve_dotted(node: Any, namespace: dict[str, Any]) -> Any | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in namespace:
        return None
    obj = namespace[node.id]
    for part in reversed(parts):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _is_dispatcher_op(jit_name: str) -> bool:
    qualified, _, overload = jit_name.partition(".")
    return resolve_overload(qualified, overload) is not None


def _ops_called_by(function: Any) -> tuple[str, ...]:
    """Dispatcher ops a small Python helper calls directly (`torch.embedding_renorm_(...)`)."""
    try:
        tree = parse_module(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError, SyntaxError):
        return ()
    ops = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            callee = _resolve_dotted(node.func, function.__globals__)
            name = torchcompat.builtin_name(callee) if callee is not None else None
            if name and _is_dispatcher_op(name) and name not in ops:
                ops.append(name)
    return tuple(ops)


def _decided_at_run_time(node: Any) -> bool:
    """A library `if` still undecided after specialisation: F.interpolate choosing a kernel
    by `input.dim()`, MultiheadAttention's fast path, checks on values. Which way it goes
    is only known when the model runs."""
    site = _SITE_RE.search(str(node).split("\n", 1)[0])
    return site is not None and is_library_file(site["file"])


def _display_name(parsed: Any) -> str:
    return f"{parsed.name}.{parsed.overload_name}" if parsed.overload_name else parsed.name


@dataclass
class ScriptCapture:
    ops: list[ScriptedOp]
    unresolved_calls: list[str]  # method calls the walk could not follow
    submodules: list[str]  # Python classes ("pkg.mod.Class") whose forward the walk went through


def _python_qualname(torchscript_name: str) -> str:
    return re.sub(r"\.___torch_mangle_\d+", "", torchscript_name).removeprefix("__torch__.")


def script_ops(scripted: Any, devices: tuple[str, ...] = ("cpu",)) -> ScriptCapture:
    """Every aten call of `scripted.forward`, in eval and training mode, on each device
    the targets deploy to (library code branches on both: dropout, MultiheadAttention's
    CPU/CUDA-only fast path).

    A call reached in several modes or on several devices appears once per walk; the
    caller merges them.
    """
    found: list[ScriptedOp] = []
    unresolved: set[str] = set()
    seen: set[str] = set()
    torchcompat.require_jit_walk()  # raises Unavailable: the caller reads the class from source
    module = torchcompat.script_module_object(scripted)
    forward = torchcompat.script_method_graph(module, "forward")
    if forward is None:
        raise torchcompat.not_for_this_object(torchcompat.JIT_WALK, "the scripted module has no forward")
    for device, training in itertools.product(devices, (False, True)):
        walker = _Walker(training, device)
        walker.graph(forward, module, {}, ())
        found.extend(walker.found)
        unresolved.update(walker.unresolved_calls)
        seen.update(walker.modules_seen)
    return ScriptCapture(found, sorted(unresolved), sorted(seen))


_TREE_CACHE: dict[tuple[Any, ...], protocol.CallTree] = {}
_FUNCTION_WALKS: dict[tuple[Any, ...], tuple[Any, ...]] = {}


def decomposed(op_name: str, known: dict[str, Any], view: str = "dispatch") -> protocol.CallTree:
    """The call tree for one scripted or source-read call in `view`, cached by overload,
    constant arguments and view.

    view "dispatch": what a device backend's dispatcher is asked for (composites expanded
    as their kernels do); "export", "executorch-export" and "onnx-export": what
    torch.export's decomposition produces, functionalised at every depth (the dynamo ONNX
    target tells the tables apart by each node's `via`, and its own table's leaves are
    marked); "coreml-export" and the delegate views: the functional call itself (the
    exported program undecomposed); the TorchScript views ("jit", "onnx-jit"): the call
    itself, as `torch.jit.trace` records it.
    """
    if view in JIT_VIEWS:
        return traced_tree(op_name, known)
    if view != VIEW_DISPATCH and view not in EXPORT_VIEWS:
        return {"op": op_name, "calls": None}
    key = (op_name, _freeze(known), view, executorch_changes() if view == VIEW_EXECUTORCH else ())
    tree = _TREE_CACHE.get(key)
    if tree is None:
        tree = _TREE_CACHE[key] = _view_tree(op_name, known, view)
    return tree


def _view_tree(op_name: str, known: dict[str, Any], view: str) -> protocol.CallTree:
    # decompose.py's and export_decompose.py's nodes (`Node`) are CallTree records built key
    # by key: typed here, where they join the answer.
    if view == VIEW_ONNX_EXPORT:
        # The ONNX exporter's table on top of torch.export's: the export tree (cached under
        # its own view, shared with TensorRT's) with that table's leaves marked, on a copy.
        return cast("protocol.CallTree", onnx_export_tree(cast("Node", decomposed(op_name, known, VIEW_EXPORT))))
    if view not in (VIEW_DISPATCH, VIEW_EXPORT, VIEW_EXECUTORCH):
        return {"op": functional_name(op_name), "calls": None}  # run_decompositions({}) keeps the call
    qualified, _, overload = op_name.partition(".")
    resolved = resolve_overload(qualified, overload)
    if resolved is None:
        return {"op": op_name, "calls": None, "undecomposed": True}
    if view == VIEW_DISPATCH:
        return cast("protocol.CallTree", call_tree(resolved, known))
    return cast("protocol.CallTree", export_tree(resolved, known, executorch=view == VIEW_EXECUTORCH))


# A trace records `chunk` with constant arguments, unpacked: the fuser canonicalisation both
# toolchains run first (`_optimize_graph`, coremltools' `_expand_and_optimize_ir`) makes it
# `prim::ConstantChunk`, which both convert (a trace's prim nodes are never judged).
_CANONICALISED = {"aten::chunk": "prim::ConstantChunk"}


def traced_tree(op_name: str, known: dict[str, Any]) -> protocol.CallTree:
    """A scripted call as `torch.jit.trace` records it, for the toolchains that convert a
    trace: the call itself, except for ops torch's tracer does not record (`conv2d`,
    `conv_transpose2d`: a trace holds the `aten::_convolution` they call, which
    coremltools converts) and ops those toolchains canonicalise first. The children of a
    node marked `via: "trace"` are what the trace holds instead of it."""
    qualified, _, overload = op_name.partition(".")
    if qualified in _CANONICALISED:
        return {"op": op_name, "calls": [], "via": "trace"}  # _CANONICALISED[qualified], never judged
    untraced = untraced_ops()
    if qualified.partition("::")[2] not in untraced:
        return {"op": op_name, "calls": None}
    key = (op_name, _freeze(known), "trace")
    tree = _TREE_CACHE.get(key)
    if tree is None:
        resolved = resolve_overload(qualified, overload)
        dispatched = call_tree(resolved, known) if resolved is not None else None
        if dispatched is None or not dispatched.get("calls"):
            # The trace never holds the op itself, and what it holds instead is unknown
            # here: nothing said, rather than a verdict on a node the toolchain never sees.
            tree = {"op": op_name, "calls": [], "via": "trace"}
        else:
            tree = {"op": op_name, "calls": _recorded(dispatched["calls"], untraced), "via": "trace"}
        _TREE_CACHE[key] = tree
    return tree


def _recorded(calls: list[protocol.CallTree], untraced: frozenset[str]) -> list[protocol.CallTree]:
    """The calls a trace records: an unrecorded op is replaced by what it calls."""
    out: list[protocol.CallTree] = []
    for node in calls:
        name = node["op"].partition("::")[2].split(".")[0]
        children = node.get("calls")
        if name in untraced and children:
            out.extend(_recorded(children, untraced))
        else:
            out.append({"op": node["op"], "calls": None})
    return out


@functools.cache
def untraced_ops() -> frozenset[str]:
    """The op names torch's tracer does not record (it records what they call instead):
    `DONT_RECORD_TRACE` of the installed torch's own trace generator, read from its
    source (importing torchgen would pull in its YAML parser). Empty when absent."""
    spec = importlib.util.find_spec("torchgen")
    if spec is None or not spec.submodule_search_locations:
        return frozenset()
    path = os.path.join(next(iter(spec.submodule_search_locations)), "packaged", "autograd", "gen_trace_type.py")
    try:
        with open(path, encoding="utf-8") as handle:
            tree = parse_module(handle.read())
    except (OSError, SyntaxError, ValueError):
        return frozenset()
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "DONT_RECORD_TRACE" for t in statement.targets
        ):
            try:
                return frozenset(str(name) for name in ast.literal_eval(statement.value))
            except ValueError:
                return frozenset()
    return frozenset()


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
