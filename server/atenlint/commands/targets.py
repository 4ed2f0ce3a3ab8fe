"""`atenlint targets`: every target, whether it can judge here, and the data it judges with."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from ..config import Settings
from ..targets import build_target, mps_history, names
from ..targets.registry_data import RegistryUnavailable, load
from ..worker.protocol import check_hello
from .common import EXIT_CLEAN, EXIT_INTERNAL, UsageError
from .session import open_engine

if TYPE_CHECKING:
    from ..engine import Engine
    from ..targets.base import TargetStatus
    from .common import Subcommands

NAME = "targets"


def add_parser(commands: Subcommands) -> argparse.ArgumentParser:
    parser = commands.add_parser(NAME, help="list the targets, their availability and data versions")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--python", metavar="INTERPRETER", help="interpreter whose packages are judged")
    parser.add_argument("--onnx-exporter", choices=names.ONNX_EXPORTERS, help="ONNX exporter to describe")
    return parser


def statuses(engine: Engine, settings: Settings) -> list[TargetStatus]:
    """Every target's status, judged with a started engine's tables."""
    if engine.native is None:
        raise RuntimeError("the engine has not started: no native function table to judge with")
    hello = check_hello(engine.hello)
    registries = load(engine.pool, engine.log)
    out = []
    for name in names.TARGETS:
        target = build_target(name, settings, engine.native, hello, registries)
        out.append(target.status())
    return out


def run(args: argparse.Namespace) -> int:
    settings = Settings(onnx_exporter=args.onnx_exporter)
    with open_engine(args) as engine:
        try:
            rows = statuses(engine, settings)
        except RegistryUnavailable as error:
            # atenlint's own failure (exit 3), never a table of guessed "unavailable" rows.
            print(f"atenlint: {error}", file=sys.stderr)
            return EXIT_INTERNAL
    containment = dict(engine.hello.get("containment") or {})
    # The MPS history (the "supported on MPS from torch X" notes) is shipped data, not read
    # from the installed torch: say which wheels it was read from.
    history = mps_history.built_from()
    if args.format == "json":
        listing = {"torch": engine.torch_version, "targets": rows, "containment": containment, "mps_history": history}
        json.dump(listing, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return EXIT_CLEAN
    width = max([12, *(len(row["target"]) for row in rows)])  # `executorch:xnnpack` is longer than most
    for row in rows:
        mark = "available" if row["available"] else "unavailable"
        print(f"{row['target']:<{width}} {mark:<12} {row['description']}")
        for key, value in row["data"].items():
            print(f"{'':<{width}} {key}: {value}")
    print("onnx:N       ONNX at opset N (e.g. onnx:17); `--target a,b` judges several at once")
    print(f'MPS history ("supported on MPS from" notes): native_functions.yaml of {history}')
    print(f"analysed code: {containment_words(containment)}")
    return EXIT_CLEAN


def containment_words(containment: dict[str, object]) -> str:
    """How the kernel contains the user's code on this system, in one line."""
    layers = []
    if containment.get("fork"):
        layers.append("one process per file, forked from a warm worker")
    if containment.get("landlock_abi"):
        layers.append(f"Landlock ABI {containment['landlock_abi']}")
    if containment.get("seccomp"):
        layers.append("a seccomp filter")
    if containment.get("seatbelt"):
        layers.append("a Seatbelt profile")
    missing = containment.get("missing")
    if isinstance(missing, list) and missing:
        layers.append("not contained by the kernel: " + "; ".join(str(m) for m in missing))
    return ", ".join(layers) or "unknown (an older worker)"


__all__ = ["UsageError", "add_parser", "run"]
