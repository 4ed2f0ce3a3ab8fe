"""NVIDIA TensorRT through Torch-TensorRT's dynamo path: an overload converts iff the
torch-tensorrt release for your torch registers a converter for it (read from its wheel
into `data/tensorrt_converters.json`, since the package needs CUDA to import). An op
without one stays in PyTorch: a graph break, not an error.

A converter with a capability validator may still decline a call. Most validators read
what a linter cannot know or what almost every call passes (a tensor's shape, how many
users a node has, a TensorRT-RTX-only case), so they are not reported: a note on every
conv and cat would be noise. Only where the call's constant arguments show that the
validator declines it (`_DECLINES`) is that call reported, as the graph break it is."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from typing import Any

from ..versions import major_minor as _minor
from ..worker.protocol import CallTree
from .base import Problem, Support, Target, TargetStatus, Verdict, join_ops
from .walk import base_name, eval_only

BREAK = "graph-break"
DECLINED = "declined"  # kind "declined:<reason>": the validator declines this call's arguments
DATA = os.path.join(os.path.dirname(__file__), "data", "tensorrt_converters.json")


def release_for(torch_version: str, path: str = DATA) -> tuple[dict[str, Any], bool]:
    """The torch-tensorrt release paired with this torch (same major.minor), else the
    nearest older one; and whether the pairing is exact."""
    with open(path, encoding="utf-8") as handle:
        versions: dict[str, dict[str, Any]] = json.load(handle)["versions"]
    ordered = sorted(versions.values(), key=lambda v: _minor(v["release"]))
    wanted = _minor(torch_version)
    exact = [v for v in ordered if _minor(v["release"]) == wanted]
    older = [v for v in ordered if _minor(v["release"]) <= wanted]
    chosen = (exact or older or ordered)[-1]
    return chosen, bool(exact)


def _not_ones(value: Any) -> bool:
    """A dilation other than 1 (an int or a list of ints, as the call wrote it)."""
    values = value if isinstance(value, (list, tuple)) else [value]
    return any(isinstance(v, int) and not isinstance(v, bool) and v != 1 for v in values)


def _max_pool(args: Mapping[str, Any]) -> str | None:
    # max_pool_param_validator (aten_ops_converters.py, torch-tensorrt 2.13 and 2.14)
    if args.get("ceil_mode") is True:
        return "`ceil_mode=True`"
    if "dilation" in args and _not_ones(args["dilation"]):
        return f"`dilation={args['dilation']}`"
    return None


def _avg_pool(args: Mapping[str, Any]) -> str | None:
    # avg_pool_param_validator (aten_ops_converters.py, torch-tensorrt 2.13 and 2.14)
    if args.get("ceil_mode") is True:
        return "`ceil_mode=True`"
    if args.get("divisor_override") is not None:
        return f"`divisor_override={args['divisor_override']}`"
    return None


_TOPK_MAX_K = 3840  # topk_sort_validator: "only topk values up to 3840 are supported"


def _topk(args: Mapping[str, Any]) -> str | None:
    k = args.get("k")
    if isinstance(k, int) and not isinstance(k, bool) and k > _TOPK_MAX_K:
        return f"`k={k}` (at most {_TOPK_MAX_K})"
    return None


def _as_strided(args: Mapping[str, Any]) -> str | None:
    # zero_output_validator: no zero-sized output dimension
    size = args.get("size")
    if isinstance(size, (list, tuple)) and 0 in size:
        return f"a zero-sized output `size={list(size)}`"
    return None


# What each validator declines that a call's constant arguments can show (the validators
# read in the torch-tensorrt 2.13.0 and 2.14.0 wheels; `scripts/gen_tensorrt_converters.py`
# records which converters have one). Keyed by the overload the validator guards; the
# arguments are those of that same call, so a rule applies only when the call is that op.
_DECLINES: dict[str, Callable[[Mapping[str, Any]], str | None]] = {
    "aten::max_pool1d": _max_pool,
    "aten::max_pool2d": _max_pool,
    "aten::max_pool3d": _max_pool,
    "aten::avg_pool1d": _avg_pool,
    "aten::avg_pool2d": _avg_pool,
    "aten::avg_pool3d": _avg_pool,
    "aten::topk": _topk,
    "aten::as_strided": _as_strided,
}


class TensorRTTarget(Target):
    name = "tensorrt"
    description = "NVIDIA TensorRT through Torch-TensorRT (dynamo)"
    device = "cuda"
    tree_view = "export"

    def __init__(self, torch_version: str, path: str = DATA):
        self.release, self.exact = release_for(torch_version, path)
        self.torch_version = torch_version
        ops: dict[str, dict[str, Any]] = self.release["ops"]
        self.converters = {name: entry for name, entry in ops.items() if not entry["packet"]}
        self.packets = {name: entry for name, entry in ops.items() if entry["packet"]}

    def converter(self, op: str) -> dict[str, Any] | None:
        return self.converters.get(op) or self.packets.get(base_name(op))

    def problems(self, tree: CallTree, phases: tuple[str, ...]) -> list[Problem]:
        if eval_only(phases):
            return []
        found: list[Problem] = []
        self._visit(tree, found)
        return found

    def _visit(self, node: CallTree, found: list[Problem]) -> None:
        if self.converter(node["op"]) is not None:
            return  # converted; a validator's doubt is judged from the call's arguments
        if not node["op"].startswith("aten::") or (node.get("undecomposed") and node.get("decomposable")):
            return
        calls = node.get("calls")
        if calls is not None and node.get("via") == "default":
            for child in calls:
                self._visit(child, found)
            return
        _add(found, Problem(node["op"], BREAK))

    def argument_problems(self, op: str, args: dict[str, Any], phases: tuple[str, ...]) -> list[Problem]:
        """The call `op` with these constant arguments, when its converter's capability
        validator declines them (so it runs in PyTorch); empty when it may convert."""
        entry = self.converter(op)
        rule = _DECLINES.get(op)
        if entry is None or not entry["validator"] or rule is None or eval_only(phases):
            return []
        reason = rule(args)
        return [] if reason is None else [Problem(op, f"{DECLINED}:{reason}")]

    def verdict(self, problems: list[Problem]) -> Verdict:
        release = f"Torch-TensorRT {self.release['release']}"
        breaks = [p.op for p in problems if p.kind == BREAK]
        declined = [(p.op, p.kind.partition(":")[2]) for p in problems if p.kind.startswith(DECLINED)]
        if breaks:
            message = (
                f"reaches {join_ops(breaks)}, which {release} has no converter for: that part of the graph "
                f"runs in PyTorch (a graph break between TensorRT engines), slower but not an error"
            )
            if declined:
                message += "; " + _declined_clause(declined)
            return Verdict("warning", "TRT001", message)
        # The gist (what runs where, and why) in the first clause: editors show that much.
        calls = " and ".join(dict.fromkeys(f"`{op}` with {reason}" for op, reason in declined))
        return Verdict(
            "warning",
            "TRT002",
            f"runs {calls} in PyTorch: {release}'s converter has a capability validator that "
            f"declines it (a graph break between TensorRT engines, slower but not an error)",
        )

    def support(self, op: str) -> Support:
        entry = self.converter(op)
        if entry is None:
            return {"verdict": "graph break", "reason": "no converter: runs in PyTorch"}
        if entry["validator"]:
            return {"verdict": "maybe", "reason": "converter with a capability validator"}
        return {"verdict": "supported", "reason": "converter"}

    def status(self) -> TargetStatus:
        note = "" if self.exact else f" (nearest release to torch {self.torch_version})"
        return {
            "target": self.name,
            "available": True,
            "description": self.description,
            "data": {
                "converters": f"torch-tensorrt {self.release['release']} wheel{note}: "
                f"{len(self.converters) + len(self.packets)} targets "
                f"(data/tensorrt_converters.json)"
            },
        }


def _declined_clause(declined: list[tuple[str, str]]) -> str:
    return "; ".join(f"its converter declines `{op}` with {reason}" for op, reason in dict.fromkeys(declined))


def _add(items: list[Problem], problem: Problem) -> None:
    if problem not in items:
        items.append(problem)
