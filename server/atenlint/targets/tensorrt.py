"""NVIDIA TensorRT through Torch-TensorRT's dynamo path: an overload converts iff the
torch-tensorrt release for your torch registers a converter for it (read from its wheel
into `data/tensorrt_converters.json`, since the package needs CUDA to import). An op
without one stays in PyTorch: a graph break, not an error. A converter with a
capability validator may still decline a call."""

from __future__ import annotations

import json
import os

from .base import Problem, Verdict, join_ops
from .walk import base_name, eval_only

BREAK = "graph-break"
MAYBE = "validated"
DATA = os.path.join(os.path.dirname(__file__), "data", "tensorrt_converters.json")


def _minor(version: str) -> tuple:
    parts = version.split("+")[0].split(".")
    return int(parts[0]), int(parts[1])


def release_for(torch_version: str, path: str = DATA) -> tuple[dict, bool]:
    """The torch-tensorrt release paired with this torch (same major.minor), else the
    nearest older one; and whether the pairing is exact."""
    with open(path, encoding="utf-8") as handle:
        versions = json.load(handle)["versions"]
    ordered = sorted(versions.values(), key=lambda v: _minor(v["release"]))
    wanted = _minor(torch_version)
    exact = [v for v in ordered if _minor(v["release"]) == wanted]
    older = [v for v in ordered if _minor(v["release"]) <= wanted]
    chosen = (exact or older or ordered)[-1]
    return chosen, bool(exact)


class TensorRTTarget:
    name = "tensorrt"
    description = "NVIDIA TensorRT through Torch-TensorRT (dynamo)"
    device = "cuda"
    tree_view = "export"

    def __init__(self, torch_version: str, path: str = DATA):
        self.release, self.exact = release_for(torch_version, path)
        self.torch_version = torch_version
        ops = self.release["ops"]
        self.converters = {name: entry for name, entry in ops.items() if not entry["packet"]}
        self.packets = {name: entry for name, entry in ops.items() if entry["packet"]}

    def converter(self, op: str):
        return self.converters.get(op) or self.packets.get(base_name(op))

    def problems(self, tree: dict, phases: tuple) -> list[Problem]:
        if eval_only(phases):
            return []
        found: list[Problem] = []
        self._visit(tree, found)
        return found

    def _visit(self, node: dict, found: list) -> None:
        entry = self.converter(node["op"])
        if entry is not None:
            if entry["validator"]:
                _add(found, Problem(node["op"], MAYBE))
            return
        if not node["op"].startswith("aten::") or (node.get("undecomposed") and node.get("decomposable")):
            return
        if node.get("calls") is not None and node.get("via") == "default":
            for child in node["calls"]:
                self._visit(child, found)
            return
        _add(found, Problem(node["op"], BREAK))

    def verdict(self, problems: list[Problem]) -> Verdict:
        release = f"Torch-TensorRT {self.release['release']}"
        breaks = [p.op for p in problems if p.kind == BREAK]
        maybe = [p.op for p in problems if p.kind == MAYBE]
        if breaks:
            message = (f"reaches {join_ops(breaks)}, which {release} has no converter for: that part of the graph "
                       f"runs in PyTorch (a graph break between TensorRT engines), slower but not an error")
            if maybe:
                message += f"; {join_ops(maybe)} converts only if its capability validator accepts the call"
            return Verdict("warning", "TRT001", message)
        return Verdict("information", "TRT002",
                       f"reaches {join_ops(maybe)}, whose {release} converter has a capability validator: it runs "
                       f"in TensorRT only if the validator accepts this call (arguments, dtypes, shapes), else in "
                       f"PyTorch")

    def support(self, op: str) -> dict:
        entry = self.converter(op)
        if entry is None:
            return {"verdict": "graph break", "reason": "no converter: runs in PyTorch"}
        if entry["validator"]:
            return {"verdict": "maybe", "reason": "converter with a capability validator"}
        return {"verdict": "supported", "reason": "converter"}

    def status(self) -> dict:
        note = "" if self.exact else f" (nearest release to torch {self.torch_version})"
        return {"target": self.name, "available": True, "description": self.description,
                "data": {"converters": f"torch-tensorrt {self.release['release']} wheel{note}: "
                                       f"{len(self.converters) + len(self.packets)} targets "
                                       f"(data/tensorrt_converters.json)"}}


def _add(items: list, problem: Problem) -> None:
    if problem not in items:
        items.append(problem)
