"""Facts about the installed torch that tests build their inputs from.

A test that needs "an op with no MPS kernel" must not name one: each torch release adds
MPS kernels (torch 2.15 gave `take`, `heaviside`, `put_` and `logspace` one), and a test
written for the gaps of one release fails on the next although atenlint is right. So a
test asks this module, which walks a small ordered list of candidate calls and keeps those
that the installed wheel's own `native_functions.yaml` (parsed with the wheel's torchgen,
the code generator's view, as atenlint's worker reads it) gives no MPS kernel. When no
candidate applies to this torch the test is skipped, and the skip says which fact is
missing. The candidates are only call expressions; whether one is supported always comes
from torch.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import importlib.util
import os
import re
from dataclasses import dataclass

import pytest

from atenlint.fixes.catalog import REWRITES
from atenlint.fixes.model import REWRITE, Rewrite, offered_in

_COMPOSITE = ("CompositeImplicitAutograd", "CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional")


@dataclass(frozen=True)
class OpCall:
    """A Python call that reaches one aten overload with a kernel of its own (no composite in
    between), so the overload a backend lacks is the one atenlint names."""

    function: str  # what the user writes: "torch.take"
    overload: str  # the overload the call dispatches to: "aten::take"
    template: str  # the call, with {x} for a float tensor expression of shape (N, 8)

    def call(self, x: str = "x") -> str:
        return self.template.format(x=x)

    def site(self, x: str = "x") -> str:
        """The part of `call(x)` a finding's range covers: the call of `function` itself,
        without what follows it (`torch.mode(x, dim=-1)` of `torch.mode(x, dim=-1).values`)."""
        text = self.call(x)
        for node in ast.walk(ast.parse(text, mode="eval")):
            if isinstance(node, ast.Call) and ast.unparse(node.func) == self.function:
                segment = ast.get_source_segment(text, node)
                assert segment is not None
                return segment
        raise AssertionError(f"{text!r} does not call {self.function}")


# Ordered: the calls the tests were first written with come first (`take` and `mode`), so the
# choice on torch 2.13/2.14 stays what it was; a newer release falls through to the next
# candidate that still lacks the kernel. `heaviside` and the `special` functions are
# structured ops (their kernels are their out= overload's).
MPS_CANDIDATES = (
    OpCall("torch.take", "aten::take", "torch.take({x}, torch.tensor([0]))"),
    OpCall("torch.mode", "aten::mode", "torch.mode({x}, dim=-1).values"),
    OpCall("torch.heaviside", "aten::heaviside", "torch.heaviside({x}, {x})"),
    OpCall("torch.special.ndtri", "aten::special_ndtri", "torch.special.ndtri({x})"),
    OpCall("torch.special.log_ndtr", "aten::special_log_ndtr", "torch.special.log_ndtr({x})"),
    OpCall("torch.special.airy_ai", "aten::special_airy_ai", "torch.special.airy_ai({x})"),
)


@dataclass(frozen=True)
class Missing:
    """A candidate call and the overload atenlint reports for it (`aten::heaviside.out`
    for a structured op whose out= delegate has no kernel)."""

    call: OpCall
    op: str


def torch_release() -> str:
    """The installed torch's release, "2.15.0" (no local build tag), as the worker's hello says."""
    return importlib.metadata.version("torch").split("+")[0]


@functools.lru_cache(maxsize=1)
def _native() -> dict[str, tuple[frozenset[str], str | None]]:
    """Every aten overload of the installed wheel: (dispatch keys with a kernel, structured
    delegate). Read with torchgen by `NativeTable`, which caches the parse on disk by the
    yaml's hash (parsing takes seconds on a loaded machine, the cache milliseconds)."""
    from atenlint.targets.native_table import NativeTable

    # Located as the worker locates it, without importing torch (seconds) or torchgen.
    spec = importlib.util.find_spec("torchgen")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("torchgen (part of the torch wheel) is not installed")
    native = os.path.join(next(iter(spec.submodule_search_locations)), "packaged", "ATen", "native")
    table = NativeTable.load(os.path.join(native, "native_functions.yaml"), torch_release())
    return {name: (entry.kernels, entry.delegate) for name, entry in table.entries.items()}


def kernel_holder(overload: str) -> str | None:
    """The overload whose kernels a call of `overload` runs: itself, or its structured
    out= delegate; None when torch has no such overload or it decomposes (a composite)."""
    native = _native()
    if overload not in native:
        return None
    keys, delegate = native[overload]
    if delegate is not None:
        keys, holder = native[delegate][0], delegate
    else:
        holder = overload
    return None if keys & set(_COMPOSITE) else holder


def has_kernel(overload: str, key: str) -> bool:
    """Whether the installed torch has a `key` (MPS, CUDA, CPU) kernel for what `overload` runs."""
    holder = kernel_holder(overload)
    return holder is not None and key in _native()[holder][0]


def applicable(
    key: str, candidates: tuple[OpCall, ...] = MPS_CANDIDATES, structured: bool | None = None
) -> list[Missing]:
    """Every candidate call that runs on the CPU but has no `key` kernel in the installed
    torch, in candidate order (with `structured`, only those whose kernels are, or are not,
    an out= delegate's)."""
    found = []
    for candidate in candidates:
        holder = kernel_holder(candidate.overload)
        if holder is None or (structured is not None and (holder != candidate.overload) != structured):
            continue
        if has_kernel(holder, "CPU") and not has_kernel(holder, key):
            found.append(Missing(candidate, holder))
    return found


def missing_on(
    key: str, count: int = 1, candidates: tuple[OpCall, ...] = MPS_CANDIDATES, structured: bool | None = None
) -> list[Missing]:
    """The first `count` of `applicable(...)`; skips the test when fewer apply."""
    found = applicable(key, candidates, structured)
    if len(found) < count:
        pytest.skip(
            f"torch {torch_release()} has a {key} kernel for all but {len(found)} of the candidate calls "
            f"({', '.join(c.function for c in candidates)}); this test needs {count}"
        )
    return found[:count]


def mps_missing() -> Missing:
    """A call whose op has no MPS kernel (MPS001) in the installed torch."""
    return missing_on("MPS")[0]


def mps_missing_two() -> tuple[Missing, Missing]:
    """Two calls of different ops without an MPS kernel in the installed torch."""
    first, second = missing_on("MPS", 2)
    return first, second


def mps_missing_with_exact_rewrite() -> tuple[Missing, Rewrite]:
    """A call whose op has no MPS kernel in the installed torch and for which atenlint's fix
    catalog offers an exact rewrite for MPS on this torch (the preferred quick fix), with that
    catalog entry: for tests of the quick-fix path. A rewrite that computes on the device is
    chosen over an explicit CPU round trip when a candidate has one. Skips when none has either."""
    found = []
    for missing in applicable("MPS"):
        for rewrite in REWRITES:
            if (
                "mps" in rewrite.targets
                and rewrite.exact
                and rewrite.kind == REWRITE
                and rewrite.only_while is None
                and missing.call.function in rewrite.functions
                and missing.op in rewrite.ops
                and offered_in(rewrite, "mps", torch_release())
            ):
                found.append((missing, rewrite))
                break
    if not found:
        pytest.skip(
            f"atenlint offers no exact MPS rewrite on torch {torch_release()} for any candidate call without "
            f"an MPS kernel ({', '.join(m.call.function for m in applicable('MPS')) or 'none'})"
        )
    return min(found, key=lambda pair: pair[1].runs_on_cpu)  # the first on-device one, else the first


def require_no_kernel(key: str, *overloads: str) -> None:
    """Skip the test unless the installed torch has no `key` kernel for any of `overloads`
    (each through its out= delegate where it is structured): for tests of one op's own
    behaviour, such as its fix, where no other op can stand in."""
    present = [op for op in overloads if has_kernel(op, key)]
    if present:
        pytest.skip(f"torch {torch_release()} has a {key} kernel for {', '.join(present)}")


_MISSING = re.compile(r"MISSING\(((?:[^()]|\([^()]*\))*)\)")


def with_mps_missing(source: str) -> str:
    """`source` with each `MISSING(expr)` replaced by a call, on `expr`, of the first op with
    no MPS kernel in the installed torch (`mps_missing()`): test sources written once for
    every torch. `expr` may hold one level of parentheses: `MISSING(self.proj(x))`."""
    return _MISSING.sub(lambda match: mps_missing().call.call(match.group(1)), source)
