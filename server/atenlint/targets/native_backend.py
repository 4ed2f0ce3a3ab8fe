"""Support on a device backend (MPS, CUDA, ...) as torch's code generator sees it.

Mirrors torchgen's rules for one dispatch key: a direct kernel runs natively; a
structured op runs iff its out= delegate has a kernel (otherwise the fallback fires
under the `.out` name); composites run iff what they call does (their call trees come
from the capture); anything else hits the backend's boxed fallback. Kernels registered
from Python and ops a backend forces to the CPU are added from outside the yaml.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ..worker.protocol import CallTree, LibraryFacts
from .native_table import NativeTable


@dataclass
class BackendGaps:
    """What a call tree needs that the backend lacks."""

    missing: list[str] = field(default_factory=list)  # no kernel: the backend's fallback fires
    forced: list[str] = field(default_factory=list)  # always sent to the CPU
    unknown: bool = False  # part of the tree could not be judged

    def __bool__(self) -> bool:
        return bool(self.missing or self.forced)


class NativeBackend:
    def __init__(
        self, table: NativeTable, key: str, extra_kernels: Iterable[str] = (), forced: Iterable[str] = ()
    ) -> None:
        self.table = table
        self.key = key
        self.extra_kernels = frozenset(extra_kernels)
        self.forced = frozenset(forced)
        self._library_cpu: dict[str, bool] = {}

    def has_own_kernel(self, name: str) -> bool:
        return name in self.extra_kernels or self.table.has_kernel(name, self.key)

    def gaps(self, tree: CallTree) -> BackendGaps:
        gaps = BackendGaps()
        self._visit(tree, gaps)
        return gaps

    def _visit(self, node: CallTree, gaps: BackendGaps) -> None:
        name = node["op"]
        if name in self.forced:
            _add(gaps.forced, name)
            return
        entry = self.table.get(name)
        calls = node.get("calls")
        if entry is None:
            library = node.get("library")
            if library is not None and not name.startswith("aten::"):
                self._visit_library(name, library, gaps)
                return
            # Not an aten overload of this torch (a TorchScript builtin, another namespace).
            if calls:
                for child in calls:
                    self._visit(child, gaps)
            elif not name.startswith("aten::"):
                gaps.unknown = True
            return
        if self.has_own_kernel(name):
            return
        if entry.delegate is not None:
            if entry.delegate in self.forced:
                _add(gaps.forced, entry.delegate)
            elif not self.has_own_kernel(entry.delegate):
                _add(gaps.missing, entry.delegate)
            return
        if entry.implicit or entry.explicit:
            if calls is not None:
                for child in calls:
                    self._visit(child, gaps)
            elif node.get("undecomposed") and entry.implicit:
                gaps.unknown = True
            # An explicit composite we could not expand on meta picks its kernel by
            # device at run time (convolution -> _mps_convolution): it runs.
            return
        _add(gaps.missing, name)

    def _visit_library(self, name: str, library: LibraryFacts, gaps: BackendGaps) -> None:
        """A library's own op (`torchvision::nms`), judged by the kernels the installed
        library registered per dispatch key. A build for another platform than the
        backend's (a Linux torchvision has no MPS kernels; macOS builds may) cannot tell."""
        kernels = set(library.get("kernels") or ())
        if self.key in kernels or kernels & {"CompositeImplicitAutograd", "CompositeExplicitAutograd"}:
            return
        if self.key == "MPS" and library.get("platform") != "darwin":
            gaps.unknown = True
            return
        if self.key == "CUDA" and not library.get("cuda_build", True):
            gaps.unknown = True
            return
        _add(gaps.missing, name)
        self._library_cpu[name] = "CPU" in kernels

    def runs_on_cpu(self, name: str) -> bool:
        if name in self._library_cpu:
            return self._library_cpu[name]
        entry = self.table.get(name)
        if entry is None:
            return False
        if "CPU" in entry.kernels or entry.explicit or entry.implicit:
            return True
        return entry.delegate is not None and self.runs_on_cpu(entry.delegate)


def _add(items: list[str], name: str) -> None:
    if name not in items:
        items.append(name)
