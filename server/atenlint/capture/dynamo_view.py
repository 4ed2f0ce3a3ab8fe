"""The compile view: where the installed torch's own Dynamo splits a class's graph.

`torch.compile` users learn about graph breaks at run time, from `TORCH_LOGS` or
`torch._dynamo.explain`. This view runs exactly what `explain` runs — Dynamo's frame
evaluation with a backend that compiles nothing and only records each graph's
`compile_subgraph_reason` — once per class, on real CPU tensors of the example inputs'
shapes: fake or meta tensors stop at the first data-dependent value (`.item()`, an `if`
on a tensor), which is exactly what a break report must get past. Dynamo's state is reset
before and after each class, so one class's cache never hides another's breaks.

Every break keeps Dynamo's own reason and the user's frame: Dynamo records the user stack
of each break; frames in torch or other installed libraries are walked up to the
innermost frame of the user's own code.

The same run gives two more things for free: the ops Inductor would run eagerly (each
compiled graph's one run is recorded, capture/inductor_fallbacks.py) and, from the guards
Dynamo hands `explain`, the Python number arguments the graph is specialised on (another
value recompiles). Runs inside the worker.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import re
import sysconfig
import warnings
from typing import Any

import torch

from .. import torchcompat
from ..worker.protocol import CompileAnswer, ErrorInfo, GraphBreak, RecompileHazard, Site
from ..worker.vocabulary import VIEW_COMPILE
from .paths import is_library_file

COMPILE_VIEW = VIEW_COMPILE  # not a call tree: its own record (ClassAnswer["compile"])

# Dynamo's text after these lines is for torch developers (internal objects, links to its
# own issue tracker), not for the user's message.
_DEVELOPER_MARKERS = ("Developer debug context", "For more details about this graph break")
_DETAILS_LIMIT = 600
_NOISE = ("Hint: Please report an issue to PyTorch", "Hint: It may be possible to write Dynamo tracing rules")


def compile_view(
    instance: torch.nn.Module,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    real_inputs: tuple[tuple[Any, ...], dict[str, Any]] | None = None,
    limit_bytes: int | None = None,
    fullgraph: bool = False,
) -> CompileAnswer:
    """Dynamo's graph breaks for `instance(*args, **kwargs)` in eval mode under no_grad (meta
    tensors; run on real CPU ones, `real_inputs` when the user's expression could be evaluated on the CPU);
    `fullgraph`: also Dynamo's fullgraph verdict (the `fullgraph` setting asks for it)."""
    from .graphs import REAL_TENSOR_LIMIT_BYTES, _real_size_problem, on_real_cpu

    too_large = _real_size_problem(instance, args, kwargs, limit_bytes or REAL_TENSOR_LIMIT_BYTES)
    if too_large:
        return {"error": {"message": too_large.replace("torch.jit.trace", "Dynamo"), "site": None}}
    with on_real_cpu(instance, args, kwargs, real_inputs) as (real_args, real_kwargs), torch.no_grad():
        # In eval mode under no_grad, as a model is compiled for inference (and as the other
        # views run it): code valid only without autograd (`copy.deepcopy` of an activation)
        # runs, and Dynamo decides its breaks instead of the user's code raising first.
        instance.eval()
        return dynamo_breaks(instance, real_args, real_kwargs, fullgraph)


def dynamo_breaks(
    function: Any, args: tuple[Any, ...], kwargs: dict[str, Any], fullgraph: bool = False, inductor: bool = True
) -> CompileAnswer:
    """Run `function` under Dynamo as `torch._dynamo.explain(function)(*args, **kwargs)`
    does (`optimize(backend, nopython=False)`, the same reset before and after), recording
    each compiled graph's break reason. The user's code really runs (eagerly, between the
    graphs): prints print, as under `explain`. With `fullgraph`, a class with breaks is run
    once more with `nopython=True` (what `torch.compile(fullgraph=True)` does): its cost is
    paid only by projects that compile that way. `inductor`: also the ops Inductor would
    run eagerly (capture/inductor_fallbacks.py), from the graphs' one run each."""
    try:
        dynamo = torchcompat.dynamo()
    except torchcompat.Unavailable as missing:
        return {"breaks": [], "graphs": 0, "error": {"message": str(missing), "site": None}}

    breaks: list[GraphBreak] = []
    graphs = 0
    fallbacks = _fallback_recorder() if inductor else None

    def record(graph_module: torch.fx.GraphModule, example_inputs: Any) -> Any:
        nonlocal graphs
        graphs += 1
        reason = getattr(graph_module, "compile_subgraph_reason", None)
        if reason is not None and reason.graph_break:
            breaks.append(_graph_break(reason))
        if fallbacks is None:
            return graph_module.forward
        from .inductor_fallbacks import run_recording

        return run_recording(graph_module, fallbacks)

    guards: list[Any] = []
    dynamo.reset()
    before = _frames_not_compiled()
    answer: CompileAnswer
    try:
        with warnings.catch_warnings(), _quiet_dynamo():
            warnings.simplefilter("ignore")
            _optimized(dynamo, record, guards.extend)(function)(*args, **kwargs)
    except Exception as error:  # noqa: BLE001 - the user's code raised (under Dynamo or eagerly)
        answer = {"breaks": breaks, "graphs": graphs, "error": _error_info(error)}
    else:
        answer = {"breaks": breaks, "graphs": graphs}
    finally:
        skipped = max(0, _frames_not_compiled() - before)  # read before reset() may clear them
        dynamo.reset()
    if fallbacks is not None and fallbacks.found:
        answer["fallbacks"] = list(fallbacks.found.values())
    hazards = scalar_specialisations(function, args, kwargs, guards)
    if hazards:
        answer["recompiles"] = hazards
    if "error" not in answer and (skipped or (fullgraph and breaks)):
        verdict, in_user_code = _fullgraph_run(function, args, kwargs)
        if skipped and in_user_code:
            answer["breaks"] = [*breaks, *_skipped_frame_break(verdict, breaks)]
        if fullgraph:
            answer.update(verdict)
    return answer


def _frames_not_compiled() -> int:
    """From Dynamo's own counters (`torch._dynamo.utils.counters`): the frames it was asked
    to compile and did not, so far in this process; 0 on a torch without them (the
    skipped-frame check then finds nothing, as before)."""
    counters = torchcompat.dynamo_counters()
    frames = counters.get("frames", {}) if counters is not None else {}
    return int(frames.get("total", 0)) - int(frames.get("ok", 0))


def _skipped_frame_break(verdict: CompileAnswer, recorded: list[GraphBreak]) -> list[GraphBreak]:
    """A frame Dynamo skipped records no graph and no break: `explain` counts nothing, yet
    the whole frame runs eagerly and `fullgraph=True` raises. Dynamo skips a frame when it
    cannot resume after a break (inside a `for`/`while` loop it cannot); where the break is,
    is what `fullgraph=True` (`nopython=True`) raises at, the run `_fullgraph_run` makes.
    One break at that line (none when it is a break already recorded, or outside the user's code)."""
    error = verdict.get("fullgraph_error")
    site = error.get("site") if error else None
    if error is None or site is None or any(_same_line(site, found.get("site")) for found in recorded):
        return []
    return [
        {
            "reason": error.get("message", ""),
            "details": "Dynamo cannot resume after this break (as inside a for/while loop), so it skips the "
            "whole frame: the function runs eagerly, with no graph (torch._dynamo.explain counts no break for it).",
            "site": site,
            "stack": [site],
            "skipped_frame": True,
        }
    ]


def _same_line(site: Site | None, other: Site | None) -> bool:
    return site is not None and other is not None and (site["file"], site["line"]) == (other["file"], other["line"])


def _optimized(dynamo: Any, backend: Any, export_guards: Any) -> Any:
    """`optimize(backend, nopython=False)`, handing each compiled frame's guards to
    `export_guards` as `explain` has them (a Dynamo without `guard_export_fn`: no guards)."""
    try:
        return dynamo.optimize(backend, nopython=False, guard_export_fn=export_guards)
    except TypeError:
        return dynamo.optimize(backend, nopython=False)


_LOCAL = re.compile(r"^L\['(?P<name>\w+)'\]$")
_VALUE_GUARDS = frozenset({"CONSTANT_MATCH", "EQUALS_MATCH"})


def scalar_specialisations(
    function: Any, args: tuple[Any, ...], kwargs: dict[str, Any], guards: list[Any]
) -> list[RecompileHazard]:
    """The Python numbers among `forward`'s arguments that Dynamo guarded on by value
    (its own guards: `L['scale']` with CONSTANT_MATCH): another value recompiles."""
    forward = getattr(function, "forward", function)
    try:
        bound = inspect.signature(forward).bind(*args, **kwargs).arguments
    except (TypeError, ValueError):
        return []
    found: dict[str, RecompileHazard] = {}
    for guard in guards:
        match = _LOCAL.match(str(getattr(guard, "name", "")))
        if match is None or match["name"] in found:
            continue
        value = bound.get(match["name"])
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        try:
            kind = str(guard.create_fn_name())
        except Exception:  # noqa: BLE001, S112 - a guard of another shape on this torch
            continue
        if kind not in _VALUE_GUARDS:
            continue
        stack = [frame for frame in (getattr(guard, "user_stack", None) or []) if not is_library_file(frame.filename)]
        found[match["name"]] = {
            "kind": "scalar",
            "name": match["name"],
            "value": repr(value),
            "guard": f"{guard.name} {kind}",
            "site": _site(stack[-1]) if stack else None,
        }
    return list(found.values())


def _fallback_recorder() -> Any:
    """A recorder of Inductor's fallbacks for the graphs Dynamo compiles, or None where this
    torch has no Inductor tables (the degradation says so) or no dispatch modes."""
    try:
        from .inductor_fallbacks import FallbackRecorder, judge

        judge()
        return FallbackRecorder()
    except torchcompat.Unavailable:
        return None


def _fullgraph_run(function: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[CompileAnswer, bool]:
    """Whether `torch.compile(fullgraph=True)` captures what the default mode splits: a few
    breaks are not breaks with one graph (Dynamo keeps `.item()` as a symbolic value then),
    so the fullgraph verdict is Dynamo's own run with `nopython=True`, not a guess. Also
    whether it raised in the user's own code (its innermost frame): a frame Dynamo skipped
    in a library (torchvision's post-processing loops) is the library's, not a user's break."""
    dynamo = torchcompat.dynamo()  # present: dynamo_breaks ran it

    def compile_nothing(graph_module: torch.fx.GraphModule, example_inputs: Any) -> Any:
        return graph_module.forward

    dynamo.reset()
    try:
        with warnings.catch_warnings(), _quiet_dynamo():
            warnings.simplefilter("ignore")
            dynamo.optimize(compile_nothing, nopython=True)(function)(*args, **kwargs)
    except Exception as error:  # noqa: BLE001 - Dynamo's Unsupported (or the user's code) raised
        info = _error_info(error)
        stack = list(getattr(error, "real_stack", None) or [])
        user = [_site(frame) for frame in stack if not is_library_file(frame.filename)]
        if user:
            info["site"] = user[-1]
        headline, _ = split_reason(str(error))
        info["message"] = headline or info["message"]
        # The standard library's frames Dynamo inlines into the frame that calls them
        # (`copy.deepcopy` of a tensor raises inside copy.py): the break is that frame's.
        # A frame of an installed library (torchvision's post-processing) is its own.
        own = [frame for frame in stack if not _in_standard_library(frame.filename)]
        return {"fullgraph": False, "fullgraph_error": info}, bool(own) and not is_library_file(own[-1].filename)
    finally:
        dynamo.reset()
    return {"fullgraph": True}, False


_STANDARD_LIBRARY = tuple(
    os.path.abspath(path) + os.sep
    for path in {sysconfig.get_paths().get("stdlib"), sysconfig.get_paths().get("platstdlib")}
    if path
)


def _in_standard_library(path: str) -> bool:
    absolute = os.path.abspath(path)
    parts = absolute.split(os.sep)
    return (
        absolute.startswith(_STANDARD_LIBRARY)
        and "site-packages" not in parts
        and "dist-packages" not in parts
        and not absolute.startswith(os.path.dirname(torch.__file__) + os.sep)
    )


@contextlib.contextmanager
def _quiet_dynamo() -> Any:
    """Dynamo logs each break as a warning (`Graph break from Tensor.item()`), on the
    worker's stderr; the answer carries them instead."""
    import logging

    logger = logging.getLogger(torchcompat.DYNAMO_LOGGER)
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _graph_break(reason: Any) -> GraphBreak:
    text = str(getattr(reason, "reason", "") or "")
    headline, details = split_reason(text)
    stack = [_site(frame) for frame in (getattr(reason, "user_stack", None) or [])]
    user = [site for site in stack if not site.get("library")]
    return {"reason": headline, "details": details, "site": user[-1] if user else None, "stack": user}


def split_reason(text: str) -> tuple[str, str]:
    """Dynamo's reason as a headline (its first line) and the explanation and hint that
    follow it, without the developer context."""
    lines = text.strip().splitlines()
    headline = lines[0].strip() if lines else ""
    kept: list[str] = []
    for line in lines[1:]:
        if line.strip().startswith(_DEVELOPER_MARKERS):
            break
        if line.strip() and not line.strip().startswith(_NOISE):
            kept.append(line.strip())
    return headline, " ".join(kept)[:_DETAILS_LIMIT]


def _site(frame: Any) -> Site:
    """A traceback.FrameSummary as a Site (columns when Python recorded them: 3.11+)."""
    line = int(frame.lineno or 0)
    site: Site = {"file": frame.filename, "line": line, "col": -1, "span_lines": 1, "end_col": None}
    col, end_line, end_col = (getattr(frame, name, None) for name in ("colno", "end_lineno", "end_colno"))
    if isinstance(col, int) and isinstance(end_line, int) and isinstance(end_col, int) and end_line >= line:
        site["col"], site["span_lines"], site["end_col"], site["exact"] = col, end_line - line + 1, end_col, True
    site["library"] = is_library_file(frame.filename)
    return site


def _error_info(error: BaseException) -> ErrorInfo:
    """Where the run stopped: the innermost user frame of the error's traceback."""
    import traceback

    frames = traceback.extract_tb(error.__traceback__)
    user = [f for f in frames if not is_library_file(f.filename)]
    site = _site(user[-1]) if user else None
    first = (str(error).strip().splitlines() or [""])[0]
    return {"message": f"{type(error).__name__}: {first[:300]}", "site": site}
