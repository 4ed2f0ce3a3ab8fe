"""Golden fixtures: each folder under tests/golden is a small workspace; `expected.json`
holds the diagnostics `atenlint check` must report for it (paths relative to the folder).

After an intended change, regenerate them with `python scripts/regen_golden.py` and review
the diff; this test only reads them.
"""

from __future__ import annotations

import os

import pytest

from support import GOLDEN, check_json, load_expected

CASES = sorted(d for d in os.listdir(GOLDEN) if os.path.isdir(os.path.join(GOLDEN, d)))


@pytest.mark.parametrize("case", CASES)
def test_golden(engine, case):
    root = os.path.join(GOLDEN, case)
    actual = check_json(engine, root)
    expected_path = os.path.join(root, "expected.json")
    assert os.path.exists(expected_path), f"no {expected_path}: run python scripts/regen_golden.py {case}"
    assert actual == load_expected(expected_path)
