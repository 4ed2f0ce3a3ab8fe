"""One module per `atenlint` subcommand, each with `add_parser(subparsers)` and `run(args)`.

Commands parse arguments and print; the work happens in the analysis core. A command's
module is imported only when the command line needs it (`for_argv`): `atenlint serve`
answers the editor's `initialize` without importing the CLI's report formats, fixer and
baseline code.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from types import ModuleType

# In the order `atenlint --help` lists them.
NAMES = ("check", "serve", "targets", "ops", "report")


def load(name: str) -> ModuleType:
    return importlib.import_module(f"{__name__}.{name}")


def for_argv(argv: Sequence[str] | None) -> list[ModuleType]:
    """The command modules a parser for `argv` needs: the one it names, when it names one
    (its first word that is not an option), else every command (help, a usage error)."""
    words = [word for word in argv or () if not word.startswith("-")]
    if words and words[0] in NAMES:
        return [load(words[0])]
    return [load(name) for name in NAMES]


def __getattr__(name: str) -> list[ModuleType]:
    if name == "COMMANDS":  # every command, imported when asked for
        return [load(command) for command in NAMES]
    raise AttributeError(name)
