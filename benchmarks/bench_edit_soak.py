"""A long randomized edit/save/open/close soak against the real engine: after each sequence
every published (or pulled) result must equal a fresh check of the same texts.

The test suite runs 1,000+ sequences on an engine double and a few on the real engine
(`tests/lsp/test_session_property.py`); this runs as many as you like on the real one.

    python benchmarks/bench_edit_soak.py --sequences 300 --mode onSave-push
Prints the sequences run, the mismatches (0 expected), the checks that ran and the time.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "server"), os.path.join(HERE, "..", "tests", "lsp")]

from test_session_property import FILES, MODE_IDS, MODES, _World

from atenlint.config import SettingsResolver
from atenlint.engine import Engine
from atenlint.worker.pool import WorkerPool

KINDS = ["edit", "edit-save", "save", "open", "close", "write"]


def random_sequence(rng: random.Random):
    steps = []
    for _ in range(rng.randint(1, 10)):
        kind = rng.choice(KINDS)
        file = rng.choice(sorted(FILES))
        which = rng.choice(sorted(FILES[file])) if kind in ("edit", "edit-save", "write") else ""
        steps.append(((kind, file, which), rng.choice([None, None, 0, 0.001, 0.01])))
    return steps, rng.random() < 2 / 3, set(rng.sample(sorted(FILES), rng.randint(0, 3)))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sequences", type=int, default=300)
    parser.add_argument("--mode", choices=MODE_IDS, default=MODE_IDS[0])
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args()
    trigger, pull = MODES[MODE_IDS.index(args.mode)]
    pool = WorkerPool(1)
    pool.warm()
    engine = Engine(pool, SettingsResolver())
    engine.start()
    rng = random.Random(args.seed)
    world = _World(engine, tempfile.mkdtemp(prefix="atenlint-soak-"), trigger, pull)
    mismatches = []
    started = time.perf_counter()
    try:
        for index in range(args.sequences):
            steps, end_valid, initially_open = random_sequence(rng)
            world.loop.run_until_complete(world.run(steps, end_valid, initially_open))
            found = world.mismatches()
            if found:
                mismatches.append((index, steps, found))
    finally:
        world.close()
        pool.close()
    seconds = time.perf_counter() - started
    print(
        f"{args.mode}: {world.sequences} sequences ({world.all_valid} ending all valid), "
        f"{len(mismatches)} mismatches, {world.session.analyses} checks ran, {seconds:.1f} s"
    )
    for index, steps, found in mismatches[:5]:
        print(f"  sequence {index}: {steps}\n    {found}")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
