"""The layout shows the process boundary (issue 19): the import graph of server/atenlint,
read from the source (imports at module level, under TYPE_CHECKING and inside functions),
has no circle, and the parent side (CLI, server, engine, targets, fixes) and the worker
side (capture, sandbox, the worker's entry point) meet only in worker/protocol.py.

An edge that still breaks a rule is listed below with the file's owner, so a new one fails
the test and a fixed one must be taken off the list (the test fails for a listed edge that
no longer exists)."""

from __future__ import annotations

import ast
import functools
import os

from support import REPO

PACKAGE = os.path.join(REPO, "server", "atenlint")

# Modules that run in the worker process (or its children): user code runs only there.
WORKER_SIDE = (
    "atenlint.capture",
    "atenlint.probe",
    "atenlint.worker.main",
    "atenlint.worker.sandbox",
    "atenlint.worker.state",
    "atenlint.worker.confine",
    "atenlint.worker.seatbelt",
    "atenlint.torchcompat",
)
# The one module both sides read, and the words it uses (view names, capture kinds).
PROTOCOL = "atenlint.worker.protocol"
PROTOCOL_LEVEL = (PROTOCOL, "atenlint.worker.vocabulary")
# Modules that run in the parent only.
PARENT_SIDE = (
    "atenlint.engine",
    "atenlint.pipeline",
    "atenlint.judging",
    "atenlint.answers",
    "atenlint.captured",
    "atenlint.source_read",
    "atenlint.source_cache",
    "atenlint.run_report",
    "atenlint.lsp",
    "atenlint.commands",
    "atenlint.cli",
    "atenlint.targets",
    "atenlint.fixes",
    "atenlint.formats",
    "atenlint.output",
    "atenlint.findings",
    "atenlint.finding_data",
    "atenlint.discover",
    "atenlint.locate",
    "atenlint.notebook",
    "atenlint.notebook_check",
    "atenlint.config",
    "atenlint.config_keys",
    "atenlint.worker.pool",
    "atenlint.refusals",
    "atenlint.inputs_suggest",
)

# Edges that break a rule today, each with the helper whose file it is (issue 19 item 4).
KNOWN_CIRCLES: dict[frozenset[str], str] = {}
KNOWN_CROSSINGS: dict[tuple[str, str], str] = {}
# worker/ holds the worker's code and the parent's handle on it (pool.py): the parent's
# findings are made on the parent's side, not in worker/.
KNOWN_WORKER_PACKAGE_UP: dict[tuple[str, str], str] = {}


def _module_name(path: str) -> str:
    relative = os.path.relpath(path, os.path.dirname(PACKAGE))[:-3].split(os.sep)
    if relative[-1] == "__init__":
        relative = relative[:-1]
    return ".".join(relative)


def _modules() -> dict[str, str]:
    out = {}
    for folder, dirs, files in os.walk(PACKAGE):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                out[_module_name(path)] = path
    return out


@functools.cache
def _read_graph() -> dict[str, frozenset[str]]:
    return {name: frozenset(targets) for name, targets in _parse_graph().items()}


def import_graph() -> dict[str, set[str]]:
    """module -> the atenlint modules it imports anywhere in its source (parsed once per
    session: every test here reads the same tree)."""
    return {name: set(targets) for name, targets in _read_graph().items()}


def _parse_graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read(), path)
        package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - node.level + 1]
                    stem = ".".join(base + ([node.module] if node.module else []))
                else:
                    stem = node.module or ""
                # `from . import findings` imports a module; `from .x import y` a name of x.
                targets = [f"{stem}.{a.name}" if f"{stem}.{a.name}" in modules else stem for a in node.names]
            for target in targets:
                while target and target not in modules and "." in target:
                    target = target.rpartition(".")[0]
                if target in modules and target != name and target.startswith("atenlint"):
                    graph[name].add(target)
    return graph


def circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph[node]):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _side(module: str) -> str | None:
    if module in PROTOCOL_LEVEL:
        return None
    if any(module == p or module.startswith(p + ".") for p in WORKER_SIDE):
        return "worker"
    if any(module == p or module.startswith(p + ".") for p in PARENT_SIDE):
        return "parent"
    return None


def crossings(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """(module, module of the other side it reaches) for every import from one side of the
    process boundary into the other, directly or through modules of neither side (shared
    helpers such as sourcetext.py), never through the protocol."""
    out = set()
    for source, imported in graph.items():
        side = _side(source)
        if side is None:
            continue
        seen: set[str] = set()
        todo = sorted(imported)
        while todo:
            target = todo.pop()
            if target in seen or target in PROTOCOL_LEVEL:
                continue
            seen.add(target)
            reached = _side(target)
            if reached is None:
                todo.extend(sorted(graph[target]))
            elif reached != side:
                out.add((source, target))
    return out


def test_the_worker_package_does_not_import_up_into_the_parent():
    graph = import_graph()
    found = {
        (source, target)
        for source, targets in graph.items()
        if source.startswith("atenlint.worker.")
        for target in targets
        if _side(target) == "parent" and not target.startswith("atenlint.worker.")
    }
    new = sorted(found - set(KNOWN_WORKER_PACKAGE_UP))
    assert not new, f"worker/ imports parent-side modules: {new}"
    gone = sorted(set(KNOWN_WORKER_PACKAGE_UP) - found)
    assert not gone, f"fixed, take them off KNOWN_WORKER_PACKAGE_UP: {gone}"


def test_the_protocol_imports_nothing_of_either_side():
    """Both processes import it first (the worker before torch): standard library only."""
    graph = import_graph()
    for module in PROTOCOL_LEVEL:
        assert graph[module] <= set(PROTOCOL_LEVEL), f"{module} imports {sorted(graph[module])}"
    assert "atenlint.worker.vocabulary" in graph[PROTOCOL]


def test_the_graph_is_read_from_the_source():
    graph = import_graph()
    assert "atenlint.findings" in graph["atenlint.engine"]
    assert PROTOCOL in graph["atenlint.worker.main"]


def test_no_import_circle():
    found = circles(import_graph())
    new = [sorted(c) for c in found if c not in KNOWN_CIRCLES]
    assert not new, f"import circles: {new}"
    gone = [sorted(c) for c in KNOWN_CIRCLES if c not in found]
    assert not gone, f"fixed, take them off KNOWN_CIRCLES: {gone}"


def test_the_process_boundary_is_crossed_only_through_the_protocol():
    found = crossings(import_graph())
    new = sorted(found - set(KNOWN_CROSSINGS))
    assert not new, f"imports across the worker boundary: {new}"
    gone = sorted(set(KNOWN_CROSSINGS) - found)
    assert not gone, f"fixed, take them off KNOWN_CROSSINGS: {gone}"


def test_a_circle_and_a_crossing_are_seen():
    graph = {
        "atenlint.engine": {"atenlint.sourcetext"},
        "atenlint.sourcetext": {"atenlint.capture.trace"},
        "atenlint.capture.trace": {PROTOCOL, "atenlint.engine"},
        PROTOCOL: set(),
    }
    assert circles(graph) == [frozenset({"atenlint.engine", "atenlint.sourcetext", "atenlint.capture.trace"})]
    assert crossings(graph) == {
        ("atenlint.engine", "atenlint.capture.trace"),
        ("atenlint.capture.trace", "atenlint.engine"),
    }
