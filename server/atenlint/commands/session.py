"""A started engine for the commands that only ask about targets (no files to check)."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator

from ..engine import Engine
from ..worker.pool import WorkerPool, WorkerSettings
from .common import stderr_log


@contextlib.contextmanager
def open_engine(args: argparse.Namespace) -> Iterator[Engine]:
    log = stderr_log(getattr(args, "verbose", False))
    pool = WorkerPool(1, WorkerSettings(python=getattr(args, "python", None) or sys.executable), log=log)
    try:
        engine = Engine(pool, log=log)
        engine.start()
        yield engine
    finally:
        pool.close()
