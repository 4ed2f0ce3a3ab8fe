"""Shared fixtures: one warm worker pool and engine for the whole test session."""

from __future__ import annotations

import sys

import pytest

from atenlint.config import SettingsResolver
from atenlint.engine import Engine
from atenlint.worker.pool import WorkerPool
from support import REPO


@pytest.fixture(scope="session")
def pool():
    pool = WorkerPool(1, log=lambda message: print(message, file=sys.stderr))
    pool.warm()
    yield pool
    pool.close()


@pytest.fixture(scope="session")
def engine(pool):
    engine = Engine(pool, SettingsResolver(), cwd=REPO)
    engine.start()
    return engine


@pytest.fixture(autouse=True)
def _fresh_engine_settings(request):
    """Tests set the shared engine's settings resolver for their own files; after each, the
    next test starts from settings read afresh, whichever test ran before it (the order
    differs from run to run when tests are spread over processes)."""
    engine = request.getfixturevalue("engine") if "engine" in request.fixturenames else None
    yield
    if engine is not None:
        engine.resolver = SettingsResolver()
