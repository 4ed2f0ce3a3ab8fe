"""The analysis core shared by the CLI, the language server and the tests.

files -> (worker) captured calls with their source sites -> user expressions -> target
problems -> findings. Nothing here imports torch, pygls or user code: user code runs in
the workers, and this module only reads what they answer.
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional

from . import findings as codes
from .config import ConfigError, Settings, SettingsResolver
from .discover import FileOutline, import_location, iter_python_files, outline
from .findings import FileError, Finding
from .fixes import attach_fixes
from .locate import ExpressionLocator, Located
from .sourcetext import DecodeError, Position, Range, SourceText, decode_source
from .targets import build_targets
from .targets.base import Problem
from .targets.native_table import NativeTable
from .worker.pool import RequestError, WorkerFailure, WorkerPool


@dataclass
class Occurrence:
    """One captured call: the overload, its call tree, and the source sites leading to it."""

    module: str
    op: str
    trees: dict  # view ("dispatch", "export") -> call tree
    phases: tuple
    sites: list  # outermost first: {"file", "line", "col", "span_lines", "end_col", "library"}
    capture: str
    args: dict = field(default_factory=dict)
    conditional: bool = False  # only reached through a library branch decided at run time
    devices: tuple = ()  # the devices assumed when the capture reached it
    facts: dict = field(default_factory=dict)  # dtypes and ranks a trace saw (dtype rules)

    def user_site(self) -> Optional[dict]:
        """The innermost site in the user's own files."""
        for site in reversed(self.sites):
            if not site.get("library"):
                return site
        return None

    def library_site(self) -> Optional[dict]:
        innermost = self.sites[-1] if self.sites else None
        return innermost if innermost and innermost.get("library") else None


@dataclass
class FileCapture:
    path: str  # absolute
    display: str
    settings: Settings
    source: Optional[SourceText]
    outline: Optional[FileOutline]
    module_findings: list = field(default_factory=list)
    occurrences: list = field(default_factory=list)
    classes: list = field(default_factory=list)  # the worker's per-class answers
    imported: list = field(default_factory=list)  # the user's files the import pulled in
    seconds: float = 0.0
    worker_seconds: float = 0.0


@dataclass
class CallSite:
    """One user expression that dispatches aten ops, with each target's verdict (hover)."""

    path: str
    range: Range
    call: str
    ops: list  # the overloads the call makes, as captured (before decomposition)
    reached: list  # what the backends are asked for after decomposition
    verdicts: dict  # target -> {"status": "supported"|"problem"|"conditional", "ops": [...], "message": str}
    capture: str


@dataclass
class Report:
    torch_version: str
    targets: list
    findings: list
    errors: list
    files: int = 0
    classes: int = 0
    seconds: float = 0.0

    def counts(self) -> dict:
        out = {"error": 0, "warning": 0, "information": 0, "hint": 0}
        for finding in self.findings:
            out[finding.severity] = out.get(finding.severity, 0) + 1
        return out


class SourceCache:
    """Texts of files the findings point into (editor buffers first, then disk)."""

    def __init__(self, overlays: Optional[dict] = None):
        self.overlays = {os.path.abspath(p): t for p, t in (overlays or {}).items()}
        self._texts: dict[str, Optional[SourceText]] = {}
        self._locators: dict[str, ExpressionLocator] = {}
        self._outlines: dict[str, FileOutline] = {}
        self._lock = threading.Lock()

    def put(self, path: str, source: SourceText) -> None:
        with self._lock:
            self._texts[os.path.abspath(path)] = source

    def get(self, path: str) -> Optional[SourceText]:
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

    def locator(self, path: str) -> Optional[ExpressionLocator]:
        path = os.path.abspath(path)
        if path not in self._locators:
            source = self.get(path)
            if source is None:
                return None
            self._locators[path] = ExpressionLocator(source)
        return self._locators[path]

    def outline(self, path: str) -> Optional[FileOutline]:
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
    def __init__(self, pool: WorkerPool, resolver: Optional[SettingsResolver] = None,
                 log: Callable[[str], None] = lambda message: None, cwd: Optional[str] = None):
        self.pool = pool
        self.resolver = resolver or SettingsResolver()
        self.log = log
        self.cwd = cwd or os.getcwd()
        self.hello: dict = {}
        self.native: Optional[NativeTable] = None
        self._targets: dict = {}
        self._start_lock = threading.Lock()

    # -- setup -----------------------------------------------------------
    def start(self) -> dict:
        """Warm the workers and load the support tables for the worker's torch."""
        with self._start_lock:
            if self.native is None:
                started = time.perf_counter()
                self.hello = self.pool.warm()
                self.native = NativeTable.load(self.hello["native_yaml"], self.hello["torch"])
                self.log(f"torch {self.hello['torch_full']} tables ready in {time.perf_counter() - started:.1f}s")
        return self.hello

    @property
    def torch_version(self) -> str:
        return self.hello.get("torch", "?")

    def targets_for(self, settings: Settings) -> list:
        key = (settings.targets, settings.mps_fallback, getattr(settings, "onnx_exporter", None))
        if key not in self._targets:
            self.start()
            self._targets[key] = build_targets(settings, self.native, self.hello, self.pool, self.log)
        return self._targets[key]

    # -- capture ---------------------------------------------------------
    def capture_static(self, path: str, text: Optional[str] = None, display: Optional[str] = None) -> FileCapture:
        """Like `capture`, but the file is only read, never imported: `--no-exec` and the
        editor's Restricted Mode."""
        return self.capture(path, text=text, display=display, execute=False)

    def capture(self, path: str, text: Optional[str] = None, overlays: Optional[dict] = None,
                display: Optional[str] = None, execute: bool = True) -> FileCapture:
        """Everything about one file short of target verdicts. `text` is the editor's
        buffer (None: read the file); `overlays` are other unsaved buffers by path;
        `execute=False` reads the source without importing it (static capture)."""
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
            result.module_findings.append(Finding(display, source.line_range(line0), "warning", codes.BAD_DIRECTIVE,
                                                  message, abs_path=path))
        if file_outline.skip_file or not file_outline.module_candidates:
            result.seconds = time.perf_counter() - started
            return result
        self.start()
        module_name, roots = import_location(path, settings.project_root)
        classes, skip = self._class_requests(file_outline, module_name, settings)
        if not classes:
            result.seconds = time.perf_counter() - started
            return result
        request = {"path": path, "module": module_name, "roots": roots, "skip": skip,
                   "devices": sorted({t.device for t in self.targets_for(settings)}),
                   "views": sorted({getattr(t, "tree_view", "dispatch") for t in self.targets_for(settings)}),
                   "overlays": dict(overlays or {}), "classes": classes}
        if text is not None:
            request["overlays"][path] = source.text
        if not execute:
            request = {"path": path, "module": module_name, "text": source.text, "classes": list(classes),
                       "skip": skip, "devices": request["devices"], "views": request["views"], "roots": roots}
        try:
            answer = self.pool.request("analyse" if execute else "static", request, settings.timeout)
        except WorkerFailure as failure:
            result.module_findings.append(self._worker_finding(result, failure, module_name))
            result.seconds = time.perf_counter() - started
            return result
        except RequestError as error:
            self.log(f"internal error analysing {path}: {error.error.get('trace', error)}")
            result.module_findings.append(self._file_finding(
                result, codes.INTERNAL_ERROR, "warning",
                f"atenlint failed while analysing this file ({error.error.get('type')}: {error}); "
                f"please report it with the log"))
            result.seconds = time.perf_counter() - started
            return result
        result.worker_seconds = answer.get("seconds", 0.0)
        result.imported = [p for p in answer.get("imported", []) if os.path.abspath(p) != path]
        self._read_answer(result, answer, module_name, file_outline)
        result.seconds = time.perf_counter() - started
        return result

    @staticmethod
    def _class_requests(file_outline: FileOutline, module_name: str, settings: Settings) -> tuple[dict, list]:
        """Per candidate class, its factory (pyproject.toml, then the in-source comment wins);
        and the classes the user asked to skip."""
        classes: dict[str, dict] = {}
        skip: list[str] = []
        for info in file_outline.classes:
            config = settings.modules.get(f"{module_name}.{info.qualname}")
            if info.directives.get("skip") or (config is not None and config.skip):
                skip.append(info.qualname)
                continue
            if not info.might_be_module():
                continue
            entry = {"init": config.init, "inputs": config.inputs} if config is not None else {}
            entry.update({k: info.directives[k] for k in ("init", "inputs") if k in info.directives})
            classes[info.qualname] = entry
        return classes, skip

    def _read(self, path: str, text: Optional[str], settings: Settings) -> SourceText:
        if text is not None:
            return SourceText(text, path)
        try:
            size = os.path.getsize(path)
            if size > settings.max_file_bytes:
                raise _Unreadable(codes.TOO_LARGE, "information",
                                  f"this file is {size / 1e6:.1f} MB, over max-file-size "
                                  f"({settings.max_file_bytes / 1e6:.1f} MB): not analysed")
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError as error:
            raise _Unreadable(codes.UNDECODABLE, "warning", f"cannot read this file: {error.strerror}") from None
        try:
            return SourceText(decode_source(data), path)
        except DecodeError as error:
            lines = data.split(b"\n")
            width = len(lines[error.line].decode("utf-8", errors="replace").rstrip("\r")) if error.line < len(lines) else 0
            raise _Unreadable(codes.UNDECODABLE, "warning", f"cannot analyse this file: {error.message}",
                              error.line, width) from None

    def _syntax_finding(self, result: FileCapture, source: SourceText) -> Finding:
        import ast

        try:
            ast.parse(source.text, filename=result.path)
            message, line0, col = "Python cannot parse this file", 0, 0
        except SyntaxError as error:
            line0 = max((error.lineno or 1) - 1, 0)
            col = max((error.offset or 1) - 1, 0)
            message = f"Python cannot parse this file: {error.msg} (line {line0 + 1}); its modules are not analysed"
        except ValueError as error:  # null bytes
            message, line0, col = f"Python cannot parse this file: {error}", 0, 0
        width = len(source.line_text(line0))
        col = min(col, max(width - 1, 0))  # Python points one past the end for "expected ..."
        start = Position(line0, source.utf16_from_char(line0, col))
        end = Position(line0, source.utf16_from_char(line0, max(width, col + 1) if width else 0))
        return Finding(result.display, Range(start, end),
                       "error", codes.SYNTAX_ERROR, message, abs_path=result.path)

    def _file_finding(self, result: FileCapture, code: str, severity: str, message: str, line0: int = 0) -> Finding:
        source = result.source
        rng = source.line_range(line0) if source is not None else Range(Position(line0, 0), Position(line0, 0))
        return Finding(result.display, rng, severity, code, message, abs_path=result.path)

    def _worker_finding(self, result: FileCapture, failure: WorkerFailure, module_name: str) -> Finding:
        if failure.kind == "timeout":
            message = (f"importing and analysing `{module_name}` took longer than {result.settings.timeout:g} s "
                       f"(an endless loop at import or in a constructor?); the worker was restarted. If the "
                       f"file is only slow, raise `timeout` in [tool.atenlint]")
            code = codes.TIMEOUT
        elif failure.kind == "memory":
            message = (f"analysing `{module_name}` used too much memory ({failure.message}); the worker was "
                       f"restarted. Does importing the file or building a class allocate real tensors?")
            code = codes.WORKER_CRASHED
        else:
            tail = failure.stderr_tail.strip().splitlines()[-1:] if failure.stderr_tail.strip() else []
            message = (f"{failure.message} while importing or analysing `{module_name}` (os._exit, a C++ abort or "
                       f"a crash in code it runs?); the worker was restarted"
                       + (f". Last output: {tail[0][:200]}" if tail else ""))
            code = codes.WORKER_CRASHED
        self.log(f"{result.path}: {failure.kind}: {failure.message}\n{failure.stderr_tail}")
        return self._file_finding(result, code, "warning", message)

    def _read_answer(self, result: FileCapture, answer: dict, module_name: str, file_outline: FileOutline) -> None:
        if "import_error" in answer:
            error = answer["import_error"]
            line0 = (error["line"] - 1) if error.get("line") else 0
            result.module_findings.append(self._file_finding(
                result, codes.IMPORT_ERROR, "warning",
                f"importing `{module_name}` raised {error['type']}: {error['message']}; atenlint imports the file "
                f"to build and analyse its modules", line0))
            return
        by_qualname = {c.qualname: c for c in file_outline.classes}
        result.classes = answer.get("classes", [])
        reported_failures = _script_failures_to_report(result.classes, file_outline)
        for cls in result.classes:
            info = by_qualname.get(cls["qualname"])
            name_range = info.name_range if info else Range(Position(0, 0), Position(0, 0))
            if cls["status"] == "build_failed":
                result.module_findings.append(Finding(
                    result.display, name_range, "information", codes.CANNOT_BUILD,
                    _build_message(cls, module_name), module=cls["module"], abs_path=result.path,
                    data={"class": cls["name"], "key": cls["module"], "missing": cls["build_error"]["missing"]}))
                continue
            if cls.get("trace_error"):
                error = cls["trace_error"]
                where = f" (line {error['site']['line']})" if error.get("site") else ""
                result.module_findings.append(Finding(
                    result.display, name_range, "warning", codes.TRACE_FAILED,
                    f"`{cls['name']}` could not be traced with its example inputs{where}: {error['message']}; "
                    f"it was analysed without them", module=cls["module"], abs_path=result.path,
                    data={"class": cls["name"], "key": cls["module"]}))
            if cls["status"] == "script_failed" and cls["qualname"] in reported_failures:
                result.module_findings.append(Finding(
                    result.display, name_range, "information", codes.SCRIPT_FAILED,
                    _script_message(cls, result.path), module=cls["module"], abs_path=result.path,
                    data={"script_error": cls["script_error"], "class": cls["name"], "key": cls["module"],
                          "class_line": info.line if info else 0}))
            capture = cls.get("capture") or ("static" if cls["status"] == "static" else "script")
            for raw in cls["ops"]:
                result.occurrences.append(Occurrence(cls["module"], raw["op"], raw["trees"], tuple(raw["phases"]),
                                                     raw["sites"], capture, raw.get("args", {}),
                                                     bool(raw.get("conditional")),
                                                     tuple(raw.get("devices", ())), raw.get("facts") or {}))

    # -- verdicts --------------------------------------------------------
    def findings(self, captures: Iterable[FileCapture], sources: Optional[SourceCache] = None) -> list[Finding]:
        """Judge every captured call for every target, one finding per user call site and target."""
        sources = sources or SourceCache()
        captures = list(captures)
        displays = {c.path: c.display for c in captures}
        out: list[Finding] = []
        sites: dict[tuple, dict] = {}
        # A class that cannot be built alone was still analysed inside another that uses it.
        covered = {name for capture in captures for cls in capture.classes for name in cls.get("submodules", ())}
        for capture in captures:
            if capture.source is not None:
                sources.put(capture.path, capture.source)
            whole, replaced = self._class_results(capture, sources)
            out.extend(f for f in capture.module_findings
                       if not (f.code == codes.CANNOT_BUILD and f.module in covered)
                       and (f.module, f.code) not in replaced)
            out.extend(whole)
            if not capture.occurrences:
                continue
            targets = self.targets_for(capture.settings)
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
                    group = sites.setdefault(key, {"problems": [], "conditional": [], "occurrence": occurrence,
                                                   "located": located, "target": target,
                                                   "settings": capture.settings, "reached": [], "library": []})
                    bucket = group["conditional"] if occurrence.conditional else group["problems"]
                    for problem in problems:
                        if problem not in bucket:
                            bucket.append(problem)
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

    def _class_results(self, capture: FileCapture, sources: SourceCache) -> tuple[list, set]:
        """Verdicts a target gives about a whole class (TorchScript cannot compile it, the
        target's package is missing), and the module-level findings they make redundant."""
        found: list[Finding] = []
        replaced: set = set()
        if not capture.classes:
            return found, replaced
        targets = [t for t in self.targets_for(capture.settings) if hasattr(t, "class_results")]
        by_qualname = {c.qualname: c for c in capture.outline.classes} if capture.outline else {}
        for cls in capture.classes:
            info = by_qualname.get(cls.get("qualname"))
            for target in targets:
                for result in target.class_results(cls):
                    severity = capture.settings.severity.get(target.name, result.severity)
                    if severity == "off" or _ignored(capture.settings, target.name, result.code):
                        continue
                    path, rng = capture.path, info.name_range if info else Range(Position(0, 0), Position(0, 0))
                    locator = sources.locator(result.site["file"]) if result.site else None
                    if locator is not None:
                        site = result.site
                        rng = locator.locate(site["line"], site["col"], site.get("span_lines", 1),
                                             site.get("end_col")).range
                        path = os.path.abspath(site["file"])
                    display = capture.display if path == capture.path else display_path(path, self.cwd)
                    found.append(Finding(display, rng, severity, result.code, result.message, target=target.name,
                                         module=cls.get("module"), capture="script", abs_path=path))
                    replaced.update((cls.get("module"), code) for code in result.replaces)
        return found, replaced

    def _site_finding(self, path: str, rng: Range, group: dict, sources: SourceCache,
                      display: Optional[str]) -> Optional[Finding]:
        settings: Settings = group["settings"]
        target = group["target"]
        problems: list[Problem] = [p for p in group["problems"] if not _ignored(settings, target.name, p.op)]
        conditional = not problems
        if conditional:
            problems = [p for p in group["conditional"] if not _ignored(settings, target.name, p.op)]
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
            message = (f"{message} — but only on a path the library chooses at run time (by the input's rank, "
                       f"device or values), so this may not happen; give example inputs to know")
        if severity == "off":
            return None
        call = group["located"].call
        related = []
        for library in group["library"][:3]:
            source = sources.get(library["file"])
            character = source.utf16_from_byte(library["line"] - 1, library["col"]) if source else library["col"]
            related.append({"path": library["file"], "line": library["line"] - 1, "character": character,
                            "message": "the operator is called here"})
        occurrence: Occurrence = group["occurrence"]
        return Finding(
            display or display_path(path, self.cwd), rng, severity, verdict.code, message,
            target=target.name, ops=[p.op for p in problems], call=call, module=occurrence.module,
            capture=occurrence.capture, related=related, abs_path=path,
            data={"reached": group["reached"], "kinds": {p.op: p.kind for p in problems},
                  "args": occurrence.args, "torch": self.torch_version, "conditional": conditional,
                  **({"arg_shapes": occurrence.facts["arg_shapes"]} if occurrence.facts.get("arg_shapes") else {})})

    def _apply_ignores(self, found: list[Finding], sources: SourceCache) -> list[Finding]:
        kept = []
        for finding in found:
            file_outline = sources.outline(finding.abs_path) if finding.abs_path else None
            if file_outline is not None and _suppressed(finding, file_outline):
                continue
            kept.append(finding)
        return kept

    def call_sites(self, captures: Iterable[FileCapture], sources: Optional[SourceCache] = None) -> list[CallSite]:
        """Every located call with the overloads it makes and each target's verdict."""
        sources = sources or SourceCache()
        by_site: dict[tuple, CallSite] = {}
        for capture in captures:
            if capture.source is not None:
                sources.put(capture.path, capture.source)
            targets = self.targets_for(capture.settings) if capture.occurrences else []
            for occurrence in capture.occurrences:
                where = locate_occurrence(occurrence, sources)
                if where is None:
                    continue
                site, located = where
                key = (os.path.abspath(site["file"]), located.range)
                entry = by_site.setdefault(key, CallSite(key[0], located.range, located.call, [], [], {},
                                                         occurrence.capture))
                _add_unique(entry.ops, [occurrence.op])
                _add_unique(entry.reached, _leaves(occurrence.trees.get("dispatch") or {}))
                for target in targets:
                    problems = problems_for(target, occurrence)
                    if problems is None:
                        continue
                    verdict = entry.verdicts.setdefault(target.name, {"status": "supported", "ops": [], "message": ""})
                    if problems:
                        _add_unique(verdict["ops"], [p.op for p in problems])
                        status = "conditional" if occurrence.conditional else "problem"
                        if verdict["status"] != "problem":
                            verdict["status"] = status
                        verdict["message"] = target.verdict([p for p in problems]).message
        return list(by_site.values())

    # -- whole runs ------------------------------------------------------
    def check_paths(self, paths: list[str], jobs: int = 1,
                    on_file: Optional[Callable[[FileCapture], None]] = None, execute: bool = True) -> Report:
        started = time.perf_counter()
        files, missing = iter_python_files(paths)
        errors = [FileError(path, message) for path, message in missing]
        files = [f for f in files if not self._excluded(f)]
        sources = SourceCache()

        def run(path: str) -> FileCapture:
            capture = self.capture(path, display=os.path.normpath(path), execute=execute)
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
        return Report(self.torch_version, list(self._all_targets(captures)), result, errors, files=len(files),
                      classes=sum(len(c.classes) for c in captures), seconds=time.perf_counter() - started)

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
        return Finding(result.display, Range(Position(self.line0, 0), Position(self.line0, self.width)),
                       self.severity, self.code, self.message, abs_path=result.path)


def locate_occurrence(occurrence: Occurrence, sources: SourceCache) -> Optional[tuple[dict, "Located"]]:
    """The user's site of a captured call and the expression it is, or None."""
    site = occurrence.user_site()
    locator = sources.locator(site["file"]) if site else None
    if locator is None:
        return None
    return site, locator.locate(site["line"], site["col"], site.get("span_lines", 1), site.get("end_col"),
                                site.get("exact", False))


def problems_for(target, occurrence: Occurrence) -> Optional[list]:
    """What `target` says about one captured call; None when the call does not concern it
    (captured for another device, or without the tree view the target judges)."""
    if occurrence.devices and target.device not in occurrence.devices:
        return None
    tree = occurrence.trees.get(getattr(target, "tree_view", "dispatch"))
    if tree is None:
        return None
    problems = target.problems(tree, occurrence.phases)
    if occurrence.facts and hasattr(target, "facts_problems"):
        problems = problems + target.facts_problems(occurrence.op, occurrence.facts)
    return problems


def _add_unique(items: list, new: Iterable) -> None:
    for item in new:
        if item not in items:
            items.append(item)


def _leaves(tree: dict) -> list:
    """The overloads at the bottom of a call tree: what a backend runs kernels for."""
    calls = tree.get("calls")
    if not calls:
        return [tree["op"]] if tree.get("op") else []
    out: list = []
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
    seen: dict[tuple, Finding] = {}
    out = []
    for finding in found:
        key = finding.identity()
        if key in seen:
            seen[key].merge(finding)
            continue
        seen[key] = finding
        out.append(finding)
    return out


def _build_message(cls: dict, module_name: str) -> str:
    error = cls["build_error"]
    name = cls["name"]
    key = cls["module"]
    missing = error.get("missing") or []
    if missing:
        arguments = ", ".join(f"{m}=..." for m in missing)
        return (f"`{name}` was not analysed: its constructor needs {', '.join(f'`{m}`' for m in missing)}. "
                f"Add to pyproject.toml: [tool.atenlint.modules.\"{key}\"] init = \"{name}({arguments})\", "
                f"or put `# atenlint: init={name}({arguments})` on the class line")
    return (f"`{name}` was not analysed: building it on the meta device failed ({error['message']}). "
            f"Give a factory that works on meta: [tool.atenlint.modules.\"{key}\"] init = \"{name}(...)\" "
            f"in pyproject.toml, or `# atenlint: init=...` on the class line")


def _script_failures_to_report(classes: list, file_outline: FileOutline) -> set:
    """One ATL004 per place TorchScript stopped: classes that fail only because a submodule
    fails (at the same line) say nothing; the class whose body holds that line says it."""
    by_site: dict[tuple, list] = {}
    for cls in classes:
        if cls["status"] != "script_failed":
            continue
        site = (cls.get("script_error") or {}).get("site") or {}
        by_site.setdefault((site.get("file"), site.get("line")) if site else (None, cls["qualname"]), []).append(cls)
    spans = {}
    for info in file_outline.classes:
        spans[info.qualname] = info.line
    keep = set()
    for (file, line), group in by_site.items():
        if file is None or len(group) == 1:
            keep.update(c["qualname"] for c in group)
            continue
        # The innermost class that starts before the failing line.
        candidates = [c for c in group if spans.get(c["qualname"], 10**9) < line]
        owner = max(candidates, key=lambda c: spans[c["qualname"]]) if candidates else group[0]
        keep.add(owner["qualname"])
    return keep


def _script_message(cls: dict, path: str) -> str:
    error = cls["script_error"]
    site = error.get("site")
    where = f" at {os.path.basename(site['file'])}:{site['line']}" if site else ""
    name, key = cls["name"], cls["module"]
    if cls.get("capture") == "static":
        return (f"`{name}` was analysed from its source only: TorchScript cannot compile it{where} "
                f"({error['message']}). Calls decided at run time, dtypes and shapes are not seen; give example "
                f"inputs so atenlint can trace it: [tool.atenlint.modules.\"{key}\"] inputs = \"torch.randn(...)\" "
                f"in pyproject.toml, or `# atenlint: inputs=torch.randn(...)` on the class line")
    return (f"`{name}` was not analysed: TorchScript cannot compile it{where} ({error['message']}), "
            f"so atenlint cannot see its operators")
