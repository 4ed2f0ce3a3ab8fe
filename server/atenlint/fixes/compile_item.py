"""`.item()` breaks: an explanation, because no local rewrite removes them.

What the installed Dynamo does (tests/fixes/test_compile_fixes_item.py checks each point on the
installed torch): `n = x.sum().item()` breaks the graph ("Unsupported Tensor.item() call
with capture_scalar_outputs=False") unless `torch._dynamo.config.capture_scalar_outputs`
is True when Dynamo starts tracing; `torch.compile(fullgraph=True)` turns it on for its own
compile. `torch._check(n >= 0)` / `torch._check_is_size(n)` after the call do not remove the
break: they state facts about a number already in the graph, for a later use Dynamo cannot
decide ("Could not guard on data-dependent expression"). Setting the config inside
`forward` (`torch._dynamo.patch_dynamo_config`) comes too late: the graph's shape
environment is made before. Decorating `forward` with
`@torch._dynamo.config.patch(capture_scalar_outputs=True)` does keep the number in the graph
under the default `torch.compile` (torch 2.13: one graph, no break; Dynamo skips the
decorator's wrapper frame and compiles `forward` with the config on), but
`torch.compile(fullgraph=True)` then raises at the wrapper ("Unsupported context manager")
where the undecorated module compiled as one graph: not exact, so not offered. So the remedy says which switch keeps the number in the graph,
process-wide; it writes nothing, and offers no `torch._check` that asserts more than the
code does (that would make the module raise where it did not).
"""

from __future__ import annotations

import ast
import re

from ..config import Settings
from ..finding_data import Fix
from ..findings import Finding
from .callsite import FileContext
from .model import Remedy

_ITEM_REASON = re.compile(r"\.item\(\)")


def explain_item_capture(
    remedy: Remedy, finding: Finding, file: FileContext | None, settings: Settings | None
) -> Fix | None:
    if file is None or finding.code not in remedy.codes or not _ITEM_REASON.search(finding.message):
        return None
    if not _item_call_on(file, finding.range.start.line + 1):
        return None
    fullgraph = settings is not None and settings.fullgraph
    description = (
        "Dynamo takes a Python number out of a tensor (`.item()`) into the graph only when "
        "`torch._dynamo.config.capture_scalar_outputs = True` (or TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS=1) is set "
        "before torch.compile first runs the module; it applies to every compiled function of the process, and "
        "changes nothing the module computes. `torch.compile(..., fullgraph=True)` turns it on for its own "
        "compile"
        + (" (this project compiles that way, so the split happens only without fullgraph)" if fullgraph else "")
        + ". `torch._check(...)` / `torch._check_is_size(...)` do not remove this break: once the number is "
        "in the graph, they tell Dynamo a fact a later use needs (when it says 'Could not guard on "
        "data-dependent expression'), and they raise where the fact is false."
    )
    return {
        "id": remedy.id,
        "title": "Keep `.item()` in the graph: set torch._dynamo.config.capture_scalar_outputs = True",
        "kind": remedy.kind,
        "exact": True,
        "approximation": None,
        "edits": [],
        "description": description,
    }


def _item_call_on(file: FileContext, line: int) -> bool:
    """Whether a `.item()` call spans `line` (1-based)."""
    for node in ast.walk(file.tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "item"
            and not node.args
            and not node.keywords
            and node.lineno <= line <= (node.end_lineno or node.lineno)
        ):
            return True
    return False
