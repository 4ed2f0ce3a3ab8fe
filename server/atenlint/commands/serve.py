"""`atenlint serve`: the language server on stdio, for any LSP editor."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .common import Subcommands

NAME = "serve"


def add_parser(commands: Subcommands) -> argparse.ArgumentParser:
    parser = commands.add_parser(NAME, help="run the language server on stdio (for editors)")
    parser.add_argument("--stdio", action="store_true", help="accepted for editors that pass it; stdio is the default")
    parser.add_argument("--log-file", metavar="PATH", help="write the server's own debug log here")
    return parser


def run(args: argparse.Namespace) -> int:
    if args.log_file:
        logging.basicConfig(filename=args.log_file, level=logging.DEBUG)
    from ..lsp.handshake import early_initialize
    from ..lsp.prestart import prestart_workers

    # The `initialize` answer goes out before the server's imports where it is stored, and
    # the workers' start (their torch import) overlaps those imports.
    handover = early_initialize(sys.stdin.buffer, sys.stdout.buffer)
    prestarted = prestart_workers(handover.initialize_params)
    from ..lsp.server import serve  # pygls is imported only by the server

    return serve(handover.stdin, handover.stdout, prestarted)
