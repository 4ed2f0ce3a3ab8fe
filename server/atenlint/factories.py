"""Factories and example inputs written as Python functions, not one TOML string.

`init = "pkg.module:function"` (or `"tools/factories.py:function"`) names a function the
worker calls to build a class; `inputs` and `kwargs` can name functions the same way. A
factories file (`factories = "atenlint_factories.py"` in `[tool.atenlint]`) holds functions
found by name: `init_<Class>`, `inputs_<Class>`, `kwargs_<Class>` for one class, and
`init`, `inputs`, `kwargs` for any class (return None to decline).

This module is pure: it recognises and checks references (the parent validates
configuration with it); `capture/building.py` resolves and calls them in the worker.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# `pkg.module:function`, `pkg.module:Holder.function` or `path/to/file.py:function`.
_REFERENCE_RE = re.compile(r"^(?P<module>[\w.\-/\\ ]+?(?:\.py)?):(?P<attribute>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)$")


@dataclass(frozen=True)
class FunctionReference:
    """A function named by where it lives, not an expression to evaluate."""

    module: str  # dotted module name, or a file path ending in .py
    attribute: str  # dotted attribute inside it

    @property
    def is_file(self) -> bool:
        return self.module.endswith(".py") or "/" in self.module or "\\" in self.module

    def __str__(self) -> str:
        return f"{self.module}:{self.attribute}"


def parse_reference(text: str | None) -> FunctionReference | None:
    """The function a setting names (`pkg.mod:fn`), or None when the text is an expression.

    A Python expression never has this shape: `a:b` alone is not valid Python, while
    slices and dict displays always sit inside brackets."""
    if not text:
        return None
    match = _REFERENCE_RE.match(text.strip())
    if match is None:
        return None
    module = match["module"].strip()
    reference = FunctionReference(module, match["attribute"])
    if not reference.is_file and not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", module):
        return None
    return reference


def class_hook_names(kind: str, qualname: str) -> tuple[str, ...]:
    """Names a factories file may define for `kind` of one class, most specific first:
    `init_Outer_Inner` for a nested class, then the generic `init`."""
    return (f"{kind}_{qualname.replace('.', '_')}", kind)
