"""Paths and helpers the tests share (fixtures live in conftest.py)."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import textwrap

from atenlint.config import SettingsResolver
from atenlint.engine import Engine
from atenlint.targets.base import Problem, Support, Target, TargetStatus, Verdict

TESTS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TESTS)
GOLDEN = os.path.join(TESTS, "golden")


def check_json(engine: Engine, root: str, **overrides) -> list[dict]:
    """`atenlint check ROOT --format json` diagnostics, with paths relative to ROOT."""
    engine.resolver = SettingsResolver(overrides=overrides or None)
    report = engine.check_paths([root], jobs=1)
    out = []
    for finding in report.findings:
        item = finding.as_json()
        item["path"] = os.path.relpath(finding.abs_path or finding.path, root).replace(os.sep, "/")
        out.append(item)
    return out


# The torch release (major.minor) whose golden files are plain `expected.json`: the oldest
# supported one, CI's main environment.
GOLDEN_TORCH = "2.13"


def expected_path(root: str, torch_version: str) -> str:
    """A golden case's expected diagnostics for this torch: verdicts and messages come from
    the installed torch's own data, so each tested minor release has its file —
    `expected.json` for GOLDEN_TORCH, `expected.torch-X.Y.json` for any other (patch
    releases of one minor share a `native_functions.yaml`'s kernels and its messages)."""
    release = ".".join(torch_version.split("+")[0].split(".")[:2])
    name = "expected.json" if release == GOLDEN_TORCH else f"expected.torch-{release}.json"
    return os.path.join(root, name)


def load_expected(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def load_module(tmp_path, source: str, name: str):
    """Write `source` to a file and import it as module `name` (tests of worker-side code)."""
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source).lstrip())
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


class RejectsOp(Target):
    """A target whose verdict on one op is an error, judged on `tree_view`: a stand-in for a
    toolchain, needing no worker and no torch data."""

    device = "cpu"

    def __init__(self, name: str = "rejects", tree_view: str = "dispatch", op: str = "aten::take"):
        self.name, self.tree_view, self.op = name, tree_view, op
        self.description = f"rejects {op}"

    def problems(self, tree, phases):
        return [Problem(tree["op"], "missing")] if tree["op"] == self.op else []

    def verdict(self, problems):
        return Verdict("error", "REJ001", "is not supported")

    def status(self) -> TargetStatus:
        return {"target": self.name, "available": True, "description": self.description, "data": {}}

    def support(self, op: str) -> Support:
        return {"verdict": "unsupported", "reason": "by name"}


def process_running(pid: int) -> bool:
    """Whether `pid` is a live process (a killed child its parent has not reaped yet is a
    zombie, not running)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
