"""Regenerate the golden fixtures: `python scripts/regen_golden.py [CASE ...]`.

Each folder under tests/golden is a small workspace; its `expected.json` holds what
`atenlint check --format json` reports for it (paths relative to the folder). The test
that reads them (tests/test_golden.py) never writes them: after an intended change, run
this, review `git diff tests/golden`, and commit what is right.
"""

from __future__ import annotations

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.join(os.path.dirname(HERE), "tests")
sys.path.insert(0, TESTS)

from support import GOLDEN, REPO, check_json  # noqa: E402

from atenlint.config import SettingsResolver  # noqa: E402
from atenlint.engine import Engine  # noqa: E402
from atenlint.worker.pool import WorkerPool  # noqa: E402


def main(argv: list[str]) -> int:
    cases = argv or sorted(d for d in os.listdir(GOLDEN) if os.path.isdir(os.path.join(GOLDEN, d)))
    pool = WorkerPool(1)
    try:
        engine = Engine(pool, SettingsResolver(), cwd=REPO)
        engine.start()
        for case in cases:
            root = os.path.join(GOLDEN, case)
            actual = check_json(engine, root)
            with open(os.path.join(root, "expected.json"), "w", encoding="utf-8") as handle:
                json.dump(actual, handle, indent=1, ensure_ascii=False)
                handle.write("\n")
            print(f"{case}: {len(actual)} diagnostics")
    finally:
        pool.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
