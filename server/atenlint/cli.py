"""The `atenlint` command: parses the subcommand and hands over to `commands/`."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

from . import __version__
from .commands import for_argv
from .commands.common import EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_USAGE, Parser, UsageError, internal_failure_message


def build_parser(argv: list[str] | None = None) -> Parser:
    """The parser of every command, or (given the command line) of the command it names."""
    parser = Parser(
        prog="atenlint",
        description="Find the PyTorch operators your nn.Module code uses that will not run on the backend you target.",
    )
    parser.add_argument("--version", action="version", version=f"atenlint {__version__}")
    subcommands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for command in for_argv(argv):
        command.add_parser(subcommands).set_defaults(run=command.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    run: Callable[[argparse.Namespace], int] = args.run
    try:
        return run(args)
    except UsageError as error:
        parser.error(str(error))
    except BrokenPipeError:
        # `atenlint check . | head`: the reader left; that is not an error of ours.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print("atenlint: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as error:  # noqa: BLE001 - never a traceback: one line and a distinct exit code
        if os.environ.get("ATENLINT_DEBUG"):
            import traceback

            traceback.print_exc()
        print(internal_failure_message(error), file=sys.stderr)
        return EXIT_INTERNAL
