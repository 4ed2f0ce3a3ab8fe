"""From a finding to the call the user wrote: its node, what it calls, its arguments.

A finding's range covers the user's call expression. The call is one of
- a function reached through an import: `torch.take(x, i)`, `F.pdist(x)`, `linalg.svdvals(A)`;
- a Tensor method: `x.take(i)` (the receiver is the first parameter);
- a submodule: `self.pool(x)`, where `self.pool = nn.AdaptiveAvgPool3d(...)` in the class.
Arguments bind to the entry's signature exactly as Python would bind them; anything that
cannot be bound statically (`*args`, `**kwargs`, unknown keywords) means no fix.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from ..locate import dotted_name
from ..python_parse import parse_expression, parse_module
from ..sourcetext import Range, SourceText, SpannedNode
from .edits import LineIndex, Spans, token_spans
from .imports import Bindings, Scope, canonical, scope_names
from .model import Signature

_PARENT = "_atenlint_parent"


def parent(node: ast.AST) -> ast.AST | None:
    return getattr(node, _PARENT, None)


class FileContext:
    """One file's text, a private syntax tree (with parent links) and its imports."""

    def __init__(self, source: SourceText, tree: ast.Module) -> None:
        self.source = source
        self.text = source.text
        self.index = LineIndex(source.text)
        self.tree = tree
        self.bindings = Bindings.of(tree)
        self._tokens: tuple[Spans, Spans] | None = None
        self._tokens_read = False
        self._by_range: dict[Range, list[ast.AST]] = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                setattr(child, _PARENT, node)
            if isinstance(node, ast.expr):
                self._by_range.setdefault(source.node_range(node), []).append(node)

    @staticmethod
    def build(source: SourceText) -> FileContext | None:
        try:
            tree = parse_module(source.text)  # our own copy: edits are verified by mutating it
        except (SyntaxError, ValueError):
            return None
        return FileContext(source, tree)

    def _spans(self) -> tuple[Spans, Spans]:
        if not self._tokens_read:
            self._tokens = token_spans(self.text)
            self._tokens_read = True
        return self._tokens if self._tokens is not None else ([], [])

    @property
    def comments(self) -> Spans:
        """(start, end) of every comment."""
        return self._spans()[0]

    @property
    def multiline_strings(self) -> Spans:
        """(start, end) of every string literal that spans lines."""
        return self._spans()[1]

    def call_at(self, rng: Range) -> ast.Call | None:
        """The call expression a finding's range covers (the outermost, for `f(x)(y)`)."""
        calls = [n for n in self._by_range.get(rng, []) if isinstance(n, ast.Call)]
        return calls[0] if calls else None

    def segment(self, node: SpannedNode) -> str:
        start, end = self.index.node_offsets(node)
        return self.text[start:end]

    def offsets(self, node: SpannedNode) -> tuple[int, int]:
        return self.index.node_offsets(node)


@dataclass
class Argument:
    """One parameter's value at the call: the user's expression, or the default."""

    name: str
    node: ast.expr
    text: str
    given: bool
    start: int = -1  # string offsets of the user's expression (given only)
    end: int = -1


Bound = dict[str, Argument]  # parameter name -> the argument Python binds to it


@dataclass
class CallSite:
    file: FileContext
    node: ast.Call
    form: str  # "function" | "method" | "module"
    name: str  # canonical function, Tensor method name, or nn.Module class
    receiver: ast.expr | None = None  # x in x.take(i); self.pool in self.pool(x)
    constructor: ast.Call | None = None  # nn.AdaptiveAvgPool3d(...) for self.pool(x)
    function: Scope | None = None  # the enclosing function
    shadowed: set[str] = field(default_factory=set)  # names the enclosing function rebinds

    def bind(self, signature: Signature, module_signature: Signature | None = None) -> Bound | None:
        """Parameter name -> Argument, as Python binds this call (None: it cannot be done
        statically, or the call does not match the signature)."""
        if self.form == "module":
            if module_signature is None or self.constructor is None:
                return None
            constructed = _bind_call(self.file, self.constructor, module_signature, None)
            if constructed is None:
                return None
            own = set(module_signature.names())
            forward = Signature(tuple(p for p in signature.parameters if p.name not in own))
            called = _bind_call(self.file, self.node, forward, None)
            if called is None:
                return None
            return {**constructed, **called}
        receiver = self.receiver if self.form == "method" else None
        return _bind_call(self.file, self.node, signature, receiver)

    def extra_arguments(self, bound: Bound) -> list[tuple[str | None, ast.expr]]:
        """(keyword or None, expression) of the call's arguments that no named parameter
        took (they are passed through untouched)."""
        taken = {id(a.node) for a in bound.values() if a.given}
        calls = [self.node] + ([self.constructor] if self.form == "module" and self.constructor is not None else [])
        values: list[tuple[str | None, ast.expr]] = [(None, a) for call in calls for a in call.args]
        values += [(k.arg, k.value) for call in calls for k in call.keywords]
        return [(name, value) for name, value in values if id(value) not in taken]


def _bind_call(file: FileContext, call: ast.Call, signature: Signature, receiver: ast.expr | None) -> Bound | None:
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    parameters = list(signature.parameters)
    positional = [p for p in parameters if not p.keyword_only]
    values: dict[str, ast.expr] = {}
    given = list(call.args)
    if receiver is not None:
        given = [receiver] + given
    for index, node in enumerate(given):
        if index < len(positional):
            values[positional[index].name] = node
        elif not signature.extra_positional:
            return None
    names = {p.name for p in parameters}
    for keyword in call.keywords:
        if keyword.arg is None or keyword.arg in values:
            return None  # **kwargs (refused above), or given twice: Python raises TypeError
        if keyword.arg in names:
            values[keyword.arg] = keyword.value
        elif not signature.extra_keywords:
            return None
    bound: Bound = {}
    for parameter in parameters:
        if parameter.name in values:
            node = values[parameter.name]
            start, end = file.offsets(node)
            bound[parameter.name] = Argument(parameter.name, node, file.text[start:end], True, start, end)
        elif parameter.default is not None:
            node = parse_expression(parameter.default).body
            bound[parameter.name] = Argument(parameter.name, node, parameter.default, False)
        else:
            return None
    return bound


def call_site(file: FileContext, call: ast.Call) -> CallSite | None:
    """What the call is, when that can be known from this file alone."""
    function = _enclosing_scope(call)
    shadowed: set[str] = set()
    scope = function
    while scope is not None:
        shadowed |= scope_names(scope)
        scope = _enclosing_scope(scope)
    func = call.func
    dotted = dotted_name(func)
    if dotted is not None:
        resolved = file.bindings.resolve(dotted, shadowed)
        if resolved is not None:
            return CallSite(file, call, "function", resolved, function=function, shadowed=shadowed)
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and function is not None
            and isinstance(parent(function), ast.ClassDef)
            and _first_parameter(function) == func.value.id
        ):
            constructor = _constructor(file, call, func.attr, func.value.id)
            if constructor is None:
                return None
            constructed = dotted_name(constructor.func)
            cls = file.bindings.resolve(constructed, set()) if constructed else None
            if cls is None:
                return None
            return CallSite(
                file,
                call,
                "module",
                canonical(cls),
                receiver=func,
                constructor=constructor,
                function=function,
                shadowed=shadowed,
            )
    if isinstance(func, ast.Attribute):
        head = dotted.split(".")[0] if dotted else None
        if head is not None and head in file.bindings.imported and head not in shadowed:
            return None  # an attribute of an imported module the entry does not know
        return CallSite(file, call, "method", func.attr, receiver=func.value, function=function, shadowed=shadowed)
    return None


def _enclosing_scope(node: ast.AST) -> Scope | None:
    current = parent(node)
    while current is not None:
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return current
        current = parent(current)
    return None


def _enclosing_class(node: ast.AST) -> ast.ClassDef | None:
    current = parent(node)
    while current is not None:
        if isinstance(current, ast.ClassDef):
            return current
        current = parent(current)
    return None


def _first_parameter(function: Scope) -> str | None:
    spec = function.args
    arguments = spec.posonlyargs + spec.args
    return arguments[0].arg if arguments else None


def _constructor(file: FileContext, call: ast.Call, attribute: str, self_name: str) -> ast.Call | None:
    """The single `self.<attribute> = Cls(...)` of the call's class (or of a base class
    defined in this file)."""
    cls = _enclosing_class(call)
    seen: set[int] = set()
    while cls is not None and id(cls) not in seen:
        seen.add(id(cls))
        found: list[ast.expr | None] = []
        for method in cls.body:
            if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            owner = _first_parameter(method)
            for node in ast.walk(method):
                targets, value = _assignment(node)
                for target in targets:
                    if (
                        isinstance(target, ast.Attribute)
                        and target.attr == attribute
                        and isinstance(target.value, ast.Name)
                        and target.value.id == owner
                    ):
                        found.append(value)
                if isinstance(node, ast.Call) and _sets_attribute_dynamically(node, attribute):
                    return None
        if found:
            first = found[0]
            return first if len(found) == 1 and isinstance(first, ast.Call) else None
        cls = _base_in_file(file, cls)
    return None


def _assignment(node: ast.AST) -> tuple[list[ast.expr], ast.expr | None]:
    if isinstance(node, ast.Assign):
        return node.targets, node.value
    if isinstance(node, ast.AnnAssign) and node.value is not None:
        return [node.target], node.value
    if isinstance(node, ast.AugAssign):
        return [node.target], None
    return [], None


def _sets_attribute_dynamically(call: ast.Call, attribute: str) -> bool:
    """setattr(self, "pool", ...) / self.add_module("pool", ...) / self.register_module(...)."""
    name = dotted_name(call.func) or ""
    if name.split(".")[-1] not in ("setattr", "add_module", "register_module"):
        return False
    return any(isinstance(a, ast.Constant) and a.value == attribute for a in call.args)


def _base_in_file(file: FileContext, cls: ast.ClassDef) -> ast.ClassDef | None:
    names = [b.id for b in cls.bases if isinstance(b, ast.Name)]
    if len(names) != 1:
        return None
    for statement in file.tree.body:
        if isinstance(statement, ast.ClassDef) and statement.name == names[0]:
            return statement
    return None


def is_pure(node: ast.AST) -> bool:
    """An expression that can be written twice without computing anything twice: names,
    attribute chains, constants and constant subscripts of those."""
    if isinstance(node, (ast.Name, ast.Constant)):
        return True
    if isinstance(node, ast.Attribute):
        return is_pure(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return isinstance(node.operand, ast.Constant)
    if isinstance(node, ast.Subscript):
        return is_pure(node.value) and _constant_index(node.slice)
    return False


def _constant_index(node: ast.AST) -> bool:
    if isinstance(node, ast.Tuple):
        return all(_constant_index(e) for e in node.elts)
    if isinstance(node, ast.Slice):
        return all(part is None or _constant_index(part) for part in (node.lower, node.upper, node.step))
    return isinstance(node, ast.Constant) or (isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant))
