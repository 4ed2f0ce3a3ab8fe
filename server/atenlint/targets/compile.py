"""torch.compile: where the installed torch's Dynamo splits the graph (graph breaks), at the
user's line, with Dynamo's own reason.

The verdict is the worker's compile view (capture/dynamo_view.py: Dynamo itself, on real
CPU tensors of the example inputs, with a backend that compiles nothing), or without
inputs the breaks the source shows for certain (capture/compile_static.py). A break costs
speed, not correctness, so it is a warning; with `fullgraph = true`
(`torch.compile(fullgraph=True)`, `torch.export(strict=True)`, AOTInductor) Dynamo raises
at the first one, so each is an error there. What was read from the source alone is never
an error: at most a warning.

The ops Inductor would run as their eager kernel (capture/inductor_fallbacks.py: its own
lowering tables, per device) are information: a kernel boundary and a copy, never a failure.
"""

from __future__ import annotations

import re

from ..worker.protocol import (
    CallTree,
    ClassAnswer,
    CompileAnswer,
    GraphBreak,
    InductorFallback,
    RecompileHazard,
    Site,
)
from .base import ClassResult, Problem, Support, Target, TargetStatus, Verdict
from .native_table import NativeTable

BREAK = "COMPILE001"  # Dynamo splits the graph here
SOURCE_BREAK = "COMPILE002"  # read from the source (no inputs): a break whatever the values
NOT_RUN = "COMPILE003"  # Dynamo could not run the class with its inputs: no verdict
FALLBACK = "COMPILE004"  # Inductor runs this op's eager kernel (no generated code), per device
RECOMPILE = "COMPILE005"  # a guard Dynamo installed recompiles the graph when this value changes

# Dynamo's reason -> what happens, in the user's words (the wording only: which calls
# break is Dynamo's own decision, reported as it gives it). First match wins.
_BRANCH = (
    "a Python `if`/`while` on a tensor's value (data-dependent control flow); "
    "torch.where or torch.cond keep both sides in the graph"
)
_ITEM = (
    "`.item()` takes a Python number out of a tensor; torch._check_is_size / torch._check "
    "(or Dynamo's `capture_scalar_outputs` config set to True) keep it in the graph"
)
_SKIPPED = (
    "a function torch.compile is told to skip (torch.compiler.disable, or code Dynamo "
    "does not trace) runs eagerly, outside the graph"
)
_DYNAMIC_SHAPE = (
    "an op whose output size depends on a tensor's values (`nonzero`, boolean-mask indexing, "
    "`unique`, `bincount`); Dynamo's `capture_dynamic_output_shape_ops` config set to True keeps it in the graph"
)
_USER_WORDS = (
    (r"Dynamic shape operator|output shape depends on", _DYNAMIC_SHAPE),
    (r"generic_jump|data-dependent branching|jump.*tensor", _BRANCH),
    (r"Tensor\.item\(\)", _ITEM),
    (r"tolist", "`.tolist()` takes Python values out of a tensor"),
    (r"`print`|builtin operator print", "`print` runs in Python, outside the graph"),
    (r"numpy", "`.numpy()` leaves the graph for NumPy"),
    (r"logging|logger", "a logging call runs in Python, outside the graph"),
    (r"disable|skip", _SKIPPED),
    (r"builtin|C extension|non-Python|pybind|unsupported", "a call Dynamo cannot trace"),
)


def user_words(reason: str) -> str:
    for pattern, words in _USER_WORDS:
        if re.search(pattern, reason, re.IGNORECASE):
            return words
    return "Dynamo cannot trace this code"


class CompileTarget(Target):
    name = "compile"
    description = "torch.compile: Dynamo graph breaks, Inductor fallbacks"
    device = "cpu"
    # Not a call tree: the worker's own compile record (ClassAnswer["compile"]); captured
    # after every other view, so the fast targets' diagnostics never wait for Dynamo.
    tree_view = "compile"

    def __init__(self, torch_version: str, fullgraph: bool = False, native: NativeTable | None = None) -> None:
        self.torch_version = torch_version
        self.fullgraph = fullgraph
        # native_functions.yaml's kernels: an op the CPU run met that has a CPU kernel only
        # (`_scaled_dot_product_flash_attention_for_cpu`) is never in a CUDA graph.
        self.native = native

    def problems(self, tree: CallTree, phases: tuple[str, ...]) -> list[Problem]:
        return []  # the verdict is per break (class_results), never per op

    def verdict(self, problems: list[Problem]) -> Verdict:
        return Verdict(self._break_severity(), BREAK, "breaks the torch.compile graph")

    def _break_severity(self) -> str:
        return "error" if self.fullgraph else "warning"

    def class_results(self, cls: ClassAnswer) -> list[ClassResult]:
        view = cls.get("compile")
        if not view:
            return []
        name = cls["name"]
        from_source = bool(view.get("source"))
        # Dynamo reports a break once per graph it splits (a loop's body: each pass): one
        # result per line and reason, with how often.
        counted: dict[tuple[str, int, str], int] = {}
        firsts: dict[tuple[str, int, str], GraphBreak] = {}
        for found in view.get("breaks", []):
            site = found.get("site")
            key = (site["file"], site["line"], found.get("reason", "")) if site else ("", 0, found.get("reason", ""))
            counted[key] = counted.get(key, 0) + 1
            firsts.setdefault(key, found)
        results = _one_per_place(
            [self._break_result(name, view, found, counted[key], from_source) for key, found in firsts.items()]
        )
        stop = view.get("fullgraph_error")
        stop_site = stop.get("site") if stop else None
        if self.fullgraph and stop and stop_site and not any(self._at(stop_site, f) for f in firsts.values()):
            results.append(
                ClassResult(
                    "error",
                    BREAK,
                    f"torch.compile(fullgraph=True) raises here in `{name}`: {stop.get('message', '')}",
                    site=stop_site,
                )
            )
        # One result per place: the report keeps one diagnostic per line, code and target, so
        # two ops of one line (a whole library model called on one line) are said together.
        fallbacks_by_place: dict[tuple[str, int] | None, list[tuple[InductorFallback, list[str]]]] = {}
        for fallback in view.get("fallbacks", []):
            op = fallback.get("op", "")
            devices = [d for d in fallback.get("devices", []) if d != "cuda" or self._in_cuda_graphs(op)]
            if devices:
                fallbacks_by_place.setdefault(_place(fallback.get("site")), []).append((fallback, devices))
        results += [self._fallback_result(name, found) for found in fallbacks_by_place.values()]
        results += [self._recompile_result(name, hazard) for hazard in view.get("recompiles", [])]
        error = view.get("error")
        if error and not from_source:
            results.append(
                ClassResult(
                    "information",
                    NOT_RUN,
                    f"Dynamo could not run `{name}` with its example inputs ({error.get('message', '')}); "
                    "the graph breaks before that point are reported, none after it",
                    site=error.get("site"),
                )
            )
        return results

    def _in_cuda_graphs(self, op: str) -> bool:
        """Whether a CUDA run can dispatch this op (the CPU run met it): false only for an op
        native_functions.yaml gives kernels of its own, none for CUDA nor composite."""
        if self.native is None:
            return True
        namespace, _, rest = op.partition(".")
        name, _, overload = rest.partition(".")
        entry = self.native.get(f"{namespace}::{name}" + (f".{overload}" if overload not in ("", "default") else ""))
        if entry is None or not entry.kernels or entry.delegate:
            return True
        return bool(entry.kernels & {"CUDA", "CompositeImplicitAutograd", "CompositeExplicitAutograd"}) or any(
            key.startswith("CompositeExplicit") for key in entry.kernels
        )

    @staticmethod
    def _fallback_result(name: str, found: list[tuple[InductorFallback, list[str]]]) -> ClassResult:
        """The ops of one place Inductor leaves to their eager kernels: speed, never
        correctness, so information."""

        def said(fallback: InductorFallback, devices: list[str]) -> str:
            op, called = fallback.get("op", ""), fallback.get("called", "")
            via = f" (`{called}` decomposes to it)" if called and called != op else ""
            return f"no {' and '.join(devices)} lowering for `{op}`{via}"

        if len(found) == 1:
            ((fallback, devices),) = found
            return ClassResult(
                "information",
                FALLBACK,
                f"Inductor has {said(fallback, devices)} in `{name}`: torch.compile runs its eager kernel there "
                f"(a kernel boundary and a copy, no fused code); Inductor's tables: {fallback.get('why', '')}",
                site=found[0][0].get("site"),
            )
        each = ", ".join(f"{said(fallback, devices)} ({fallback.get('why', '')})" for fallback, devices in found)
        return ClassResult(
            "information",
            FALLBACK,
            f"Inductor has {each} in `{name}`: torch.compile runs their eager kernels there (a kernel boundary "
            "and a copy each, no fused code); from Inductor's tables",
            site=found[0][0].get("site"),
        )

    @staticmethod
    def _recompile_result(name: str, hazard: RecompileHazard) -> ClassResult:
        """A Python number argument Dynamo guarded on by value: a note, it costs a compile."""
        argument, value = hazard.get("name", ""), hazard.get("value", "")
        return ClassResult(
            "information",
            RECOMPILE,
            f"torch.compile specialises the graph of `{name}` on the Python number `{argument}` ({value} in this "
            f"run): the first call with another value compiles again (Dynamo's guard: {hazard.get('guard', '')}); "
            "a 0-d tensor argument is not specialised",
            site=hazard.get("site"),
        )

    @staticmethod
    def _at(site: Site | None, found: GraphBreak) -> bool:
        other = found.get("site")
        return bool(site and other and site["file"] == other["file"] and site["line"] == other["line"])

    def _break_result(
        self, name: str, view: CompileAnswer, found: GraphBreak, times: int, from_source: bool
    ) -> tuple[ClassResult, str]:
        """The result of one break (its message says what breaks and Dynamo's reason) and
        Dynamo's explanation of it, said after the message (after every break of the place,
        when a place has several: machine formats cut a message at its first 1000 characters)."""
        reason = found.get("reason", "")
        if from_source:
            what = reason.partition(": ")[2] or reason
            return ClassResult(
                "warning",
                SOURCE_BREAK,
                f"torch.compile splits the graph of `{name}` here: {what}. Read from the source (no example "
                "inputs); give inputs to have Dynamo itself decide",
                site=found.get("site"),
            ), ""
        details = found.get("details", "")
        again = f" ({times} times)" if times > 1 else ""
        # A skipped frame's details are this view's own words about skipping, not Dynamo's.
        words = user_words(reason if found.get("skipped_frame") else f"{reason}\n{details}")
        severity, consequence = "warning", "torch.compile splits the graph here"
        if found.get("skipped_frame"):
            consequence = (
                "this graph break makes torch.compile skip the whole function (it runs eagerly, with no graph)"
            )
        if self.fullgraph:
            if view.get("fullgraph") is True:
                # Dynamo's own fullgraph run captured the whole class: this split happens
                # only without fullgraph (a `.item()` becomes a symbolic value with one graph).
                severity = "information"
                consequence = "torch.compile splits the graph here without fullgraph (fullgraph=True captures it)"
            else:
                severity, consequence = "error", "torch.compile(fullgraph=True) raises at this graph break"
        return ClassResult(
            severity,
            BREAK,
            f"{consequence}{again} in `{name}`: {words}. Dynamo (torch {self.torch_version}): {reason}",
            site=found.get("site"),
        ), details

    def support(self, op: str) -> Support:
        return {
            "verdict": "supported",
            "reason": "Dynamo traces every dispatcher op; breaks come from Python code around the ops",
        }

    def status(self) -> TargetStatus:
        return {
            "target": self.name,
            "available": True,
            "description": self.description,
            "data": {"compiler": f"Dynamo of torch {self.torch_version}", "fullgraph": self.fullgraph},
        }


_SEVERITY_ORDER = ("error", "warning", "information", "hint")
ALSO_HERE = " Also here: "  # between the breaks of one place, in one result


def _place(site: Site | None) -> tuple[str, int] | None:
    """Where a result is shown: its file and line (None: on the class name)."""
    return (site["file"], site["line"]) if site else None


def _one_per_place(results: list[tuple[ClassResult, str]]) -> list[ClassResult]:
    """Breaks of one place (two reasons on one line, or several without a user frame, all
    shown on the class name) as one result, the most severe, each break said in turn and
    then Dynamo's explanations (`details`): the report keeps one diagnostic per line, code and
    target, which would drop the others, and machine formats keep a message's first 1000
    characters, which must name every break."""
    by_place: dict[tuple[str, int] | None, list[tuple[ClassResult, str]]] = {}
    for result, details in results:
        by_place.setdefault(_place(result.site), []).append((result, details))
    out = []
    for same in by_place.values():
        severity = min((r.severity for r, _ in same), key=_SEVERITY_ORDER.index)
        said = [details for _, details in same if details]
        message = ALSO_HERE.join(r.message for r, _ in same) + (" — " + " / ".join(said) if said else "")
        first = same[0][0]
        out.append(ClassResult(severity, first.code, message, site=first.site))
    return out
