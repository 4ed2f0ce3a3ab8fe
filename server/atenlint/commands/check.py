"""`atenlint check PATH...`: analyse files and folders, report like a compiler (or JSON)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from ..config import KNOWN_TARGETS, ConfigError, SettingsResolver, parse_targets
from ..engine import Engine
from ..fixes.apply import fix_summary, fix_until_clean
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
    parser.add_argument("--no-exec", action="store_true",
                        help="never import or run your code: read the source only (static analysis)")
    parser.add_argument("--verbose", "-v", action="store_true", help="log worker activity to stderr")
    parser.add_argument("--fix", action="store_true",
                        help="apply every exact rewrite atenlint offers, print what changed, report what is left")
    parser.add_argument("--unsafe-fixes", action="store_true",
                        help="with --fix, also apply approximate rewrites (each says how it differs)")
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
    started = time.perf_counter()
    resolver = resolver_from_args(args)
    missing = [p for p in args.paths if not os.path.exists(p)]
    if missing:
        raise UsageError(f"no such file or directory: {', '.join(missing)}")
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs: must be at least 1")
    if args.unsafe_fixes and not args.fix:
        raise UsageError("--unsafe-fixes only applies with --fix")
    log = stderr_log(args.verbose)
    jobs = args.jobs or default_jobs(args.paths)
    pool = WorkerPool(jobs, WorkerSettings(python=args.python or sys.executable), log=log)
    engine = Engine(pool, resolver, log=log)
    try:
        engine.start()
        def check():
            return engine.check_paths(args.paths, jobs=jobs, execute=not args.no_exec)

        fixed = None
        if args.fix:
            report, fixed = fix_until_clean(check, args.unsafe_fixes, log)
        else:
            report = check()
    except WorkerFailure as failure:
        print(f"atenlint: cannot start the analysis worker: {failure.message}\n{failure.stderr_tail}",
              file=sys.stderr)
        return EXIT_USAGE
    finally:
        pool.close()
    report.seconds = time.perf_counter() - started  # what the user waited, worker start included
    if args.format == "json":
        output = report_json(report)
        if fixed is not None:
            output["fixed"] = [applied.as_json() for applied in fixed.applied]
        json.dump(output, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        if fixed is not None:
            sys.stdout.write(fix_summary(fixed))
        sys.stdout.write(report_text(report))
    counts = report.counts()
    return EXIT_FINDINGS if counts["error"] or counts["warning"] else EXIT_CLEAN
