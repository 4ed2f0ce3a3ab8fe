"""`atenlint ops --target T [--op NAME]`: a target's support table, overload by overload."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..config import ConfigError, Settings, parse_targets
from ..targets import names
from .common import EXIT_CLEAN, EXIT_FINDINGS, UsageError
from .session import open_engine

if TYPE_CHECKING:
    from ..engine import Engine
    from ..targets.base import Target
    from .common import Subcommands

NAME = "ops"


def add_parser(commands: Subcommands) -> argparse.ArgumentParser:
    parser = commands.add_parser(NAME, help="show which overloads a target supports, why, and since when")
    parser.add_argument(
        "--target",
        "-t",
        required=True,
        metavar="TARGET",
        help=f"one target or a comma-separated list ({', '.join(names.listing())})",
    )
    parser.add_argument(
        "--op",
        metavar="NAME",
        help="an overload (aten::take, take, aten::add.Tensor) or an op name (every overload of it)",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--onnx-exporter", choices=names.ONNX_EXPORTERS)
    parser.add_argument("--python", metavar="INTERPRETER")
    return parser


def _wanted(all_ops: Iterable[str], query: str | None) -> list[str]:
    if not query:
        return sorted(all_ops)
    name = query if "::" in query else f"aten::{query}"
    ops = set(all_ops)
    if name in ops:
        return [name]
    return sorted(op for op in ops if op == name or op.startswith(name + "."))


def rows_for(engine: Engine, targets: list[Target], query: str | None) -> list[dict[str, Any]]:
    """One row per overload: {"op": name, <target name>: that target's support record}."""
    ops = _wanted(engine.native.entries if engine.native is not None else (), query)
    out = []
    for op in ops:
        row: dict[str, Any] = {"op": op}
        for target in targets:
            row[target.name] = target.support(op)
        out.append(row)
    return out


def run(args: argparse.Namespace) -> int:
    try:
        target_names = parse_targets(args.target, "--target")
    except ConfigError as error:
        raise UsageError(str(error)) from None
    settings = Settings(targets=target_names, onnx_exporter=args.onnx_exporter)
    with open_engine(args) as engine:
        targets = engine.targets_for(settings)
        rows = rows_for(engine, targets, args.op)
    if args.op and not rows:
        print(f"atenlint: no aten overload named {args.op!r} in torch {engine.torch_version}", file=sys.stderr)
        return EXIT_FINDINGS
    if args.format == "json":
        json.dump({"torch": engine.torch_version, "targets": list(target_names), "ops": rows}, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return EXIT_CLEAN
    for row in rows:
        for target in targets:
            support = row[target.name]
            since = f" (since {support['since']})" if support.get("since") else ""
            print(f"{row['op']:<48} {target.name:<12} {support['verdict']:<12} {support.get('reason', '')}{since}")
    return EXIT_CLEAN
