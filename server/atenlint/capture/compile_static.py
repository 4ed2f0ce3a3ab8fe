"""The compile view without example inputs: the graph breaks a class's source shows for
certain, never run.

Dynamo decides breaks on real values, so without inputs only calls that break whatever
the values are can be reported: `print(...)`, `Tensor.item()` / `.tolist()` (Dynamo keeps
no Python scalar out of a tensor unless `capture_scalar_outputs` is set), `Tensor.numpy()`
(unless `trace_numpy` is set), a call of a function marked `torch.compiler.disable`, and an
`if` / `while` whose test is a tensor reduction (`x.any()`, `y.sum() > 0`: a Python branch
on a tensor's value). Whether each breaks is read from the installed Dynamo's own config,
never assumed. Code under `if not torch.compiler.is_compiling():` (or
`torch._dynamo.is_compiling()`) is skipped: Dynamo never traces it.

`forward` and the methods of the same class it calls (`self.helper(...)`) are read, each
break at its own line, as Dynamo's innermost user frame would put it. Runs inside the worker.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from typing import Any

from .. import torchcompat
from ..python_parse import parse_module
from ..worker.protocol import CompileAnswer, GraphBreak, Site

# Tensor methods whose result is a tensor holding the value a branch would need.
_REDUCTIONS = frozenset({"any", "all", "sum", "mean", "max", "min", "amax", "amin", "norm", "prod", "std", "var"})
_COMPILING = frozenset({"is_compiling", "is_dynamo_compiling"})
_DISABLE = frozenset({"disable"})


def source_breaks(cls: type) -> CompileAnswer:
    """The certain breaks of a class the worker imported (its source, read back)."""
    try:
        lines, start = inspect.getsourcelines(cls)
        path = inspect.getsourcefile(cls) or ""
        node = parse_module(textwrap.dedent("".join(lines)), filename=path)
    except (OSError, TypeError, SyntaxError):
        return {"breaks": [], "source": True}
    classdef = next((n for n in node.body if isinstance(n, ast.ClassDef)), None)
    if classdef is None:
        return {"breaks": [], "source": True}
    indent = len(lines[0]) - len(lines[0].lstrip())
    return class_breaks(classdef, path, line_offset=start - 1, col_offset=indent, disabled=_disabled_in(cls))


def file_breaks(path: str, text: str | None, qualnames: list[str]) -> list[CompileAnswer]:
    """The certain breaks of classes of a file that could not be imported (`text`: the
    editor's unsaved text, else the file is read), in the order of `qualnames`."""
    try:
        if text is None:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        tree = parse_module(text, filename=path)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return [{"breaks": [], "source": True} for _ in qualnames]
    disabled = disabled_functions(tree)
    out: list[CompileAnswer] = []
    for qualname in qualnames:
        node: ast.AST | None = tree
        for part in qualname.split("."):
            body = getattr(node, "body", [])
            node = next((n for n in body if isinstance(n, ast.ClassDef) and n.name == part), None)
        if isinstance(node, ast.ClassDef):
            out.append(class_breaks(node, path, disabled=disabled))
        else:
            out.append({"breaks": [], "source": True})
    return out


def _disabled_in(cls: type) -> frozenset[str]:
    """The module-level functions of the class's module marked torch.compiler.disable."""
    module = inspect.getmodule(cls)
    try:
        tree = parse_module(inspect.getsource(module)) if module is not None else None
    except (OSError, TypeError, SyntaxError):
        return frozenset()
    return disabled_functions(tree) if tree is not None else frozenset()


def disabled_functions(tree: ast.Module) -> frozenset[str]:
    """Names of a parsed module's top-level functions marked torch.compiler.disable."""
    return frozenset(
        n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and _disabled(n)
    )


def class_breaks(
    classdef: ast.ClassDef,
    path: str,
    line_offset: int = 0,
    col_offset: int = 0,
    disabled: frozenset[str] = frozenset(),
) -> CompileAnswer:
    """The certain breaks of one parsed class (`line_offset` / `col_offset`: where its
    text starts in `path`, when it was parsed on its own; `disabled`: the module's
    functions marked torch.compiler.disable)."""
    config = _dynamo_config()
    methods = {n.name: n for n in classdef.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    reader = _Reader(methods, config, path, line_offset, col_offset)
    reader.disabled = disabled
    if "forward" in methods:
        reader.method("forward")
    return {"breaks": reader.breaks, "source": True}


def _dynamo_config() -> dict[str, Any]:
    """What decides whether a call breaks, from the installed torch's Dynamo config."""
    config = torchcompat.dynamo_config()
    if config is None:  # no Dynamo on this torch: nothing is certain
        return {}
    return {
        "capture_scalar_outputs": bool(getattr(config, "capture_scalar_outputs", False)),
        "trace_numpy": bool(getattr(config, "trace_numpy", True)),
        "print_traced": any(
            getattr(f, "__name__", "") == "print" for f in getattr(config, "reorderable_logging_functions", ())
        ),
    }


class _Reader:
    def __init__(
        self,
        methods: dict[str, ast.FunctionDef | ast.AsyncFunctionDef],
        config: dict[str, Any],
        path: str,
        line_offset: int,
        col_offset: int,
    ):
        self.methods, self.config, self.path = methods, config, path
        self.line_offset, self.col_offset = line_offset, col_offset
        self.breaks: list[GraphBreak] = []
        self.seen: set[str] = set()
        self.reported: set[tuple[int, int]] = set()
        self.disabled: frozenset[str] = frozenset()
        # Inside a loop or `try` body of the method being read: a `.item()` there makes Dynamo
        # skip the whole frame (it cannot resume there), which records no break, and
        # fullgraph=True captures the value; not a break `explain` or fullgraph report.
        self.unresumable = 0

    def method(self, name: str) -> None:
        if name in self.seen or not self.config:
            return
        self.seen.add(name)
        outer, self.unresumable = self.unresumable, 0  # a called method is a frame of its own
        for statement in self.methods[name].body:
            self.statement(statement)
        self.unresumable = outer

    def statement(self, node: ast.stmt) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return  # a nested definition runs only when called (not followed)
        if isinstance(node, ast.If) and (_guards_compiling(node.test) or _tests_training(node.test)):
            # `if not is_compiling(): ...` - Dynamo takes the else branch only; `if
            # self.training:` - the class is read in eval mode, as the compile view runs it.
            for inner in node.orelse if _negated(node.test) == _guards_compiling(node.test) else node.body:
                self.statement(inner)
            return
        if isinstance(node, (ast.If, ast.While)) and _tensor_test(node.test):
            self.add(node.test, "branch", "a Python `if`/`while` on a tensor's value (data-dependent control flow)")
        unresumable = isinstance(node, (ast.For, ast.AsyncFor, ast.While, ast.Try)) or type(node).__name__ == "TryStar"
        for field, value in ast.iter_fields(node):
            inside = unresumable and field == "body"
            self.unresumable += inside
            for child in value if isinstance(value, list) else [value]:
                if isinstance(child, ast.stmt):
                    self.statement(child)
                elif isinstance(child, ast.AST):
                    self.expression(child)
            self.unresumable -= inside

    def expression(self, node: ast.AST) -> None:
        for inner in ast.walk(node):
            if isinstance(inner, ast.IfExp) and _tensor_test(inner.test):
                self.add(inner.test, "branch", "a conditional expression on a tensor's value")
            if not isinstance(inner, ast.Call):
                continue
            func = inner.func
            if isinstance(func, ast.Name) and func.id in self.disabled:
                self.add(inner, "disabled", f"`{func.id}` is marked torch.compiler.disable")
            elif isinstance(func, ast.Name) and func.id == "print" and not self.config["print_traced"]:
                self.add(inner, "print", "`print` (Dynamo does not trace builtin `print`)")
            elif isinstance(func, ast.Attribute) and not inner.args and not inner.keywords:
                frame_skipped = func.attr == "item" and self.unresumable > 0
                if func.attr in ("item", "tolist") and not self.config["capture_scalar_outputs"] and not frame_skipped:
                    self.add(
                        inner,
                        func.attr,
                        f"`Tensor.{func.attr}()` (a Python value out of a tensor; "
                        "torch._dynamo.config.capture_scalar_outputs is off)",
                    )
                elif func.attr == "numpy" and not self.config["trace_numpy"]:
                    self.add(inner, "numpy", "`Tensor.numpy()` (torch._dynamo.config.trace_numpy is off)")
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
                target = self.methods.get(func.attr)
                if target is not None:
                    if _disabled(target):
                        self.add(inner, "disabled", f"`self.{func.attr}` is marked torch.compiler.disable")
                    else:
                        self.method(func.attr)

    def add(self, node: ast.AST, kind: str, what: str) -> None:
        line = getattr(node, "lineno", 1) + self.line_offset
        col = getattr(node, "col_offset", 0) + self.col_offset
        if (line, col) in self.reported:
            return
        self.reported.add((line, col))
        end_line = (getattr(node, "end_lineno", None) or line - self.line_offset) + self.line_offset
        end_col = (getattr(node, "end_col_offset", None) or 0) + self.col_offset
        site: Site = {
            "file": self.path,
            "line": line,
            "col": col,
            "span_lines": end_line - line + 1,
            "end_col": end_col,
            "exact": True,
        }
        self.breaks.append({"reason": f"{kind}: {what}", "details": "read from the source", "site": site})


def _name_of(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def _guards_compiling(test: ast.expr) -> bool:
    inner = test.operand if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) else test
    return isinstance(inner, ast.Call) and _name_of(inner.func) in _COMPILING


def _tests_training(test: ast.expr) -> bool:
    """`self.training` or `not self.training`."""
    inner = test.operand if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) else test
    return (
        isinstance(inner, ast.Attribute)
        and inner.attr == "training"
        and isinstance(inner.value, ast.Name)
        and inner.value.id == "self"
    )


def _negated(test: ast.expr) -> bool:
    return isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)


def _tensor_test(test: ast.expr) -> bool:
    """A test whose value is certainly read out of a tensor: it calls a reduction method
    with no arguments (`x.any()`, `(y - z).abs().max()`) or `torch.any/all(...)`; a
    test that already calls `.item()` is that call's break."""
    calls = [n for n in ast.walk(test) if isinstance(n, ast.Call)]
    if any(_name_of(c.func) in ("item", "tolist") for c in calls):
        return False
    for call in calls:
        func = call.func
        if not isinstance(func, ast.Attribute) or func.attr not in _REDUCTIONS:
            continue
        if isinstance(func.value, ast.Name) and func.value.id == "torch" and func.attr in ("any", "all"):
            return True
        if not call.args and not call.keywords and not (isinstance(func.value, ast.Name) and func.value.id in _MODULES):
            return True
    return False


# Names whose `.sum()`/`.max()` is not a tensor method (the builtins' namespaces, numpy, math).
_MODULES = frozenset({"torch", "np", "numpy", "math", "builtins", "self"})


def _disabled(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    for decorator in function.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if _name_of(target) in _DISABLE and isinstance(target, ast.Attribute):
            owner = _name_of(target.value)
            if owner in ("compiler", "_dynamo"):
                return True
    return False
