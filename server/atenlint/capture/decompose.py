"""What one aten call really reaches at the backend, derived by running it on meta tensors.

The scripted graph holds ops before CompositeImplicitAutograd decomposition
(`aten::linalg_svdvals`), while a backend sees what they decompose into
(`aten::_linalg_svd`), and CompositeExplicitAutograd kernels call further ops
that a backend may lack (`aten::logspace` -> `aten::logspace.out`). Running the op
on meta tensors under a dispatch mode shows both, for the call's own constant
arguments (`adaptive_avg_pool3d(x, 1)` is a `mean`, `(2, 2, 2)` is not).

The result is a target-independent call tree: each node is an overload name and,
for composite kernels we could expand, the overloads they call. Targets walk it
and stop at the first node they have a kernel for.

Runs inside the worker: standard library and torch only.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch

from .. import torchcompat
from ..torchcompat import TorchDispatchMode

_CEA = torchcompat.dispatch_key("CompositeExplicitAutograd")
_CEANF = torchcompat.dispatch_key("CompositeExplicitAutogradNonFunctional")
_MAX_EXPANSION_DEPTH = 8

# A tree node: {"op": "aten::name.overload", "calls": [nodes] | None}.
# "calls" is None when the op was not expanded (a backend kernel, or a composite
# whose expansion failed on meta, e.g. one that picks a kernel by device).
Node = dict[str, Any]


def canonical_name(op: Any) -> str:
    """`aten::name` or `aten::name.overload`, the spelling torch's own warnings use."""
    return torchcompat.op_name(op)


def resolve_overload(qualified: str, overload: str) -> Any | None:
    """The dispatcher overload, or None for TorchScript-only builtins (`aten::sub.int`)."""
    return torchcompat.overload(qualified, overload)


def is_composite_implicit(op: Any) -> bool:
    return torchcompat.has_kernel(op.name(), "CompositeImplicitAutograd")


class _CallTreeRecorder(TorchDispatchMode):  # type: ignore[no-untyped-call]  # torch's TorchDispatchMode is untyped
    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # torch's TorchDispatchMode is untyped
        self.roots: list[Node] = []
        self._open: list[list[Node]] = [self.roots]

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        return dispatch_expanding(self, func, args, kwargs or {}, self._open)


def dispatch_expanding(
    mode: TorchDispatchMode, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], open_lists: list[Any]
) -> Any:
    """Run `func`, appending its node to the innermost open list; a composite with an
    explicit kernel is run through that kernel with `mode` re-entered, so what it calls
    becomes the node's children. Shared by every recorder of call trees."""
    node: Node = {"op": canonical_name(func), "calls": None}
    open_lists[-1].append(node)
    key = _expandable_key(func) if func.namespace == "aten" else None
    if key is not None and len(open_lists) <= _MAX_EXPANSION_DEPTH and _all_meta(args, kwargs):
        calls: list[Node] = []
        open_lists.append(calls)
        try:
            with mode:
                result = torchcompat.call_with_key(func, key, *args, **kwargs)
        except Exception as error:
            if _lacks_meta_kernel(error):
                # What it called so far is real; the op it stopped at has no meta kernel.
                node["calls"] = calls
                raise
        else:
            node["calls"] = calls
            return result
        finally:
            open_lists.pop()
    return func(*args, **kwargs)


def _all_meta(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Explicit composite kernels run only on meta tensors: on a fake CPU tensor (one a
    model made with `device="cpu"`) some reach native code that reads the data pointer of
    a tensor that has none (`copy_`: a segfault). Such a call stays a leaf."""
    stack = [args, kwargs]
    while stack:
        value = stack.pop()
        if isinstance(value, torch.Tensor):
            if value.device.type != "meta":
                return False
        elif isinstance(value, (list, tuple)):
            stack.extend(value)
        elif isinstance(value, dict):
            stack.extend(value.values())
    return True


def _lacks_meta_kernel(error: Exception) -> bool:
    text = str(error)
    return isinstance(error, NotImplementedError) and ("Meta kernel" in text or "fake impl" in text)


def _expandable_key(func: Any) -> Any:
    # Calling _op_dk for a key without a kernel aborts the process, so ask first.
    for key in (_CEA, _CEANF):
        if key is not None and func.has_kernel_for_dispatch_key(key):
            return key
    return None


# ---------------------------------------------------------------------------
# Synthesising arguments for a call whose tensor shapes are unknown.

_INDEX_NAMES = (
    "index",
    "indices",
    "indice",
    "target",
    "targets",
    "offsets",
    "lengths",
    "input_lengths",
    "target_lengths",
    "per_sample_weights_idx",
    "idx",
)
_MASK_NAMES = ("mask",)
_RANKS = (4, 2, 3, 5, 1)
_SIDE = 4


class _Unknown:
    """Marks an argument whose value the call site does not fix."""

    def __repr__(self) -> str:
        return "<unknown>"


UNKNOWN = _Unknown()


def _tensor_dtype(name: str) -> torch.dtype:
    lowered = name.lower()
    if any(lowered == n or lowered.endswith("_" + n) for n in _INDEX_NAMES):
        return torch.long
    if any(n in lowered for n in _MASK_NAMES):
        return torch.bool
    return torch.float32


def _synthesise(arg: Any, rank: int, optional_tensor_as_none: bool) -> Any:
    """A plausible value for an argument the call site leaves open."""
    type_text = str(arg.type)
    optional = type_text.startswith("Optional[")
    inner = type_text[len("Optional[") : -1] if optional else type_text
    name = arg.name
    if inner == "Tensor":
        if optional and optional_tensor_as_none:
            return None
        return torch.empty((_SIDE,) * rank, device="meta", dtype=_tensor_dtype(name))
    if inner in ("List[Tensor]", "List[Optional[Tensor]]"):
        return [torch.empty((_SIDE,) * rank, device="meta", dtype=_tensor_dtype(name)) for _ in range(2)]
    if optional:
        return None
    if inner in ("int", "SymInt"):
        return -1 if "dim" in name else 1
    if inner.startswith(("List[int]", "List[SymInt]")):
        if name in ("size", "shape") or "dim" in name:
            return [-1]
        return [2] * (getattr(arg, "N", None) or 2)
    if inner == "float":
        return 0.5
    if inner.startswith("List[float]"):
        return [2.0, 2.0]
    if inner == "bool":
        return False
    if inner in ("number", "Scalar"):
        return 1.0
    raise LookupError(f"cannot synthesise {type_text} {name}")


def _is_tensor_like(arg: Any) -> bool:
    return "Tensor" in str(arg.type)


def _rank_plans(tensor_count: int) -> Any:
    """Rank per open tensor argument, most plausible first: all alike, then a
    main input with 1-D parameters (norms, biases), then two free ranks."""
    seen = set()
    plans = [(r,) * tensor_count for r in _RANKS]
    plans += [(r,) + (1,) * (tensor_count - 1) for r in _RANKS]
    if tensor_count >= 2:
        plans += [(r, s) + (1,) * (tensor_count - 2) for r in _RANKS for s in _RANKS]
    for plan in plans:
        if plan not in seen:
            seen.add(plan)
            yield plan


def _candidate_calls(op: Any, known: dict[str, Any]) -> Any:
    arguments = torchcompat.op_schema(op).arguments
    open_tensors = [
        a.name
        for a in arguments
        if _is_tensor_like(a)
        and known.get(a.name, UNKNOWN) is UNKNOWN
        and not (a.has_default_value() and a.name not in known)
    ]
    for plan in _rank_plans(max(len(open_tensors), 1)):
        rank_of = dict(zip(open_tensors, plan))
        for none_optional in (False, True):
            args: list[Any] = []
            kwargs: dict[str, Any] = {}
            try:
                for arg in arguments:
                    if _is_device(arg):
                        # Factories must never allocate: pin every device argument to meta.
                        value = torch.device("meta")
                    elif arg.name in known and known[arg.name] is not UNKNOWN:
                        value = _materialise(known[arg.name])
                    elif arg.has_default_value() and arg.name not in known:
                        continue
                    else:
                        value = _synthesise(arg, rank_of.get(arg.name, plan[0]), none_optional)
                    if arg.kwarg_only:
                        kwargs[arg.name] = value
                    else:
                        args.append(value)
            except LookupError:
                return
            yield args, kwargs
        if not open_tensors:
            return  # nothing shape-dependent to vary


def _is_device(arg: Any) -> bool:
    return str(arg.type) in ("Device", "Optional[Device]")


def _materialise(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return torch.empty(value.shape, dtype=value.dtype, device="meta")
    return value


def call_tree(op: Any, known: dict[str, Any]) -> Node:
    """The call tree of `op` with the given constant arguments (by name).

    Arguments absent from `known` take their schema defaults; `UNKNOWN` ones are
    synthesised. When no synthesised call succeeds, the op is returned as an
    unexpanded leaf marked `"undecomposed": True` so targets can judge it alone.
    """
    name = canonical_name(op)
    implicit = is_composite_implicit(op)
    partial = None
    for args, kwargs in _candidate_calls(op, known):
        recorder = _CallTreeRecorder()
        try:
            with torch.no_grad(), recorder:
                op(*args, **kwargs)
        except Exception as error:  # noqa: BLE001 - try the next shape guess
            if partial is None and recorder.roots and _lacks_meta_kernel(error):
                # The call got as far as an op without a meta kernel (linalg_lstsq.out,
                # _ctc_loss): the tree up to there is what a backend would be asked for.
                partial = _as_tree(name, implicit, recorder.roots)
                partial["partial"] = True
            continue
        return _as_tree(name, implicit, recorder.roots)
    if partial is not None:
        return partial
    return {"op": name, "calls": None, "undecomposed": True}


# The views captured on meta or fake tensors (the dispatcher's, torch.export's, and the
# scripted graph's decompositions): only they need torch._dynamo.
_JIT_ONLY_VIEWS = frozenset({"jit", "onnx-jit"})


def warm_up(views: Iterable[str] | None = None) -> None:
    """Pay the one-time costs before the first file arrives: torch's Python meta kernels
    and dispatch modes are wrapped in torch._disable_dynamo, whose first call imports
    torch._dynamo (about a second on 2 cores, as long as importing torch itself on a
    loaded machine). `views`: the views the worker will be asked for, when known; a worker
    that only traces with torch.jit (TorchScript ONNX exporter, coremltools, with example
    inputs) never needs torch._dynamo, so it is not imported for it."""
    if views is not None and set(views) <= _JIT_ONLY_VIEWS:
        return
    call_tree(torch.ops.aten.gelu.default, {"self": UNKNOWN})
    call_tree(torch.ops.aten.linalg_svdvals.default, {"A": UNKNOWN})


def record_calls(function: Any, *args: Any, **kwargs: Any) -> tuple[list[Node], Exception | None]:
    """The call trees of everything `function(*args, **kwargs)` dispatches (meta tensors
    expected), and the error that stopped it, if any."""
    recorder = _CallTreeRecorder()
    try:
        with torch.no_grad(), recorder:
            function(*args, **kwargs)
    except Exception as error:  # noqa: BLE001 - the caller decides what a partial record is worth
        return recorder.roots, error
    return recorder.roots, None


def _as_tree(name: str, implicit: bool, roots: list[Any]) -> Node:
    if not implicit and len(roots) == 1 and roots[0]["op"] == name:
        only: Node = roots[0]
        return only
    return {"op": name, "calls": roots}
