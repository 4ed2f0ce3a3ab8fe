"""Worker process entry point, started isolated by `pool.py` (`python -I`, from its own
temporary folder, atenlint loaded from an explicit location): no file of the user's
workspace is on `sys.path` until an analysis appends the project's roots, after the
standard library and torch.

Speaks JSON lines on a private copy of the original stdout; the user's code gets
stderr as its stdout and /dev/null as its stdin, so a stray print or input() can
neither corrupt nor stall the protocol. Needs only the standard library and torch.

This process is a *zygote*: it imports torch and atenlint once (`hello`), then answers
each `analyse`/`static` request in a child it forks (copy-on-write: nothing is imported
again). The child confines itself with the kernel's help (`confine.py`: Landlock,
seccomp, resource limits, death with this process) before it touches the user's file,
runs the analysis inside the audit-hook sandbox (`sandbox.py`, the second layer), writes
its answer and exits: monkeypatches, threads, `sys.modules`, environment and sandbox
switches of one file never reach the next. Where `fork` is unavailable (not Linux or macOS), the
analysis runs in this process and is followed by a state reset (`state.py`); when the
state cannot be reset, the answer asks the parent to recycle this worker.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import platform
import select
import signal
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, TypeVar, cast

from .protocol import (
    PROTOCOL_VERSION,
    AnalyseParams,
    ClassRequest,
    Containment,
    FileAnswer,
    FileParams,
    Hello,
    ProtocolError,
    Refusal,
    WarmAnswer,
    check_analyse_params,
    check_request,
    check_static_params,
    check_target_data_params,
    check_warm_params,
    error_reply,
    partial,
    reply,
)
from .vocabulary import CAPTURE_SCRIPT, CAPTURE_TRACE, DELEGATE_VIEW_PREFIX, DELEGATE_VIEWS, FAST_VIEW, JIT_VIEWS

PartialSink = Callable[[FileAnswer], None]


def _claim_stdio() -> tuple[int, Any]:
    protocol_in = os.dup(0)
    protocol_out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - lives as long as the process
    sys.stdout = sys.stderr
    return protocol_in, protocol_out


def _hello() -> Hello:
    started = time.perf_counter()
    import importlib.util

    import torch

    from atenlint import torchcompat

    _preload()  # the capture code too
    from atenlint.capture.loader import protect_loaded_modules

    protect_loaded_modules()  # from now on a workspace file never stands in for these

    torchgen = importlib.util.find_spec("torchgen")
    native_yaml = None
    if torchgen is not None and torchgen.submodule_search_locations:
        native_yaml = os.path.join(
            next(iter(torchgen.submodule_search_locations)), "packaged", "ATen", "native", "native_functions.yaml"
        )

    return {
        "protocol": PROTOCOL_VERSION,
        "torch": torch.__version__.split("+")[0],
        "torch_full": torch.__version__,
        "torch_dir": os.path.dirname(torch.__file__),
        "python": sys.version.split()[0],
        "native_yaml": native_yaml,
        "executable": sys.executable,
        "pid": os.getpid(),
        # Kernels registered from Python (torch.library) are not in native_functions.yaml.
        "registered_kernels": {key: sorted(torchcompat.registrations_for_key(key)) for key in ("MPS", "CUDA")},
        # The capabilities this torch lacks (private APIs it moved), each with what is lost.
        "torch_degraded": torchcompat.probe_all(),
        "import_seconds": time.perf_counter() - started,
        "sandbox": _sandbox_installed(),
        "run_dir": _Options.run_dir,
        "isolated": bool(sys.flags.isolated),
        "containment": _containment(),
    }


def _preload() -> None:
    """Import every capture module, once, here: each file's forked child then finds them
    imported (a module first imported by a child would be imported again by every later
    one, and a child whose file removed `torch` from `sys.modules` could not import it at
    all). torch's lazily imported front ends wait for the first request that needs them
    (`_preload_front_ends`): torch.jit.trace alone, what the TorchScript exporters run on
    classes with example inputs, never does."""
    import importlib
    import pkgutil

    from atenlint import torchcompat

    # Before the capture modules and torch's lazily imported ones: torch's dynamo-disabling
    # wrappers then import torch._dynamo only for the views that run it, never for the
    # dispatcher's forwards or scripting's decompositions on meta tensors.
    torchcompat.defer_dynamo_import()
    from atenlint import capture

    for found in pkgutil.iter_modules(capture.__path__):
        importlib.import_module(f"atenlint.capture.{found.name}")
    with contextlib.suppress(ImportError):
        importlib.import_module(torchcompat.JIT_TRACE_FRONT_END)
    # `platform.processor()` runs `uname -p` the first time (torch's OpInfo database asks it
    # when a trace meets complex tensors): asked here, its answer is cached for every child,
    # which may not start a process.
    platform.processor()
    # What torch and atenlint made as they were imported lives as long as this process:
    # frozen, no collection walks it again (the collections that importing a front end
    # triggers, and the full one after each warm-up's analysis, took about half of a
    # TorchScript-only warm-up and a quarter of loading the front ends on 2 loaded cores).
    # Children never collected it anyway (`_forked` freezes before each fork).
    import gc

    gc.freeze()


def _preload_front_ends() -> None:
    """Import torch's front ends that capture modules load lazily (torch._dynamo above all:
    as long as importing torch itself on 2 loaded cores) and run their first calls, once,
    before the first child that may need them is forked."""
    if _Options.front_ends_loaded:
        return
    _Options.front_ends_loaded = True
    _Options.front_ends_wanted = False
    _Options.meta_front_ends_loaded = True  # the symbolic shapes are among them
    from atenlint import torchcompat

    _import_front_ends(torchcompat.LAZY_FRONT_ENDS)
    # After Dynamo: the first calls of torch's dynamo-disabling wrappers here make what
    # every child would otherwise make again (torchcompat.defer_dynamo_import).
    _warm_meta_kernels()


def _preload_meta_front_ends() -> None:
    """What the dispatcher view and the scripted path need before a child: torch's Python
    meta kernels' first calls and the symbolic shapes their `torch._check` imports (with
    sympy), once. Not torch._dynamo: on meta tensors nothing runs it (a child whose
    forward does, through fake tensors, says so and the zygote loads the rest then)."""
    if _Options.meta_front_ends_loaded:
        return
    _Options.meta_front_ends_loaded = True
    _preload_symbolic_shapes()
    _warm_meta_kernels()


def _warm_meta_kernels() -> None:
    from atenlint.capture.decompose import warm_up

    from .sandbox import SANDBOX

    with SANDBOX.permitted():  # torch's own calls, as the imports
        warm_up()


def _import_front_ends(names: Sequence[str]) -> None:
    """Import torch's modules `names` (one this torch lacks is skipped: its capture says so)
    and keep what they pulled in as the library's (`protect_loaded_modules`). torch's own
    imports, never the user's code, even when an earlier analysis installed the sandbox
    (torch._dynamo asks for a temporary folder as it is imported)."""
    import importlib

    from atenlint.capture.loader import protect_loaded_modules

    from .sandbox import SANDBOX

    with SANDBOX.permitted():
        for name in names:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001, S112 - a front end this torch lacks: its capture says so
                continue
    protect_loaded_modules()


def _needs_front_ends(views: Sequence[str]) -> bool:
    """Whether a request may use torch's lazily imported front ends (fake tensors,
    torch.export, Dynamo): any view but the jit ones and the dispatcher's. The dispatcher
    view records forwards on meta tensors, and scripting, input inference and the source
    pass decompose calls on meta: they need only torch's meta kernels
    (`_preload_meta_front_ends`)."""
    return any(view not in JIT_VIEWS and view != FAST_VIEW for view in views)


def _needs_meta_kernels(views: Sequence[str], paths: Sequence[str]) -> bool:
    """Whether a request runs torch's Python meta kernels: any view but the jit ones, and
    any class without example inputs. Only torch.jit.trace of classes with inputs does without."""
    return CAPTURE_SCRIPT in paths or any(view not in JIT_VIEWS for view in views)


def _front_ends_absent() -> tuple[str, ...]:
    """torch's lazily imported front ends this process has not imported (yet)."""
    from atenlint import torchcompat

    return tuple(name for name in torchcompat.LAZY_FRONT_ENDS if name not in sys.modules)


# What a child writes on its status pipe after its answer: replied, or replied having
# imported front ends its zygote lacked (a user's file that imports torch._dynamo itself, a
# trace that fell back to scripting): the zygote then loads them before its next child,
# which inherits them, instead of every later child importing them again. Having imported
# only torch's symbolic shapes (and sympy: a meta kernel's `torch._check` in a file whose
# classes are only traced by torch.jit.trace), the zygote imports just those, not the
# front ends that child did not need (torch._dynamo: seconds).
_REPLIED = b"1"
_REPLIED_LOADING_FRONT_ENDS = b"2"
_REPLIED_LOADING_SYMBOLIC_SHAPES = b"3"
_REPLIES = (_REPLIED, _REPLIED_LOADING_FRONT_ENDS, _REPLIED_LOADING_SYMBOLIC_SHAPES)


def _replied_status(loaded: Sequence[str]) -> bytes:
    """A child's word for its zygote, given the front ends it imported that the zygote lacked."""
    from atenlint import torchcompat

    if not loaded:
        return _REPLIED
    if set(loaded) <= {torchcompat.SYMBOLIC_SHAPES_FRONT_END}:
        return _REPLIED_LOADING_SYMBOLIC_SHAPES
    return _REPLIED_LOADING_FRONT_ENDS


def _preload_symbolic_shapes() -> None:
    """Import torch's symbolic shapes (and sympy) before the next child: for torch's meta
    kernels (`_preload_meta_front_ends`), or after one child needed them
    (`_REPLIED_LOADING_SYMBOLIC_SHAPES`)."""
    _Options.symbolic_shapes_wanted = False
    from atenlint import torchcompat

    _import_front_ends((torchcompat.SYMBOLIC_SHAPES_FRONT_END,))


_WARM_SAMPLE = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class AtenlintWarmUp(nn.Module):
    def __init__(self, embedding: bool = True):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.norm = nn.BatchNorm2d(8)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.lin = nn.Linear(8, 16)
        self.ln = nn.LayerNorm(16)
        self.emb = nn.Embedding(10, 16) if embedding else None
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        y = F.relu(self.norm(self.conv(x)))
        y = F.max_pool2d(y, 2)
        y = F.interpolate(y, scale_factor=2.0, mode="bilinear", align_corners=False)
        y = self.pool(y).flatten(1)
        h = self.ln(F.gelu(self.lin(y)))
        if self.emb is not None:
            h = h + self.emb(torch.zeros(y.shape[0], dtype=torch.long))
        h = torch.cat([h, torch.sigmoid(h), torch.tanh(h)], dim=-1)
        return self.drop(F.softmax(h.reshape(h.shape[0], 3, 16).transpose(1, 2), dim=-1)).sum(-1)
"""


# The capture paths a warm-up runs the sample through: traced with example inputs, scripted without.
_WARM_PATHS = (CAPTURE_TRACE, CAPTURE_SCRIPT)
_WARM_INPUTS: dict[str, ClassRequest] = {CAPTURE_TRACE: {"inputs": "torch.randn(2, 3, 8, 8)"}, CAPTURE_SCRIPT: {}}


def _warm_for(
    views: Sequence[str],
    paths: Sequence[str] = _WARM_PATHS,
    idle: bool = False,
    request_waiting: Callable[[], bool] | None = None,
) -> None:
    """Before the first child that needs them, warm the views a request asks for along the
    capture paths its classes take (once each): the cost of a view is paid only by sessions
    that judge it (the dispatcher view the front ends alone, about a second; the torch.export
    views the sample's analysis too, about 5 s on 2 cores), never at worker start, and a run
    whose classes all have example inputs never pays for scripting the sample. `idle`: no
    request waits meanwhile (see `_warm_analysis`). `request_waiting` (an idle warm-up): the
    sample's analysis stops at the next point between two front-end calls once it says a
    request has come (graphs.GivingWay is raised): those views stay to warm, later."""
    # A request that names no view gets the dispatcher's (file_capture's default).
    views_asked = views or (FAST_VIEW,)
    meta_kernels = _needs_meta_kernels(views_asked, paths)
    # An idle warm-up (the editor's) loads them all even for the dispatcher view: a forward
    # that meta tensors cannot run is recorded again on fake tensors, which would otherwise
    # import Dynamo in that file's child, on the way to its squiggles.
    if _Options.front_ends_wanted or _needs_front_ends(views_asked) or (idle and meta_kernels):
        _preload_front_ends()
    elif meta_kernels:
        _preload_meta_front_ends()
    elif _Options.symbolic_shapes_wanted:
        _preload_symbolic_shapes()
    missing = [(view, path) for view in dict.fromkeys(views) for path in paths if (view, path) not in _Options.warmed]
    if not missing:
        return
    _Options.warmed.update(missing)
    _Options.pending_warm[:] = [view for view in _Options.pending_warm if view not in _warmed_views()]
    sampled = [(view, path) for view, path in missing if view not in _FRONT_ENDS_SUFFICE]
    if not sampled:
        return
    from atenlint.capture.graphs import GivingWay

    try:
        _warm_analysis(
            tuple(dict.fromkeys(v for v, _ in sampled)),
            tuple(dict.fromkeys(p for _, p in sampled)),
            idle,
            request_waiting,
        )
    except GivingWay:
        # Not warmed: warmed again, from the start, once no request waits (what the stopped
        # analysis compiled and cached stays: the next attempt is shorter).
        _Options.warmed.difference_update(sampled)
        for view in reversed(dict.fromkeys(v for v, _ in sampled)):
            if view not in _Options.pending_warm:
                _Options.pending_warm.insert(0, view)
        raise


# The views for which the front ends (`_preload_meta_front_ends`) are all a child needs warm:
# the dispatcher view's first capture in a child costs what every later one does once they
# are loaded (measured on the examples and bench_check's generated files, traced and
# scripted: the same child CPU time per file, within 10 ms, with or without the sample's
# analysis; on meta tensors the sample's traced analysis costs 0.1 s and saves a child 3 to
# 10 ms, no gain for a scan's 20 files a worker). The toolchains' views keep the sample: a
# child's first torch.jit.trace or torch.export costs about half a second more than the next.
_FRONT_ENDS_SUFFICE = frozenset({FAST_VIEW})


def _warmed_views() -> set[str]:
    """The views warmed along every capture path."""
    return {view for view, _ in _Options.warmed if all((view, path) in _Options.warmed for path in _WARM_PATHS)}


def _warm(params: dict[str, object]) -> WarmAnswer:
    """`warm`: note the views the session's targets will ask for, answered at once. They are
    warmed one at a time while no request is waiting (`_warm_next`), in the order asked (the
    dispatcher view first), so the first file's child inherits them; a request that comes
    meanwhile waits at most for the front-end call under way (`_warm_next`). Without fork
    there is no child to inherit them: nothing is noted."""
    warmed = _warmed_views()
    if _Options.fork:
        for view in check_warm_params(params)["views"]:
            if view not in warmed and view not in _Options.pending_warm:
                _Options.pending_warm.append(view)
    return {"warmed": sorted(warmed), "pending": list(_Options.pending_warm)}


def _warm_next(request_waiting: Callable[[], bool] | None = None) -> None:
    """Warm the next view a `warm` request asked for along the next capture path it lacks.
    Before the first file every path in turn (the classes of the files to come are not
    known yet); from then on only the paths the files' classes took (`_Options.paths_taken`):
    a save soon after opening a file whose classes all have inputs must not wait for the
    sample to be scripted, which nothing of it uses (seconds on 2 loaded cores). A file that
    takes another path later adds it (`_before_fork`). One path at a time, and each stops for
    a request that comes meanwhile (`request_waiting`, looked at between two front-end calls
    of the sample's analysis): the request is served first, and waits at most for the
    front-end call under way, never for the rest of the warm-up, which it does not need
    (a request that does need a view warms it itself, `_before_fork`)."""
    view = _Options.pending_warm[0]
    paths = [p for p in _WARM_PATHS if not _Options.paths_taken or p in _Options.paths_taken]
    path = next((p for p in paths if (view, p) not in _Options.warmed), None)
    if path is None:  # warmed meanwhile along every path wanted, by a request's own warm-up
        _Options.pending_warm.pop(0)
        return
    from atenlint.capture.graphs import GivingWay

    with contextlib.suppress(GivingWay):  # the request first; this path is warmed again later
        _warm_for([view], (path,), idle=True, request_waiting=request_waiting)


def _before_fork(method: str, params: object) -> tuple[list[str], tuple[str, ...]]:
    """The views to warm before forking a file's child, and the capture paths to warm them
    along. A request that wants the dispatcher view's answer first (`fast_first`: the
    editor) waits only for that view; its other views are analysed cold in its child and
    warmed here after it, while no request waits. Any other (the CLI's) warms all of them first:
    every later file's child inherits them. A `static` request (the source pass) warms no
    view but decomposes calls: it needs torch's front ends."""
    if not isinstance(params, dict):
        return [], _WARM_PATHS
    if method != "analyse":
        return [], (CAPTURE_SCRIPT,)
    paths = _capture_paths(params)
    _Options.paths_taken.update(paths)
    views = [v for v in params.get("views") or () if isinstance(v, str)]
    if not (params.get("partial") and params.get("fast_first")) or FAST_VIEW not in views:
        return views, paths
    warmed = _warmed_views()
    for view in views:
        if view != FAST_VIEW and view not in warmed and view not in _Options.pending_warm:
            _Options.pending_warm.append(view)
    return [FAST_VIEW], paths


def _capture_paths(params: dict[str, Any]) -> tuple[str, ...]:
    """The capture paths an `analyse` request's classes may take: traced where a class has
    example inputs (or may have them inferred), scripted where one has none configured (a
    factories file may or may not give them: both)."""
    classes = params.get("classes")
    if not isinstance(classes, dict) or not classes:
        return _WARM_PATHS
    given = [isinstance(c, dict) and bool(c.get("inputs") or c.get("kwargs")) for c in classes.values()]
    paths = []
    if any(given) or params.get("infer_inputs", True):
        paths.append(CAPTURE_TRACE)
    if not all(given):
        paths.append(CAPTURE_SCRIPT)
    return tuple(paths)


def _warm_analysis(
    views: tuple[str, ...], paths: tuple[str, ...], idle: bool, request_waiting: Callable[[], bool] | None = None
) -> None:
    """Analyse a small model of atenlint's own, here, along `paths` (traced, scripted) for
    `views`: what a warm worker used to learn from its first file (TorchScript's compiled
    library functions, dispatch and export caches) every forked child now starts with. One
    intra-op thread meanwhile: a forked child cannot use a thread pool its parent started
    (GNU OpenMP would wait for threads it does not have).

    The ExecuTorch delegate views, while a request waits (`idle` false), are only imported
    (executorch's exir and the partitioner): running `to_edge` on the sample costs about as
    much again and saves each later child a tenth of that.

    `request_waiting`: looked at between two front-end calls; GivingWay stops the analysis
    there once a request has come (the state is put back as after any failed analysis)."""
    import torch

    from atenlint.capture.delegate_view import preload
    from atenlint.capture.file_capture import capture_file
    from atenlint.capture.graphs import GivingWay, giving_way

    def give_way_to_a_request() -> None:
        if request_waiting is not None and request_waiting():
            raise GivingWay

    imported = () if idle else tuple(view for view in views if view in DELEGATE_VIEWS)
    views = tuple(view for view in views if view not in imported)

    # Without torch's front ends loaded (torch.jit.trace of classes with inputs only), the
    # sample is built without its embedding: `nn.Embedding`'s initialisation on meta runs a
    # Python reference that imports torch._dynamo, which that run never needs otherwise.
    lean = not _Options.front_ends_loaded
    folder = os.path.join(_Options.run_dir or os.getcwd(), "warm_up")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "atenlint_warm_sample.py")
    with open(path, "w", encoding="utf-8") as sample:
        sample.write(_WARM_SAMPLE)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for capture_path in paths if views else ():
            request = ClassRequest(**_WARM_INPUTS[capture_path])
            if lean:
                request["init"] = "AtenlintWarmUp(embedding=False)"
            params: AnalyseParams = {
                "path": path,
                "module": "atenlint_warm_sample",
                "roots": [folder],
                "classes": {"AtenlintWarmUp": request},
                "devices": ["mps", "cuda", "xla"],
                "views": list(views),
                "infer_inputs": False,
            }
            try:
                with giving_way(give_way_to_a_request):
                    _isolated(lambda p, _: capture_file(p), params)
            except Exception:  # noqa: BLE001, S110 - a cold cache is slower, never wrong
                pass
        if imported:
            # Inside the sandbox, as the sample's analysis would have imported them.
            sample_file: AnalyseParams = {"path": path, "module": "atenlint_warm_sample", "roots": [folder]}
            with contextlib.suppress(Exception):  # a cold cache is slower, never wrong
                _isolated(lambda p, _: _preloaded(imported, preload), sample_file)
    finally:
        torch.set_num_threads(threads)
    import gc

    # No collection first: each analysis above ended with one (`_isolated`'s state restore),
    # and another pass over torch's objects finds nothing more (a tenth of a second a view).
    gc.freeze()  # what is here now stays shared with every child: their collectors skip it


def _preloaded(views: tuple[str, ...], preload: Callable[[str], None]) -> FileAnswer:
    for view in views:
        preload(view.removeprefix(DELEGATE_VIEW_PREFIX))
    return {"classes": []}


def _forking() -> bool:
    # macOS too: its Seatbelt profile, like Landlock and seccomp, is applied by a child for good.
    return (sys.platform.startswith("linux") or sys.platform == "darwin") and hasattr(os, "fork")


class _Options:
    run_dir = ""
    sandbox = True
    memory_limit_mb = 0
    # Each analysis in a forked, confined child (Linux); else in this process, with a reset.
    fork = False
    in_child = False
    support: Any = None  # confine.Support: the kernel layers every child applies
    parent_pid = 0
    # (view, capture path) pairs this zygote has analysed its own sample model for
    warmed: ClassVar[set[tuple[str, str]]] = set()
    front_ends_loaded = False  # `_preload_front_ends` ran: every later child inherits them
    meta_front_ends_loaded = False  # `_preload_meta_front_ends` ran
    front_ends_wanted = False  # a child imported them itself: load them before the next one
    symbolic_shapes_wanted = False  # a child imported only torch's symbolic shapes: those before the next one
    pending_warm: ClassVar[list[str]] = []  # the views to warm while no request waits, in order
    paths_taken: ClassVar[set[str]] = set()  # the capture paths the `analyse` requests' classes may take
    exiting: ClassVar[list[int]] = []  # children that replied and are exiting, to be reaped


def _containment() -> Containment:
    """What contains the analysed code, found once: the kernel layers this system offers,
    proven by a child that applies them all (so every later child can), and whether each
    file gets a fresh process. Said in the hello answer, for the parent to show."""
    from . import confine

    support = confine.probe()
    forking = _forking()
    if not forking:
        support.reasons.append("each file is analysed in the warm worker itself (no fork), with a state reset")
    elif not _Options.sandbox:
        support.withdraw("switched off (--no-sandbox / ATENLINT_SANDBOX=off)")
    elif support.kernel or support.landlock_abi or support.seccomp:
        failure = _trial_confinement(support)
        if failure:
            support.withdraw(f"a confined process could not be made: {failure}")
    _Options.fork, _Options.support = forking, support
    return {**support.as_json(), "fork": forking}


def _fork() -> int:
    """The zygote's own fork, which the audit hook would refuse to analysed code (the
    child leaves the permission's block before it runs anything)."""
    from .sandbox import SANDBOX

    with SANDBOX.permitted():
        return os.fork()


def _trial_confinement(support: Any) -> str:
    """Fork a child that confines itself and exits: '' when it could, else why not."""
    from . import confine

    read_end, write_end = os.pipe()
    pid = _fork()
    if pid == 0:  # pragma: no cover - the child's side; its answer is the pipe
        os.close(read_end)
        try:
            confine.confine(_Options.run_dir or os.getcwd(), support, _Options.parent_pid, _Options.memory_limit_mb)
            os.write(write_end, b"ok")
        except BaseException as error:  # noqa: BLE001 - any failure is the answer
            os.write(write_end, str(error).encode("utf-8", "replace")[:500])
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as answer:
        said = answer.read(600)
    os.waitpid(pid, 0)
    return "" if said == b"ok" else said.decode("utf-8", "replace") or "it died"


def _analyse(params: dict[str, object], send_partial: PartialSink | None = None) -> FileAnswer:
    from atenlint.capture.file_capture import capture_file

    request = check_analyse_params(params)
    if send_partial is None or not request.get("partial"):
        return _isolated(lambda p, _: capture_file(p), request)
    return _isolated(lambda p, sink: capture_file(p, on_partial=sink), request, send_partial)


def _static(params: dict[str, object], send_partial: PartialSink | None = None) -> FileAnswer:
    from atenlint.capture.static import static_capture

    return _isolated(lambda p, _: static_capture(p), check_static_params(params))


class _Recycle(Exception):
    """Carries an answer whose analysis left state that could not be reset."""

    def __init__(self, answer: Any, reason: str):
        super().__init__(reason)
        self.answer, self.reason = answer, reason


# An analysis gets the request's checked params and where to offer its partial answer.
_Params = TypeVar("_Params", bound=FileParams)
Analysis = Callable[[_Params, Callable[[FileAnswer], None]], FileAnswer]


def _isolated(function: Analysis[_Params], params: _Params, send_partial: PartialSink | None = None) -> FileAnswer:
    """Run one analysis in the sandbox, then put the worker's state back as it was.
    `send_partial`: where the dispatcher-view answer goes when the analysis offers it
    (at most once, with the real path and the refusals so far)."""
    from . import state
    from .sandbox import SANDBOX

    _install_sandbox()
    where: FileParams = params
    roots = [os.path.abspath(r) for r in where.get("roots", []) if r]
    path = where["path"]
    params, alias = _alias_awkward_name(params)
    # A forked child exits after its file: nothing it changes needs putting back.
    before = None if _Options.in_child else state.snapshot()
    answer: FileAnswer = {"classes": []}
    sent = [send_partial is None]

    def on_partial(early: FileAnswer) -> None:
        if sent[0] or send_partial is None or not isinstance(early, dict):
            return
        sent[0] = True
        early = _mark_refused({**early, "partial": True, "refusals": _refusals_so_far()})
        send_partial(cast(FileAnswer, _replace_strings(early, alias, path) if alias is not None else early))

    try:
        with SANDBOX.analysing(path, roots) as refusals:
            answer = function(params, on_partial)
    finally:
        problems = (
            state.restore(before, _user_modules(roots, before.modules), _user_files(roots, path))
            if before is not None
            else []
        )
    if alias is not None:
        answer = _replace_strings(answer, alias, path)
    answer["refusals"] = refusals
    _note_degradations(answer)
    _mark_refused(answer)
    if problems:
        raise _Recycle(answer, "; ".join(problems))
    return answer


def _note_degradations(answer: FileAnswer) -> None:
    """The torch capabilities found missing so far (torchcompat), when any: what this
    answer could not see, in words."""
    from atenlint import torchcompat

    degraded = torchcompat.degradations()
    if degraded:
        answer["torch_degraded"] = degraded


def _mark_refused(answer: FileAnswer) -> FileAnswer:
    error = answer.get("import_error")
    if error and error.get("type") == "SandboxRefusal":
        error["refused"] = True  # the refusal is the diagnostic (ATL012), not a failed import
    return answer


def _refusals_so_far() -> list[Refusal]:
    """What the sandbox refused so far in this analysis (the final answer has them all):
    the partial answer carries them too, so its ATL012 diagnostics do not blink."""
    from .sandbox import SANDBOX

    pending = getattr(SANDBOX, "_refusals", None)  # the sandbox's own record of this analysis
    if not isinstance(pending, dict):
        return []
    try:
        # sandbox.Refusal's fields are protocol.Refusal's.
        return [cast("Refusal", refusal.as_json()) for refusal in list(pending.values())]
    except Exception:  # noqa: BLE001 - a partial answer without them is still right
        return []


def _alias_awkward_name(params: _Params) -> tuple[_Params, str | None]:
    """A file whose name holds a line break is imported through a plainly named link in
    the run folder: TorchScript's source locations (`# file:line:col`) cannot carry the
    break, and the answer names the real path again (`_replace_strings`)."""
    path = params["path"]
    if not any(c in os.path.basename(path) for c in "\n\r"):
        return params, None
    import hashlib

    folder = os.path.join(_Options.run_dir or os.getcwd(), "aliases")
    os.makedirs(folder, exist_ok=True)
    digest = hashlib.sha1(path.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    alias = os.path.join(folder, f"file_{digest}.py")
    if not os.path.lexists(alias):
        os.symlink(path, alias)
    aliased = copy.copy(params)
    aliased["path"] = alias
    # Only `analyse` sends overlays (the editor's unsaved texts, by path).
    overlays: Mapping[str, object] = params
    texts = overlays.get("overlays")
    if isinstance(texts, dict) and path in texts:
        cast("dict[str, object]", aliased)["overlays"] = dict(texts, **{alias: texts[path]})
    return aliased, alias


def _replace_strings(value: Any, old: str, new: str) -> Any:
    if isinstance(value, str):
        return new if value == old else value
    if isinstance(value, list):
        return [_replace_strings(v, old, new) for v in value]
    if isinstance(value, dict):
        return {k: _replace_strings(v, old, new) for k, v in value.items()}
    return value


def _user_files(roots: list[str], path: str) -> Callable[[str], bool]:
    from atenlint.capture.paths import is_library_file

    prefixes = tuple(os.path.realpath(r).rstrip(os.sep) + os.sep for r in roots + [os.path.dirname(path)] if r)

    def is_user(filename: str) -> bool:
        if not filename or filename.startswith("<"):
            return False
        real = os.path.realpath(filename)
        return real.startswith(prefixes) and not is_library_file(real)

    return is_user


def _user_modules(roots: list[str], before: Any) -> Callable[[Any], bool]:
    from atenlint.capture.paths import is_library_file

    prefixes = tuple(r.rstrip(os.sep) + os.sep for r in roots)

    def is_user(module: Any) -> bool:
        found = [getattr(module, "__file__", None), *list(getattr(module, "__path__", None) or [])]
        locations = [os.path.abspath(p) for p in found if isinstance(p, str) and p]
        if not locations:  # made at run time: the file's, unless a library's package holds it
            name = getattr(module, "__name__", "") or ""
            return isinstance(name, str) and name.split(".")[0] not in before
        return any(p.startswith(prefixes) and not is_library_file(p) for p in locations)

    return is_user


def _sandbox_installed() -> bool:
    _install_sandbox()
    return _Options.sandbox


def _install_sandbox() -> None:
    from .sandbox import SANDBOX

    if not SANDBOX.installed and _Options.sandbox:
        SANDBOX.install(_Options.run_dir or os.getcwd())


def _loaded_packages(params: dict[str, object]) -> list[str]:
    """Top-level packages imported so far (the tests check pygls and yaml never are)."""
    return sorted({name.split(".")[0] for name in sys.modules})


def _target_data(params: dict[str, object]) -> Any:
    """The installed exporters' support tables (`versions_only`: just their versions, the cache key)."""
    from atenlint.probe import registries

    from .sandbox import SANDBOX

    if check_target_data_params(params).get("versions_only"):
        return registries.versions()
    with SANDBOX.permitted():  # atenlint's own child process, never the user's code
        return registries.tables_in_subprocess()


Handler = Callable[[dict[str, object], PartialSink | None], Any]
_METHODS: dict[str, Handler] = {
    "hello": lambda params, _: _hello(),
    "warm": lambda params, _: _warm(params),
    "analyse": _analyse,
    "static": _static,
    "loaded_packages": lambda params, _: _loaded_packages(params),
    "target_data": lambda params, _: _target_data(params),
}
# The requests that run (or parse) a user's file: each in its own child when forking.
_PER_FILE = frozenset({"analyse", "static"})


def _write(out: Any, message: Any) -> None:
    out.write(json.dumps(message, default=repr) + "\n")
    out.flush()


class _Lines:
    """Request lines from the parent, read from the raw descriptor: the zygote watches it
    for end-of-file while a child analyses (a parent that died, even by SIGKILL, closes it)."""

    def __init__(self, fd: int):
        self.fd = fd
        self._buffer = b""
        self.closed = False

    def fill(self) -> bool:
        """Read what is there (blocking); False at end-of-file."""
        try:
            chunk = os.read(self.fd, 1 << 16)
        except InterruptedError:
            return True
        if not chunk:
            self.closed = True
            return False
        self._buffer += chunk
        return True

    def waiting(self) -> bool:
        """Whether a request has arrived (whole or in part) that nobody has read yet."""
        if self._buffer or self.closed:
            return True
        ready, _, _ = select.select([self.fd], [], [], 0)
        return bool(ready)

    def next_line(self) -> str | None:
        while b"\n" not in self._buffer:
            if self.closed or not self.fill():
                return None
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode("utf-8", "replace")


def _forked(request_id: int | None, request: Any, out: Any, lines: _Lines) -> bool:
    """Answer one analysis in a fresh child that confines itself first; False when the
    parent went away meanwhile (the child is killed and this process ends)."""
    import gc

    from . import confine

    _reap_exited()
    status_read, status_write = os.pipe()
    absent = _front_ends_absent()
    gc.freeze()  # the zygote's objects stay shared: the child's collector never writes to them
    pid = _fork()
    if pid == 0:  # pragma: no cover - runs in the child; the tests see its answers
        try:
            # Only the answer's two ends and stdio stay open: never the request pipe, nor
            # anything the worker or its parent left open.
            confine.close_inherited((out.fileno(), status_write, sys.stdin.fileno()))
            _Options.in_child = True
            try:
                confine.confine(_Options.run_dir, _Options.support, _Options.parent_pid, _Options.memory_limit_mb)
            except confine.ConfinementError as error:
                # Never run the user's code less contained than the hello answer said.
                _write(out, error_reply(request_id, "ConfinementError", str(error)))
            else:
                _write(out, _over_data_cap(request_id, _reply(request_id, request, out)))
            os.write(status_write, _replied_status([name for name in absent if name in sys.modules]))
        finally:
            os._exit(0)
    os.close(status_write)
    try:
        ended = _wait_child(pid, status_read, lines)
    finally:
        os.close(status_read)
    if ended is None:
        return False
    said, status = ended
    if said == _REPLIED_LOADING_FRONT_ENDS:
        _Options.front_ends_wanted = True
    elif said == _REPLIED_LOADING_SYMBOLIC_SHAPES:
        _Options.symbolic_shapes_wanted = True
    if status is None:
        # Replied and now exiting: the next request need not wait for the kernel to tear
        # down the child's copy of this process (tens of ms a file); it is reaped later.
        _Options.exiting.append(pid)
        return True
    if said in _REPLIES:
        return True
    # Worded as a dead worker always was: the engine's ATL006 reads the same either way.
    _write(out, error_reply(request_id, "WorkerCrash", f"the worker process {_how_it_ended(status)}"))
    return True


def _reap_exited() -> None:
    """Collect the children that replied and were killed as they exited (`_forked`), so
    none lingers: the last one if it has ended, every earlier one waited for (it has had a
    file's time to end), so the zygote never lists more than the last two."""
    for pid in list(_Options.exiting):
        last = pid == _Options.exiting[-1]
        try:
            done, _ = os.waitpid(pid, os.WNOHANG if last else 0)
        except ChildProcessError:  # already collected
            done = pid
        if done:
            _Options.exiting.remove(pid)


def _over_data_cap(request_id: int | None, message: Any) -> Any:
    """An import that failed with MemoryError in a child under the kernel's data cap ran
    out of the memory the user allowed: said as the parent's memory limit says it (ATL006),
    not as an error of the code (the allocation was refused before the parent saw it)."""
    result = message.get("result") if isinstance(message, dict) else None
    error = result.get("import_error") if isinstance(result, dict) else None
    if _Options.memory_limit_mb and isinstance(error, dict) and error.get("type") == "MemoryError":
        return error_reply(
            request_id,
            "WorkerMemory",
            f"an allocation failed at the data cap, twice the {_Options.memory_limit_mb} MB limit over the worker's size",
        )
    return message


def _wait_child(pid: int, status_read: int, lines: _Lines) -> tuple[bytes, int | None] | None:
    """What the child said on its status pipe (b"" when it ended without a word) and its
    wait status; the status is None for a child that said it replied, which is not waited
    for. None when the parent closed the requests meanwhile."""
    try:
        pidfd: int | None = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    listening = True  # to the status pipe, until the child closes it
    try:
        while True:
            if lines.closed:  # the parent is gone: so is its analysis (never waited for:
                _kill(pid)  # this process ends at once, and the child would die with it
                return None  # anyway, PR_SET_PDEATHSIG)
            watched = [lines.fd, *([status_read] if listening else []), *([pidfd] if pidfd is not None else [])]
            ready, _, _ = select.select(watched, [], [], None if pidfd is not None else 0.01)
            if lines.fd in ready and not lines.fill():
                _kill(pid)
                return None
            if status_read in ready:
                said = os.read(status_read, 1)
                # Killed all the same, so a child that wrote its word early cannot outlive
                # its request; one that wrote anything else has ended as a crash.
                if said:
                    _kill(pid)
                if said in _REPLIES:
                    return said, None  # its answer is written: all that is left is its exit
                if said:
                    return said, os.waitpid(pid, 0)[1]
                listening = False  # closed without a word: it is ending, or closed it itself
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                os.set_blocking(status_read, False)
                try:
                    said = os.read(status_read, 1) if listening else b""
                except BlockingIOError:
                    said = b""
                return said, status
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _kill(pid: int) -> None:
    """The zygote ends its own child (the audit hook refuses signals to other processes)."""
    from .sandbox import SANDBOX

    with SANDBOX.permitted(), contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)


def _how_it_ended(status: int) -> str:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            return f"was killed by {signal.Signals(number).name}"
        except ValueError:
            return f"was killed by signal {number}"
    return f"exited with code {os.WEXITSTATUS(status)}"


def _reply(request_id: int | None, request: Any, out: Any) -> Any:
    """The reply to one checked request (its partials written to `out` on the way)."""

    def send_partial(answer: FileAnswer) -> None:
        if request_id is not None:
            _write(out, partial(request_id, answer))

    try:
        return reply(request_id, _METHODS[request["method"]](request.get("params") or {}, send_partial))
    except _Recycle as recycle:
        return reply(request_id, recycle.answer, recycle.reason)
    except BaseException as error:  # a failed request must not end the worker
        if isinstance(error, KeyboardInterrupt):
            raise
        return error_reply(request_id, type(error).__name__, str(error), traceback.format_exc()[-4000:])


def _answer(line: str, out: Any, lines: _Lines | None = None) -> bool:
    """Answer one request line (partials first, then one reply); False on shutdown."""
    try:
        raw = json.loads(line)
    except ValueError:
        return True  # not a message: the parent only sends JSON lines
    raw_id = raw.get("id") if isinstance(raw, dict) else None
    request_id = raw_id if isinstance(raw_id, int) and not isinstance(raw_id, bool) else None
    try:
        request = check_request(raw)
    except ProtocolError as error:
        _write(out, error_reply(request_id, "ProtocolError", str(error)))
        return True
    if request["method"] == "shutdown":
        return False
    if _Options.fork and lines is not None and request["method"] in _PER_FILE:
        _warm_for(*_before_fork(request["method"], request.get("params")))
        return _forked(request_id, request, out, lines)
    _write(out, _reply(request_id, request, out))
    return True


def _serve(lines: _Lines, out: Any) -> None:
    """Answer the requests until a shutdown or their end; while none waits, warm the views a
    `warm` asked for, each warm-up giving way to a request that comes meanwhile."""
    while True:
        if _Options.pending_warm and not lines.waiting():
            _warm_next(lines.waiting)
            continue
        line = lines.next_line()
        if line is None:
            return
        if line.strip() and not _answer(line, out, lines):
            return


def main(argv: list[str] | None = None) -> int:
    """`argv`: [run folder, "sandbox" | "no-sandbox", memory limit in MB] (from pool.py's bootstrap)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    _Options.run_dir = os.path.realpath(argv[0]) if argv else os.getcwd()
    _Options.sandbox = (argv[1] if len(argv) > 1 else "sandbox") != "no-sandbox"
    _Options.memory_limit_mb = int(argv[2]) if len(argv) > 2 and argv[2].isdigit() else 0
    _Options.parent_pid = os.getpid()
    # No bytecode is written next to the user's sources (nor anywhere). Not a pycache_prefix
    # in the run folder: Python then reads bytecode only from there, so every worker would
    # compile torch._dynamo and the rest from source again (2.7x the CPU of a start).
    sys.dont_write_bytecode = True
    from .confine import close_inherited

    close_inherited()  # nothing a parent leaked (a file, a socket) reaches analysed code
    protocol_in, protocol_out = _claim_stdio()
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    lines = _Lines(protocol_in)
    try:
        _serve(lines, protocol_out)
        if not lines.closed:  # else the parent is gone: nobody reads what is left
            protocol_out.flush()
    finally:
        # No atexit handlers or finalizers of the analysed code run on the way out, and
        # no interpreter teardown (seconds for torch) delays the end.
        os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
