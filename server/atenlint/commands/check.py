"""`atenlint check PATH...`: analyse files and folders, report like a compiler (or JSON)."""

from __future__ import annotations

import argparse
import json
import os
import sys

from ..config import KNOWN_TARGETS, ConfigError, SettingsResolver, parse_targets
from ..engine import Engine
from ..output import report_json, report_text
from ..worker.pool import WorkerFailure, WorkerPool, WorkerSettings
from .common import EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE, UsageError, default_jobs, stderr_log

NAME = "check"


def add_parser(commands) -> argparse.ArgumentParser:
    parser = commands.add_parser(NAME, help="analyse files and folders, report like a compiler")
    parser.add_argument("paths", nargs="+", metavar="PATH", help="Python files or folders (searched for *.py)")
    parser.add_argument("--target", "-t", action="append", metavar="TARGET",
                        help=f"backend to judge for (repeat or comma-separate; known: {', '.join(KNOWN_TARGETS)}); "
                             "default: [tool.atenlint] targets, else mps")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format (default text)")
    parser.add_argument("--config", metavar="FILE", help="use this pyproject.toml / TOML file instead of the "
                                                          "nearest pyproject.toml of each file")
    parser.add_argument("--timeout", type=float, metavar="SECONDS",
                        help="per-file limit for importing and analysing (default 60)")
    parser.add_argument("--jobs", "-j", type=int, metavar="N", help="worker processes (default: up to 2)")
    parser.add_argument("--python", metavar="INTERPRETER",
                        help="interpreter that imports your code (default: this one)")
    parser.add_argument("--verbose", "-v", action="store_true", help="log worker activity to stderr")
    return parser


def resolver_from_args(args: argparse.Namespace) -> SettingsResolver:
    overrides = {}
    try:
        if args.target:
            overrides["targets"] = parse_targets(",".join(args.target), "--target")
        if getattr(args, "timeout", None) is not None:
            if args.timeout <= 0:
                raise ConfigError("--timeout: must be a positive number of seconds")
            overrides["timeout"] = args.timeout
        if args.config and not os.path.isfile(args.config):
            raise ConfigError(f"--config: no such file: {args.config}")
        return SettingsResolver(args.config, overrides)
    except ConfigError as error:
        raise UsageError(str(error)) from None


def run(args: argparse.Namespace) -> int:
    resolver = resolver_from_args(args)
    missing = [p for p in args.paths if not os.path.exists(p)]
    if missing:
        raise UsageError(f"no such file or directory: {', '.join(missing)}")
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs: must be at least 1")
    log = stderr_log(args.verbose)
    jobs = args.jobs or default_jobs(args.paths)
    pool = WorkerPool(jobs, WorkerSettings(python=args.python or sys.executable), log=log)
    engine = Engine(pool, resolver, log=log)
    try:
        engine.start()
        report = engine.check_paths(args.paths, jobs=jobs)
    except WorkerFailure as failure:
        print(f"atenlint: cannot start the analysis worker: {failure.message}\n{failure.stderr_tail}",
              file=sys.stderr)
        return EXIT_USAGE
    finally:
        pool.close()
    if args.format == "json":
        json.dump(report_json(report), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(report_text(report))
    counts = report.counts()
    return EXIT_FINDINGS if counts["error"] or counts["warning"] else EXIT_CLEAN
