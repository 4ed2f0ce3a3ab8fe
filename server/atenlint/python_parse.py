"""``ast.parse`` behind one process-wide lock.

CPython up to 3.12.0 keeps the counter its AST-to-object conversion uses for recursion
checks in interpreter-wide state, not per thread (python/cpython#106905). Two threads
parsing at once can then fail with ``SystemError: AST constructor recursion depth
mismatch``. The language server checks files on two threads, so every parse in atenlint
goes through here. A parse is milliseconds; serialising them costs nothing visible.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import threading
from typing import Any

_PARSE_LOCK = threading.Lock()


def parse_module(text: str, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse(text, filename)``; raises what it raises."""
    with _PARSE_LOCK:
        return ast.parse(text, filename=filename)


def parse_expression(text: str, filename: str = "<unknown>") -> ast.Expression:
    """``ast.parse(text, mode="eval")``; raises what it raises."""
    with _PARSE_LOCK:
        return ast.parse(text, filename=filename, mode="eval")


def function_node(function: Any) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The definition of a function or method, parsed from its source (dedented: a method's
    is indented); None when its source cannot be read or parsed."""
    try:
        tree = parse_module(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError, SyntaxError, ValueError):
        return None
    node = tree.body[0] if tree.body else None
    return node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
