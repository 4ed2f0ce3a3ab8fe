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

Goal (issue 24): <= 1.15 x the executorch target's time.

    python benchmarks/bench_delegates.py [--files 12] [--repeat 1] [--delegates xnnpack,vulkan] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from bench_check import ATENLINT
from bench_targets import generate_traced_workspace, timed
from table import Row, format_table

GOAL_RATIO = 1.15
DELEGATES = ("xnnpack", "coreml", "vulkan")


def _check(root: str, targets: str) -> list[str]:
    return ATENLINT + ["check", root, "--target", targets, "--format", "json", "--jobs", "1"]


def measure(files: int, repeat: int, delegates: tuple[str, ...]) -> dict[str, dict[str, float]]:
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    out: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="atenlint-bench-delegates-") as scratch:
        root = os.path.join(scratch, "pkg")
        os.makedirs(root)
        generate_traced_workspace(root, files)
        timed(_check(root, "executorch," + ",".join(f"executorch:{d}" for d in delegates)), env)  # caches
        base = statistics.median(timed(_check(root, "executorch"), env) for _ in range(repeat))
        runs = {delegate: f"executorch,executorch:{delegate}" for delegate in delegates}
        if len(delegates) > 1:
            runs["all"] = "executorch," + ",".join(f"executorch:{d}" for d in delegates)
        for name, targets in runs.items():
            both = statistics.median(timed(_check(root, targets), env) for _ in range(repeat))
            out[name] = {"executorch_s": base, "with_delegate_s": both, "ratio": both / base}
    return out


def rows(quick: bool) -> list[Row]:
    files = 4 if quick else 12
    found = measure(files, 1, ("xnnpack",) if quick else DELEGATES)
    return [
        Row(
            f"executorch:{delegate} beside executorch" if delegate != "all" else "every delegate beside executorch",
            value["with_delegate_s"],
            value["executorch_s"],
            goal_ratio=GOAL_RATIO if delegate != "all" else None,  # the goal is per delegate
            note=f"{files} traced classes",
        )
        for delegate, value in found.items()
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=12)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--delegates", default=",".join(DELEGATES))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    found = measure(args.files, args.repeat, tuple(d for d in args.delegates.split(",") if d))
    if args.json:
        print(json.dumps(found, indent=2))
        return 0
    table = [
        Row(
            f"executorch:{d} beside executorch" if d != "all" else "every delegate beside executorch",
            v["with_delegate_s"],
            v["executorch_s"],
            goal_ratio=GOAL_RATIO if d != "all" else None,
        )
        for d, v in found.items()
    ]
    print(format_table(table))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
