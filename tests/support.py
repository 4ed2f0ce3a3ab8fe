"""Paths and helpers the tests share (fixtures live in conftest.py)."""

from __future__ import annotations

import json
import os

from atenlint.config import SettingsResolver
from atenlint.engine import Engine

TESTS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TESTS)
GOLDEN = os.path.join(TESTS, "golden")


def check_json(engine: Engine, root: str, **overrides) -> list[dict]:
    """`atenlint check ROOT --format json` diagnostics, with paths relative to ROOT."""
    engine.resolver = SettingsResolver(overrides=overrides or None)
    report = engine.check_paths([root], jobs=1)
    out = []
    for finding in report.findings:
        item = finding.as_json()
        item["path"] = os.path.relpath(finding.abs_path or finding.path, root).replace(os.sep, "/")
        out.append(item)
    return out


def load_expected(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)
