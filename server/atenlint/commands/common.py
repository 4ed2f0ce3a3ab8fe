"""Pieces several commands share: exit codes, usage errors, worker setup."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from ..config import SettingsResolver

    # What `add_subparsers()` returns: each command's `add_parser` adds its parser to it.
    Subcommands = argparse._SubParsersAction[argparse.ArgumentParser]

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2
# atenlint itself failed (an internal error, a worker that cannot start): the code was
# not checked, which CI must not mistake for "nothing found" (0) or "found problems" (1).
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130


def internal_failure_message(error: BaseException) -> str:
    """One line for an unexpected failure of atenlint itself (never a traceback)."""
    text = str(error).strip().splitlines()[0][:300] if str(error).strip() else ""
    return (
        f"atenlint: internal error: {type(error).__name__}{': ' + text if text else ''}. This is a bug in "
        f"atenlint, not in your code: please report it (ATENLINT_DEBUG=1 prints the traceback)"
    )


class UsageError(Exception):
    """Bad arguments: the command prints the message and exits with 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse's own usage errors exit 2 as well
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"atenlint: error: {message}\n")


def stderr_log(verbose: bool) -> Callable[[str], None]:
    if verbose:
        return lambda message: print(f"atenlint: {message}", file=sys.stderr)
    return lambda message: None


def default_jobs(paths: list[str], resolver: SettingsResolver) -> int:
    """Worker processes when `--jobs` is not given: the `workers` a checked project's
    `[tool.atenlint]` sets (the largest, if they differ), else by the workspace's size. A
    second worker costs a torch import (seconds, hundreds of MB): only worth it for large
    workspaces, and never more than the machine has cores for."""
    from ..config import ConfigError  # here: `atenlint serve` answers `initialize` without it

    configured = []
    for path in paths:
        try:
            settings = resolver.for_directory(path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path)))
        except ConfigError:
            continue  # the check reports the invalid settings (ATL010) on the project's files
        if "workers" in settings.explicit:
            configured.append(settings.workers)
    if configured:
        return max(configured)
    if all(os.path.isfile(p) for p in paths):
        return 1
    count = 0
    for path in paths:
        for _, _, names in os.walk(path):
            count += sum(name.endswith(".py") for name in names)
            if count > 60:
                return max(1, min(2, (os.cpu_count() or 1) - 1))
    return 1
