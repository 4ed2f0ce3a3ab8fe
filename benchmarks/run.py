"""Run every benchmark that reports issue 22's table and print it.

Each `benchmarks/bench_*.py` exposing `rows(quick: bool) -> list[Row]` (see table.py) takes
part; the others (soaks, fault recovery) are standalone scripts and are skipped.

    python benchmarks/run.py [--quick] [--check] [--only NAME] [--json]

--quick   smaller workloads (CI information line); ratios stay meaningful, noise grows.
--check   exit 1 when a row misses its goal (exit 2 when a benchmark itself failed).
--only    run just bench_NAME.py (repeatable).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import os
import sys
import time
import traceback
from collections.abc import Callable

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from table import Row, format_table


def _reports_rows(path: str) -> bool:
    with open(path, encoding="utf-8") as handle:
        return "\ndef rows(quick: bool)" in handle.read()


def discover(only: list[str]) -> list[str]:
    # Only the benchmarks that report table rows are imported: the soaks import test helpers.
    names = sorted(
        name[len("bench_") : -len(".py")]
        for name in os.listdir(HERE)
        if name.startswith("bench_") and name.endswith(".py") and _reports_rows(os.path.join(HERE, name))
    )
    if only:
        missing = [name for name in only if name not in names]
        if missing:
            raise SystemExit(f"no benchmarks/bench_{missing[0]}.py")
        names = [name for name in names if name in only]
    return names


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--only", action="append", default=[])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows: list[Row] = []
    failed: list[str] = []
    for name in discover(args.only):
        module = importlib.import_module(f"bench_{name}")
        produce: Callable[[bool], list[Row]] | None = getattr(module, "rows", None)
        if produce is None:
            continue
        started = time.monotonic()
        print(f"# bench_{name} ...", file=sys.stderr, flush=True)
        try:
            produced = produce(args.quick)
        except Exception:  # noqa: BLE001 - one broken benchmark must not hide the others
            traceback.print_exc()
            failed.append(name)
            continue
        # Each benchmark's rows as soon as they exist (stderr): a run cut short by a CI
        # time limit still shows what it measured.
        print(f"# bench_{name}: {len(produced)} rows in {time.monotonic() - started:.0f} s", file=sys.stderr)
        print(format_table(produced), file=sys.stderr, flush=True)
        rows.extend(produced)
    if args.json:
        print(
            json.dumps(
                [dict(dataclasses.asdict(row), ratio=row.ratio(), met=row.meets_goal()) for row in rows], indent=1
            )
        )
    else:
        print(format_table(rows))
    if failed:
        print(f"benchmarks that failed: {', '.join(failed)}", file=sys.stderr)
        return 2 if args.check else 0
    missed = [row.measure for row in rows if not row.meets_goal()]
    if args.check and missed:
        print(f"goals missed: {len(missed)} of {len(rows)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
