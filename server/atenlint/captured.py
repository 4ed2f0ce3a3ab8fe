"""What the parent knows about one file after its capture, before any target judges it.

Plain records (no torch, no worker, no engine): the engine fills them from the worker's
answer, the judging step reads them, and the pipeline, the CLI and the editor pass them
around. Kept apart from engine.py so that every one of those can import them without
importing the engine.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from .config import Settings
from .discover import FileOutline
from .findings import Finding
from .sourcetext import Range, SourceText
from .targets.site_verdict import SiteVerdict
from .worker import vocabulary
from .worker.protocol import CallTree, ClassAnswer, Site

# The view device targets judge, which the worker captures first (and can answer early);
# engine.py and judging.py import it from here.
FAST_VIEW = vocabulary.FAST_VIEW


@dataclass
class Occurrence:
    """One captured call: the overload, its call tree, and the source sites leading to it."""

    module: str
    op: str
    trees: dict[str, CallTree | None]  # view ("dispatch", "export") -> call tree
    phases: tuple[str, ...]
    sites: list[Site]  # outermost first: {"file", "line", "col", "span_lines", "end_col", "library"}
    capture: str
    args: dict[str, Any] = field(default_factory=dict)
    conditional: bool = False  # only reached through a library branch decided at run time
    devices: tuple[str, ...] = ()  # the devices assumed when the capture reached it
    facts: dict[str, Any] = field(default_factory=dict)  # dtypes and ranks a trace saw (dtype rules)

    def user_site(self) -> Site | None:
        """The innermost site in the user's own files."""
        for site in reversed(self.sites):
            if not site.get("library"):
                return site
        return None

    def library_site(self) -> Site | None:
        innermost = self.sites[-1] if self.sites else None
        return innermost if innermost and innermost.get("library") else None


@dataclass
class FileCapture:
    path: str  # absolute
    display: str
    settings: Settings
    source: SourceText | None
    outline: FileOutline | None
    module_findings: list[Finding] = field(default_factory=list)
    occurrences: list[Occurrence] = field(default_factory=list)
    classes: list[ClassAnswer] = field(default_factory=list)  # the worker's per-class answers
    imported: list[str] = field(default_factory=list)  # the user's files the import pulled in
    seconds: float = 0.0
    worker_seconds: float = 0.0
    # A partial answer (the dispatcher view, before the export views are captured) is
    # judged only by the targets whose tree view is in here; None: by every target.
    views: frozenset[str] | None = None

    @property
    def partial(self) -> bool:
        return self.views is not None


@dataclass
class CallSite:
    """One user expression that dispatches aten ops, with each target's verdict (hover)."""

    path: str
    range: Range
    call: str
    ops: list[str]  # the overloads the call makes, as captured (before decomposition)
    reached: list[str]  # what the backends are asked for after decomposition
    verdicts: dict[str, SiteVerdict]  # by target name (targets/site_verdict.py)
    capture: str


def display_path(path: str, cwd: str) -> str:
    absolute = os.path.abspath(path)
    if absolute.startswith(cwd.rstrip(os.sep) + os.sep):
        return os.path.relpath(absolute, cwd)
    return absolute
