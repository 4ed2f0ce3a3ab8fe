"""The analysis core shared by the CLI, the language server and the tests.

files -> (worker) captured calls with their source sites -> user expressions -> target
problems -> findings. Nothing here imports torch, pygls or user code: user code runs in
the workers, and this module only reads what they answer.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, cast

from . import findings as codes
from . import notebook
from .config import ConfigError, Settings, SettingsResolver
from .discover import FileOutline, NotRegularFile, import_location, iter_python_files, outline, read_regular_file
from .finding_data import RelatedPlace
from .findings import FileError, Finding
from .fixes import attach_fixes
from .locate import ExpressionLocator, Located
from .python_parse import parse_module
from .script_typing import only_int_for_float
from .sourcetext import DecodeError, Position, Range, SourceText, decode_source
from .targets import build_targets
from .targets.base import Problem, Target
from .targets.native_table import NativeTable
from .targets.site_verdict import SiteVerdict, VerdictAggregate
from .worker.pool import RequestError, WorkerFailure, WorkerPool
from .worker.protocol import CallTree, ClassAnswer, FileAnswer, Hello, ProtocolError, Site, check_file_answer
from .worker.refusals import refusal_findings

# The view device targets judge, which the worker captures first (and can answer early).
FAST_VIEW = "dispatch"


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


@dataclass
class Report:
    torch_version: str
    targets: list[str]
    findings: list[Finding]
    errors: list[FileError]
    files: int = 0
    classes: int = 0
    seconds: float = 0.0
    # Module classes by capture path: {"trace", "script", "static", "none"} -> count.
    by_capture: dict[str, int] = field(default_factory=dict)
    built: dict[str, int] = field(default_factory=dict)  # build path -> count (meta, CPU-made tensors moved, CPU)

    @property
    def not_executed(self) -> int:
        """Classes the default mode could not build, trace or script (static or nothing)."""
        return self.by_capture.get("static", 0) + self.by_capture.get("none", 0)

    def counts(self) -> dict[str, int]:
        out = {"error": 0, "warning": 0, "information": 0, "hint": 0}
        for finding in self.findings:
            out[finding.severity] = out.get(finding.severity, 0) + 1
        return out


class SourceCache:
    """Texts of files the findings point into (editor buffers first, then disk)."""

    def __init__(self, overlays: dict[str, str] | None = None):
        self.overlays = {os.path.abspath(p): t for p, t in (overlays or {}).items()}
        self._texts: dict[str, SourceText | None] = {}
        self._locators: dict[str, ExpressionLocator] = {}
        self._outlines: dict[str, FileOutline] = {}
        self._lock = threading.Lock()

    def put(self, path: str, source: SourceText) -> None:
        with self._lock:
            self._texts[os.path.abspath(path)] = source

    def get(self, path: str) -> SourceText | None:
        path = os.path.abspath(path)
        with self._lock:
            if path in self._texts:
                return self._texts[path]
        if path in self.overlays:
            source = SourceText(self.overlays[path], path)
        else:
            try:
                with open(path, "rb") as handle:
                    source = SourceText(decode_source(handle.read()), path)
            except (OSError, DecodeError):
                source = None
        with self._lock:
            self._texts[path] = source
        return source

    def locator(self, path: str) -> ExpressionLocator | None:
        path = os.path.abspath(path)
        if path not in self._locators:
            source = self.get(path)
            if source is None:
                return None
            self._locators[path] = ExpressionLocator(source)
        return self._locators[path]

    def outline(self, path: str) -> FileOutline | None:
        path = os.path.abspath(path)
        if path not in self._outlines:
            source = self.get(path)
            if source is None:
                return None
            self._outlines[path] = outline(source)
        return self._outlines[path]


def display_path(path: str, cwd: str) -> str:
    absolute = os.path.abspath(path)
    if absolute.startswith(cwd.rstrip(os.sep) + os.sep):
        return os.path.relpath(absolute, cwd)
    return absolute


class Engine:
    def __init__(
        self,
        pool: WorkerPool,
        resolver: SettingsResolver | None = None,
        log: Callable[[str], None] = lambda message: None,
        cwd: str | None = None,
    ):
        self.pool = pool
        self.resolver = resolver or SettingsResolver()
        self.log = log
        self.cwd = cwd or os.getcwd()
        self.hello: dict[str, Any] = {}
        self.native: NativeTable | None = None
        self._targets: dict[tuple[Any, ...], list[Target]] = {}
        self._start_lock = threading.Lock()
        self._background_start: threading.Thread | None = None
        self._background_failure: Exception | None = None

    # -- setup -----------------------------------------------------------
    def start_in_background(self) -> None:
        """Begin `start()` on a thread, so what the caller does meanwhile (finding the
        files, reading their configuration) overlaps the workers' torch import; the next
        `start()` waits for it and raises what it raised."""
        with self._start_lock:
            if self.native is not None or self._background_start is not None:
                return

            def run() -> None:
                try:
                    self.start()
                except Exception as error:  # noqa: BLE001 - handed to the next start()
                    self._background_failure = error

            self._background_start = threading.Thread(target=run, daemon=True, name="atenlint-start")
            self._background_start.start()

    def start(self) -> dict[str, Any]:
        """Warm the workers and load the support tables for the worker's torch."""
        background = self._background_start
        if background is not None and background is not threading.current_thread():
            background.join()
            self._background_start = None
            failure, self._background_failure = self._background_failure, None
            if failure is not None:
                raise failure
        with self._start_lock:
            if self.native is None:
                started = time.perf_counter()
                self.hello = self.pool.warm()
                self.native = NativeTable.load(self.hello["native_yaml"], self.hello["torch"])
                self.log(f"torch {self.hello['torch_full']} tables ready in {time.perf_counter() - started:.1f}s")
        return self.hello

    @property
    def torch_version(self) -> str:
        return str(self.hello.get("torch", "?"))

    @property
    def torch_degradations(self) -> list[str]:
        """What this torch cannot give the analysis (torchcompat's probe at worker start,
        before any user code: the same on every start), each in words for the user."""
        return [str(lost.get("message", "")) for lost in self.hello.get("torch_degraded", []) if lost.get("message")]

    def targets_for(self, settings: Settings) -> list[Target]:
        key = (
            settings.targets,
            settings.mps_fallback,
            getattr(settings, "onnx_exporter", None),
            getattr(settings, "coreml_frontend", "torchscript"),
        )
        if key not in self._targets:
            self.start()
            if self.native is None:
                raise RuntimeError("the support tables are not loaded")
            self._targets[key] = build_targets(settings, self.native, cast(Hello, self.hello), self.pool, self.log)
        return self._targets[key]

    # -- capture ---------------------------------------------------------
    def capture_static(self, path: str, text: str | None = None, display: str | None = None) -> FileCapture:
        """Like `capture`, but the file is only read, never imported: `--no-exec` and the
        editor's Restricted Mode."""
        return self.capture(path, text=text, display=display, execute=False)

    def judging_targets(self, capture: FileCapture) -> list[Target]:
        """The targets that judge a capture: all, or for a partial one those of its views."""
        targets = self.targets_for(capture.settings)
        if capture.views is None:
            return targets
        return [t for t in targets if t.tree_view in capture.views]

    def fast_targets(self, settings: Settings) -> list[Target]:
        """The targets judged on the dispatcher view, which the worker captures first: their
        verdicts need not wait for the export toolchains' graphs."""
        return [t for t in self.targets_for(settings) if t.tree_view == FAST_VIEW]

    def capture(
        self,
        path: str,
        text: str | None = None,
        overlays: dict[str, str] | None = None,
        display: str | None = None,
        execute: bool = True,
        on_partial: Callable[[FileCapture], None] | None = None,
    ) -> FileCapture:
        """Everything about one file short of target verdicts. `text` is the editor's
        buffer (None: read the file); `overlays` are other unsaved buffers by path;
        `execute=False` reads the source without importing it (static capture).
        `on_partial` (called on this thread, at most once, before this returns) gets the
        capture of the dispatcher view alone, judged only by the fast targets, when the
        file's targets include slower export ones; the same import serves both."""
        started = time.perf_counter()
        path = os.path.abspath(path)
        display = display or display_path(path, self.cwd)
        try:
            settings = self.resolver.for_file(path)
        except ConfigError as error:
            result = FileCapture(path, display, Settings(), None, None)
            result.module_findings.append(self._file_finding(result, codes.CONFIG_ERROR, "error", str(error)))
            return result
        result = FileCapture(path, display, settings, None, None)
        try:
            source = self._read(path, text, settings)
        except _Unreadable as problem:
            result.module_findings.append(problem.finding(result, self))
            return result
        result.source = source
        tree = source.tree
        if tree is None:
            result.module_findings.append(self._syntax_finding(result, source))
            return result
        result.outline = file_outline = outline(source)
        for line0, message in file_outline.directive_errors:
            result.module_findings.append(
                Finding(display, source.line_range(line0), "warning", codes.BAD_DIRECTIVE, message, abs_path=path)
            )
        if file_outline.skip_file or not file_outline.module_candidates:
            result.seconds = time.perf_counter() - started
            return result
        self.start()
        module_name, roots = (
            notebook.module_location(path, settings.project_root)
            if notebook.is_notebook(path)
            else import_location(path, settings.project_root)
        )
        classes, skip = self._class_requests(file_outline, module_name, settings, path)
        if not classes:
            result.seconds = time.perf_counter() - started
            return result
        request = {
            "path": path,
            "module": module_name,
            "roots": roots,
            "skip": skip,
            "devices": sorted({t.device for t in self.targets_for(settings)}),
            "views": sorted({t.tree_view for t in self.targets_for(settings)}),
            "overlays": dict(overlays or {}),
            "classes": classes,
        }
        graph_options = _graph_options(self.targets_for(settings))
        if graph_options:
            request["graph_options"] = graph_options
        if text is not None:
            cast("dict[str, str]", request["overlays"])[path] = source.text
        if not execute:
            request = {
                "path": path,
                "module": module_name,
                "text": source.text,
                "classes": list(classes),
                "skip": skip,
                "devices": request["devices"],
                "views": request["views"],
                "roots": roots,
            }
        early = None
        if on_partial is not None and execute and not notebook.is_notebook(path):
            early = self._partial_handler(result, module_name, file_outline, on_partial, started)
        try:
            if execute and notebook.is_notebook(path):  # no .py file to import: the worker imports a copy
                answer = notebook.request_importing_copy(self.pool, "analyse", request, settings.timeout)
            elif early is not None:
                answer = self.pool.request("analyse", request, settings.timeout, on_partial=early)
            else:
                answer = self.pool.request("analyse" if execute else "static", request, settings.timeout)
            checked = check_file_answer(answer)
        except ProtocolError as error:
            self.log(f"malformed answer analysing {path}: {error}")
            result.module_findings.append(
                self._file_finding(
                    result,
                    codes.INTERNAL_ERROR,
                    "warning",
                    f"atenlint failed while analysing this file (the worker's answer is malformed: {error}); "
                    f"please report it with the log",
                )
            )
            result.seconds = time.perf_counter() - started
            return result
        except WorkerFailure as failure:
            result.module_findings.append(self._worker_finding(result, failure, module_name))
            result.seconds = time.perf_counter() - started
            return result
        except RequestError as error:
            self.log(f"internal error analysing {path}: {error.error.get('trace', error)}")
            result.module_findings.append(
                self._file_finding(
                    result,
                    codes.INTERNAL_ERROR,
                    "warning",
                    f"atenlint failed while analysing this file ({error.error.get('type')}: {error}); "
                    f"please report it with the log",
                )
            )
            result.seconds = time.perf_counter() - started
            return result
        result.worker_seconds = checked.get("seconds", 0.0)
        result.imported = [p for p in checked.get("imported", []) if os.path.abspath(p) != path]
        self._read_answer(result, checked, module_name, file_outline)
        result.seconds = time.perf_counter() - started
        return result

    def _partial_handler(
        self,
        result: FileCapture,
        module_name: str,
        file_outline: FileOutline,
        on_partial: Callable[[FileCapture], None],
        started: float,
    ) -> Callable[[FileAnswer], None] | None:
        """What turns the worker's dispatcher-view answer into a partial capture, or None
        when there is nothing to gain (no fast target, or no slower one to wait for)."""
        targets = self.targets_for(result.settings)
        fast = [t for t in targets if t.tree_view == FAST_VIEW]
        if not fast or len(fast) == len(targets):
            return None
        findings_before = list(result.module_findings)

        def handle(answer: FileAnswer) -> None:
            early = FileCapture(
                result.path,
                result.display,
                result.settings,
                result.source,
                result.outline,
                module_findings=list(findings_before),
                views=frozenset({FAST_VIEW}),
            )
            early.worker_seconds = answer.get("seconds", 0.0)
            early.imported = [p for p in answer.get("imported", []) if os.path.abspath(p) != result.path]
            self._read_answer(early, answer, module_name, file_outline)
            early.seconds = time.perf_counter() - started
            on_partial(early)

        return handle

    @staticmethod
    def _class_requests(
        file_outline: FileOutline, module_name: str, settings: Settings, path: str | None = None
    ) -> tuple[dict[str, dict[str, Any]], list[str]]:
        """Per candidate class, its factory (pyproject.toml, then the in-source comment wins);
        and the classes the user asked to skip. A class's key is the name the user imports
        it by: `ldm.models.diffusion.ddpm.DDPM` in a namespace package as well as `ddpm.DDPM`."""
        classes: dict[str, dict[str, Any]] = {}
        skip: list[str] = []
        names = import_names(path, module_name, settings.project_root) if path else [module_name]
        base_dir = os.path.dirname(settings.config_path) if settings.config_path else settings.project_root
        for info in file_outline.classes:
            config = next(
                (
                    settings.modules[f"{name}.{info.qualname}"]
                    for name in names
                    if f"{name}.{info.qualname}" in settings.modules
                ),
                None,
            )
            if info.directives.get("skip") or (config is not None and config.skip):
                skip.append(info.qualname)
                continue
            if not info.might_be_module():
                continue
            entry: dict[str, Any] = {"key": f"{names[0]}.{info.qualname}"}
            if config is not None:
                entry.update(
                    {
                        "init": config.init,
                        "inputs": config.inputs,
                        "kwargs": config.kwargs,
                        "options": dict(config.options),
                    }
                )
            entry.update({k: info.directives[k] for k in ("init", "inputs", "kwargs") if k in info.directives})
            if settings.factories:
                entry["factories"] = settings.factories
            if base_dir:
                entry["base_dir"] = base_dir
            classes[info.qualname] = {k: v for k, v in entry.items() if v is not None}
        return classes, skip

    def _read(self, path: str, text: str | None, settings: Settings) -> SourceText:
        if text is not None:
            # An editor's buffer obeys max-file-size like a file on disk does.
            size = len(text) if len(text) * 4 <= settings.max_file_bytes else len(text.encode("utf-8", "replace"))
            if size > settings.max_file_bytes:
                raise _Unreadable(
                    codes.TOO_LARGE,
                    "information",
                    f"this file is {size / 1e6:.1f} MB, over max-file-size "
                    f"({settings.max_file_bytes / 1e6:.1f} MB): not analysed",
                )
            return SourceText(text, path)
        try:
            # Regular files only, size checked before reading: a FIFO, /dev/zero or a file
            # growing without end is never read (read_regular_file opens non-blocking).
            data = read_regular_file(path, settings.max_file_bytes)
        except NotRegularFile as problem:
            if problem.too_large:
                raise _Unreadable(
                    codes.TOO_LARGE,
                    "information",
                    f"this file is {problem.size / 1e6:.1f} MB, over max-file-size "
                    f"({settings.max_file_bytes / 1e6:.1f} MB): not analysed",
                ) from None
            raise _Unreadable(codes.UNDECODABLE, "information", f"not analysed: {problem.message}") from None
        except OSError as error:
            raise _Unreadable(
                codes.UNDECODABLE, "warning", f"cannot read this file: {error.strerror or error}"
            ) from None
        try:
            return SourceText(decode_source(data), path)
        except DecodeError as error:
            lines = data.split(b"\n")
            width = (
                len(lines[error.line].decode("utf-8", errors="replace").rstrip("\r")) if error.line < len(lines) else 0
            )
            raise _Unreadable(
                codes.UNDECODABLE, "warning", f"cannot analyse this file: {error.message}", error.line, width
            ) from None

    def _syntax_finding(self, result: FileCapture, source: SourceText) -> Finding:
        try:
            parse_module(source.text, filename=result.path)
            message, line0, col = "Python cannot parse this file", 0, 0
        except SyntaxError as error:
            line0 = max((error.lineno or 1) - 1, 0)
            col = max((error.offset or 1) - 1, 0)
            message = f"Python cannot parse this file: {error.msg} (line {line0 + 1}); its modules are not analysed"
        except ValueError as error:  # null bytes
            message, line0, col = f"Python cannot parse this file: {error}", 0, 0
        except (RecursionError, MemoryError):  # nested deeper than the parser goes
            message, line0, col = (
                (
                    "Python cannot parse this file: an expression is nested too deeply for "
                    "Python's parser; its modules are not analysed"
                ),
                0,
                0,
            )
        width = len(source.line_text(line0))
        col = min(col, max(width - 1, 0))  # Python points one past the end for "expected ..."
        start = Position(line0, source.utf16_from_char(line0, col))
        end = Position(line0, source.utf16_from_char(line0, max(width, col + 1) if width else 0))
        return Finding(result.display, Range(start, end), "error", codes.SYNTAX_ERROR, message, abs_path=result.path)

    def _export_failure_findings(self, result: FileCapture, cls: ClassAnswer, name_range: Range) -> list[Finding]:
        """EXPORT001, once per export-based target: torch.export itself failed on the class's
        own code (a guard on a data-dependent value), which the real toolchain does too —
        torch.export always traces on fake tensors (capture/graphs.py `_export_itself_fails`).
        A failure that may be a gap of atenlint's own stays the ATL020 note."""
        failures = [e for e in cls.get("graph_errors", []) if e.get("toolchain_fails") and e.get("site")]
        if not failures or result.source is None:
            return []
        failure = failures[0]
        site = cast(Site, failure["site"])
        here = os.path.abspath(site["file"]) == result.path
        where = "" if here else f" (at {os.path.basename(site['file'])}:{site['line']})"
        rng = result.source.line_range(site["line"] - 1) if here else name_range
        message = failure.get("message", "")
        found = []
        for target in self.targets_for(result.settings):
            if target.tree_view not in _TORCH_EXPORT_VIEWS:
                continue
            found.append(
                Finding(
                    result.display,
                    rng,
                    "error",
                    codes.EXPORT_FAILS,
                    f"torch.export fails here{where}, so {target.name} cannot export `{cls['name']}`: a branch or "
                    f"size depends on tensor values ({message}); use torch.cond or torch._check",
                    target=target.name,
                    module=cls["module"],
                    abs_path=result.path,
                    capture="trace",
                    data={"class": cls["name"], "key": cls["module"]},
                )
            )
        return found

    def _file_finding(self, result: FileCapture, code: str, severity: str, message: str, line0: int = 0) -> Finding:
        source = result.source
        rng = source.line_range(line0) if source is not None else Range(Position(line0, 0), Position(line0, 0))
        return Finding(result.display, rng, severity, code, message, abs_path=result.path)

    def _worker_finding(self, result: FileCapture, failure: WorkerFailure, module_name: str) -> Finding:
        if failure.kind == "timeout":
            message = (
                f"importing and analysing `{module_name}` took longer than {result.settings.timeout:g} s "
                f"(an endless loop at import or in a constructor?); the worker was restarted. If the "
                f"file is only slow, raise `timeout` in [tool.atenlint]"
            )
            code = codes.TIMEOUT
        elif failure.kind == "memory":
            message = (
                f"analysing `{module_name}` used too much memory ({failure.message}); the worker was "
                f"restarted. Does importing the file or building a class allocate real tensors?"
            )
            code = codes.WORKER_CRASHED
        else:
            tail = failure.stderr_tail.strip().splitlines()[-1:] if failure.stderr_tail.strip() else []
            message = (
                f"{failure.message} while importing or analysing `{module_name}` (os._exit, a C++ abort or "
                f"a crash in code it runs?); the worker was restarted"
                + (f". Last output: {tail[0][:200]}" if tail else "")
            )
            code = codes.WORKER_CRASHED
        self.log(f"{result.path}: {failure.kind}: {failure.message}\n{failure.stderr_tail}")
        return self._file_finding(result, code, "warning", message)

    def _read_answer(
        self, result: FileCapture, answer: FileAnswer, module_name: str, file_outline: FileOutline
    ) -> None:
        result.module_findings.extend(refusal_findings(result, dict(answer)))  # ATL012: what the sandbox refused
        for lost in answer.get("torch_degraded", []):  # torchcompat: a capability this torch lacks
            self.log(f"{result.path}: {lost.get('message', '')}")

        if "import_error" in answer and not answer["import_error"].get("refused"):  # a refusal says it already
            result.module_findings.append(_import_finding(result, answer, module_name, self.cwd))
        by_qualname = {c.qualname: c for c in file_outline.classes}
        result.classes = answer.get("classes", [])
        reported_failures = _script_failures_to_report(result.classes, file_outline)
        not_built = [cls for cls in result.classes if cls["status"] == "build_failed"]
        if not_built:
            # One note per file, not one per class: what a factory would add for all of them.
            result.module_findings.append(_not_built_finding(result, not_built, by_qualname, module_name))
        for cls in result.classes:
            info = by_qualname.get(cls["qualname"])
            name_range = info.name_range if info else Range(Position(0, 0), Position(0, 0))
            if cls["status"] == "build_failed" and cls.get("capture") != "static":
                continue
            if cls.get("trace_error"):
                error = cls["trace_error"]
                error_site = error.get("site")
                where = f" (line {error_site['line']})" if error_site else ""
                # A gap of fake tensors (an op whose output shape depends on the data) is not
                # the user's mistake: a note; a forward that raises on these inputs is.
                gap = _FAKE_TENSOR_GAP.search(error.get("message", "")) is not None
                result.module_findings.append(
                    Finding(
                        result.display,
                        name_range,
                        "information" if gap else "warning",
                        codes.TRACE_FAILED,
                        f"`{cls['name']}` could not be traced with its example inputs{where}: {error['message']}; "
                        f"it was analysed without them"
                        + (" (fake tensors cannot compute this op's output shape without data)" if gap else ""),
                        module=cls["module"],
                        abs_path=result.path,
                        data={"class": cls["name"], "key": cls["module"]},
                    )
                )
            if cls.get("graph_errors"):
                export_errors = self._export_failure_findings(result, cls, name_range)
                # The error says it all when torch.export itself was the only front end that failed.
                if not export_errors or not all(e.get("toolchain_fails") for e in cls["graph_errors"]):
                    result.module_findings.append(
                        Finding(
                            result.display,
                            name_range,
                            "information",
                            codes.PARTIAL_CAPTURE,
                            _graph_errors_message(cls),
                            module=cls["module"],
                            abs_path=result.path,
                            data={"class": cls["name"], "key": cls["module"], "graph_errors": cls["graph_errors"]},
                        )
                    )
                result.module_findings.extend(export_errors)
            if (
                cls["status"] == "script_failed"
                and cls["qualname"] in reported_failures
                and not _source_read_just_as_well(cls)
            ):
                result.module_findings.append(
                    Finding(
                        result.display,
                        name_range,
                        "information",
                        codes.SCRIPT_FAILED,
                        _script_message(cls, result.path),
                        module=cls["module"],
                        abs_path=result.path,
                        data={
                            "script_error": cls["script_error"],
                            "class": cls["name"],
                            "key": cls["module"],
                            "class_line": info.line if info else 0,
                        },
                    )
                )
            capture = cls.get("capture") or ("static" if cls["status"] == "static" else "script")
            for raw in cls["ops"]:
                result.occurrences.append(
                    Occurrence(
                        cls["module"],
                        raw["op"],
                        raw["trees"],
                        tuple(raw["phases"]),
                        raw["sites"],
                        capture,
                        raw.get("args", {}),
                        bool(raw.get("conditional")),
                        tuple(raw.get("devices", ())),
                        raw.get("facts") or {},
                    )
                )

    # -- verdicts --------------------------------------------------------
    def findings(self, captures: Iterable[FileCapture], sources: SourceCache | None = None) -> list[Finding]:
        """Judge every captured call for every target, one finding per user call site and target."""
        sources = sources or SourceCache()
        captures = list(captures)
        displays = {c.path: c.display for c in captures}
        out: list[Finding] = []
        sites: dict[tuple[str, Range, str], dict[str, Any]] = {}
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
                where = locate_occurrence(occurrence, sources)
                if where is None:
                    continue
                site, located = where
                for target in targets:
                    problems = problems_for(target, occurrence)
                    if not problems:
                        continue
                    key = (os.path.abspath(site["file"]), located.range, target.name)
                    group = sites.setdefault(
                        key,
                        {
                            "aggregate": VerdictAggregate(target),
                            "occurrence": occurrence,
                            "located": located,
                            "target": target,
                            "settings": capture.settings,
                            "reached": [],
                            "library": [],
                            "modules": [],
                        },
                    )
                    if occurrence.module and occurrence.module not in group["modules"]:
                        group["modules"].append(occurrence.module)
                    group["aggregate"].add(problems, occurrence.conditional)
                    if occurrence.op not in group["reached"]:
                        group["reached"].append(occurrence.op)
                    library = occurrence.library_site()
                    if library and library not in group["library"]:
                        group["library"].append(library)
        for (path, rng, _), group in sites.items():
            finding = self._site_finding(path, rng, group, sources, displays.get(path))
            if finding is not None:
                out.append(finding)
        # Each finding gets the catalog's fixes for its call (rewrites, remedies) as plain edits.
        return attach_fixes(self._apply_ignores(out, sources), sources, self.resolver, self.log)

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
            info = by_qualname.get(cls.get("qualname"))
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
        self, path: str, rng: Range, group: dict[str, Any], sources: SourceCache, display: str | None
    ) -> Finding | None:
        settings: Settings = group["settings"]
        target = group["target"]
        aggregate: VerdictAggregate = group["aggregate"]
        problems, conditional = aggregate.chosen(lambda problem: not _ignored(settings, target.name, problem.op))
        if not problems:
            return None
        verdict = target.verdict(problems)
        if _ignored(settings, target.name, verdict.code):
            return None
        severity = settings.severity.get(target.name, verdict.severity)
        message = f"`{group['located'].call}` {verdict.message}"
        if conditional:
            # The library picks this path at run time (by rank, device or values), which a
            # script capture cannot see: say so, without crying wolf.
            severity = "information" if severity in ("error", "warning") else severity
            message = (
                f"{message} — but only on a path the library chooses at run time (by the input's rank, "
                f"device or values), so this may not happen; give example inputs to know"
            )
        if severity == "off":
            return None
        call = group["located"].call
        related: list[RelatedPlace] = []
        for library in group["library"][:3]:
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
        occurrence: Occurrence = group["occurrence"]
        return Finding(
            display or display_path(path, self.cwd),
            rng,
            severity,
            verdict.code,
            message,
            target=target.name,
            ops=[p.op for p in problems],
            call=call,
            module=occurrence.module,
            capture=occurrence.capture,
            related=related,
            abs_path=path,
            modules=list(group.get("modules", ())),
            data={
                "reached": group["reached"],
                "kinds": {p.op: p.kind for p in problems},
                "args": occurrence.args,
                "torch": self.torch_version,
                "conditional": conditional,
                **({"arg_shapes": occurrence.facts["arg_shapes"]} if occurrence.facts.get("arg_shapes") else {}),
                **({"required_opset": verdict.required_opset} if verdict.required_opset is not None else {}),
            },
        )

    def _apply_ignores(self, found: list[Finding], sources: SourceCache) -> list[Finding]:
        kept = []
        for finding in found:
            file_outline = sources.outline(finding.abs_path) if finding.abs_path else None
            if file_outline is not None and _suppressed(finding, file_outline):
                continue
            kept.append(finding)
        return kept

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

    # -- whole runs ------------------------------------------------------
    def check_paths(
        self,
        paths: list[str],
        jobs: int = 1,
        on_file: Callable[[FileCapture], None] | None = None,
        execute: bool = True,
    ) -> Report:
        started = time.perf_counter()
        self.start_in_background()  # the workers start while the files are found
        files, missing = iter_python_files(paths, notebooks=True)
        errors = [FileError(path, message) for path, message in missing]
        files = [f for f in files if not self._excluded(f)]
        sources = SourceCache()

        self.start()  # a worker that cannot start fails the run here, not on each file
        notebooks: dict[str, Any] = {}  # notebook path -> its cells' module, to report findings in cells

        def run(path: str) -> FileCapture:
            try:
                if notebook.is_notebook(path):
                    from .notebook_check import capture_notebook

                    capture = capture_notebook(self, path, os.path.normpath(path), execute, notebooks)
                else:
                    capture = self.capture(path, display=os.path.normpath(path), execute=execute)
                    if execute:
                        _static_after_failure(self, capture)
            except Exception as error:  # noqa: BLE001 - atenlint's own failure on one file: a diagnostic, go on
                self.log(f"internal error analysing {path}: {type(error).__name__}: {error}")
                capture = FileCapture(os.path.abspath(path), os.path.normpath(path), Settings(), None, None)
                capture.module_findings.append(
                    self._file_finding(
                        capture,
                        codes.INTERNAL_ERROR,
                        "warning",
                        f"atenlint failed while analysing this file ({type(error).__name__}: {str(error)[:200]}); "
                        f"it was not checked. Please report it with the log",
                    )
                )
            if on_file is not None:
                on_file(capture)
            return capture

        if jobs > 1 and len(files) > 1:
            with ThreadPoolExecutor(max_workers=jobs) as executor:
                captures = list(executor.map(run, files))
        else:
            captures = [run(f) for f in files]
        result = sorted(self.findings(captures, sources), key=Finding.sort_key)
        result = _dedupe(result)
        from .config_keys import unknown_module_keys

        result.extend(unknown_module_keys(captures, lambda path: display_path(path, self.cwd)))
        if notebooks:
            from .notebook_check import place_findings

            result = place_findings(result, notebooks)
        by_capture = capture_paths(captures)
        return Report(
            self.torch_version,
            list(self._all_targets(captures)),
            result,
            errors,
            files=len(files),
            classes=sum(len(c.classes) for c in captures),
            seconds=time.perf_counter() - started,
            by_capture=by_capture,
            built=build_paths(captures),
        )

    def _excluded(self, path: str) -> bool:
        from .discover import _excluded

        try:
            patterns = self.resolver.for_file(path).exclude
        except ConfigError:
            return False
        return bool(patterns) and _excluded(os.path.abspath(path), patterns)

    @staticmethod
    def _all_targets(captures: list[FileCapture]) -> list[str]:
        names: dict[str, None] = {}
        for capture in captures:
            for name in capture.settings.targets:
                names[name] = None
        return list(names)


class _Unreadable(Exception):
    def __init__(self, code: str, severity: str, message: str, line0: int = 0, width: int = 0):
        super().__init__(message)
        self.code, self.severity, self.message, self.line0, self.width = code, severity, message, line0, width

    def finding(self, result: FileCapture, engine: Engine) -> Finding:
        return Finding(
            result.display,
            Range(Position(self.line0, 0), Position(self.line0, self.width)),
            self.severity,
            self.code,
            self.message,
            abs_path=result.path,
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


def _graph_options(targets: list[Target]) -> dict[str, Any]:
    """What the worker needs to decompose an exported program as each export toolchain
    does (capture/graphs.py): the overloads the dynamo ONNX registry implements at each
    dynamo target's opset (its table keeps exactly these), and ExecuTorch's changes to the
    core-ATen table. Both come from the installed packages (probe/registries.py)."""
    options: dict[str, Any] = {}
    names: set[str] = set()
    for target in targets:
        view = target.tree_view
        if view == "onnx-export" and target.available:
            names |= set(target.implemented_overloads())
        elif view == "executorch-export":
            options["executorch_decompositions"] = target.decomposition_changes()
    if names:
        options["onnx_export_ops"] = sorted(names)
    return options


def _add_unique(items: list[Any], new: Iterable[Any]) -> None:
    for item in new:
        if item not in items:
            items.append(item)


def _leaves(tree: CallTree) -> list[str]:
    """The overloads at the bottom of a call tree: what a backend runs kernels for."""
    calls = tree.get("calls")
    if not calls:
        return [tree["op"]] if tree.get("op") else []
    out: list[Any] = []
    for child in calls:
        _add_unique(out, _leaves(child))
    return out


def _ignored(settings: Settings, target: str, name: str) -> bool:
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


def _dedupe(found: list[Finding]) -> list[Finding]:
    seen: dict[tuple[Any, ...], Finding] = {}
    out = []
    for finding in found:
        key = finding.identity()
        if key in seen:
            seen[key].merge(finding)
            continue
        seen[key] = finding
        out.append(finding)
    return out


def _build_message(cls: ClassAnswer, module_name: str) -> str:
    """Why one class could not be built, and what to do about it (whose move it is)."""
    error = cls["build_error"]
    name = cls["name"]
    key = cls.get("key") or cls["module"]
    missing = error.get("missing") or []
    kind = error.get("kind") or ("arguments" if missing else "meta")
    static = cls.get("capture") == "static"
    analysed = "was analysed from its source only" if static else "was not analysed"
    if kind == "missing_package":
        site = error.get("site") or {}
        where = f" ({os.path.basename(site['file'])}:{site['line']})" if site.get("file") else ""
        return (
            f"`{name}` {analysed}: building it needs the package `{error.get('package')}`{where}, which is not "
            f"installed in the interpreter atenlint uses; install it (pip install {error.get('package')}) "
            f"or point atenlint at the project's interpreter (--python)"
        )
    if kind == "arguments":
        arguments = ", ".join(f"{m}=..." for m in missing)
        return (
            f"`{name}` {analysed}: its constructor needs {', '.join(f'`{m}`' for m in missing)}. "
            f'Add to pyproject.toml: [tool.atenlint.modules."{key}"] init = "{name}({arguments})", '
            f"or put `# atenlint: init={name}({arguments})` on the class line"
        )
    if kind == "factory":
        return f"`{name}` {analysed}: {error['message']}"
    if kind == "memory":
        return f"`{name}` {analysed}: {error['message']}"
    site = error.get("site") or {}
    where = f" at {os.path.basename(site['file'])}:{site['line']}" if site.get("file") else ""
    return (
        f"`{name}` {analysed}: its constructor fails on the meta device and on the CPU{where} "
        f'({error["message"]}). Give a factory that works: [tool.atenlint.modules."{key}"] init = '
        f'"{name}(...)" in pyproject.toml, or `# atenlint: init=...` on the class line'
    )


def _not_built_finding(
    result: FileCapture, classes: list[ClassAnswer], by_qualname: dict[str, Any], module_name: str
) -> Finding:
    """One note for the classes of a file that could not be built, on the first of them
    (one that only needs constructor arguments first: its stub is the quickest fix)."""
    classes = sorted(
        classes,
        key=lambda c: (c["build_error"].get("kind") != "arguments", getattr(by_qualname.get(c["qualname"]), "line", 0)),
    )
    first = classes[0]
    info = by_qualname.get(first["qualname"])
    name_range = info.name_range if info else Range(Position(0, 0), Position(0, 0))
    message = _build_message(first, module_name)
    if len(classes) > 1:
        others = [
            f"`{c['name']}`"
            + (f" (needs {', '.join(c['build_error']['missing'])})" if c["build_error"].get("missing") else "")
            for c in classes[1:]
        ]
        shown = ", ".join(others[:6]) + (f" and {len(others) - 6} more" if len(others) > 6 else "")
        static = all(c.get("capture") == "static" for c in classes)
        message += (
            f". Also {'read from source only' if static else 'not built'}: {shown} — a factory for each "
            f"(pyproject.toml, a factories file, or `# atenlint: init=...`) lets atenlint build and "
            f"script them; example inputs (`inputs=`) add dtypes and shapes"
        )
    elif first.get("capture") == "static":
        message += (
            "; with it atenlint builds and scripts the class, and example inputs (`inputs=`) add dtypes and shapes"
        )
    error = first["build_error"]
    severity = "information"
    return Finding(
        result.display,
        name_range,
        severity,
        codes.CANNOT_BUILD,
        message,
        module=first.get("module"),
        abs_path=result.path,
        data={
            "class": first["name"],
            "key": first.get("key") or first["module"],
            "missing": error.get("missing") or [],
            "kind": error.get("kind") or "",
            "classes": [c.get("key") or c["module"] for c in classes],
        },
    )


def _static_after_failure(engine: Engine, capture: FileCapture) -> None:
    """The worker timed out or died on this file: read its classes from source instead,
    so the default mode still reports what `--no-exec` does."""
    failed = [f for f in capture.module_findings if f.code in (codes.TIMEOUT, codes.WORKER_CRASHED)]
    if not failed or capture.classes or capture.outline is None or not capture.outline.module_candidates:
        return
    try:
        static = engine.capture(capture.path, display=capture.display, execute=False)
    except Exception as error:  # noqa: BLE001 - the worker failure stays the finding
        engine.log(f"static fallback for {capture.path} failed: {type(error).__name__}: {error}")
        return
    if any(f.code in (codes.TIMEOUT, codes.WORKER_CRASHED) for f in static.module_findings):
        return
    capture.classes = [cast(ClassAnswer, dict(cls, capture="static")) for cls in static.classes]
    capture.occurrences = static.occurrences
    if capture.classes:
        count = len(capture.classes)
        how = f"; its {count} module class{'es were' if count != 1 else ' was'} analysed from source only"
        failed[0].message += how


def import_names(path: str, module_name: str, project_root: str | None) -> list[str]:
    """The dotted names a file can be imported by, the one users write first: below the
    project root (or its src/) through folders without __init__.py (namespace packages,
    like stable-diffusion's `ldm/`), and the name its __init__.py chain gives."""
    names = []
    if project_root:
        for root in (os.path.join(project_root, "src"), project_root):
            relative = os.path.relpath(os.path.abspath(path), os.path.abspath(root))
            if relative.startswith(os.pardir) or not relative.endswith(".py"):
                continue
            parts = relative[:-3].split(os.sep)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if parts and all(p.isidentifier() for p in parts):
                names.append(".".join(parts))
                break
    if module_name not in names:
        # The __init__.py chain's name is what imports use when it starts at the root.
        names.append(module_name)
    if len(names) > 1 and os.path.isfile(os.path.join(os.path.dirname(os.path.abspath(path)), "__init__.py")):
        names.reverse()  # a regular package: imported by its __init__.py chain's name
    return names


def _import_finding(result: FileCapture, answer: FileAnswer, module_name: str, cwd: str) -> Finding:
    """The import failed: say where and why; a package that is not installed is said as such
    (information when the static pass read every class instead, the user's bug otherwise)."""
    error = answer["import_error"]
    line = error.get("line")
    line0 = (line - 1) if line else 0
    site: dict[str, Any] = dict(error.get("site") or {})
    static = [c for c in answer.get("classes", []) if c.get("capture") == "static"]
    elsewhere = site.get("file") and os.path.abspath(site["file"]) != os.path.abspath(result.path)
    where = ""
    if site.get("file"):
        shown = f"{display_path(site['file'], cwd)}:{site['line']}" if elsewhere else f"line {site['line']}"
        where = f" at {shown}" + (f" (`{site['text']}`)" if site.get("text") else "")
    if elsewhere and not error.get("line"):
        line0 = 0
    fallback = (
        f"; its {len(static)} module class{'es were' if len(static) != 1 else ' was'} analysed from source only"
        if static
        else ""
    )
    package = error.get("package")
    if package:
        message = (
            f"importing `{module_name}` needs the package `{package}`{where}, which is not installed in the "
            f"interpreter atenlint uses: install it (pip install {package}) or point atenlint at the "
            f"project's interpreter (--python){fallback}"
        )
        severity = "information" if static or not answer.get("classes") else "warning"
    else:
        message = (
            f"importing `{module_name}` raised {error['type']}: {error['message']}{where}; atenlint imports "
            f"the file to build and analyse its modules{fallback}"
        )
        severity = "warning"
    related: list[RelatedPlace] = []
    if elsewhere:
        related.append(
            {
                "path": os.path.abspath(site["file"]),
                "line": max(site["line"] - 1, 0),
                "character": 0,
                "message": f"the import fails here{f': {package} is not installed' if package else ''}",
            }
        )
    rng = (
        result.source.line_range(line0) if result.source is not None else Range(Position(line0, 0), Position(line0, 0))
    )
    return Finding(
        result.display,
        rng,
        severity,
        codes.IMPORT_ERROR,
        message,
        abs_path=result.path,
        related=related,
        data={"package": package, "site": cast(Site, site) if site else None},
    )


def capture_paths(captures: Iterable[FileCapture]) -> dict[str, int]:
    """Module classes by how they were analysed: trace, script, static, or not at all."""
    counts = {"trace": 0, "script": 0, "static": 0, "none": 0}
    for capture in captures:
        answered = {cls.get("qualname") for cls in capture.classes}
        for cls in capture.classes:
            counts[class_capture(cls)] += 1
        if (
            not capture.classes
            and capture.outline is not None
            and any(f.code in _FAILED_FILE_CODES for f in capture.module_findings)
        ):
            # The worker gave no answer for this file: its candidates were not analysed.
            counts["none"] += sum(
                1
                for c in capture.outline.module_candidates
                if c.qualname not in answered and not c.directives.get("skip")
            )
    return counts


def build_paths(captures: Iterable[FileCapture]) -> dict[str, int]:
    """How classes that were built got built (meta, meta with CPU tensors moved, CPU)."""
    counts: dict[str, int] = {}
    for capture in captures:
        for cls in capture.classes:
            if cls.get("build"):
                counts[cls["build"]] = counts.get(cls["build"], 0) + 1
    return counts


_FAILED_FILE_CODES = (codes.TIMEOUT, codes.WORKER_CRASHED, codes.INTERNAL_ERROR, codes.IMPORT_ERROR)


def class_capture(cls: ClassAnswer) -> str:
    """The capture path that analysed one class of a worker answer, or "none"."""
    capture = cls.get("capture")
    if capture in ("trace", "script", "static"):
        return capture
    status = cls.get("status")
    if status == "ok":
        return "script"
    if status == "static":
        return "static"
    return "none"


_FAKE_TENSOR_GAP = re.compile(
    r"DynamicOutputShapeException|DataDependentOutputException|UnsupportedOperatorException"
    r"|GuardOnDataDependentSymNode|meta tensor|Meta kernel|fake impl"
)

# The views produced by torch.export (capture/graphs.py EXPORT_VIEWS; the server never imports
# torch, so the names are repeated here).
_TORCH_EXPORT_VIEWS = frozenset({"export", "onnx-export", "executorch-export", "coreml-export"})

_VIEW_FRONT_ENDS = {
    "dispatch": "the dispatcher-level trace (device targets)",
    "jit": "torch.jit.trace (Core ML)",
    "onnx-jit": "the TorchScript ONNX exporter's trace",
    "export": "torch.export",
    "onnx-export": "torch.export (dynamo ONNX)",
    "executorch-export": "torch.export (ExecuTorch)",
}


def _graph_errors_message(cls: ClassAnswer) -> str:
    """One note per class: which toolchain front ends failed on its example inputs, and
    what stood in for them (the scripted graph, or the source)."""
    fallback = cls.get("fallback") or {}
    parts = []
    for error in cls["graph_errors"]:
        view = error.get("view", "")
        error_site = error.get("site")
        where = f" at line {error_site['line']}" if error_site else ""
        instead = fallback.get(view)
        parts.append(
            f"{_VIEW_FRONT_ENDS.get(view, view)} failed{where} ({error.get('message', '')})"
            + (f"; judged from the {'scripted graph' if instead == 'script' else 'source'} instead" if instead else "")
        )
    return (
        f"`{cls['name']}`: "
        + "; ".join(parts)
        + ". With real tensors the toolchain may fail the same way: then it cannot export this class"
    )


def _script_failures_to_report(classes: list[ClassAnswer], file_outline: FileOutline) -> set[str]:
    """One ATL004 per place TorchScript stopped: classes that fail only because a submodule
    fails (at the same line) say nothing; the class whose body holds that line says it."""
    by_site: dict[tuple[Any, Any], list[ClassAnswer]] = {}
    for cls in classes:
        if cls["status"] != "script_failed":
            continue
        site: dict[str, Any] = dict((cls.get("script_error") or {}).get("site") or {})
        by_site.setdefault((site.get("file"), site.get("line")) if site else (None, cls["qualname"]), []).append(cls)
    spans = {}
    for info in file_outline.classes:
        spans[info.qualname] = info.line
    keep: set[str] = set()
    for (file, line), group in by_site.items():
        if file is None or len(group) == 1:
            keep.update(c["qualname"] for c in group)
            continue
        # The innermost class that starts before the failing line.
        candidates = [c for c in group if spans.get(c["qualname"], 10**9) < line]
        owner = max(candidates, key=lambda c: spans[c["qualname"]]) if candidates else group[0]
        keep.add(owner["qualname"])
    return keep


def _source_read_just_as_well(cls: ClassAnswer) -> bool:
    """TorchScript refused the class only for an int where a float is annotated
    (`scale_factor=2`), which Python accepts: the static pass replays those calls as
    Python means them, so an ATL004 note would only be noise (the torchscript target still
    reports TS001)."""
    return cls.get("capture") == "static" and only_int_for_float((cls.get("script_error") or {}).get("details", ""))


def _script_message(cls: ClassAnswer, path: str) -> str:
    error = cls["script_error"]
    site = error.get("site")
    where = f" at {os.path.basename(site['file'])}:{site['line']}" if site else ""
    name, key = cls["name"], cls["module"]
    if cls.get("capture") == "static":
        return (
            f"`{name}` was analysed from its source only: TorchScript cannot compile it{where} "
            f"({error['message']}). Calls decided at run time, dtypes and shapes are not seen; give example "
            f'inputs so atenlint can trace it: [tool.atenlint.modules."{key}"] inputs = "torch.randn(...)" '
            f"in pyproject.toml, or `# atenlint: inputs=torch.randn(...)` on the class line"
        )
    return (
        f"`{name}` was not analysed: TorchScript cannot compile it{where} ({error['message']}), "
        f"so atenlint cannot see its operators"
    )
