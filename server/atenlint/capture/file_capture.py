"""One file, captured: import it, build each nn.Module class on meta, script it, list its ops.

The result is plain JSON-able data (the worker's answer); everything about targets,
ranges and messages happens in the parent. Runs inside the worker.
"""

from __future__ import annotations

import linecache
import math
import os
import time
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from .. import torchcompat
from ..worker.protocol import (
    AnalyseParams,
    BuildError,
    CallFacts,
    CallTree,
    CapturedOp,
    ClassAnswer,
    ClassRequest,
    CompileAnswer,
    ErrorInfo,
    FileAnswer,
    GraphOptions,
    ImportFailure,
    JsonValue,
    LibraryFacts,
    Site,
    captured_op,
    seen_in,
    static_params,
)
from ..worker.vocabulary import (
    CAPTURE_SCRIPT,
    CAPTURE_STATIC,
    CAPTURE_TRACE,
    EXPORT_VIEWS,
    JIT_VIEWS,
    STATUS_BUILD_FAILED,
    STATUS_IMPORT_FAILED,
    STATUS_OK,
    STATUS_SCRIPT_FAILED,
    STATUS_STATIC,
    VIEW_COMPILE,
    VIEW_DISPATCH,
    VIEW_SCRIPT,
)
from .decompose import UNKNOWN
from .delegate_view import DELEGATE_VIEWS, merged_delegate
from .executed_lines import executed_statements, on_executed_statements
from .graphs import give_way
from .loader import (
    BuildFailure,
    BuildRecord,
    build,
    current_build,
    import_file,
    import_stand_ins,
    last_build,
    module_classes,
    user_import_context,
)
from .paths import is_library_file
from .script import ScriptedOp, ScriptFailure, decomposed, script, script_ops

if TYPE_CHECKING:  # imported where inputs are inferred and traced (lazily, as the methods below do)
    from .infer_inputs import RecordedCalls
    from .trace import PhaseRun

PartialCallback = Callable[[FileAnswer], None]


def capture_file(request: AnalyseParams, on_partial: PartialCallback | None = None) -> FileAnswer:
    """Answer an `analyse` request: {path, module, roots, overlays, classes: {qualname: {init}}}.

    Never less than the static pass: when the file cannot be imported, every class of it
    is read from source instead (`capture: "static"`), and so is a class that cannot be built.

    `on_partial` (publish fast targets first): called once, before the toolchain graphs
    (jit, export, script views) are captured, with an answer of the same shape as the
    returned one holding only the `dispatch` view of every class (what MPS, CUDA and XLA
    judge) and `"partial": True`. The callback must consume the answer before it returns
    (the final answer shares its op entries). The final answer reuses that dispatch capture."""
    global _request_roots
    started = time.perf_counter()
    path = request["path"]
    imported: list[str] = []
    answer: FileAnswer = {"path": path, "module": request["module"], "classes": [], "imported": imported}
    _request_roots = list(request.get("roots", []))
    graph_options = request.get("graph_options") or {}
    if graph_options.get("executorch_decompositions"):
        # Before anything is decomposed: a file that cannot be imported is read from source
        # (`_static_file`), and ExecuTorch's view of it needs to_edge's table too.
        from .export_decompose import set_executorch_changes

        set_executorch_changes(graph_options["executorch_decompositions"])
    config = request.get("classes", {})
    candidates = list(config)
    skip = set(request.get("skip", ()))
    devices = tuple(request.get("devices") or ("cpu",))
    views = tuple(request.get("views") or DISPATCH_ONLY)
    module = None
    with user_import_context(request.get("roots", []), request.get("overlays", {}), imported):
        try:
            module = import_file(request["module"], path)
        except BaseException as error:
            if isinstance(error, KeyboardInterrupt):
                raise
            answer["import_error"] = _import_error(error, path, request.get("roots", []))
        stand_ins = import_stand_ins()
        if module is not None and stand_ins:
            # A package's __init__.py needs a package that is not installed; the file was
            # imported without running it: the note says so (ATL002, information).
            answer["import_error"] = {
                **_import_error(stand_ins[0].error, path, request.get("roots", [])),
                "stood_in": [stand_in.package for stand_in in stand_ins],
            }
        if module is not None:
            found = [(q, c) for q, c in module_classes(module, candidates) if q not in skip]
            budget = _inference_budget(request.get("infer_inputs", True))
            # Every class built, then its inputs inferred and its dispatch view traced, before
            # any toolchain graph. Inputs are inferred widest instance first (ties: the last
            # defined first): the model holding most of the file's parts covers them with one
            # guess of the file's budget, and a part its inferred run already ran is scripted
            # first (`_ClassCapture.infer`). All counted in classes, never in time. The answer
            # keeps the source order.
            pending = [
                _ClassCapture(
                    qualname,
                    cls,
                    module,
                    _with_factory_hooks(ClassRequest(**config.get(qualname, {})), qualname),
                    devices,
                    views,
                    request.get("graph_options"),
                    budget,
                )
                for qualname, cls in found
            ]
            for capture in reversed(pending):
                give_way()
                capture.start()
            for index in sorted(range(len(pending)), key=lambda i: (-pending[i].width, -i)):
                give_way()
                pending[index].prepare()
            if on_partial is None:
                for capture in reversed(pending):
                    give_way()
                    capture.finish()
                answer["classes"] = [c.finish() for c in pending]
            else:
                on_partial(
                    {
                        **answer,
                        "classes": [c.dispatch_only() for c in pending],
                        "partial": True,
                        "seconds": time.perf_counter() - started,
                    }
                )
                for capture in reversed(pending):
                    capture.finish()
                answer["classes"] = [c.finish() for c in pending]
    if module is None:
        answer["classes"] = _static_file(request, candidates, skip, devices, views, config)
        if on_partial is not None:
            on_partial(
                {
                    **answer,
                    "classes": [_only_views(c, DISPATCH_ONLY) for c in answer["classes"]],
                    "partial": True,
                    "seconds": time.perf_counter() - started,
                }
            )
    answer["seconds"] = time.perf_counter() - started
    return answer


DISPATCH_VIEW = VIEW_DISPATCH
DISPATCH_ONLY = (DISPATCH_VIEW,)


def _only_views(captured: ClassAnswer, views: tuple[str, ...]) -> ClassAnswer:
    """A copy of a class's capture holding only `views` (entries with no tree left dropped)."""
    ops: list[CapturedOp] = []
    for entry in captured.get("ops", []):
        trees = {v: t for v, t in (entry.get("trees") or {}).items() if v in views}
        if trees:
            ops.append({**entry, "trees": trees})
    out: ClassAnswer = {**captured, "ops": ops}
    if "covered" in out:
        out["covered"] = [v for v in out["covered"] if v in views]
    if "fallback" in out:
        out["fallback"] = {v: how for v, how in out["fallback"].items() if v in views}
    if "graph_errors" in out:
        out["graph_errors"] = [e for e in out["graph_errors"] if e.get("view") in views]
        if not out["graph_errors"]:
            del out["graph_errors"]
    return out


def _drop_fast_paths_off_device(captured: ClassAnswer) -> None:
    """MultiheadAttention's and TransformerEncoderLayer's fast paths run only on CPU and
    CUDA (torch checks the device first): a walk for MPS that could not decide the
    branch must not report them there."""
    from .static import CPU_CUDA_FAST_PATHS

    kept: list[CapturedOp] = []
    for entry in captured.get("ops", []):
        if entry.get("op") in CPU_CUDA_FAST_PATHS and "mps" in entry.get("devices", ()):
            entry["devices"] = [d for d in entry["devices"] if d != "mps"]
            if not entry["devices"]:
                continue
        kept.append(entry)
    if "ops" in captured:
        captured["ops"] = kept


_request_roots: list[str] = []  # the roots of the file being captured, for the static pass to follow imports


def _with_factory_hooks(config: ClassRequest, qualname: str) -> ClassRequest:
    """A class with keyword inputs, or inputs from the factories file, is traced: give the
    trace path an inputs entry to start from (`()` when there are only keyword inputs)."""
    if config.get("inputs"):
        return config
    if config.get("factories"):
        from ..factories import class_hook_names
        from .building import load_factories_file

        try:
            hooks = load_factories_file(config["factories"])
        except Exception:  # noqa: BLE001 - the build reports a broken factories file
            return config
        name = class_hook_names("inputs", qualname)[0]
        if callable(getattr(hooks, name, None)):
            config["inputs"] = f"{config['factories']}:{name}"
            return config
        if callable(getattr(hooks, class_hook_names("kwargs", qualname)[0], None)):
            config["inputs"] = "()"
            return config
    if config.get("kwargs"):
        config["inputs"] = "()"
    return config


def _static_file(
    request: AnalyseParams,
    candidates: list[str],
    skip: set[str],
    devices: tuple[str, ...],
    views: tuple[str, ...],
    config: dict[str, ClassRequest],
) -> list[ClassAnswer]:
    """Every class of a file that cannot be imported, read from its source."""
    from .static import static_capture

    overlays = request.get("overlays", {}) or {}
    path = request["path"]
    text = next((t for p, t in overlays.items() if os.path.abspath(p) == os.path.abspath(path)), None)
    try:
        static = static_capture(
            static_params(
                path,
                request["module"],
                text=text,
                classes=candidates,
                skip=sorted(skip),
                devices=list(devices),
                views=[v for v in views if v != COMPILE_VIEW],
                roots=request.get("roots", []),
            )
        )
    except Exception as error:  # noqa: BLE001 - the import error stays the finding
        return [
            {
                "qualname": name,
                "name": name.split(".")[-1],
                "module": f"{request['module']}.{name}",
                "status": STATUS_IMPORT_FAILED,
                "ops": [],
                "static_error": f"{type(error).__name__}: {error}",
            }
            for name in candidates
            if name not in skip
        ]
    classes = static.get("classes", [])
    for cls in classes:
        cls["status"], cls["capture"] = STATUS_IMPORT_FAILED, CAPTURE_STATIC
        cls["ops"] = _without_export_fast_paths(cls.get("ops", []))
        key = config.get(cls["qualname"], {}).get("key")
        if key:
            cls["key"] = key
    if COMPILE_VIEW in views:
        from .compile_static import file_breaks

        for cls, breaks in zip(classes, file_breaks(path, text, [c["qualname"] for c in classes])):
            cls["compile"] = breaks
    return classes


def _import_error(error: BaseException, path: str, roots: list[str] | None = None) -> ImportFailure:
    """What stopped the import: the type and message, the line of this file that led
    there, and the user's own line where it failed (`site`, perhaps in another file);
    `package` when it is a package that is not installed."""
    from .building import missing_package

    frames = traceback.extract_tb(error.__traceback__)
    in_file = [f for f in frames if os.path.abspath(f.filename) == os.path.abspath(path)]
    # A SyntaxError's line is in the file that failed to parse: this file's own line only
    # when that file is this one (an imported file's error is placed at the import here).
    same_file = (
        isinstance(error, SyntaxError) and error.filename and os.path.abspath(error.filename) == os.path.abspath(path)
    )
    line = getattr(error, "lineno", None) if same_file else None
    if line is None and in_file:
        line = in_file[-1].lineno
    user_roots = tuple(os.path.abspath(r) + os.sep for r in (roots or []))
    site: Site | None = None
    if isinstance(error, SyntaxError) and error.filename and error.lineno:
        site = {"file": os.path.abspath(error.filename), "line": error.lineno, "text": (error.text or "").strip()}
    for frame in reversed(frames):
        if site is not None:
            break
        filename = os.path.abspath(frame.filename)
        if frame.filename.startswith("<") or is_library_file(filename):
            continue
        if filename == os.path.abspath(path) or (user_roots and filename.startswith(user_roots)):
            site = {"file": filename, "line": frame.lineno or 0, "text": (frame.line or "").strip()}
    return {
        "type": type(error).__name__,
        "message": str(error) or type(error).__name__,
        "line": line,
        "site": site,
        "package": missing_package(error, tuple(roots or ())),
        "trace": "".join(traceback.format_exception(type(error), error, error.__traceback__))[-4000:],
    }


class _ClassCapture:
    """One class through every view its targets judge, in two steps so that the dispatch
    view can be published first: `start` builds the class and traces its dispatch view;
    `finish` adds the toolchain graphs (jit, export, script), reusing what was captured
    before (the instance, the meta inputs, the dispatch trace, the scripted module, the
    source's capture), so asking for the dispatch view first costs no second capture."""

    def __init__(
        self,
        qualname: str,
        cls: type,
        module: Any,
        config: ClassRequest,
        devices: tuple[str, ...],
        views: tuple[str, ...],
        graph_options: GraphOptions | None,
        budget: InferenceBudget | None = None,
    ):
        self.qualname, self.cls, self.module, self.config = qualname, cls, module, config
        self.devices, self.views, self.graph_options = devices, views, graph_options
        self.budget = budget  # inferred inputs when none are configured (None: never)
        self.instance: Any = None
        self.build_error: BuildError | None = None
        self.build_record: tuple[str, list[str]] | None = None  # which build worked, what it moved to meta
        self.seconds = 0.0
        self._inputs: Any = _UNSET  # the inputs expression evaluated on meta
        self._inputs_error: ErrorInfo | None = None
        # Inputs atenlint inferred (no `inputs` configured) and saw run: their expression.
        # A failure with them is never a finding (they were a guess): that view falls back.
        self.inferred: str | None = None
        # The submodule of another class's instance this class is analysed as (it could not
        # be built to fit on its own): `Enclosing().path`, said in the answer.
        self.adopted: str | None = None
        self._adopted_guess = False  # that enclosing class was built with guessed arguments
        self._before_adoption: tuple[Any, ...] = ()
        self._record: BuildRecord | None = None  # this class's build (the inputs' `model`)
        self._dispatch: tuple[list[CapturedOp], Any] | None = None  # entries, trace notes
        # The eval phase of the dispatch trace, recorded as the inferred inputs' check: the
        # dispatch trace then runs forward once more, in training mode only.
        self._eval_run: PhaseRun | None = None
        self._record_checks = True  # until a check of this class fails (`_check`)
        # The classes of the instance's submodules whose forward the dispatch trace reached.
        self._called: set[type] | None = None
        self._dispatch_failure: ErrorInfo | None = None
        self._scripted: Any = _UNSET
        self._script_failure: ScriptFailure | None = None
        self._script_capture: Any = None
        self._static: ClassAnswer | None = None  # the source's capture of every tree view
        self._final: ClassAnswer | None = None

    @property
    def arguments_inferred(self) -> str | None:
        """The constructor call atenlint inferred (nothing configured says how to build the
        class), from this class's build. Like inferred inputs, a guess: a front end that fails
        on the class built this way is no finding, and what it could not analyse is reported
        as not built (`_unbuilt_into`), as it was before arguments were inferred."""
        return self._record.arguments if self._record is not None else None

    # -- the two steps ----------------------------------------------------------------
    def start(self) -> None:
        """Build the class (`prepare` then infers its inputs and traces its dispatch view)."""
        started = time.perf_counter()
        if self.graph_options and self.graph_options.get("executorch_decompositions"):
            from .export_decompose import set_executorch_changes

            set_executorch_changes(self.graph_options["executorch_decompositions"])
        # Arguments are guessed only where inputs may be (`infer-inputs`) and the class has
        # no inputs of its own: inputs written for a configured build would not fit a guess.
        infer_arguments = self.budget is not None and not self.config.get("inputs") and not self.config.get("kwargs")
        try:
            self.instance = build(
                self.cls,
                self.module,
                self.config.get("init"),
                dict(self.config),
                infer_arguments=infer_arguments,
                roots=_request_roots,
            )
        except BuildFailure as failure:
            self.build_error = cast("BuildError", failure.as_json())  # loader.py's record, untyped there
        record = last_build()
        if record is not None and record.cls is self.cls:
            # which build worked: meta, meta + moved, CPU
            self.build_record = (record.path, record.moved[:10])
            self._record = record
        self.seconds += time.perf_counter() - started

    @property
    def width(self) -> int:
        """How many module classes the built instance holds (0: not built): the order in
        which a file's classes get their inputs inferred, widest first."""
        return len({type(m) for m in self.instance.modules()}) if self.instance is not None else 0

    def prepare(self) -> None:
        """Infer inputs (when none are configured, `infer`); trace the dispatch view when the
        class has inputs."""
        started = time.perf_counter()
        wants_trees = any(v != SCRIPT_VIEW for v in self.views)
        if self.budget is not None and self.instance is not None and not self.config.get("inputs") and wants_trees:
            self.infer(self.budget)
        if self.instance is not None and self._has_inputs() and DISPATCH_VIEW in self.views:
            self._dispatch_trace()
        self.seconds += time.perf_counter() - started

    def dispatch_only(self) -> ClassAnswer:
        """The class's capture as far as the dispatch view goes (the partial answer)."""
        started = time.perf_counter()
        if self.build_error is not None:  # the source's capture, whole, then filtered
            captured = _only_views(self.finish(), DISPATCH_ONLY)
        elif DISPATCH_VIEW not in self.views:
            captured = self._decorated(self._base())  # nothing of it is published early
        else:
            captured = self._decorated(self._assemble(DISPATCH_ONLY))
        self.seconds += time.perf_counter() - started
        return captured

    def finish(self) -> ClassAnswer:
        """The class's capture for every view."""
        if self._final is None:
            started = time.perf_counter()
            tree_views = tuple(v for v in self.views if v != COMPILE_VIEW)
            assembled = self._assemble(tree_views) if tree_views or self.build_error is not None else self._base()
            self._final = self._decorated(assembled)
            if COMPILE_VIEW in self.views:  # the slowest view, after every other (and the partial answer)
                compiled = self._final["compile"] = self._compile()
                if not tree_views and self.build_error is None:  # how the only view saw the class
                    self._final["capture"] = CAPTURE_STATIC if compiled.get("source") else CAPTURE_TRACE
                    if self.inferred is not None and not compiled.get("source"):
                        self._final["inputs_inferred"] = self.inferred
            self.seconds += time.perf_counter() - started
            self._final["seconds"] = self.seconds
        return self._final

    # -- assembling a capture for some views --------------------------------------------
    def _base(self) -> ClassAnswer:
        return {
            "qualname": self.qualname,
            "name": self.cls.__name__,
            "module": f"{self.module.__name__}.{self.qualname}",
            "status": STATUS_OK,
            "ops": [],
        }

    def _decorated(self, captured: ClassAnswer) -> ClassAnswer:
        key = self.config.get("key")
        if key:
            captured["key"] = key
        _drop_fast_paths_off_device(captured)
        if self.build_record is not None and captured.get("status") != STATUS_BUILD_FAILED:
            captured["build"], captured["moved_to_meta"] = self.build_record
            if self.arguments_inferred is not None:
                captured["arguments_inferred"] = self.arguments_inferred
        if self.adopted is not None and captured.get("status") != STATUS_BUILD_FAILED:
            captured["arguments_inferred"] = self.adopted  # built by the enclosing class: that call
        captured["seconds"] = self.seconds
        return captured

    def _assemble(self, views: tuple[str, ...]) -> ClassAnswer:
        result = self._base()
        tree_views = tuple(v for v in views if v != SCRIPT_VIEW)
        if self.build_error is not None and tree_views and self._may_adopt():
            # Not built on its own, but a submodule of a class this file's inferred run built.
            self._infer_from_enclosing(adopt=True)
        if self.build_error is not None:
            # Never less than the static pass: what cannot be built is read from its source.
            result["status"], result["build_error"] = STATUS_BUILD_FAILED, self.build_error
            return self._static_into(result, views)
        if self._has_inputs() and tree_views:
            # With example inputs, each toolchain's own front end captures the path really taken
            # (the torchscript target alone asks for no graph: torch.jit.script is its verdict,
            # and there is nothing to trace, so nothing "could not be traced").
            traced = self._trace(result, tree_views)
            if traced is None and self.adopted is not None:
                self._undo_adoption()
                return self._assemble(views)
            if traced is not None:
                # A delegate view has no stand-in: its target judges only the partitioner's
                # decisions (`delegate` facts), which no scripted graph holds.
                missing = tuple(v for v in tree_views if v not in traced.get("covered", ()) and v not in DELEGATE_VIEWS)
                if missing or SCRIPT_VIEW in views:
                    # A view the trace could not give (a fake-tensor gap) comes from the scripted
                    # graph, never from nothing; the torchscript target always asks torch.jit.script.
                    self._script_into(traced, missing, SCRIPT_VIEW in views)
                return traced
        self._script_into(result, tree_views, True)
        return result

    def _static_into(self, result: ClassAnswer, views: tuple[str, ...]) -> ClassAnswer:
        """The source's capture for `views` (read once, for every view, then filtered)."""
        if self._static is None:
            self._static = _static_fallback(
                {**self._base(), "status": STATUS_STATIC},
                self.cls,
                self.module,
                self.devices,
                tuple(v for v in self.views if v not in (SCRIPT_VIEW, COMPILE_VIEW)),
            )
        static = _only_views(self._static, views)
        static["ops"] = _without_export_fast_paths(static["ops"])
        if "static_error" in static:
            result["static_error"] = static["static_error"]
            return result
        result["ops"], result["submodules"] = static["ops"], static.get("submodules", [])
        result["capture"] = CAPTURE_STATIC
        return result

    def _script(self) -> Any:
        if self._scripted is _UNSET:
            give_way()
            try:
                self._scripted = script(self.instance)
            except ScriptFailure as failure:
                self._scripted, self._script_failure = None, failure
        return self._scripted

    def _script_into(self, result: ClassAnswer, views: tuple[str, ...], record_failure: bool) -> None:
        """Add the scripted graph's calls for `views` to `result` (the source's, when
        TorchScript cannot compile the class); `record_failure`: keep the script error.
        Standing in for views a trace could not give, they keep to the statements the
        class's traces ran (`executed_lines`): the real trace holds one side of a branch."""
        standing_in = bool(views) and result.get("capture") == CAPTURE_TRACE
        executed = executed_statements(result.get("ops", [])) if standing_in else None
        scripted = self._script()
        if scripted is None:
            failure = self._script_failure
            assert failure is not None
            if self.arguments_inferred is not None or self._adopted_guess:
                # Built with guessed arguments: TorchScript's refusal may be the guess's.
                if result.get("capture") != CAPTURE_TRACE and self._record is not None:
                    self._unbuilt_into(result, views)
                    return
                record_failure = False
            if record_failure:
                if result.get("capture") == CAPTURE_TRACE:
                    result["script_error"] = failure.as_json()  # the torchscript verdict; the trace stands
                else:
                    result["status"], result["script_error"] = STATUS_SCRIPT_FAILED, failure.as_json()
            if views:
                if result.get("capture") == CAPTURE_TRACE:
                    scratch = self._static_into({**result, "ops": []}, views)
                    result["ops"] += on_executed_statements(scratch.get("ops", []), executed)
                    result.setdefault("fallback", {}).update({v: CAPTURE_STATIC for v in views})
                else:
                    self._static_into(result, views)
            return
        if not views:
            return
        if self._script_capture is None:
            try:
                self._script_capture = script_ops(scripted, self.devices)
            except torchcompat.Unavailable:  # no call walk on this torch (in the answer's torch_degraded)
                if result.get("capture") == CAPTURE_TRACE:
                    scratch = self._static_into({**result, "ops": []}, views)
                    result["ops"] += on_executed_statements(scratch.get("ops", []), executed)
                    result.setdefault("fallback", {}).update({v: CAPTURE_STATIC for v in views})
                else:
                    self._static_into(result, views)
                return
        captured = self._script_capture
        result.setdefault("unresolved_calls", []).extend(captured.unresolved_calls)
        result["submodules"] = sorted(set(result.get("submodules", [])) | set(captured.submodules))
        result["ops"] = result.get("ops", []) + on_executed_statements(_script_entries(captured.ops, views), executed)
        if result.get("capture") == CAPTURE_TRACE:
            result.setdefault("fallback", {}).update({v: CAPTURE_SCRIPT for v in views})

    def _unbuilt_into(self, result: ClassAnswer, views: tuple[str, ...]) -> None:
        """A class built with guessed arguments that neither a trace nor TorchScript could
        analyse: reported as not built (its constructor needs arguments), read from source,
        exactly as when no arguments were guessed."""
        assert self._record is not None  # built, with inferred arguments
        missing = list(self._record.missing)
        result["status"] = STATUS_BUILD_FAILED
        failure = BuildFailure(
            f"its constructor needs {', '.join(missing)} (with the arguments atenlint inferred, "
            f"`{self.arguments_inferred}`, TorchScript could not compile it: a guess proves nothing)",
            missing,
            self._record.signature,
            kind="arguments",
        )
        result["build_error"] = cast("BuildError", failure.as_json())  # loader.py's record, untyped there
        result.pop("script_error", None)
        result.pop("capture", None)
        result.pop("fallback", None)
        result.pop("unresolved_calls", None)
        result.pop("submodules", None)
        self._static_into(result, views)

    def _compile(self) -> CompileAnswer:
        """The compile view (capture/dynamo_view.py): Dynamo on real CPU tensors with the
        example inputs; without inputs, the breaks the source shows for certain."""
        from .dynamo_view import compile_view

        if self.instance is None or not self._has_inputs() or self._meta_inputs() is None:
            from .compile_static import source_breaks

            return source_breaks(self.cls)
        inputs = self._meta_inputs()
        args = tuple(inputs) if isinstance(inputs, tuple) else (inputs,)
        kwargs = dict(getattr(inputs, "kwargs", None) or {})
        real, limit = self._real_inputs(args, kwargs)
        fullgraph = bool((self.graph_options or {}).get("compile_fullgraph"))
        answer = compile_view(self.instance, args, kwargs, real, limit, fullgraph)
        if self.inferred is not None and answer.get("error"):
            # Guessed inputs the user's code refuses say nothing about the model: the source's
            # certain breaks stand in (as the other views fall back to the scripted graph).
            from .compile_static import source_breaks

            return source_breaks(self.cls)
        return answer

    # -- with example inputs ------------------------------------------------------------
    def _has_inputs(self) -> bool:
        return bool(self.config.get("inputs")) or self.inferred is not None

    def _may_adopt(self) -> bool:
        """Whether a class that could not be built may be analysed as a submodule instance
        an inferred run of the file built (nothing configured for it says otherwise)."""
        return (
            self.budget is not None
            and not self.config.get("inputs")
            and not self.config.get("kwargs")
            and self.budget.covers(self.cls)
        )

    def infer(self, budget: InferenceBudget) -> None:
        """Infer inputs for this class, in its turn of the file's (widest first). A class no
        inferred run of the file has reached yet is guessed while the budget lasts. Any other
        (one such a run already ran as a submodule, or one past the budget) is scripted first
        and traced only when TorchScript cannot compile it: then a trace is all that keeps it
        off the source pass, so it is tried whatever the budget, with the arguments an
        enclosing run handed it first (`_infer_from_enclosing`: no guess), else with a guess
        of its own, whose run covers the parts it calls as a budgeted one does. Each class is
        traced at most once, so a file's cost stays bounded by its classes."""
        covered = budget.covers(self.cls)
        if not covered and budget.allows(self.cls):
            self._guess(budget.spend)
            return
        if self._script() is not None:
            return
        if covered and self._infer_from_enclosing(adopt=self.arguments_inferred is not None):
            return
        self._guess(budget.record)

    def _guess(self, count: Callable[[RecordedCalls], None]) -> None:
        """Inputs of this class's own guess (`_infer_inputs`); `count` the run when one works."""
        recorded = self._infer_inputs()
        if self.inferred is not None and recorded is not None:
            count(recorded)

    def _infer_inputs(self) -> RecordedCalls | None:
        """No inputs configured: try the candidates `infer_inputs` builds, in their fixed
        order, each by one eval-mode forward on fake tensors (no memory, no wall clock), and
        keep the first that runs. None running is no finding: the class is scripted. Returns
        the calls its submodules received in the run kept (`recording_calls`), None when no
        candidate runs."""
        from .infer_inputs import candidates, evaluate, recording_calls

        try:
            tried = candidates(self.cls, self.instance, self.module)
        except Exception:  # noqa: BLE001 - a signature or instance we cannot read: no guess
            return None
        for candidate in tried:
            try:
                inputs = evaluate(candidate.expression, "meta")
            except Exception:  # noqa: BLE001 - a candidate torch refuses (a size of 0): the next one
                inputs = None
            if inputs is None:
                continue
            with recording_calls(self.instance, self.cls.__name__, self.arguments_inferred is not None) as seen:
                runs = self._check(self.instance, inputs)
            if runs:
                self._inputs, self.inferred = inputs, candidate.expression
                return seen
        return None

    def _check(self, instance: Any, inputs: tuple[Any, ...]) -> bool:
        """Whether inferred inputs run `instance` (`forward_runs`). With the dispatch view
        asked for, the check is that trace's eval phase, recorded (`recorded_check`): kept
        with the inputs, it spares the dispatch trace a forward. Only until a check of the
        class fails: a recorded run costs two to four plain ones, and a class whose first
        guess fails tends to refuse several (in the test corpus, the first candidate ran for
        32 classes of 44; 68 of 112 checks failed, nearly all in the other 12)."""
        from .trace import forward_runs, recorded_check

        if DISPATCH_VIEW not in self.views or not self._record_checks:
            return forward_runs(instance, inputs)
        run = recorded_check(instance, inputs)
        if run is None:
            self._record_checks = False
            return False
        self._eval_run = run
        return True

    def _infer_from_enclosing(self, adopt: bool) -> bool:
        """Inputs for a class another class's inferred run of this file ran as a submodule:
        the arguments that run handed it, on this class's own instance; where they do not
        fit it, or it could not be built (`adopt`: built only with guessed arguments, or not
        at all), on the submodule instance that enclosing class built — the class as the
        model uses it, which the answer says. Deterministic: the enclosing runs come first
        (every class is built, and its inputs inferred, before any is captured)."""
        from .infer_inputs import evaluate

        seen = self.budget.seen_call(self.cls) if self.budget is not None else None
        if seen is None:
            return False
        try:
            inputs = evaluate(seen.expression, "meta")
        except Exception:  # noqa: BLE001 - an expression torch refuses: no inputs from there
            return False
        if self.instance is not None and self._check(self.instance, inputs):
            self._inputs, self.inferred = inputs, seen.expression
            return True
        if not adopt or not self._check(seen.instance, inputs):
            return False
        self._before_adoption = tuple(getattr(self, name) for name in _ADOPTION_REPLACES)
        self.instance, self._inputs, self.inferred = seen.instance, inputs, seen.expression
        self.adopted, self._adopted_guess = f"{seen.enclosing}().{seen.path}", seen.guessed_build
        self._record, self.build_record, self.build_error = None, None, None
        self._scripted, self._script_failure, self._script_capture = _UNSET, None, None
        return True

    def _undo_adoption(self) -> None:
        """The adopted submodule could not be traced either: the class is analysed as it was
        before (its own build, or its build error), never from the adopted instance alone."""
        for name, value in zip(_ADOPTION_REPLACES, self._before_adoption, strict=True):
            setattr(self, name, value)
        self.adopted, self._adopted_guess, self._script_capture = None, False, None
        self._dispatch, self._dispatch_failure = None, None
        self._eval_run, self._called = None, None

    def _meta_inputs(self) -> Any:
        """The inputs expression evaluated once, on meta; None (and `_inputs_error`) when it raises."""
        if self._inputs is _UNSET:  # (inferred inputs are set when they are found)
            from .trace import build_inputs

            expression = self.config["inputs"]
            try:
                with current_build(self._record):
                    self._inputs = build_inputs(expression, self.module)
            except Exception as error:  # noqa: BLE001 - the user's expression is wrong: say so
                self._inputs = None
                self._inputs_error = {
                    "message": f"the inputs expression `{expression}` raised {type(error).__name__}: {error}",
                    "site": None,
                }
        return self._inputs

    def _dispatch_trace(self) -> None:
        from .trace import TraceFailure, trace_ops

        inputs = self._meta_inputs()
        if inputs is None or self._dispatch is not None or self._dispatch_failure is not None:
            return
        eval_run, self._eval_run = self._eval_run, None  # recorded on these inputs, this instance
        called: set[type] = set()
        try:
            traced, notes = trace_ops(self.instance, inputs, eval_run=eval_run, called=called)
        except TraceFailure as failure:
            self._dispatch_failure = {**cast("ErrorInfo", failure.as_json()), "view": DISPATCH_VIEW}  # trace.py's
        else:
            self._dispatch = (_dispatch_entries(traced, self.devices), notes)
            self._called = called

    def _trace(self, result: ClassAnswer, views: tuple[str, ...]) -> ClassAnswer | None:
        """The class captured with its example inputs, each view by its own front end: the
        dispatcher (fake tensors under a dispatch mode) for device backends, `torch.jit.trace`
        for the TorchScript-based converters, `torch.export` for the decomposed-graph ones.
        `covered` lists the views it gave; None (with `trace_error` set) when nothing could
        be traced, so scripting is tried next."""
        from .graphs import GraphFailure, GraphFailures, export_graph_ops, jit_graph_ops

        inputs = self._meta_inputs()
        if inputs is None:
            if self._inputs_error is not None:
                result["trace_error"] = self._inputs_error
            return None
        instance = self.instance
        args = tuple(inputs) if isinstance(inputs, tuple) else (inputs,)
        kwargs = dict(getattr(inputs, "kwargs", None) or {})
        ops: list[CapturedOp] = []
        covered: list[str] = []
        failures: list[ErrorInfo] = []
        if DISPATCH_VIEW in views:
            self._dispatch_trace()
            if self._dispatch is not None:
                entries, notes = self._dispatch
                ops += entries
                covered.append(DISPATCH_VIEW)
                if notes:
                    result["trace_notes"] = notes
            elif self._dispatch_failure is not None:
                failures.append(self._dispatch_failure)
        jit_wanted = tuple(v for v in views if v in JIT_VIEWS)
        export_wanted = tuple(v for v in views if v in EXPORT_VIEWS)
        for wanted in (jit_wanted, export_wanted):
            if not wanted:
                continue
            give_way()
            try:
                if wanted is jit_wanted:
                    found = jit_graph_ops(instance, args, kwargs, wanted, *self._real_inputs(args, kwargs))
                else:
                    found = export_graph_ops(instance, args, kwargs, wanted, dict(self.graph_options or {}))
            except GraphFailures as partial:  # some of these views were captured
                failures += [f.as_json() for f in partial.failures]
                failed = {f.view for f in partial.failures}
                ops += _graph_entries(partial.found)
                covered += [v for v in wanted if v not in failed]
                continue
            except GraphFailure as failure:
                failures.append(cast("ErrorInfo", failure.as_json()))  # graphs.py's record, untyped there
                continue
            except Exception as error:  # noqa: BLE001 - a gap of ours: that view falls back
                failures.append(
                    {"view": wanted[0], "message": f"{type(error).__name__}: {str(error)[:300]}", "site": None}
                )
                continue
            ops += _graph_entries(found)
            covered += wanted
        instance.eval()
        if self.inferred is not None:
            # Guessed inputs: a front end that fails on them says nothing about the model (its
            # views come from the scripted graph, `fallback`), unless the real toolchain fails
            # there whatever the values (`toolchain_fails`: a guard on a data-dependent value in
            # the user's own code; torch.export fakifies every input). That failure is kept,
            # marked as found with a guess: a warning, not the error configured inputs give.
            failures = [
                cast("ErrorInfo", {**f, "inputs_inferred": self.inferred}) for f in failures if f.get("toolchain_fails")
            ]
            if not covered:
                if failures:
                    result["graph_errors"] = failures
                return None
            result["inputs_inferred"] = self.inferred
            notes = [n for n in result.get("trace_notes", []) if "trace failed" not in n]
            result.pop("trace_notes", None)
            if notes:
                result["trace_notes"] = notes
        if not covered:
            if failures and all(f.get("toolchain_fails") for f in failures):
                # torch.export itself fails on the user's code (the only front end asked): not a
                # trace failure of ours but the toolchain's verdict (EXPORT001); the class is
                # judged from its scripted graph for everything else.
                result["graph_errors"] = failures
                return None
            first = failures[0] if failures else {"message": "nothing could be traced", "site": None}
            result["trace_error"] = {"message": first["message"], "site": first.get("site")}
            return None
        if failures:
            result["graph_errors"] = failures
        result["ops"], result["capture"], result["covered"] = ops, CAPTURE_TRACE, covered
        # The classes this trace ran (as the scripted walk lists the ones it went through),
        # so a part that cannot be built on its own is not reported as unanalysed: those whose
        # forward the dispatch trace reached; a part the model holds but never calls is no
        # part of this analysis. (Without that trace, every part the instance holds.)
        reached = self._called if DISPATCH_VIEW in covered and self._called is not None else None
        result["submodules"] = sorted(
            {
                f"{type(m).__module__}.{type(m).__qualname__}"
                for m in instance.modules()
                if m is not instance and (reached is None or type(m) in reached)
            }
        )
        return result

    def _real_inputs(
        self, meta_args: tuple[Any, ...], meta_kwargs: dict[str, Any]
    ) -> tuple[tuple[tuple[Any, ...], dict[str, Any]] | None, int | None]:
        """The inputs as real CPU tensors for torch.jit.trace, and the limit on the real
        weights it may allocate (None: the default). Inferred inputs get a lower one: a
        guess must not make a class cost more than its scripted graph by much."""
        if self.inferred is None:
            with current_build(self._record):
                return _real_inputs(self.config["inputs"], self.module, meta_args, meta_kwargs), None
        from .graphs import _tensors_in
        from .infer_inputs import INFERRED_REAL_LIMIT_BYTES, evaluate

        size = sum(t.numel() * t.element_size() for t in _tensors_in(meta_args))
        if size > INFERRED_REAL_LIMIT_BYTES // 4:
            return None, INFERRED_REAL_LIMIT_BYTES
        return (evaluate(self.inferred, "cpu"), {}), INFERRED_REAL_LIMIT_BYTES


_UNSET: Any = object()
# What a class adopting an enclosing class's submodule instance replaces (its own build, its
# inputs, its TorchScript result), kept to be restored when that instance cannot be traced either.
_ADOPTION_REPLACES = (
    "instance",
    "_inputs",
    "inferred",
    "_record",
    "build_record",
    "build_error",
    "_scripted",
    "_script_failure",
)


class InferenceBudget:
    """How many classes of one file are traced with inferred inputs before TorchScript is
    tried on them, counted in classes (never in seconds: a loaded machine gets the same
    analysis): at most `INFERRED_CLASSES_PER_FILE`, widest first. Past it, and for a class
    whose type an inferred trace of the file already runs as a submodule (`covers`: its
    calls are in that trace, at the same lines), TorchScript comes first, and a class it
    cannot compile is traced outside the count (`record`) — the trace is then all that
    keeps it off the source pass: with the arguments an enclosing run handed it (`seen`),
    else with its own guess. Each class of the file is traced at most once, so a file's
    cost stays bounded by its classes."""

    def __init__(self, classes: int | None = None):
        from .infer_inputs import INFERRED_CLASSES_PER_FILE

        self.remaining = INFERRED_CLASSES_PER_FILE if classes is None else classes
        self.covered: set[type] = set()
        self.seen: dict[type, Any] = {}  # type -> infer_inputs.SeenCall, the first enclosing run's

    def allows(self, cls: type) -> bool:
        return self.remaining > 0

    def covers(self, cls: type) -> bool:
        return cls in self.covered

    def seen_call(self, cls: type) -> Any:
        """The call an inferred run of the file made to a `cls` submodule (SeenCall), or None."""
        return self.seen.get(cls)

    def spend(self, recorded: RecordedCalls) -> None:
        """One class of the budget traced with inferred inputs (`record`)."""
        self.remaining -= 1
        self.record(recorded)

    def record(self, recorded: RecordedCalls) -> None:
        """A class traced with inferred inputs: its run (`recorded`, an
        `infer_inputs.RecordedCalls`) covers the classes whose forward it called. A class
        the model holds but never calls is not covered: it goes its own way (its own guess,
        its scripted graph, its source), never counted as judged on that trace."""
        self.covered.update(recorded.called)
        for cls, call in recorded.first.items():
            self.seen.setdefault(cls, call)


def _inference_budget(setting: Any) -> InferenceBudget | None:
    """The request's `infer_inputs`: true (the default budget), false or 0 (never), or
    how many classes of the file are traced with inferred inputs before TorchScript is
    tried on them (a class TorchScript cannot compile is tried whatever the number)."""
    if setting is True:
        return InferenceBudget()
    if isinstance(setting, int) and not isinstance(setting, bool) and setting > 0:
        return InferenceBudget(setting)
    return None


def _views_reaching(op: str, views: tuple[str, ...]) -> tuple[str, ...]:
    """The views a call of the scripted or source graph can reach. The native fast paths of
    MultiheadAttention and TransformerEncoderLayer are branches chosen at run time; a
    graph captured by torch.export never takes them (MultiheadAttention checks for make_fx
    tracing; TransformerEncoderLayer's is not taken under export either, also under
    no_grad), so the export toolchains (ExecuTorch, the dynamo ONNX exporter, core ATen)
    never see those ops."""
    from .static import CPU_CUDA_FAST_PATHS

    if op not in CPU_CUDA_FAST_PATHS:
        return views
    return tuple(v for v in views if v not in EXPORT_VIEWS)


def _without_export_fast_paths(ops: list[CapturedOp]) -> list[CapturedOp]:
    kept: list[CapturedOp] = []
    for entry in ops:
        reaching = _views_reaching(entry.get("op", ""), tuple(entry.get("trees") or ()))
        if len(reaching) != len(entry.get("trees") or ()):
            if not reaching:
                continue
            entry = {**entry, "trees": {v: entry["trees"][v] for v in reaching}}
        kept.append(entry)
    return kept


SCRIPT_VIEW = VIEW_SCRIPT  # not a tree: the torchscript target's verdict is whether torch.jit.script compiles
COMPILE_VIEW = VIEW_COMPILE  # not a tree: the compile target's own record (capture/dynamo_view.py)


def _real_inputs(
    expression: str, module: Any, meta_args: tuple[Any, ...], meta_kwargs: dict[str, Any]
) -> tuple[Any, ...] | None:
    """The user's example inputs as real CPU tensors (for torch.jit.trace, which needs real
    values: `.item()` and masks then take their real path), or None when the expression
    cannot be evaluated off meta or would be too large (sized from the meta inputs)."""
    from .graphs import REAL_TENSOR_LIMIT_BYTES, _tensors_in
    from .loader import evaluate_inputs

    size = sum(t.numel() * t.element_size() for t in _tensors_in((meta_args, meta_kwargs)))
    if size > REAL_TENSOR_LIMIT_BYTES // 4:
        return None
    try:
        inputs = evaluate_inputs(expression, module)
    except Exception:  # noqa: BLE001 - zeros and noise of the same shapes stand in
        return None
    args = tuple(inputs) if isinstance(inputs, tuple) else (inputs,)
    if any(t.device.type != "cpu" for t in _tensors_in(args)):
        return None
    return args, dict(getattr(inputs, "kwargs", None) or {})


def _dispatch_entries(traced: list[Any], devices: tuple[str, ...]) -> list[CapturedOp]:
    merged: dict[tuple[Any, ...], CapturedOp] = {}
    for op in traced:
        facts: CallFacts = {
            "dtypes_in": op.dtypes_in,
            "dtypes_out": op.dtypes_out,
            "max_dim": op.max_dim,
            "float64_origin": op.float64_origin,
            "float64_first_use": op.float64_first_use,
            "complex_unsupported": op.complex_unsupported,
            "arg_shapes": op.arg_shapes,
            "guessed": op.guessed,
        }
        key = (op.op, op.sites)
        entry = merged.get(key)
        if entry is None:
            entry = merged[key] = captured_op(
                op.op,
                [site.as_json(library=is_library_file(site.file)) for site in op.sites],
                {DISPATCH_VIEW: with_library_facts(op.dispatch)},
                conditional=True,
                devices=list(devices),
                facts={},
            )
        entry["conditional"] = False  # a trace saw it run
        _merge_facts(entry.setdefault("facts", {}), facts)
        seen_in(entry, "train" if op.training else "eval")
    return list(merged.values())


def _script_entries(calls: list[ScriptedOp], views: tuple[str, ...]) -> list[CapturedOp]:
    """The scripted graph's calls as captured calls: one entry per
    overload, sites and constant arguments, with every phase and device that reached it."""
    merged: dict[tuple[Any, ...], CapturedOp] = {}
    for call in calls:
        args = _json_args(call.known)
        key = (call.op, call.sites, repr(args))
        entry = merged.get(key)
        if entry is None:
            entry = merged[key] = captured_op(
                call.op,
                [site.as_json(library=is_library_file(site.file)) for site in call.sites],
                {
                    view: with_library_facts(decomposed(call.op, call.known, view))
                    for view in _views_reaching(call.op, views)
                },
                conditional=True,
                args=args,
            )
        entry["conditional"] = entry.get("conditional", True) and call.conditional
        seen_in(entry, "train" if call.training else "eval", call.device)
    return list(merged.values())


def _graph_entries(found: list[Any]) -> list[CapturedOp]:
    """A toolchain graph's nodes as captured calls: each one is already what that toolchain
    converts, so its tree is the node itself (the views share an entry where they agree)."""
    merged: dict[tuple[Any, ...], CapturedOp] = {}
    for node in found:
        key = (node.op, node.sites)
        entry = merged.get(key)
        if entry is None:
            entry = merged[key] = captured_op(
                node.op,
                [site.as_json(library=is_library_file(site.file)) for site in node.sites],
                {},
                conditional=False,
                phases=["eval"],
                facts={},
            )
        leaf: CallTree = {"op": node.op, "calls": None, "graph": True}
        if node.library:
            leaf["library"] = node.library
        if node.delegate:
            leaf["delegate"] = merged_delegate(entry["trees"].get(node.view), node.delegate)
        entry["trees"][node.view] = leaf
    return list(merged.values())


def with_library_facts(tree: CallTree | None) -> CallTree | None:
    """The tree with what an installed library registered for each of its (non-aten) ops
    (kernels per dispatch key, ONNX symbolics), so every target can judge them; a copy,
    since trees are cached."""
    if tree is None or not _has_library_op(tree):
        return tree
    from .graphs import library_facts

    def copy(node: CallTree) -> CallTree:
        out: CallTree = {**node}
        if not node["op"].startswith("aten::") and "::" in node["op"]:
            out["library"] = cast("LibraryFacts", library_facts(node["op"]))  # graphs.py's record, untyped there
        children = node.get("calls")
        if children:
            out["calls"] = [copy(child) for child in children]
        return out

    return copy(tree)


def _has_library_op(tree: CallTree) -> bool:
    if "::" in tree["op"] and not tree["op"].startswith(("aten::", "prim::")):
        return True
    return any(_has_library_op(child) for child in tree.get("calls") or ())


def _merge_facts(facts_so_far: CallFacts, facts: CallFacts) -> None:
    # Merged key by key, by the kind of value each fact has.
    into = cast("dict[str, Any]", facts_so_far)
    for key, value in facts.items():
        if isinstance(value, dict) or (key in into and into[key] is None and not isinstance(value, bool)):
            # Shapes hold only when every run of the call agrees on them.
            into[key] = value if into.get(key, value) == value else None
        elif isinstance(value, list):
            into[key] = sorted(set(into.get(key, [])) | set(value))
        elif isinstance(value, bool):
            into[key] = into.get(key, False) or value
        else:
            into[key] = max(into.get(key, 0), value)


def _static_fallback(
    result: ClassAnswer, cls: type, module: Any, devices: tuple[str, ...], views: tuple[str, ...]
) -> ClassAnswer:
    """The class cannot be built or scripted: read its source instead (never runs it again)."""
    from .static import static_class_from_text

    path: str = getattr(module, "__file__", None) or ""
    try:
        text = "".join(linecache.getlines(path)) if path else ""
        if not text:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        static = static_class_from_text(
            path, text, module.__name__, result["qualname"], devices, views, roots=_static_roots(path, module.__name__)
        )
    except Exception as error:  # noqa: BLE001 - the build or script failure stays the finding
        result["static_error"] = f"{type(error).__name__}: {error}"
        return result
    result["ops"] = static["ops"]
    result["submodules"] = static.get("submodules", [])
    result["capture"] = CAPTURE_STATIC
    return result


def _static_roots(path: str, module_name: str) -> list[str]:
    """Where the static pass looks for the project's modules: the folder the module's
    dotted name starts from, then the request's roots."""
    folder = os.path.dirname(os.path.abspath(path))
    depth = module_name.count(".") + (1 if os.path.basename(path) == "__init__.py" else 0)
    for _ in range(depth):
        folder = os.path.dirname(folder)
    return list(dict.fromkeys([folder] + [os.path.abspath(r) for r in _request_roots]))


def _json_args(known: dict[str, Any]) -> dict[str, JsonValue]:
    """The constant arguments of a call, where JSON can hold them (for fix conditions)."""
    out: dict[str, JsonValue] = {}
    for name, value in known.items():
        if value is UNKNOWN:
            continue
        if _jsonable(value):
            out[name] = list(value) if isinstance(value, tuple) else value
    return out


def _jsonable(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, float, str)):
        return not (isinstance(value, float) and math.isnan(value))
    if isinstance(value, (list, tuple)):
        return all(_jsonable(v) for v in value)
    return False
