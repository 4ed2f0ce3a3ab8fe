"""The analysis core shared by the CLI, the language server and the tests.

files -> (worker) captured calls with their source sites -> user expressions -> target
problems -> findings. Nothing here imports torch, pygls or user code: user code runs in
the workers, and this module only reads what they answer. The engine starts the workers,
builds each file's request and reads the answer (`capture`); `judging.Judge` turns
captures into findings; `pipeline.check_file` is the one path from a file to its result.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, cast

from . import findings as codes
from . import notebook
from .answers import read_answer
from .captured import FAST_VIEW, CallSite, FileCapture, Occurrence, display_path
from .config import ConfigError, Settings, SettingsResolver
from .discover import FileOutline, import_location, import_names, outline
from .findings import Finding
from .judging import Judge, locate_occurrence, problems_for
from .pipeline import check_paths
from .result_cache import EnvironmentUnknown, ResultCache, environment_fingerprint
from .run_report import Report
from .source_cache import SourceCache
from .source_read import Unreadable, read_source, syntax_finding
from .sourcetext import Position, Range
from .targets import build_targets
from .targets.base import Target
from .targets.native_table import NativeTable
from .targets.registry_data import RegistryUnavailable
from .worker.pool import RequestError, WorkerFailure, WorkerPool
from .worker.protocol import (
    AnalyseParams,
    ClassRequest,
    FileAnswer,
    GraphOptions,
    Hello,
    ProtocolError,
    StaticParams,
    WarmAnswer,
    analyse_params,
    check_file_answer,
    check_warm_answer,
    static_params,
    warm_params,
)

# What other modules and tests import from here, defined in the modules the engine was split into.
__all__ = [
    "FAST_VIEW",
    "CallSite",
    "Engine",
    "FileCapture",
    "Occurrence",
    "Report",
    "SourceCache",
    "display_path",
    "import_names",
    "locate_occurrence",
    "problems_for",
]


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
        self._registry_failures: dict[tuple[Any, ...], RegistryUnavailable] = {}
        self._start_lock = threading.Lock()
        self._targets_lock = threading.RLock()
        self._background_start: threading.Thread | None = None
        self._background_failure: Exception | None = None
        # Stored results by mode (executed or source only), when kept between runs
        # (`persist_results`); None: every check captures.
        self._result_caches: dict[bool, ResultCache | None] | None = None
        self._results_lock = threading.Lock()
        # Each argument is looked up when the judge uses it, not now: the targets, resolver and
        # log of an engine may be replaced after it is made (tests, a settings change).
        self.judge = Judge(
            lambda settings: self.targets_for(settings),
            lambda: self.resolver,
            lambda: self.torch_version,
            self.cwd,
            self._log,
        )

    def _log(self, message: str) -> None:
        self.log(message)  # `log` may be replaced after the judge is made

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
                self.hello = dict(self.pool.warm())
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

    @property
    def run_notes(self) -> list[str]:
        """What a run says once, before any file: what this torch cannot give the analysis,
        and kernel containment of the user's code this system cannot apply (Landlock or
        seccomp missing, or no fork): the audit hook alone then stands between the analysed
        code and the machine, and the user must know."""
        notes = self.torch_degradations
        containment = self.hello.get("containment") or {}
        switched_off = not self.hello.get("sandbox", True)  # --no-sandbox: the user's own choice
        if containment and not switched_off and not (containment.get("kernel") and containment.get("fork")):
            missing = "; ".join(str(m) for m in containment.get("missing", ())) or "not available on this system"
            notes.append(f"the analysed code is not contained by the kernel ({missing}); see docs/security.md")
        return notes

    def targets_for(self, settings: Settings) -> list[Target]:
        key = (
            settings.targets,
            settings.mps_fallback,
            getattr(settings, "onnx_exporter", None),
            getattr(settings, "coreml_frontend", "torchscript"),
            getattr(settings, "fullgraph", False),
        )
        if key in self._registry_failures:
            # Already retried once inside `build_targets`: every later file says the same
            # instead of reading the tables twice more.
            raise self._registry_failures[key]
        if key not in self._targets:
            self.start()
            if self.native is None:
                raise RuntimeError("the support tables are not loaded")
            # Once per key, whichever thread asks first: the others (check_paths' threads,
            # the editor's checks) wait for it rather than read the registries again.
            with self._targets_lock:
                if key in self._registry_failures:
                    raise self._registry_failures[key]
                if key not in self._targets:
                    try:
                        self._targets[key] = build_targets(
                            settings, self.native, cast(Hello, self.hello), self.pool, self.log
                        )
                    except RegistryUnavailable as error:
                        self._registry_failures[key] = error
                        raise
        return self._targets[key]

    def warm(self, settings: Settings) -> list[WarmAnswer]:
        """Ask every worker to warm, before it forks its first file's child, the views that
        `settings`' targets judge: the dispatcher view first (the fast targets' squiggles
        need only it), then the export toolchains' in the targets' order. Each worker answers
        at once and warms them while no request waits; a file that comes meanwhile waits at
        most for the front-end call under way, where the warm-up gives way (worker/main.py).
        Only worth it where files will be imported: an untrusted editor session reads source
        only and does not call this."""
        targets = self.targets_for(settings)
        fast_first = sorted(dict.fromkeys(t.tree_view for t in targets), key=lambda view: view != FAST_VIEW)
        answers: list[WarmAnswer] = []
        # One request a worker: the pool hands out the idle worker that waited longest, so
        # consecutive requests reach each once (a worker busy meanwhile warms on its own
        # first file, as it would have without this).
        for _ in range(self.pool.size):
            try:
                answers.append(check_warm_answer(self.pool.request("warm", warm_params(fast_first), 120.0)))
            except (WorkerFailure, RequestError, ProtocolError) as error:
                self.log(f"the workers could not be asked to warm {', '.join(fast_first)}: {error}")
                break
        self.result_cache(True)  # its environment digest (a child process, atenlint's files) now, not in a check
        return answers

    def persist_results(self) -> None:
        """Keep each file's check between runs in the CLI's `--incremental` cache, and serve a
        file whose stored check is provably still right from it (pipeline.check_file): a
        restarted editor captures only what changed."""
        with self._results_lock:
            if self._result_caches is None:
                self._result_caches = {}

    def result_cache(self, execute: bool) -> ResultCache | None:
        """The stored results for a mode, made on first use (None: results are not kept, or
        the interpreter cannot say what it has installed). Executed and source-only results
        are kept apart (their key holds the mode): an untrusted session, which reads source
        only, never shows a finding that needed the code to run."""
        with self._results_lock:
            if self._result_caches is None:
                return None
            if execute not in self._result_caches:
                try:
                    environment = environment_fingerprint(self.pool.settings.python)
                except EnvironmentUnknown as error:
                    self.log(f"results are not kept between runs: {error}")
                    self._result_caches[execute] = None
                else:
                    self._result_caches[execute] = ResultCache(
                        environment,
                        execute,
                        self.pool.settings.sandbox,
                        log=self.log,
                        run_notes=lambda: self.run_notes,
                        cwd=self.cwd,
                    )
            return self._result_caches[execute]

    # -- capture ---------------------------------------------------------
    def capture_static(self, path: str, text: str | None = None, display: str | None = None) -> FileCapture:
        """Like `capture`, but the file is only read, never imported: `--no-exec` and the
        editor's Restricted Mode."""
        return self.capture(path, text=text, display=display, execute=False)

    def judging_targets(self, capture: FileCapture) -> list[Target]:
        """The targets that judge a capture: all, or for a partial one those of its views."""
        return self.judge.judging_targets(capture)

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
        settings: Settings | None = None,
    ) -> FileCapture:
        """Everything about one file short of target verdicts. `text` is the editor's
        buffer (None: read the file); `overlays` are other unsaved buffers by path;
        `execute=False` reads the source without importing it (static capture).
        `on_partial` (called on this thread, at most once, before this returns) gets the
        capture of the dispatcher view alone, judged only by the fast targets, when the
        file's targets include slower export ones; the same import serves both. `settings`:
        the file's, resolved by the caller (None: resolved here)."""
        started = time.perf_counter()
        path = os.path.abspath(path)
        display = display or display_path(path, self.cwd)
        try:
            settings = settings or self.resolver.for_file(path)
        except ConfigError as error:
            result = FileCapture(path, display, Settings(), None, None)
            result.module_findings.append(file_finding(result, codes.CONFIG_ERROR, "error", str(error)))
            return result
        result = FileCapture(path, display, settings, None, None)
        try:
            source = read_source(path, text, settings)
        except Unreadable as problem:
            result.module_findings.append(problem.finding(result))
            return result
        result.source = source
        tree = source.tree
        if tree is None:
            result.module_findings.append(syntax_finding(result, source))
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
        classes, skip = class_requests(file_outline, module_name, settings, path)
        if not classes:
            result.seconds = time.perf_counter() - started
            return result
        devices = sorted({t.device for t in self.targets_for(settings)})
        views = sorted({t.tree_view for t in self.targets_for(settings)})
        request: AnalyseParams | StaticParams
        if execute:
            texts = dict(overlays or {})
            if text is not None:
                texts[path] = source.text
            request = analyse_params(
                path,
                module_name,
                roots=roots,
                skip=skip,
                devices=devices,
                views=views,
                classes=classes,
                overlays=texts,
                infer_inputs=settings.infer_inputs,
                graph_options=_graph_options(self.targets_for(settings)),
            )
        else:
            request = static_params(
                path,
                module_name,
                text=source.text,
                classes=list(classes),
                roots=roots,
                skip=skip,
                devices=devices,
                views=views,
            )
        early = None
        held: list[Callable[[], FileCapture]] = []  # the dispatcher view's answer, if it came before a failure
        if execute and not notebook.is_notebook(path):
            # The CLI asks for it too: a file that then times out or crashes keeps the device
            # targets' verdicts in both (pipeline `_static_after_failure`), and reads it only then.
            early = self._partial_handler(result, module_name, file_outline, on_partial, started, held)
            if early is not None and on_partial is not None:
                request = cast(AnalyseParams, {**request, "fast_first": True})
        try:
            if execute and notebook.is_notebook(path):  # no .py file to import: the worker imports a copy
                analyse = cast(AnalyseParams, request)  # built by analyse_params: `execute` is set
                answer = notebook.request_importing_copy(self.pool, "analyse", analyse, settings.timeout)
            elif early is not None:
                answer = self.pool.request("analyse", request, settings.timeout, on_partial=early)
            else:
                answer = self.pool.request("analyse" if execute else "static", request, settings.timeout)
            checked = check_file_answer(answer)
        except ProtocolError as error:
            self.log(f"malformed answer analysing {path}: {error}")
            result.module_findings.append(
                file_finding(
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
            result.module_findings.append(worker_finding(result, failure, module_name, self.log))
            if held:
                # The dispatcher view finished before the limit: the device targets keep its
                # verdicts; only the other views fall back (pipeline `_static_after_failure`).
                early_capture = held[0]()
                result.occurrences, result.views = early_capture.occurrences, early_capture.views
            result.seconds = time.perf_counter() - started
            return result
        except RequestError as error:
            self.log(f"internal error analysing {path}: {error.error.get('trace', error)}")
            result.module_findings.append(
                file_finding(
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
        read_answer(result, checked, module_name, file_outline, self.targets_for(settings), self.cwd, self.log)
        result.seconds = time.perf_counter() - started
        return result

    def _partial_handler(
        self,
        result: FileCapture,
        module_name: str,
        file_outline: FileOutline,
        on_partial: Callable[[FileCapture], None] | None,
        started: float,
        held: list[Callable[[], FileCapture]],
    ) -> Callable[[FileAnswer], None] | None:
        """What takes the worker's dispatcher-view answer, or None when there is nothing to
        gain (no fast target, or no slower one to wait for). It is kept in `held`, read into
        a partial capture on demand (a request that fails after it); with `on_partial` (the
        editor) it is read at once and handed on."""
        targets = self.targets_for(result.settings)
        fast = [t for t in targets if t.tree_view == FAST_VIEW]
        if not fast or len(fast) == len(targets):
            return None
        findings_before = list(result.module_findings)

        def read(answer: FileAnswer) -> FileCapture:
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
            read_answer(early, answer, module_name, file_outline, targets, self.cwd, self.log)
            early.seconds = time.perf_counter() - started
            return early

        def handle(answer: FileAnswer) -> None:
            if on_partial is None:
                held.append(lambda: read(answer))
                return
            early = read(answer)
            held.append(lambda: early)
            on_partial(early)

        return handle

    # -- verdicts (judging.py) ---------------------------------------------
    def findings(self, captures: Iterable[FileCapture], sources: SourceCache | None = None) -> list[Finding]:
        """Judge every captured call for every target, one finding per user call site and target."""
        return self.judge.findings(captures, sources)

    def call_sites(self, captures: Iterable[FileCapture], sources: SourceCache | None = None) -> list[CallSite]:
        """Every located call with the overloads it makes and each target's verdict."""
        return self.judge.call_sites(captures, sources)

    # -- whole runs (pipeline.py) ------------------------------------------
    def check_paths(self, paths: list[str], jobs: int = 1, execute: bool = True) -> Report:
        """`atenlint check`: every file under `paths` through `pipeline.check_file`."""
        return check_paths(self, paths, jobs, execute)


def class_requests(
    file_outline: FileOutline, module_name: str, settings: Settings, path: str | None = None
) -> tuple[dict[str, ClassRequest], list[str]]:
    """Per candidate class, its factory (pyproject.toml, then the in-source comment wins);
    and the classes the user asked to skip. A class's key is the name the user imports
    it by: `ldm.models.diffusion.ddpm.DDPM` in a namespace package as well as `ddpm.DDPM`."""
    classes: dict[str, ClassRequest] = {}
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
        entry: ClassRequest = {"key": f"{names[0]}.{info.qualname}"}
        # The class's `# atenlint:` comment wins over pyproject.toml's entry.
        init, inputs, kwargs = (
            info.directives.get(name, getattr(config, name, None)) for name in ("init", "inputs", "kwargs")
        )
        if isinstance(init, str):
            entry["init"] = init
        if isinstance(inputs, str):
            entry["inputs"] = inputs
        if isinstance(kwargs, str):
            entry["kwargs"] = kwargs
        if config is not None:
            entry["options"] = dict(config.options)
        if settings.factories:
            entry["factories"] = settings.factories
        if base_dir:
            entry["base_dir"] = base_dir
        classes[info.qualname] = entry
    return classes, skip


def file_finding(result: FileCapture, code: str, severity: str, message: str, line0: int = 0) -> Finding:
    source = result.source
    rng = source.line_range(line0) if source is not None else Range(Position(line0, 0), Position(line0, 0))
    return Finding(result.display, rng, severity, code, message, abs_path=result.path)


def worker_finding(
    result: FileCapture, failure: WorkerFailure, module_name: str, log: Callable[[str], None]
) -> Finding:
    if failure.kind == "timeout":
        # The pool's words say which limit: processor time (load does not count), or the
        # wall-clock backstop for code that waits without computing.
        message = (
            f"importing and analysing `{module_name}` {failure.message} (an endless loop at import "
            f"or in a constructor?), and was stopped. If the file is only slow, raise `timeout` "
            f"in [tool.atenlint]"
        )
        code = codes.TIMEOUT
    elif failure.kind == "memory":
        message = (
            f"analysing `{module_name}` used too much memory ({failure.message}), and was stopped. "
            f"Does importing the file or building a class allocate real tensors?"
        )
        code = codes.WORKER_CRASHED
    else:
        # Stopped, not "the worker was restarted": on Linux only the file's own forked
        # process ends; the warm worker analyses the next file.
        tail = failure.stderr_tail.strip().splitlines()[-1:] if failure.stderr_tail.strip() else []
        message = (
            f"{failure.message} while importing or analysing `{module_name}` (os._exit, a C++ abort or "
            f"a crash in code it runs?); the next file is analysed in a fresh process"
            + (f". Last output: {tail[0][:200]}" if tail else "")
        )
        code = codes.WORKER_CRASHED
    log(f"{result.path}: {failure.kind}: {failure.message}\n{failure.stderr_tail}")
    return file_finding(result, code, "warning", message)


def _graph_options(targets: list[Target]) -> GraphOptions:
    """What the worker needs to decompose an exported program as each export toolchain
    does (capture/graphs.py): the overloads the dynamo ONNX registry implements at each
    dynamo target's opset (its table keeps exactly these), and ExecuTorch's changes to the
    core-ATen table. Both come from the installed packages (probe/registries.py)."""
    options: GraphOptions = {}
    names: set[str] = set()
    for target in targets:
        view = target.tree_view
        if view == "onnx-export" and target.available:
            names |= set(target.implemented_overloads())
        elif view == "executorch-export":
            options["executorch_decompositions"] = target.decomposition_changes()
        elif view == "compile" and getattr(target, "fullgraph", False):
            # Only a fullgraph project needs Dynamo's nopython verdict: a second run per class.
            options["compile_fullgraph"] = True
    if names:
        options["onnx_export_ops"] = sorted(names)
    return options
