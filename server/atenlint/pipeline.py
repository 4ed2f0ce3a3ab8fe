"""One file -> its findings: the single path `atenlint check`, the editor's open/save,
Check Workspace and notebooks all take.

`check_file(analyser, snapshot)` is pure over its inputs: an immutable `FileSnapshot`
(the file's text or "read it from disk", the other unsaved buffers it may import, the mode,
the settings) in, a `FileResult` out. It captures the file (in the worker, or statically),
falls back to the static pass when the worker timed out or crashed, judges every call for
every target, places each finding in the file it belongs to (a call in an imported file is
reported there, tagged with that file), adds the configuration's unknown-module-key
warnings, and merges duplicates. The CLI and the editor differ only in how they schedule
the calls and show the results: `check_paths` is the CLI's schedule.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Protocol

from . import findings as codes
from .answers import build_paths, capture_paths
from .captured import FAST_VIEW, CallSite, FileCapture, Occurrence, display_path
from .config import ConfigError, Settings, SettingsResolver
from .config_keys import unknown_module_keys
from .discover import excluded, iter_python_files
from .findings import FileError, Finding
from .notebook import is_notebook
from .notebook_check import NotebookContext, cell_problems, place_findings, read_notebook_module, sort_key
from .result_cache import CachedResult, ResultCache
from .run_report import AFTER_TIMEOUT, Report
from .source_cache import SourceCache
from .sourcetext import Position, Range
from .targets.base import Target
from .targets.registry_data import RegistryUnavailable

_FAILED_WORKER = (codes.TIMEOUT, codes.WORKER_CRASHED)


class Analyser(Protocol):
    """What the pipeline needs of the engine (engine.Engine): a capture and a judge."""

    resolver: SettingsResolver
    cwd: str
    log: Callable[[str], None]

    @property
    def torch_version(self) -> str: ...

    def start(self) -> object: ...

    def start_in_background(self) -> None: ...

    def capture(
        self,
        path: str,
        text: str | None = None,
        overlays: dict[str, str] | None = None,
        display: str | None = None,
        execute: bool = True,
        on_partial: Callable[[FileCapture], None] | None = None,
        settings: Settings | None = None,
    ) -> FileCapture: ...

    def findings(self, captures: Iterable[FileCapture], sources: SourceCache | None = None) -> list[Finding]: ...

    def call_sites(self, captures: Iterable[FileCapture], sources: SourceCache | None = None) -> list[CallSite]: ...

    def fast_targets(self, settings: Settings) -> list[Target]: ...

    def result_cache(self, execute: bool) -> ResultCache | None: ...


@dataclass(frozen=True)
class FileSnapshot:
    """Everything one check of one file reads, fixed when the check is scheduled."""

    path: str  # absolute
    # The editor's buffer; None: the file on disk (a notebook: its code cells, placed back in cells).
    text: str | None = None
    # Other unsaved buffers by absolute path: the texts of dependencies the import reads.
    overlays: tuple[tuple[str, str], ...] = ()
    execute: bool = True  # False: read the source only (--no-exec, an untrusted workspace)
    display: str | None = None  # how findings name the file (None: relative to the analyser's cwd)
    # Resolved settings; None: resolved when checked (an invalid configuration is then an ATL010).
    settings: Settings | None = None

    @staticmethod
    def of(
        path: str,
        text: str | None = None,
        overlays: dict[str, str] | None = None,
        execute: bool = True,
        display: str | None = None,
        resolver: SettingsResolver | None = None,
    ) -> FileSnapshot:
        """A snapshot with its settings resolved now (left to the check if they are invalid)."""
        absolute = os.path.abspath(path)
        settings = None
        if resolver is not None:
            try:
                settings = resolver.for_file(absolute)
            except ConfigError:
                settings = None
        return FileSnapshot(
            absolute,
            text,
            tuple(
                sorted((os.path.abspath(p), t) for p, t in (overlays or {}).items() if os.path.abspath(p) != absolute)
            ),
            execute,
            display,
            settings,
        )


@dataclass(frozen=True)
class FileResult:
    """What one check of one file found. `findings` are all of it, each with its `abs_path`:
    most in the file itself, some in the files it imports (a call the file's model makes in
    a helper module), one in a pyproject.toml (an unknown module key). The editor shows each
    where it is (`placed_in`); the CLI reports them all, merged across files."""

    path: str
    findings: tuple[Finding, ...]
    call_sites: tuple[CallSite, ...]  # in this file (hover)
    imported: tuple[str, ...]  # the user's other files the import read: a change there re-checks this one
    capture: FileCapture
    partial: bool = False  # only the fast (device) targets judged, the export ones are to come
    fast_targets: tuple[str, ...] = ()  # the targets a partial result judged
    seconds: float = 0.0
    dependencies: tuple[str, ...] = ()  # every file whose text the findings depend on
    # Classes (by module key) analysed inside this file's classes: another file's "cannot be
    # built alone" note about one of them says nothing new where both results are shown.
    covers: frozenset[str] = frozenset()

    def placed_in(self, path: str) -> list[Finding]:
        """The findings located in `path`."""
        absolute = os.path.abspath(path)
        return [f for f in self.findings if (f.abs_path or os.path.abspath(f.path)) == absolute]

    def places(self) -> list[str]:
        """Every file this result puts findings in, this one first."""
        out = {self.path: None}
        for finding in self.findings:
            out[finding.abs_path or os.path.abspath(finding.path)] = None
        return list(out)


def check_file(
    analyser: Analyser,
    snapshot: FileSnapshot,
    on_partial: Callable[[FileResult], None] | None = None,
    with_call_sites: bool = True,
) -> FileResult:
    """Check one file. `on_partial` (called on this thread, at most once, before this
    returns) gets the fast targets' result when the file's targets include slower export
    ones; the same import of the file serves both. `with_call_sites`: also the hover's
    per-call verdicts (the CLI does without).

    Where the analyser keeps results between runs (the editor: `Engine.persist_results`),
    a file whose stored check is provably still right (result_cache.py: the same file and
    dependencies, atenlint, interpreter and packages, settings and mode) is served from it
    without a capture, and every check that finished normally is stored."""
    cache = _cache_for(analyser, snapshot)
    display = snapshot.display or display_path(snapshot.path, analyser.cwd)
    if cache is not None and snapshot.settings is not None:
        hit = cache.lookup(snapshot.path, display, snapshot.settings)
        if hit is not None and (hit.call_sites is not None or not with_call_sites):
            analyser.log(f"{display}: unchanged since its last check, served from the result cache")
            return FileResult(
                snapshot.path,
                tuple(hit.findings),
                tuple(hit.call_sites or ()),
                tuple(hit.imported),
                FileCapture(snapshot.path, display, snapshot.settings, None, None),
                dependencies=tuple(hit.dependencies),
                covers=frozenset(hit.covers),
            )
    result = _check_file(analyser, snapshot, on_partial, with_call_sites)
    if cache is not None and _still_on_disk(cache, snapshot):
        store_result(cache, snapshot, display, result, analyser.torch_version, with_call_sites)
    return result


def store_result(
    cache: ResultCache,
    snapshot: FileSnapshot,
    display: str,
    result: FileResult,
    torch_version: str,
    with_call_sites: bool = False,
) -> None:
    """File `result` under `snapshot`'s key (the cache itself leaves out failed checks)."""
    cache.store(
        snapshot.path,
        display,
        snapshot.settings,
        result.capture,
        result.findings,
        result.dependencies,
        result.covers,
        torch_version,
        call_sites=result.call_sites if with_call_sites else None,
    )


def _cache_for(analyser: Analyser, snapshot: FileSnapshot) -> ResultCache | None:
    """The analyser's stored results for this snapshot's mode, when they can stand for its
    check: the text checked is the file on disk (what entries are keyed by) and no other
    unsaved buffer is imported. A notebook's cells are placed by the editor: not cached."""
    if snapshot.overlays or snapshot.settings is None or is_notebook(snapshot.path):
        return None
    cache = analyser.result_cache(snapshot.execute)
    if cache is None:
        return None
    cache.new_run()  # files may have changed since the last check: read them afresh
    if snapshot.text is not None and not cache.holds_text(snapshot.path, snapshot.text):
        return None
    return cache


def _still_on_disk(cache: ResultCache, snapshot: FileSnapshot) -> bool:
    """Whether the text just checked is still the file on disk (a save during the check
    must not file the old text's result under the new text's key)."""
    cache.new_run()
    return snapshot.text is None or cache.holds_text(snapshot.path, snapshot.text)


def _check_file(
    analyser: Analyser,
    snapshot: FileSnapshot,
    on_partial: Callable[[FileResult], None] | None,
    with_call_sites: bool,
) -> FileResult:
    started = time.perf_counter()
    path = snapshot.path
    display = snapshot.display or display_path(path, analyser.cwd)
    overlays = dict(snapshot.overlays)
    context: NotebookContext | None = None
    text = snapshot.text

    def judged(capture: FileCapture, partial: bool) -> FileResult:
        sources = SourceCache(dict(overlays, **({path: text} if text is not None else {})))
        found = analyser.findings([capture], sources)
        if not partial:
            found += unknown_module_keys([capture], lambda p: display_path(p, analyser.cwd))
        found = merge_findings([found])
        if context is not None:
            found = sorted(place_findings(found, context), key=sort_key)
        sites = [c for c in analyser.call_sites([capture], sources) if c.path == path] if with_call_sites else []
        fast = tuple(t.name for t in analyser.fast_targets(capture.settings)) if partial else ()
        return FileResult(
            path,
            tuple(found),
            tuple(sites),
            tuple(capture.imported),
            capture,
            partial,
            fast,
            time.perf_counter() - started,
            tuple(sorted({path, *capture.imported, *(f.abs_path for f in found if f.abs_path)})),
            frozenset(name for cls in capture.classes for name in cls.get("submodules", ())),
        )

    def early(capture: FileCapture) -> None:
        if on_partial is not None:
            on_partial(judged(capture, True))

    try:
        if text is None and is_notebook(path):
            read = _notebook_capture(analyser, snapshot, display)
            if isinstance(read, FileCapture):
                return judged(read, False)
            context, text = read, read.module.text
        capture = analyser.capture(
            path,
            text=text,
            overlays=overlays,
            display=display,
            execute=snapshot.execute,
            on_partial=early if on_partial is not None and context is None else None,
            settings=snapshot.settings,
        )
        if context is not None:
            capture.module_findings.extend(cell_problems(context.module, path, display))
        if snapshot.execute:
            _static_after_failure(analyser, capture, text, overlays)
    except RegistryUnavailable as error:
        return _registry_failure(snapshot, display, error, started)
    except Exception as error:  # noqa: BLE001 - atenlint's own failure on one file: a diagnostic, go on
        analyser.log(f"internal error analysing {path}: {type(error).__name__}: {error}")
        capture = FileCapture(path, display, snapshot.settings or Settings(), None, None)
        capture.module_findings.append(
            Finding(
                display,
                Range(Position(0, 0), Position(0, 0)),
                "warning",
                codes.INTERNAL_ERROR,
                f"atenlint failed while analysing this file ({type(error).__name__}: {str(error)[:200]}); "
                f"it was not checked. Please report it with the log",
                abs_path=path,
            )
        )
        context = None
    try:
        return judged(capture, False)
    except RegistryUnavailable as error:  # a file with no class to capture meets it only here
        return _registry_failure(snapshot, display, error, started)


def _registry_failure(snapshot: FileSnapshot, display: str, error: RegistryUnavailable, started: float) -> FileResult:
    """An exporter's support table could not be read (after a retry): atenlint's own failure,
    an error on the file (exit 3), never verdicts against an empty or guessed table. Nothing
    is judged, so the result is made here, without the judge that needs the table."""
    path = snapshot.path
    finding = Finding(
        display,
        Range(Position(0, 0), Position(0, 0)),
        "error",
        codes.INTERNAL_ERROR,
        f"atenlint could not read the support table for {error.target} ({error.cause[:200]}): nothing in "
        f"this file was judged. This is atenlint's own failure, not your code's; please report it with the log",
        abs_path=path,
    )
    capture = FileCapture(path, display, snapshot.settings or Settings(), None, None)
    return FileResult(path, (finding,), (), (), capture, seconds=time.perf_counter() - started, dependencies=(path,))


def _notebook_capture(analyser: Analyser, snapshot: FileSnapshot, display: str) -> NotebookContext | FileCapture:
    """A notebook on disk: its cells' module, or the capture that says why it is not analysed."""
    path = snapshot.path
    settings = snapshot.settings
    if settings is None:
        try:
            settings = analyser.resolver.for_file(path)
        except ConfigError:
            return analyser.capture(path, text="", display=display, execute=snapshot.execute)  # reports ATL010
    read = read_notebook_module(path, settings.max_file_bytes)
    if isinstance(read, NotebookContext):
        return read
    capture = FileCapture(path, display, settings, None, None)
    capture.module_findings.append(replace(read, path=display))
    return capture


def _static_after_failure(analyser: Analyser, capture: FileCapture, text: str | None, overlays: dict[str, str]) -> None:
    """The worker timed out or died on this file: read its classes from source instead,
    so the default mode still reports what `--no-exec` does."""
    failed = [f for f in capture.module_findings if f.code in _FAILED_WORKER]
    if not failed or capture.classes or capture.outline is None or not capture.outline.module_candidates:
        return
    try:
        static = analyser.capture(
            capture.path,
            text=text,
            overlays=overlays,
            display=capture.display,
            execute=False,
            settings=capture.settings,
        )
    except Exception as error:  # noqa: BLE001 - the worker failure stays the finding
        analyser.log(f"static fallback for {capture.path} failed: {type(error).__name__}: {error}")
        return
    if any(f.code in _FAILED_WORKER for f in static.module_findings):
        return
    capture.classes = [{**cls, "capture": "static"} for cls in static.classes]
    kept = capture.views is not None  # the dispatcher view answered before the limit (engine.py)
    if kept:
        # Its calls stay the device targets' (MPS, CUDA): only the other views come from source.
        capture.occurrences = capture.occurrences + _without_view(static.occurrences, FAST_VIEW)
        capture.views = None
    else:
        capture.occurrences = static.occurrences
    if capture.classes:
        # Which classes, by name: what the file's result rests on instead of their trace or
        # TorchScript graph (the summary and the JSON `classes` count them too).
        names = [f"`{cls.get('qualname')}`" for cls in capture.classes]
        shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
        which = (
            f"its module class {shown} was" if len(names) == 1 else f"its {len(names)} module classes ({shown}) were"
        )
        if kept:
            fast = ", ".join(t.name for t in analyser.fast_targets(capture.settings))
            how = (
                f"; {fast} judged the dispatcher view traced before the limit, and for the other targets "
                f"{which} analysed from source only"
            )
        else:
            how = f"; {which} analysed from source only"
        failed[0].message += how


def _without_view(occurrences: list[Occurrence], view: str) -> list[Occurrence]:
    """The occurrences with `view`'s tree left out (those with no other tree dropped)."""
    out = []
    for occurrence in occurrences:
        trees = {v: tree for v, tree in occurrence.trees.items() if v != view}
        if trees:
            out.append(replace(occurrence, trees=trees))
    return out


def merge_findings(groups: Iterable[Sequence[Finding]]) -> list[Finding]:
    """Findings of several results as one list: sorted by file, cell and position, and a
    diagnostic reached from several classes or files once (its ops and classes merged into
    the first in that order, so the most severe). What the CLI reports, and what the editor
    shows for a file from every result placed in it."""
    merged: dict[tuple[object, ...], Finding] = {}
    for finding in sorted((f for group in groups for f in group), key=sort_key):
        key = (*finding.identity(), _cell(finding))
        if key in merged:
            merged[key].merge(finding)
        else:
            # A copy: merging must not change the findings of the results it reads.
            merged[key] = replace(finding, ops=list(finding.ops), modules=list(finding.modules))
    return list(merged.values())


def merge_results(results: Iterable[FileResult]) -> list[Finding]:
    """The findings of several files' results as one list (`merge_findings`), without the
    "cannot be built alone" notes of classes another of the results analysed inside its own."""
    results = list(results)
    covered = frozenset().union(*(r.covers for r in results))
    return merge_findings(
        [f for f in r.findings if not (f.code == codes.CANNOT_BUILD and f.module in covered)] for r in results
    )


def findings_in(path: str, results: Iterable[FileResult]) -> list[Finding]:
    """What the editor shows on `path`: the merged findings of every result placed there
    (its own check's and those of the files whose models reach into it)."""
    absolute = os.path.abspath(path)
    return [f for f in merge_results(results) if (f.abs_path or os.path.abspath(f.path)) == absolute]


def _cell(finding: Finding) -> int | None:
    notebook = finding.data.get("notebook")
    return notebook["cell"] if notebook is not None else None


def check_paths(
    analyser: Analyser, paths: list[str], jobs: int = 1, execute: bool = True, cache: ResultCache | None = None
) -> Report:
    """`atenlint check PATH...`: every Python file and notebook under `paths`, each through
    `check_file`, merged into one report. With a `cache` (`--incremental`), a file whose
    stored check is provably still right is not checked again (result_cache.py), and when
    every file is, the workers are never started."""
    started = time.perf_counter()
    if cache is None:
        analyser.start_in_background()  # the workers start while the files are found
    else:
        cache.new_run()
    files, missing = iter_python_files(paths, notebooks=True)
    errors = [FileError(path, message) for path, message in missing]
    files = [f for f in files if not _excluded(analyser.resolver, f)]
    snapshots = [
        FileSnapshot.of(path, execute=execute, display=os.path.normpath(path), resolver=analyser.resolver)
        for path in files
    ]
    stored: dict[int, _Checked] = {}
    if cache is not None:
        for index, snapshot in enumerate(snapshots):
            hit = cache.lookup(snapshot.path, snapshot.display or snapshot.path, snapshot.settings)
            if hit is not None:
                stored[index] = _Checked.of_cached(hit, snapshot)
    # Largest files first: a big file picked up last would leave the other core idle at the
    # end. Results are placed back by index, so the output order does not change.
    to_check = sorted((i for i in range(len(snapshots)) if i not in stored), key=lambda i: -_size(snapshots[i].path))
    if to_check or not snapshots:
        analyser.start()  # a worker that cannot start fails the run here, not on each file

    def run(index: int) -> _Checked:
        snapshot = snapshots[index]
        result = check_file(analyser, snapshot, with_call_sites=False)
        if cache is not None:
            store_result(cache, snapshot, snapshot.display or snapshot.path, result, analyser.torch_version)
        return _Checked.of_result(result)

    if len(to_check) > 1:
        # One thread more than workers: while every worker captures a file, the next file is
        # read, parsed and its request built, and the last answer judged, so no worker waits
        # for this process between files. Each file is analysed on its own (in a forked child,
        # or by a worker whose state is reset after it): the order the workers take the files
        # in changes no finding, as with several workers.
        with ThreadPoolExecutor(max_workers=jobs + 1) as executor:
            checked = dict(zip(to_check, executor.map(run, to_check)))
    else:
        checked = {i: run(i) for i in to_check}
    done = [stored.get(i) or checked[i] for i in range(len(snapshots))]
    by_capture = capture_paths([])  # every path named, with 0 where no class took it
    built: dict[str, int] = {}
    for one in done:
        for counts, total in ((one.by_capture, by_capture), (one.built, built)):
            for key, count in counts.items():
                total[key] = total.get(key, 0) + count
    torch_version = analyser.torch_version if to_check or not stored else next(iter(stored.values())).torch_version
    return Report(
        torch_version,
        list(dict.fromkeys(name for one in done for name in one.targets)),
        merge_results(one.result for one in done),
        errors,
        files=len(files),
        classes=sum(one.classes for one in done),
        seconds=time.perf_counter() - started,
        by_capture=by_capture,
        built=built,
    )


@dataclass(frozen=True)
class _Checked:
    """One file's part of a run's report: its result and its class counts, from a check
    now or from the incremental cache."""

    result: FileResult
    classes: int
    by_capture: dict[str, int]
    built: dict[str, int]
    targets: tuple[str, ...]
    torch_version: str = ""

    @staticmethod
    def of_result(result: FileResult) -> _Checked:
        capture = result.capture
        by_capture = capture_paths([capture])
        if capture.classes and any(f.code == codes.TIMEOUT for f in capture.module_findings):
            # Not a capture path: of the "static" ones, those read from source because the
            # file ran out of time (output.py says so in the summary and the JSON).
            by_capture[AFTER_TIMEOUT] = sum(1 for cls in capture.classes if cls.get("capture") == "static")
        return _Checked(
            result,
            len(capture.classes),
            by_capture,
            build_paths([capture]),
            tuple(capture.settings.targets),
        )

    @staticmethod
    def of_cached(hit: CachedResult, snapshot: FileSnapshot) -> _Checked:
        settings = snapshot.settings or Settings()
        result = FileResult(
            snapshot.path,
            tuple(hit.findings),
            (),
            tuple(hit.imported),
            FileCapture(snapshot.path, snapshot.display or snapshot.path, settings, None, None),
            dependencies=tuple(hit.dependencies),
            covers=frozenset(hit.covers),
        )
        return _Checked(result, hit.classes, hit.by_capture, hit.built, tuple(hit.targets), hit.torch_version)


def _excluded(resolver: SettingsResolver, path: str) -> bool:
    try:
        patterns = resolver.for_file(path).exclude
    except ConfigError:
        return False
    return bool(patterns) and excluded(os.path.abspath(path), patterns)


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0
