"""What the ExecuTorch delegate check adds to the `executorch` target, same classes, same run.

On the generated package of `bench_targets.py` (bench_check's layer mix, each class with
`# atenlint: inputs=...`), `atenlint check --target executorch --jobs 1` is the baseline;
`--target executorch,executorch:<delegate>` is timed next to it, for each delegate. Both
run warm table caches (a first untimed run of each fills them). The difference is the
delegate view: ExecuTorch's own `_gen_edge_manager_for_partitioners` (to_edge with the
partitioner's ops kept) and the partitioner's `partition()` per class (for Core ML also
coremltools' frontend over the delegated partitions), plus importing executorch's backend
once in the worker. With more than one delegate, all of them beside `executorch` in one run
is timed too (`all`): the views of one class share its functionalised program.

Each timing of a delegate is paired with a timing of `executorch` alone right next to it
(in turn first and second), and the pair with the median ratio is reported: on a loaded
machine a baseline timed minutes apart says little about the run it is compared with.

Goal (issue 24): <= 1.15 x the executorch target's time.

Beside it, for scale, the toolchain's own cost of the same step (left out with
`--no-toolchain`): a fresh interpreter runs `torch.export` and `run_decompositions()` on every class
(the executorch target's front end), and another runs `torch.export`, then executorch's
`_gen_edge_manager_for_partitioners` (the first half of `to_edge_transform_and_lower`, the
edge program the partitioner reads) and the partitioner's `partition()`, importing the
backend as a user's script does. Lowering (`preprocess`) is left out, as atenlint never
runs it: the ratio is what the same question costs executorch itself, over its own
executorch front end.

    python benchmarks/bench_delegates.py [--files 12] [--repeat 1] [--delegates xnnpack,vulkan] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from bench_check import ATENLINT
from bench_targets import FRONT_END, generate_traced_workspace, timed
from table import Row, format_table

GOAL_RATIO = 1.15
DELEGATES = ("xnnpack", "coreml", "vulkan")


@contextlib.contextmanager
def _generated_package(files: int) -> Iterator[str]:
    """bench_targets' generated package of `files` traced classes, in a scratch folder."""
    with tempfile.TemporaryDirectory(prefix="atenlint-bench-delegates-") as scratch:
        root = os.path.join(scratch, "pkg")
        os.makedirs(root)
        generate_traced_workspace(root, files)
        yield root


def measure_toolchain(files: int, delegates: tuple[str, ...]) -> dict[str, dict[str, float]]:
    """Per delegate: the toolchain's own delegate front end against its executorch front end,
    each timed next to the other (see the module's docstring)."""
    from atenlint.capture.delegate_view import PARTITIONERS  # the partitioner each target runs

    env = dict(os.environ, PYTHONWARNINGS="ignore")
    out: dict[str, dict[str, float]] = {}
    with _generated_package(files) as root:
        for delegate in delegates:
            base = timed([sys.executable, "-c", FRONT_END, "export+decompose", root], env)
            partition = "partition:" + ":".join(PARTITIONERS[delegate])
            with_delegate = timed([sys.executable, "-c", FRONT_END, partition, root], env)
            out[delegate] = {"export_decompose_s": base, "delegate_front_end_s": with_delegate}
    return out


def _check(root: str, targets: str) -> list[str]:
    return ATENLINT + ["check", root, "--target", targets, "--format", "json", "--jobs", "1"]


def measure(files: int, repeat: int, delegates: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    out: dict[str, dict[str, Any]] = {}
    with _generated_package(files) as root:
        timed(_check(root, "executorch," + ",".join(f"executorch:{d}" for d in delegates)), env)  # caches
        runs = {delegate: f"executorch,executorch:{delegate}" for delegate in delegates}
        if len(delegates) > 1:
            runs["all"] = "executorch," + ",".join(f"executorch:{d}" for d in delegates)
        pairs: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
        for round_index in range(repeat):
            for name, targets in runs.items():
                pairs[name].append(_paired(root, targets, env, base_first=round_index % 2 == 0))
        for name, timings in pairs.items():
            # The median pair (of an even number, the upper one: never the kinder reading).
            base, both = sorted(timings, key=lambda pair: pair[1] / pair[0])[len(timings) // 2]
            ratios = [round(with_delegate / alone, 3) for alone, with_delegate in timings]
            out[name] = {
                "executorch_s": base,
                "with_delegate_s": both,
                "ratio": both / base,
                "ratios": ratios,  # every pair's, in the order measured
            }
    return out


def _paired(root: str, targets: str, env: dict[str, str], base_first: bool) -> tuple[float, float]:
    """(executorch alone, with the delegate): two checks timed one right after the other."""
    commands = [_check(root, "executorch"), _check(root, targets)]
    if not base_first:
        commands.reverse()
    first, second = (timed(command, env) for command in commands)
    return (first, second) if base_first else (second, first)


def _toolchain_rows(found: dict[str, dict[str, float]], files: int) -> list[Row]:
    return [
        Row(
            f"executorch's own {delegate} front end beside torch.export + decompositions",
            value["delegate_front_end_s"],
            value["export_decompose_s"],
            note=f"{files} classes; for scale, no goal: the same step in executorch itself",
        )
        for delegate, value in found.items()
    ]


def _delegate_rows(found: dict[str, dict[str, Any]], note: str = "") -> list[Row]:
    return [
        Row(
            f"executorch:{delegate} beside executorch" if delegate != "all" else "every delegate beside executorch",
            value["with_delegate_s"],
            value["executorch_s"],
            goal_ratio=GOAL_RATIO if delegate != "all" else None,  # the goal is per delegate
            note=note,
        )
        for delegate, value in found.items()
    ]


def rows(quick: bool) -> list[Row]:
    files = 4 if quick else 12
    delegates = ("xnnpack",) if quick else DELEGATES
    found = measure(files, 1, delegates)
    return _delegate_rows(found, f"{files} traced classes") + _toolchain_rows(
        measure_toolchain(files, delegates), files
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=12)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--delegates", default=",".join(DELEGATES))
    parser.add_argument("--no-toolchain", action="store_true", help="skip the toolchain's own timings")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    delegates = tuple(d for d in args.delegates.split(",") if d)
    found = measure(args.files, args.repeat, delegates)
    toolchain = {} if args.no_toolchain else measure_toolchain(args.files, delegates)
    if args.json:
        print(json.dumps({"atenlint": found, "toolchain": toolchain}, indent=2))
        return 0
    table = _delegate_rows(found) + _toolchain_rows(toolchain, args.files)
    print(format_table(table))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
