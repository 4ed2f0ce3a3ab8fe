"""Walking a call tree against a support predicate: the shared core of the registry targets.

A node is fine when the backend supports its overload; otherwise, when the view says the
op decomposes (`calls`) and the target would let it, its calls are judged instead;
otherwise the overload is a problem.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..worker.protocol import CallTree

Supported = Callable[[str], bool]
Descend = Callable[[CallTree], bool]


def _always(node: CallTree) -> bool:
    return True


def unsupported(tree: CallTree, supported: Supported, descend: Descend = _always) -> list[str]:
    missing: list[str] = []
    _visit(tree, supported, descend, missing)
    return missing


def _visit(node: CallTree, supported: Supported, descend: Descend, missing: list[str]) -> None:
    name = node["op"]
    if supported(name):
        return
    calls = node.get("calls")
    if calls is None and node.get("undecomposed") and node.get("decomposable"):
        return  # export decomposes it, into what the capture could not see (no shapes): not judged
    if calls is not None and descend(node):
        for child in calls:
            _visit(child, supported, descend, missing)
        return
    if name not in missing:
        missing.append(name)


def base_name(op: str) -> str:
    """`aten::add.Tensor` -> `aten::add`."""
    namespace, _, rest = op.partition("::")
    return f"{namespace}::{rest.split('.', 1)[0]}"


def eval_only(phases: Sequence[str]) -> bool:
    """Exported models run in eval mode: a call made only while training is not exported."""
    return bool(phases) and "eval" not in phases


def traced_instead(node: CallTree) -> bool:
    """A call torch.jit.trace does not record as itself (capture/script.py `traced_tree`):
    its calls are what a trace-converting toolchain sees."""
    return node.get("via") == "trace"
