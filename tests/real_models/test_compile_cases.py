"""atenlint's `compile` target agrees with the real torch.compile on hand-written cases of
every graph-break kind the issue names (models/compile/: `.item()`, `.tolist()`, `.numpy()`,
print, logging and `warnings.warn`, builtins and C extensions, NumPy on a tensor,
`torch.compiler.disable`, breaks in helpers, submodules, static methods, generators, loops,
`try`/`except`, data-dependent `if`/`while`, and classes without a break), compared as
test_real_models_compile.py compares public models (compile_agreement.py): per model, the
breaks `torch._dynamo.explain` reports (where and why, how often) and the
`torch.compile(fullgraph=True)` verdict, on real CPU tensors, against atenlint's COMPILE001
findings with `fullgraph = true`.

Needs torch alone (no model libraries), so it runs in the main suite. The real runs are
explain and fullgraph only (Inductor's C++ code generation is left to the public-model
suite) and are committed per torch version (`compile_truth_data/`, written by
scripts/regen_compile_case_truth.py), else computed once into the user cache.

Each case is also read without its inputs (the source pass, COMPILE002): that must never
fail, and each break it reports must be one Dynamo reports at that line.
"""

from __future__ import annotations

import collections
import concurrent.futures
import os
import re
import tempfile

import pytest

from .agreement import MODELS, run_atenlint_with
from .compile_agreement import (
    NO_USER_FRAME,
    Row,
    agreement_rows,
    assert_break_location_goals,
    assert_disagreements_are,
    assert_fullgraph_verdict_goal,
    real_breaks,
    real_compile,
    table,
)

CASES = os.path.join(MODELS, "compile")
CHOSEN = tuple(
    sorted(f"compile/{name}" for name in os.listdir(CASES) if name.startswith("case_") and name.endswith(".py"))
)

# The real runs: explain and fullgraph only (scripts/regen_compile_case_truth.py records the same).
RUNNER_ARGUMENTS = ("--no-inductor",)
# model file -> why atenlint and the real torch.compile differ there.
KNOWN: dict[str, str] = {}
# model file -> why it is left out of the run with inferred inputs.
NOT_INFERRED = {
    "compile/case_while_data.py": "with inferred inputs (no directive) the worker's capture, for any target, runs "
    "past the processor-time limit on the data-dependent `while` (ATL005); with the directive it takes seconds",
}

pytestmark = pytest.mark.timeout(1800)


def _paths() -> dict[str, str]:
    return {name: os.path.join(MODELS, name) for name in CHOSEN}


@pytest.fixture(scope="module")
def truth() -> dict[str, dict]:
    paths = _paths()
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        return dict(zip(paths, pool.map(lambda path: real_compile(path, list(RUNNER_ARGUMENTS)), paths.values())))


@pytest.fixture(scope="module")
def rows(truth: dict[str, dict]) -> list[Row]:
    out = agreement_rows(_paths(), truth)
    print("\n" + table(out))
    return out


def test_directive_inputs_are_the_example_inputs() -> None:
    """atenlint runs Dynamo on the class line's directive, the real side on example_inputs():
    the two describe the same tensors."""
    import torch

    from .compile_truth import load

    for path in _paths().values():
        with open(path, encoding="utf-8") as handle:
            (directive,) = [
                line.split("# atenlint: inputs=", 1)[1].strip()
                for line in handle
                if line.startswith("class Model(") and "# atenlint: inputs=" in line
            ]
        value = eval(directive, {"torch": torch})  # the case file's own directive
        value = value if isinstance(value, tuple) else (value,)
        expected = tuple(load(path).example_inputs())
        assert [(tuple(t.shape), t.dtype) for t in value] == [(tuple(t.shape), t.dtype) for t in expected], path


def test_the_real_compile_ran_on_every_case(truth: dict[str, dict]) -> None:
    broken = {
        f"{name} {step}": (result.get(step) or {"crashed": result.get("crashed", "missing")})["crashed"][-300:]
        for name, result in truth.items()
        for step in ("explain", "fullgraph")
        if "crashed" in (result.get(step) or {"crashed": ""})
    }
    assert not broken
    # Both outcomes are covered: cases that compile whole and cases with breaks.
    assert any(not r["explain"]["breaks"] and r["fullgraph"]["ok"] for r in truth.values())
    assert any(r["explain"]["breaks"] for r in truth.values())


def test_disagreements_are_the_known_ones(rows: list[Row]) -> None:
    assert_disagreements_are(rows, KNOWN)


def test_break_location_goals(rows: list[Row]) -> None:
    assert_break_location_goals(rows)


def test_fullgraph_verdict_goal(rows: list[Row]) -> None:
    assert_fullgraph_verdict_goal(rows)


_DIRECTIVE = re.compile(r"  # atenlint: inputs=.*$", re.MULTILINE)


@pytest.mark.parametrize(
    ("config", "codes"),
    [
        pytest.param("[tool.atenlint]\ninfer-inputs = false\n", {"COMPILE002"}, id="source-pass"),
        pytest.param("[tool.atenlint]\n", {"COMPILE001", "COMPILE002"}, id="inferred-inputs"),
    ],
)
def test_without_inputs_only_real_breaks_are_reported(truth: dict[str, dict], config: str, codes: set[str]) -> None:
    """Without the directive atenlint reads the source (`infer-inputs = false`: COMPILE002)
    or runs Dynamo on the inputs it infers: no case fails, and every break it reports is at
    a line where the real torch.compile breaks (precision; what it cannot see it may miss)."""
    with tempfile.TemporaryDirectory() as scratch:
        copies = {}
        for name, path in _paths().items():
            if "infer-inputs = false" not in config and name in NOT_INFERRED:
                continue
            copy = os.path.join(scratch, os.path.basename(path))
            with open(path, encoding="utf-8") as handle:
                text = _DIRECTIVE.sub("", handle.read())
            with open(copy, "w", encoding="utf-8") as handle:
                handle.write(text)
            copies[name] = copy
        report = run_atenlint_with(list(copies.values()), "compile", config)
    by_file: dict[str, list[dict]] = collections.defaultdict(list)
    for diagnostic in report.get("diagnostics", []):
        by_file[os.path.basename(diagnostic.get("path", ""))].append(diagnostic)
    failed, wrong, reported = [], [], 0
    for name, copy in copies.items():
        # Where explain splits the graph, a frame is skipped, and fullgraph=True raises (a
        # break after one explain does not record: its graph before it was empty).
        wheres = [where for where, _ in real_breaks(truth[name])] + truth[name]["fullgraph"].get("frames", [])[-1:]
        real_lines = {int(where.rsplit(":", 1)[1]) for where in wheres if where != NO_USER_FRAME}
        for diagnostic in by_file[os.path.basename(copy)]:
            code = diagnostic.get("code", "")
            if code.startswith("ATL") or code == "COMPILE003":
                failed.append(f"{name}: {code} {diagnostic.get('message', '')[:200]}")
            if code in codes:
                reported += 1
                line = diagnostic["range"]["start"]["line"] + 1
                if line not in real_lines:
                    wrong.append(f"{name}:{line} {code} {diagnostic.get('message', '')[:160]}")
    print(f"\n{sorted(codes)}: {reported} reported, {len(wrong)} not at a real break, {len(failed)} failures")
    assert not failed, failed
    assert not wrong, wrong
    assert reported, "no break reported on cases full of certain breaks"
