"""What names a file binds to modules, how to spell a module at a call, and where to add an import.

`import torch.nn.functional as F` binds F to torch.nn.functional; `from torch import linalg`
binds linalg to torch.linalg; `import torch.nn` binds torch. A replacement spells a module
with a name the file already has (`F.avg_pool3d`, else `torch.nn.functional.avg_pool3d`),
and adds an import only when no name reaches it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from .edits import LineIndex, TextEdit

_CONVENTIONAL = {"torch": "torch", "torch.nn.functional": "F", "math": "math", "warnings": "warnings"}

# Submodules `import torch` makes reachable as attributes.
_LOADED_WITH_TORCH = ("torch.nn", "torch.nn.functional", "torch.linalg", "torch.special", "torch.fft")


def canonical(name: str) -> str:
    """One spelling per callable: nn classes are reached as torch.nn.X wherever they live."""
    parts = name.split(".")
    if len(parts) >= 4 and parts[:3] == ["torch", "nn", "modules"]:
        return f"torch.nn.{parts[-1]}"
    return name


@dataclass
class Bindings:
    """Module-level names bound by imports (name -> dotted path), and names bound otherwise."""

    imported: dict[str, str]
    other: set[str]  # module-level names assigned, defined or imported more than once

    @staticmethod
    def of(tree: ast.Module) -> Bindings:
        imported: dict[str, str] = {}
        other: set[str] = set()
        for statement in _module_statements(tree):
            if isinstance(statement, ast.Import):
                for alias in statement.names:
                    name = alias.asname or alias.name.split(".")[0]
                    path = alias.name if alias.asname else alias.name.split(".")[0]
                    _bind(imported, other, name, path)
            elif isinstance(statement, ast.ImportFrom) and statement.level == 0 and statement.module:
                for alias in statement.names:
                    if alias.name == "*":
                        continue
                    _bind(imported, other, alias.asname or alias.name, f"{statement.module}.{alias.name}")
            elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                other.add(statement.name)
            else:
                for node in ast.walk(statement):
                    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                        other.add(node.id)
        for name in other:
            imported.pop(name, None)
        return Bindings(imported, other)

    def resolve(self, dotted: str, shadowed: set[str]) -> str | None:
        """`F.pdist` -> `torch.nn.functional.pdist`, when its first name is an import the
        call's scope does not rebind."""
        head, _, rest = dotted.partition(".")
        if head in shadowed or head not in self.imported:
            return None
        path = self.imported[head]
        return canonical(f"{path}.{rest}" if rest else path)

    def spell(self, module: str, shadowed: set[str], preferred: str | None = None) -> str | None:
        """How to name `module` at the call without a new import (None: it needs one): the
        name the call itself used, else the conventional one (`torch`, `F`), else the shortest."""
        usable = {name: path for name, path in self.imported.items() if name not in shadowed}
        exact = sorted(name for name, path in usable.items() if path == module)
        if exact:
            for name in (preferred, _CONVENTIONAL.get(module)):
                if name is not None and name in exact:
                    return name
            return min(exact, key=len)
        best: str | None = None
        for name, path in usable.items():
            if module.startswith(path + ".") and self._reachable(path, module):
                spelled = name + module[len(path) :]
                if best is None or len(spelled) < len(best):
                    best = spelled
        return best

    @staticmethod
    def _reachable(package: str, module: str) -> bool:
        """Importing `package` makes `module` an attribute chain of it (torch -> torch.nn.functional)."""
        return module in _LOADED_WITH_TORCH and (package == "torch" or package in _LOADED_WITH_TORCH)


def _bind(imported: dict[str, str], other: set[str], name: str, path: str) -> None:
    if name in imported and imported[name] != path:
        other.add(name)
    imported[name] = path


def _module_statements(tree: ast.Module) -> Iterator[ast.stmt]:
    """Top-level statements, including those under top-level if/try (guarded imports), but
    not `if TYPE_CHECKING:` blocks, whose names do not exist when the code runs."""
    for statement in tree.body:
        if isinstance(statement, ast.If) and _type_checking(statement.test):
            yield from statement.orelse
            continue
        yield statement
        if isinstance(statement, (ast.If, ast.Try)):
            for block in (
                [statement.body, statement.orelse]
                if isinstance(statement, ast.If)
                else [statement.body, statement.orelse, statement.finalbody] + [h.body for h in statement.handlers]
            ):
                yield from block


def _type_checking(test: ast.AST) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


Scope = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda


def scope_names(function: Scope | None) -> set[str]:
    """Names a function binds locally (parameters, assignments, imports, loops, ...):
    these shadow module-level imports inside it."""
    names: set[str] = set()
    if function is None:
        return names
    spec = function.args
    for arg in spec.posonlyargs + spec.args + spec.kwonlyargs + [spec.vararg, spec.kwarg]:
        if arg is not None:
            names.add(arg.arg)
    body = function.body if isinstance(function.body, list) else [function.body]
    for statement in body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                names.add(node.id)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names.update((a.asname or a.name.split(".")[0]) for a in node.names)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
    return names


def import_statement(module: str) -> str:
    return f"import {module}"


def insertion_point(tree: ast.Module, index: LineIndex) -> tuple[int, str, str]:
    """Where a new top-level statement goes (after the leading imports, else after the
    docstring and `__future__` imports), as (offset, text before, text after) to wrap it in."""
    newline = index.newline()
    anchor: ast.stmt | None = None
    for position, statement in enumerate(tree.body):
        if (
            position == 0
            and isinstance(statement, ast.Expr)
            and isinstance(statement.value, ast.Constant)
            and isinstance(statement.value.value, str)
        ):
            anchor = statement
            continue
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            anchor = statement
            continue
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            break
        if isinstance(statement, (ast.If, ast.Try)) and _only_imports(statement):
            anchor = statement
            continue
        break
    if anchor is None:
        return 0, "", newline
    line = anchor.end_lineno if anchor.end_lineno is not None else anchor.lineno  # the line after it (0-based)
    if line < len(index.starts):
        return index.starts[line], "", newline
    return len(index.text), newline, ""


def _only_imports(statement: ast.AST) -> bool:
    """A guarded import block (`try: import x / except ImportError: x = None`)."""
    allowed = (ast.Import, ast.ImportFrom, ast.Pass, ast.Assign, ast.If, ast.Try)
    return all(isinstance(node, allowed) for node in ast.walk(statement) if isinstance(node, ast.stmt))


def import_edit(tree: ast.Module, index: LineIndex, statement: str) -> TextEdit:
    offset, before, after = insertion_point(tree, index)
    return TextEdit(offset, offset, f"{before}{statement}{after}")


def module_spelling(
    bindings: Bindings, tree: ast.Module, index: LineIndex, module: str
) -> tuple[str, list[TextEdit]] | None:
    """How a file (its `bindings`, `tree` and `index`) names `module` at module level, with
    the edit that imports it where it is not imported yet; None when that name is already
    bound to something else."""
    spelled = bindings.spell(module, set())
    if spelled is not None:
        return spelled, []
    if module in bindings.other:
        return None
    return module, [import_edit(tree, index, import_statement(module))]
