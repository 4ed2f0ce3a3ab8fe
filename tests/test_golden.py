"""Golden fixtures: each folder under tests/golden is a small workspace; `expected.json`
holds the diagnostics `atenlint check` must report for it (paths relative to the folder) on
torch 2.13, `expected.torch-X.Y.json` on another tested minor release (support.py).

After an intended change, regenerate them with `python scripts/regen_golden.py` and review
the diff; this test only reads them.
"""

from __future__ import annotations

import os

import pytest

from support import GOLDEN, check_json, expected_path, load_expected

CASES = sorted(d for d in os.listdir(GOLDEN) if os.path.isdir(os.path.join(GOLDEN, d)))


@pytest.mark.parametrize("case", CASES)
def test_golden(engine, case):
    root = os.path.join(GOLDEN, case)
    actual = check_json(engine, root)
    expected = expected_path(root, engine.hello["torch_full"])
    assert os.path.exists(expected), (
        f"no {os.path.relpath(expected, GOLDEN)} for torch {engine.hello['torch_full']}: "
        f"run `python scripts/regen_golden.py {case}` in this environment and review the diff"
    )
    assert actual == load_expected(expected)
