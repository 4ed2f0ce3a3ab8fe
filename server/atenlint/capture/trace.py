"""Capture by running `forward` on fake tensors with the user's example inputs.

Precise where scripting is blind: it sees the path the inputs really take (no
conditional branches), every op with the dtypes and shapes of its arguments, and the
exact expression in the user's file (Python 3.11+ `co_positions()` of the innermost user
frame). The module's weights stay on the meta device and the inputs are fake, so a model
of tens of billions of parameters costs no memory. Data-dependent ops (`nonzero`,
boolean masks) work through a symbolic shape environment; a Python number read from a
tensor (`.item()`) gets a plausible value so the trace can go on, and what follows is
marked as depending on it.

Runs inside the worker.
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

import torch

from .. import torchcompat
from ..torchcompat import TorchDispatchMode
from .building import meta_cannot_run
from .decompose import canonical_name, dispatch_expanding
from .device_composites import kept_composite
from .paths import TORCH_PLUMBING as _PLUMBING
from .paths import is_library_file
from .script import Site

_ATENLINT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_LIFTS = {torch.ops.aten.lift_fresh.default, torch.ops.aten.lift_fresh_copy.default, torch.ops.aten.lift.default}


class TraceFailure(Exception):
    def __init__(self, message: str, site: Site | None):
        super().__init__(message)
        self.message = message
        self.site = site

    def as_json(self) -> dict[str, Any]:
        return {"message": self.message, "site": self.site.as_json() if self.site else None}


@dataclass
class TracedOp:
    op: str
    sites: tuple[Any, ...]  # Site, outermost first
    training: bool
    dispatch: dict[str, Any]  # call tree as the backend dispatcher sees it
    dtypes_in: list[Any] = field(default_factory=list)
    dtypes_out: list[Any] = field(default_factory=list)
    max_dim: int = 0
    guessed: bool = False  # runs after a tensor value the trace had to guess (`.item()`)
    complex_unsupported: bool = False  # complex tensors in an op whose MPS kernel lacks them (OpInfo data)
    float64_origin: bool = False  # makes a float64 tensor from no float64 input
    float64_first_use: bool = False  # first use of a float64 tensor made outside forward (weights, inputs)
    arg_shapes: dict[str, Any] = field(default_factory=dict)  # schema argument name -> concrete shape (fix conditions)


_POSITIONS: dict[Any, list[Any]] = {}  # code object -> its co_positions(), read once per process


def _frame_site(frame: Any) -> Site:
    code = frame.f_code
    if sys.version_info >= (3, 11):
        positions = _POSITIONS.get(code)
        if positions is None:
            positions = _POSITIONS[code] = list(code.co_positions())
        index = frame.f_lasti // 2
        if 0 <= index < len(positions):
            line, end_line, col, end_col = positions[index]
            if line is not None and col is not None:
                return Site(code.co_filename, line, col, (end_line or line) - line + 1, end_col, exact=True)
    # Python 3.10: the line only; the locator picks the call on it.
    return Site(code.co_filename, frame.f_lineno, -1, 1, None)


def _call_sites(start: Any, stop_code: Any) -> tuple[Any, ...]:
    """The frames from the user's forward down to the op, as sites (outermost first):
    the user's own frames and the library frames that lead to the op."""
    sites = []
    frame = start
    while frame is not None and frame.f_code is not stop_code:
        filename = frame.f_code.co_filename
        if not filename.startswith(_ATENLINT_DIR) and not filename.startswith(_PLUMBING):
            sites.append(_frame_site(frame))
        frame = frame.f_back
    return tuple(reversed(sites))


class _TraceRecorder(TorchDispatchMode):  # type: ignore[no-untyped-call]  # torch's TorchDispatchMode is untyped
    """Records every op that reaches a backend, with its call tree (composites expanded as
    their kernels do), dtypes and the source sites leading to it."""

    def __init__(self, stop_code: Any, training: bool):
        super().__init__()  # type: ignore[no-untyped-call]  # torch's TorchDispatchMode is untyped
        self.stop_code = stop_code
        self.training = training
        self.found: list[TracedOp] = []
        self._open: list[list[Any]] = []
        self.guessed = False
        # Tensors the recorded ops made, kept alive so ids stay unique while we trace.
        self._made: dict[int, torch.Tensor] = {}
        self._reported: set[int] = set()

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if func.namespace == "prim":  # metadata queries (prim::device), not operators
            return func(*args, **kwargs)
        if self._open:  # inside a composite we are expanding: just build the tree
            return dispatch_expanding(self, func, args, kwargs, self._open)
        if func is torch.ops.aten._local_scalar_dense.default:
            return self._guess_scalar(args[0])
        sites = _call_sites(sys._getframe(1), self.stop_code)
        roots: list[Any] = []
        result = self._expand(func, args, kwargs, roots)
        tensors_in = [a for a in _flatten((args, kwargs)) if isinstance(a, torch.Tensor)]
        tensors_out = [a for a in _flatten(result) if isinstance(a, torch.Tensor)]
        float64_in = [t for t in tensors_in if t.dtype == torch.float64]
        lifted = func in _LIFTS  # `torch.tensor(..., dtype=torch.float64)`: the constant is made here
        origin = any(t.dtype == torch.float64 for t in tensors_out) and (lifted or not float64_in)
        outside = [t for t in float64_in if id(t) not in self._made and id(t) not in self._reported]
        self._reported.update(id(t) for t in outside)
        made_before = self._made_before(tensors_in)
        self._made.update((id(t), t) for t in tensors_out)
        self.found.append(
            TracedOp(
                op=canonical_name(func),
                sites=sites,
                training=self.training,
                dispatch=roots[0],
                dtypes_in=sorted({str(t.dtype) for t in tensors_in}),
                dtypes_out=sorted({str(t.dtype) for t in tensors_out}),
                max_dim=_new_rank(tensors_in, tensors_out, made_before),
                guessed=self.guessed,
                float64_origin=origin,
                float64_first_use=bool(outside) and not origin,
                complex_unsupported=_complex_unsupported(func, tensors_in),
                arg_shapes=_arg_shapes(func, args),
            )
        )
        return result

    def _expand(self, func: Any, args: Any, kwargs: Any, into: list[Any]) -> Any:
        self._open.append(into)
        try:
            return dispatch_expanding(self, func, args, kwargs, self._open)
        finally:
            self._open.pop()

    def _made_before(self, tensors: list[Any]) -> set[Any]:
        return {id(t) for t in tensors if id(t) in self._made}

    def _guess_scalar(self, tensor: torch.Tensor) -> Any:
        """A Python number read from a tensor cannot be known without data: go on with a
        plausible one, and mark what follows as depending on it."""
        self.guessed = True
        return _plausible_scalar(tensor)


def _plausible_scalar(tensor: torch.Tensor) -> Any:
    if tensor.dtype == torch.bool:
        return True
    if tensor.dtype.is_floating_point:
        return 0.5
    return 1


class _ScalarGuesser(TorchDispatchMode):  # type: ignore[no-untyped-call]  # torch's TorchDispatchMode is untyped
    """Only what a forward needs to run on fake tensors as the recorder runs it (a number
    read from a tensor gets the same plausible value), recording nothing."""

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        if func is torch.ops.aten._local_scalar_dense.default:
            return _plausible_scalar(args[0])
        return func(*args, **(kwargs or {}))


class _ConstantWatcher(torch.overrides.TorchFunctionMode):
    """`torch.tensor(data, dtype=torch.float64)` makes its tensor without dispatching an op
    when the default device is meta; watch those constructors at the Python level."""

    _CONSTRUCTORS: ClassVar[frozenset[Any]] = frozenset({torch.tensor, torch.as_tensor, torch.asarray})

    def __init__(self, recorder: _TraceRecorder):
        super().__init__()
        self.recorder = recorder

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        before = len(self.recorder.found)
        result = func(*args, **(kwargs or {}))
        kept = kept_composite(func)
        if kept is not None:
            # `torch.linalg.svd`: a composite MPS runs whole (device_composites.py); the
            # trace saw only what it decomposes into on meta, so record the call itself.
            for traced in self.recorder.found[before:]:
                traced.op, traced.dispatch = kept, {"op": kept, "calls": [traced.dispatch]}
        if func in self._CONSTRUCTORS and isinstance(result, torch.Tensor) and result.dtype == torch.float64:
            recorder = self.recorder
            recorder._made[id(result)] = result
            recorder.found.append(
                TracedOp(
                    op="aten::lift_fresh",
                    sites=_call_sites(sys._getframe(1), recorder.stop_code),
                    training=recorder.training,
                    dispatch={"op": "aten::lift_fresh", "calls": None},
                    dtypes_out=[str(result.dtype)],
                    max_dim=result.dim(),
                    guessed=recorder.guessed,
                    float64_origin=True,
                )
            )
        return result


def _arg_shapes(func: Any, args: tuple[Any, ...]) -> dict[str, Any]:
    """Concrete shapes of the tensor arguments by schema name; symbolic sizes (from
    data-dependent ops) are left out."""
    out = {}
    for argument, value in zip(torchcompat.op_schema(func).arguments, args):
        if isinstance(value, torch.Tensor):
            try:
                out[argument.name] = [int(size) for size in value.shape]
            except (TypeError, ValueError, RuntimeError):
                continue
    return out


def _new_rank(tensors_in: list[Any], tensors_out: list[Any], made_before: set[Any]) -> int:
    """The largest rank this op is responsible for: of the tensors it makes, and of inputs
    that came from outside forward. A tensor that was already too large when an earlier
    op made it is that op's finding, not every later one's."""
    ranks = [t.dim() for t in tensors_out] + [t.dim() for t in tensors_in if id(t) not in made_before]
    inherited = max([t.dim() for t in tensors_in if id(t) in made_before] or [0])
    new = max(ranks or [0])
    return new if new > inherited else 0


_MPS_DTYPES: dict[str, Any] | None = None


def _complex_unsupported(func: Any, tensors: list[Any]) -> bool:
    """Complex tensors in an op whose MPS kernel does not take them, per the wheel's OpInfo
    database (`dtypesIfMPS`); unknown (False) when that database cannot be loaded."""
    complex_dtypes = {t.dtype for t in tensors if t.dtype.is_complex}
    if not complex_dtypes:
        return False
    table = _mps_dtype_table()
    supported = table.get(canonical_name(func).split(".")[0])
    return supported is not None and not complex_dtypes <= supported


def _mps_dtype_table() -> dict[str, Any]:
    global _MPS_DTYPES
    if _MPS_DTYPES is None:
        # Needs numpy and expecttest; without them the rule stays silent (noted by torchcompat).
        _MPS_DTYPES = dict(torchcompat.opinfo_mps_dtypes())
    return _MPS_DTYPES


def _flatten(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        out = []
        for item in value:
            out.extend(_flatten(item))
        return out
    if isinstance(value, dict):
        return _flatten(list(value.values()))
    return [value]


def _fake_mode() -> Any:
    return torchcompat.fake_tensor_mode(allow_non_fake_inputs=True)  # Unavailable: the trace fails, scripting runs


@dataclass
class PhaseRun:
    """One recorded forward of a dispatch trace (training or eval mode): what it recorded,
    whether it read a value it had to guess, how it failed (None: it ran to the end), and
    the module classes whose forward it reached (`called`)."""

    training: bool
    found: list[TracedOp]
    guessed: bool
    failure: TraceFailure | None
    called: set[type] = field(default_factory=set)
    # The failure was raised in atenlint's own code, or where a composite's expansion met an
    # op without a meta kernel: a plain run (`forward_runs`) might not meet it.
    failed_in_recorder: bool = False


def trace_ops(
    instance: torch.nn.Module,
    inputs: Any,
    eval_run: PhaseRun | None = None,
    called: set[type] | None = None,
) -> tuple[list[TracedOp], list[str]]:
    """Run `instance(*inputs)` in training and in eval mode on fake tensors, recording
    every op the dispatcher sees (the device backends' view; export toolchains get their
    own graphs from `graphs.py`). Returns the ops and notes on what could not be seen.

    `eval_run`: the eval phase already recorded on these inputs (`recorded_check`, which
    inferred inputs ran as their check), used instead of running forward again; only the
    training phase runs then. `called`, when given, gets the module classes (the instance's
    own submodules) whose forward a kept phase reached.

    One phase failing does not discard the other (BatchNorm with a batch of 1 fails only
    in training); a forward that fails after a value it had to guess (`.item()`) keeps
    what was captured up to there. Raises TraceFailure with the user's line when nothing
    could be traced."""
    arguments = inputs if isinstance(inputs, tuple) else (inputs,)
    keywords = dict(getattr(inputs, "kwargs", None) or {})  # building.CallArguments: forward(*args, **kwargs)
    found: list[TracedOp] = []
    notes: list[str] = []
    failure: TraceFailure | None = None
    for training in (True, False):
        if not training and eval_run is not None:
            run = eval_run
        else:
            run = _record_phase(instance, arguments, keywords, training)
        phase = "training" if training else "eval"
        if run.failure is not None:
            problem = run.failure
            if run.guessed and run.found:
                notes.append(
                    f"the {phase} trace stopped after a value read from a tensor (`.item()`), which "
                    f"fake tensors cannot know ({problem.message}); what ran before it was kept"
                )
            else:
                notes.append(f"the {phase} trace failed: {problem.message}")
                failure = failure or problem
                continue
        found.extend(run.found)
        if called is not None:
            called.update(run.called)
    instance.eval()
    if not found and failure is not None:
        raise failure
    return found, notes


def _record_phase(
    instance: torch.nn.Module, arguments: tuple[Any, ...], keywords: dict[str, Any], training: bool
) -> PhaseRun:
    """One forward in `training` mode under the recorder; never raises (the failure is kept).

    On meta tensors first: the dispatcher runs the same kernels on meta as fake tensors
    (which are meta tensors underneath) and the recorder sees the same ops, without fake
    tensors' per-op bookkeeping or their import of torch._dynamo. What meta tensors cannot
    run (an op whose output shape depends on values, `nonzero` or a boolean mask; a CPU
    tensor made in forward mixed with the weights; an op with only a fake kernel) raises,
    and that forward is recorded again, whole, on fake tensors: the phase is then exactly
    what a fake-tensor trace alone records. Any other failure (a shape that does not fit,
    the user's own check) is the forward's: fake tensors run the same meta kernels and the
    same Python and would fail the same way, so it is kept as it is."""
    return _on_meta_then_fake(lambda fake: _recorded_run(instance, arguments, keywords, training, fake))


_Outcome = TypeVar("_Outcome")


def _on_meta_then_fake(attempt: Callable[[bool], tuple[_Outcome, bool]]) -> _Outcome:
    """`attempt(fake=False)`'s outcome, or `attempt(fake=True)`'s where the first says the
    meta device (or the recorder), not the forward, may have failed it."""
    outcome, meta_may_have_failed_it = attempt(False)
    return attempt(True)[0] if meta_may_have_failed_it else outcome


def _recorded_run(
    instance: torch.nn.Module, arguments: tuple[Any, ...], keywords: dict[str, Any], training: bool, fake: bool
) -> tuple[PhaseRun, bool]:
    """The phase's run, and whether its failure may be the meta device's or the recorder's
    rather than the forward's (`meta_cannot_run`, `_raised_by_recorder`)."""
    instance.train(training)
    recorder = _TraceRecorder(_run.__code__, training)
    failure: TraceFailure | None = None
    ours = device = False
    with _calls_reaching(instance) as called:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _run(instance, arguments, recorder, keywords, fake)
        except Exception as error:  # noqa: BLE001 - the user's forward failed on these inputs
            failure = TraceFailure(f"{type(error).__name__}: {_first_line(error)}", _user_site_of(error))
            ours = _raised_by_recorder(error)
            device = meta_cannot_run(error)
    return PhaseRun(training, recorder.found, recorder.guessed, failure, called, ours), ours or device


def _raised_by_recorder(error: BaseException) -> bool:
    """Whether a failure may be the recorder's rather than the forward's: raised in
    atenlint's own code (the innermost frame), or an expansion stopping at an op without a
    meta kernel (`dispatch_expanding` lets that one through; a plain call may have a fake
    kernel for the composite). Any other error comes from torch or the user's code, which a
    plain run meets the same way: the recorder hands every other failed expansion back to
    the plain call of the op."""
    if isinstance(error, NotImplementedError) and ("Meta kernel" in str(error) or "fake impl" in str(error)):
        return True
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and tb.tb_frame.f_code.co_filename.startswith(_ATENLINT_DIR)


@contextlib.contextmanager
def _calls_reaching(instance: torch.nn.Module) -> Iterator[set[type]]:
    """While `instance` runs: the classes of its submodules whose forward is called."""
    called: set[type] = set()

    def note(module: torch.nn.Module, args: Any) -> None:
        called.add(type(module))

    with submodule_pre_hooks(instance, note):
        yield called


@contextlib.contextmanager
def submodule_pre_hooks(instance: torch.nn.Module, hook: Any, with_kwargs: bool = False) -> Iterator[None]:
    """`hook` as a forward pre-hook on each of `instance`'s submodules while the block runs,
    removed after. A compiled submodule runs its own graph: no Python hook sees its calls,
    and it is left out; a module that refuses hooks is left out too."""
    handles = []
    for module in instance.modules():
        if module is instance or isinstance(module, torch.jit.ScriptModule):
            continue
        with contextlib.suppress(Exception):
            handles.append(module.register_forward_pre_hook(hook, with_kwargs=with_kwargs))
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def recorded_check(instance: torch.nn.Module, inputs: tuple[Any, ...]) -> PhaseRun | None:
    """`forward_runs`'s check done as the dispatch trace's eval phase, so that inferred
    inputs cost one forward for both: the recorded eval run when the inputs are kept, None
    when they are not. The verdict is `forward_runs`'s: a recorded run that fails where the
    recorder itself may have (`failed_in_recorder`) is checked again the plain way, and when
    that one runs, the inputs are kept with the recorded failure, as `trace_ops` would have
    met it. Leaves the train/eval state of every module as it was."""
    states = [(m, m.training) for m in instance.modules()]
    fake_log = torchcompat.fake_tensor_logger()
    was_disabled, fake_log.disabled = fake_log.disabled, True
    try:
        run = _record_phase(instance, inputs, {}, training=False)
    finally:
        fake_log.disabled = was_disabled
        for module, training in states:
            module.training = training
    if run.failure is None or (run.failed_in_recorder and forward_runs(instance, inputs)):
        return run
    return None


def forward_runs(instance: torch.nn.Module, inputs: tuple[Any, ...]) -> bool:
    """Whether `instance(*inputs)` runs in eval mode (what inferred inputs must do to be
    kept: the cheapest run there is, recording nothing): on meta tensors, and on fake
    tensors where meta tensors themselves failed (`building.meta_cannot_run`: a boolean
    mask, a CPU tensor made in forward), as `_record_phase` runs it. The instance's
    train/eval state is left as it was: the scripted graph, if these inputs fail, reads it."""

    def attempt(fake: bool) -> tuple[bool, bool]:
        try:
            with warnings.catch_warnings(), _forward_modes(fake, _ScalarGuesser()):  # type: ignore[no-untyped-call]  # torch's TorchDispatchMode is untyped
                warnings.simplefilter("ignore")
                instance(*inputs)
        except Exception as error:  # noqa: BLE001 - the guess does not fit this forward
            return False, meta_cannot_run(error)
        return True, False

    states = [(m, m.training) for m in instance.modules()]
    instance.eval()
    # Fake tensors log every meta kernel that raises, with its stack: a guess that does not
    # fit is expected here, not worth a page of the worker's stderr.
    fake_log = torchcompat.fake_tensor_logger()
    was_disabled, fake_log.disabled = fake_log.disabled, True
    try:
        return _on_meta_then_fake(attempt)
    finally:
        fake_log.disabled = was_disabled
        for module, training in states:
            module.training = training


def _run(instance: Any, arguments: Any, recorder: Any, keywords: Any = None, fake: bool = True) -> None:
    with _forward_modes(fake, recorder, _ConstantWatcher(recorder)):
        instance(*arguments, **(keywords or {}))


@contextlib.contextmanager
def _forward_modes(fake: bool, dispatch_mode: Any, function_mode: Any = None) -> Iterator[None]:
    """What a forward runs under here: `dispatch_mode` sees each op first, above fake
    tensors when `fake`; `function_mode`, if any, sees torch's Python-level calls; no
    autograd. Weights and inputs live on meta; so must tensors forward makes without a
    device (`torch.arange(n)`), or every mix with them fails. Meta is also what keeps
    CPU/CUDA-only fast paths (MultiheadAttention's) off, as on the targets' devices."""
    with contextlib.ExitStack() as stack:
        stack.enter_context(torch.device("meta"))
        if function_mode is not None:
            stack.enter_context(function_mode)
        if fake:
            stack.enter_context(_fake_mode())
        stack.enter_context(dispatch_mode)
        stack.enter_context(torch.no_grad())
        yield


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return (text[0][:300] if text else "") or type(error).__name__


def _user_site_of(error: BaseException) -> Site | None:
    import traceback

    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        if not is_library_file(frame.filename) and not frame.filename.startswith(_ATENLINT_DIR):
            return Site(frame.filename, frame.lineno or 1, -1, 1, None)
    return None


def build_inputs(expression: str, module: Any) -> Any:
    """The user's example inputs, created on meta (no memory, even for huge shapes)."""
    from .loader import evaluate_inputs

    with torch.device("meta"):
        return evaluate_inputs(expression, module, on_meta=True)
