"""Golden fixtures: each folder under tests/golden is a small workspace; `expected.json`
holds the diagnostics `atenlint check` must report for it (paths relative to the folder).

Regenerate after an intended change with ATENLINT_UPDATE_GOLDEN=1 and review the diff.
"""

from __future__ import annotations

import json
import os

import pytest

from support import GOLDEN, check_json, load_expected

CASES = sorted(d for d in os.listdir(GOLDEN) if os.path.isdir(os.path.join(GOLDEN, d)))


@pytest.mark.parametrize("case", CASES)
def test_golden(engine, case):
    root = os.path.join(GOLDEN, case)
    actual = check_json(engine, root)
    expected_path = os.path.join(root, "expected.json")
    if os.environ.get("ATENLINT_UPDATE_GOLDEN") or not os.path.exists(expected_path):
        with open(expected_path, "w", encoding="utf-8") as handle:
            json.dump(actual, handle, indent=1, ensure_ascii=False)
            handle.write("\n")
    assert actual == load_expected(expected_path)
