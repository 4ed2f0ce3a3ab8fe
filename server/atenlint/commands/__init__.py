"""One module per `atenlint` subcommand, each with `add_parser(subparsers)` and `run(args)`.

Commands parse arguments and print; the work happens in the analysis core.
"""

from __future__ import annotations

from . import check, ops, report, serve, targets

COMMANDS = [check, serve, targets, ops, report]
