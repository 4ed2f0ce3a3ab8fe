"""Captured calls -> findings: each target's verdict per user call site, placed in the file
the site is in (which may be another file than the one captured), with the catalog's fixes.

Pure: reads `FileCapture`s and the targets' data, never the worker or user code.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from . import findings as codes
from .captured import FAST_VIEW, CallSite, FileCapture, Occurrence, display_path
from .config import Settings, SettingsResolver
from .discover import FileOutline
from .finding_data import RelatedPlace
from .findings import Finding
from .fixes import attach_fixes
from .locate import Located
from .source_cache import SourceCache
from .sourcetext import Position, Range
from .targets.base import Problem, Target
from .targets.site_verdict import VerdictAggregate
from .worker.protocol import CallTree, Site

# The most the source pass (nothing executed) says about a deployment target: its
# toolchain may still accept what the source seems to call (a branch never taken, a
# dtype or shape the source does not show), so an error needs the graph the toolchain sees.
STATIC_DEPLOYMENT_CAP = "warning"


def is_device_target(target: Target) -> bool:
    """A device backend (MPS, CUDA, XLA) judges the dispatcher view of a call; every other
    target is a deployment toolchain (ONNX, ExecuTorch, Core ML, TorchScript, TensorRT)
    judged on the graph its exporter produces (targets/base.py `tree_view`)."""
    return target.tree_view == FAST_VIEW


@dataclass
class _SiteGroup:
    """Every captured call that reaches one user call site, for one target."""

    aggregate: VerdictAggregate
    occurrence: Occurrence
    located: Located
    target: Target
    settings: Settings
    reached: list[str] = field(default_factory=list)
    library: list[Site] = field(default_factory=list)
    # What each captured call here says: its problems and whether it is conditional. The
    # finding names only the classes whose calls make the problems it reports.
    said: list[tuple[Occurrence, list[Problem], bool]] = field(default_factory=list)
    at_class: bool = False  # no frame of the user's code on the call's stack: placed at the class


class Judge:
    """Turns captures into findings and hover call sites for the targets of their settings."""

    def __init__(
        self,
        targets_for: Callable[[Settings], list[Target]],
        resolver: Callable[[], SettingsResolver],
        torch_version: Callable[[], str],
        cwd: str,
        log: Callable[[str], None],
    ):
        self._targets_for = targets_for
        self._resolver = resolver
        self._torch_version = torch_version
        self.cwd = cwd
        self.log = log

    def judging_targets(self, capture: FileCapture) -> list[Target]:
        """The targets that judge a capture: all, or for a partial one those of its views."""
        targets = self._targets_for(capture.settings)
        if capture.views is None:
            return targets
        return [t for t in targets if t.tree_view in capture.views]

    def findings(self, captures: Iterable[FileCapture], sources: SourceCache | None = None) -> list[Finding]:
        """Judge every captured call for every target, one finding per user call site and target."""
        sources = sources or SourceCache()
        captures = list(captures)
        displays = {c.path: c.display for c in captures}
        out: list[Finding] = []
        sites: dict[tuple[str, Range, str], _SiteGroup] = {}
        # A class that cannot be built alone was still analysed inside another that uses it.
        covered = {name for capture in captures for cls in capture.classes for name in cls.get("submodules", ())}
        for capture in captures:
            if capture.source is not None:
                sources.put(capture.path, capture.source)
            whole, replaced = self._class_results(capture, sources)
            out.extend(
                f
                for f in capture.module_findings
                if not (f.code == codes.CANNOT_BUILD and f.module in covered) and (f.module, f.code) not in replaced
            )
            out.extend(whole)
            if not capture.occurrences:
                continue
            targets = self.judging_targets(capture)
            for occurrence in capture.occurrences:
                where = locate_occurrence(occurrence, sources) or _at_class(occurrence, capture)
                if where is None:
                    continue
                site, located = where
                for target in targets:
                    problems = problems_for(target, occurrence)
                    if not problems:
                        continue
                    key = (os.path.abspath(site["file"]), located.range, target.name)
                    group = sites.get(key)
                    if group is None:
                        group = sites[key] = _SiteGroup(
                            VerdictAggregate(target),
                            occurrence,
                            located,
                            target,
                            capture.settings,
                            at_class=occurrence.user_site() is None,
                        )
                    group.said.append((occurrence, problems, occurrence.conditional))
                    group.aggregate.add(problems, occurrence.conditional)
                    if occurrence.op not in group.reached:
                        group.reached.append(occurrence.op)
                    library = occurrence.library_site()
                    if library and library not in group.library:
                        group.library.append(library)
        for (path, rng, _), group in sites.items():
            finding = self._site_finding(path, rng, group, sources, displays.get(path))
            if finding is not None:
                out.append(finding)
        # Each finding gets the catalog's fixes for its call (rewrites, remedies) as plain edits.
        return attach_fixes(_apply_ignores(out, sources), sources, self._resolver(), self.log)

    def _class_results(
        self, capture: FileCapture, sources: SourceCache
    ) -> tuple[list[Finding], set[tuple[str | None, str]]]:
        """Verdicts a target gives about a whole class (TorchScript cannot compile it, the
        target's package is missing), and the module-level findings they make redundant."""
        found: list[Finding] = []
        replaced: set[tuple[str | None, str]] = set()
        if not capture.classes:
            return found, replaced
        targets = self.judging_targets(capture)
        by_qualname = {c.qualname: c for c in capture.outline.classes} if capture.outline else {}
        for cls in capture.classes:
            info = by_qualname.get(cls.get("qualname", ""))
            for target in targets:
                for result in target.class_results(cls):
                    severity = capture.settings.severity.get(target.name, result.severity)
                    if severity == "off" or _ignored(capture.settings, target.name, result.code):
                        continue
                    path, rng = capture.path, info.name_range if info else Range(Position(0, 0), Position(0, 0))
                    site = result.site
                    locator = sources.locator(site["file"]) if site else None
                    if site is not None and locator is not None:
                        rng = locator.locate(
                            site["line"], site["col"], site.get("span_lines", 1), site.get("end_col")
                        ).range
                        path = os.path.abspath(site["file"])
                    display = capture.display if path == capture.path else display_path(path, self.cwd)
                    found.append(
                        Finding(
                            display,
                            rng,
                            severity,
                            result.code,
                            result.message,
                            target=target.name,
                            module=cls.get("module"),
                            capture="script",
                            abs_path=path,
                        )
                    )
                    replaced.update((cls.get("module"), code) for code in result.replaces)
        return found, replaced

    def _site_finding(
        self, path: str, rng: Range, group: _SiteGroup, sources: SourceCache, display: str | None
    ) -> Finding | None:
        settings = group.settings
        target = group.target
        problems, conditional = group.aggregate.chosen(lambda problem: not _ignored(settings, target.name, problem.op))
        if not problems:
            return None
        verdict = target.verdict(problems)
        if _ignored(settings, target.name, verdict.code):
            return None
        severity = settings.severity.get(target.name, verdict.severity)
        message = f"`{group.located.call}` {verdict.message}"
        occurrence, modules = _reporting(group, problems, conditional)
        if group.at_class:
            message += (
                " (no line of your code is on this call's recorded stack: a library or a decorator made it "
                "inside the class's forward)"
            )
        if conditional:
            # The library picks this path at run time (by rank, device or values), which a
            # script capture cannot see: say so, without crying wolf.
            severity = "information" if severity in ("error", "warning") else severity
            message = (
                f"{message} — but only on a path the library chooses at run time (by the input's rank, "
                f"device or values), so this may not happen; give example inputs to know"
            )
        elif severity == "error" and occurrence.capture == "static" and not is_device_target(target):
            severity, message = _static_deployment_verdict(message, target)
        if severity == "off":
            return None
        related: list[RelatedPlace] = []
        for library in group.library[:3]:
            source = sources.get(library["file"])
            character = source.utf16_from_byte(library["line"] - 1, library["col"]) if source else library["col"]
            related.append(
                {
                    "path": library["file"],
                    "line": library["line"] - 1,
                    "character": character,
                    "message": "the operator is called here",
                }
            )
        return Finding(
            display or display_path(path, self.cwd),
            rng,
            severity,
            verdict.code,
            message,
            target=target.name,
            ops=[p.op for p in problems],
            call=group.located.call,
            module=occurrence.module,
            capture=occurrence.capture,
            related=related,
            abs_path=path,
            modules=modules,
            data={
                "reached": group.reached,
                "kinds": {p.op: p.kind for p in problems},
                "args": occurrence.args,
                "torch": self._torch_version(),
                "conditional": conditional,
                **({"arg_shapes": occurrence.facts["arg_shapes"]} if occurrence.facts.get("arg_shapes") else {}),
                **({"required_opset": verdict.required_opset} if verdict.required_opset is not None else {}),
            },
        )

    def call_sites(self, captures: Iterable[FileCapture], sources: SourceCache | None = None) -> list[CallSite]:
        """Every located call with the overloads it makes and each target's verdict."""
        sources = sources or SourceCache()
        by_site: dict[tuple[str, Range], CallSite] = {}
        aggregates: dict[tuple[str, Range], dict[str, VerdictAggregate]] = {}
        for capture in captures:
            if capture.source is not None:
                sources.put(capture.path, capture.source)
            targets = self.judging_targets(capture) if capture.occurrences else []
            for occurrence in capture.occurrences:
                where = locate_occurrence(occurrence, sources)
                if where is None:
                    continue
                site, located = where
                key = (os.path.abspath(site["file"]), located.range)
                entry = by_site.setdefault(
                    key, CallSite(key[0], located.range, located.call, [], [], {}, occurrence.capture)
                )
                _add_unique(entry.ops, [occurrence.op])
                dispatch = occurrence.trees.get("dispatch")
                _add_unique(entry.reached, _leaves(dispatch) if dispatch is not None else [])
                for target in targets:
                    problems = problems_for(target, occurrence)
                    if problems is None:
                        continue
                    aggregate = aggregates.setdefault(key, {}).setdefault(target.name, VerdictAggregate(target))
                    aggregate.add(problems, occurrence.conditional)
        for key, entry in by_site.items():
            entry.verdicts = {name: aggregate.verdict() for name, aggregate in aggregates.get(key, {}).items()}
        return list(by_site.values())


def _reporting(group: _SiteGroup, problems: list[Problem], conditional: bool) -> tuple[Occurrence, list[str]]:
    """The captured call a finding speaks for, and the classes it names: only those whose
    own capture makes one of the reported problems, as definitely or conditionally as the
    finding says (a class whose source pass may reach a branch is not named on a verdict
    another class's trace made)."""
    making = [o for o, said, maybe in group.said if maybe == conditional and any(p in problems for p in said)]
    making = making or [group.occurrence]
    executed = [o for o in making if o.capture != "static"]
    # A class read from source only is not named beside one whose capture ran the call: the
    # verdict is the run's, and the source pass may be wrong about its own class.
    making = executed or making
    return making[0], list(dict.fromkeys(o.module for o in making if o.module))


def _static_deployment_verdict(message: str, target: Target) -> tuple[str, str]:
    """An error the source pass found for a deployment target, said as what it is: read
    from the source, not seen in the graph the toolchain exports."""
    return STATIC_DEPLOYMENT_CAP, (
        f"{message} (read from the source only, without running the model: {target.name}'s exporter may "
        f"see a different graph; give example inputs (`inputs=`) for a certain verdict)"
    )


def locate_occurrence(occurrence: Occurrence, sources: SourceCache) -> tuple[Site, Located] | None:
    """The user's site of a captured call and the expression it is, or None."""
    site = occurrence.user_site()
    locator = sources.locator(site["file"]) if site else None
    if locator is None or site is None:
        return None
    return site, locator.locate(
        site["line"],
        site.get("col", 0),
        site.get("span_lines", 1),
        site.get("end_col"),
        site.get("exact", False),
        tuple(site.get("hint") or ()),
    )


def _at_class(occurrence: Occurrence, capture: FileCapture) -> tuple[Site, Located] | None:
    """Where a call whose stack holds no frame of the user's code is reported: the name of
    the class whose capture made it (an exported node can lose its frames, e.g. in a forward
    wrapped by `@torch.no_grad()`; a class whose forward is all library code has none). A
    verdict on the toolchain's graph is never dropped for want of a line."""
    if capture.outline is None or capture.source is None:
        return None
    qualname = next((c.get("qualname") for c in capture.classes if c.get("module") == occurrence.module), None)
    info = next((c for c in capture.outline.classes if c.qualname == qualname), None)
    if info is None:
        return None
    site: Site = {"file": capture.path, "line": info.line + 1, "col": -1}
    return site, Located(info.name_range, info.name)


def problems_for(target: Target, occurrence: Occurrence) -> list[Problem] | None:
    """What `target` says about one captured call; None when the call does not concern it
    (captured for another device, or without the tree view the target judges)."""
    if occurrence.devices and target.device not in occurrence.devices:
        return None
    tree = occurrence.trees.get(target.tree_view)
    if tree is None:
        return None
    problems = target.problems(tree, occurrence.phases)
    if occurrence.facts:
        problems = problems + target.facts_problems(occurrence.op, occurrence.facts)
    if occurrence.args:
        problems = problems + target.argument_problems(occurrence.op, occurrence.args, occurrence.phases)
    return problems


def _apply_ignores(found: list[Finding], sources: SourceCache) -> list[Finding]:
    kept = []
    for finding in found:
        file_outline = sources.outline(finding.abs_path) if finding.abs_path else None
        if file_outline is not None and _suppressed(finding, file_outline):
            continue
        kept.append(finding)
    return kept


def _add_unique(items: list[Any], new: Iterable[Any]) -> None:
    for item in new:
        if item not in items:
            items.append(item)


def _leaves(tree: CallTree) -> list[str]:
    """The overloads at the bottom of a call tree: what a backend runs kernels for."""
    calls = tree.get("calls")
    if not calls:
        return [tree["op"]] if tree.get("op") else []
    out: list[str] = []
    for child in calls:
        _add_unique(out, _leaves(child))
    return out


def _ignored(settings: Settings, target: str, name: str) -> bool:
    """The configuration's `ignore` names this op or code for the target (or for all)."""
    return name in settings.ignore.get(target, ()) or name in settings.ignore.get("*", ())


def _suppressed(finding: Finding, file_outline: FileOutline) -> bool:
    for line in {finding.range.start.line, finding.range.end.line}:
        names = file_outline.ignores.get(line)
        if names is None:
            continue
        if not names:
            return True
        if finding.code in names or (finding.ops and all(op in names for op in finding.ops)):
            return True
    return False
