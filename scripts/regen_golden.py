"""Regenerate the golden fixtures: `python scripts/regen_golden.py [NAME ...]`.

Two sets, both read (never written) by their tests:
- tests/golden/<case>/expected.json: what `atenlint check --format json` reports for that
  small workspace (paths relative to it) on torch 2.13, `expected.torch-X.Y.json` on any
  other minor release (run this in each tested environment: .venv, and the torch 2.14 and
  2.15 environments of .ci/run); read by tests/test_golden.py.
- tests/fixes/fixtures/<name>.out.py (and .out.toml for a fix that edits the config): the
  fixture `<name>.in.py` with its catalog entry's fix applied wherever atenlint offers it,
  for all the targets it names; read by tests/fixes/test_fixtures.py.

NAME picks golden cases or fix fixtures by name (default: all of both). A fix fixture whose
targets need a package of the `exporters` extra that is missing is an error here: the file
would record fewer targets than the fixture names. After an intended change, run this,
review `git diff tests/golden tests/fixes/fixtures`, and commit what is right.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.join(os.path.dirname(HERE), "tests")
sys.path.insert(0, TESTS)
sys.path.insert(0, os.path.join(TESTS, "fixes"))

from fixes_support import fixture_mps_as_of, load_fixtures, missing_packages, run_fixture_fix

from atenlint.config import SettingsResolver
from atenlint.engine import Engine
from atenlint.worker.pool import WorkerPool
from support import GOLDEN, REPO, check_json, expected_path


def golden_cases() -> list[str]:
    return sorted(d for d in os.listdir(GOLDEN) if os.path.isdir(os.path.join(GOLDEN, d)))


def regen_golden_case(engine: Engine, case: str) -> None:
    root = os.path.join(GOLDEN, case)
    actual = check_json(engine, root)
    with open(expected_path(root, engine.hello["torch_full"]), "w", encoding="utf-8") as handle:
        json.dump(actual, handle, indent=1, ensure_ascii=False)
        handle.write("\n")
    print(f"golden {case}: {len(actual)} diagnostics")


def regen_fix_fixture(engine: Engine, fixture) -> None:
    missing = missing_packages(fixture.targets)
    if missing:
        raise SystemExit(
            f"{fixture.name}: targets {', '.join(fixture.targets)} need {', '.join(missing)} "
            f"(pip install -e '.[exporters]')"
        )
    patcher = pytest.MonkeyPatch()
    with tempfile.TemporaryDirectory(prefix="atenlint-fixture-") as root:
        try:
            mps_as_of = fixture_mps_as_of(fixture, engine.hello["torch"])
            outcome = run_fixture_fix(engine, root, fixture, fixture.targets, mps_as_of, patcher)
        finally:
            patcher.undo()
    with open(fixture.out_path, "w", encoding="utf-8", newline="") as handle:
        handle.write(outcome.new_source)
    if outcome.new_config is not None:
        with open(fixture.out_config_path, "w", encoding="utf-8", newline="") as handle:
            handle.write(outcome.new_config)
    elif os.path.exists(fixture.out_config_path):
        os.remove(fixture.out_config_path)
    print(
        f"fix fixture {fixture.name}: fixed {len(outcome.fixed)} findings"
        f"{' and the config' if outcome.new_config is not None else ''}"
    )


def main(argv: list[str]) -> int:
    cases = golden_cases()
    fixtures = {fixture.name: fixture for fixture in load_fixtures()}
    unknown = [name for name in argv if name not in cases and name not in fixtures]
    if unknown:
        print(f"no golden case or fix fixture named {', '.join(unknown)}", file=sys.stderr)
        return 2
    wanted_cases = [c for c in cases if not argv or c in argv]
    wanted_fixtures = [f for name, f in fixtures.items() if not argv or name in argv]
    pool = WorkerPool(1)
    try:
        engine = Engine(pool, SettingsResolver(), cwd=REPO)
        engine.start()
        for case in wanted_cases:
            regen_golden_case(engine, case)
        for fixture in wanted_fixtures:
            regen_fix_fixture(engine, fixture)
    finally:
        pool.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
