"""`atenlint serve`: the language server on stdio, for any LSP editor."""

from __future__ import annotations

import argparse
import logging
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
    from ..lsp.server import serve  # pygls is imported only by the server

    return serve()
