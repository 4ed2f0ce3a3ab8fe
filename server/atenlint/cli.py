"""Command line: argument parsing and output only; the work happens in `engine`."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Optional

from . import __version__
from .config import ConfigError, KNOWN_TARGETS, SettingsResolver, parse_targets
from .engine import Engine, Report
from .worker.pool import WorkerFailure, WorkerPool, WorkerSettings

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse's own usage errors exit 2 as well
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"atenlint: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="atenlint", description="Find the PyTorch operators your nn.Module code uses "
                                                  "that will not run on the backend you target.")
    parser.add_argument("--version", action="version", version=f"atenlint {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    check = commands.add_parser("check", help="analyse files and folders, report like a compiler")
    check.add_argument("paths", nargs="+", metavar="PATH", help="Python files or folders (searched for *.py)")
    check.add_argument("--target", "-t", action="append", metavar="TARGET",
                       help=f"backend to judge for (repeat or comma-separate; known: {', '.join(KNOWN_TARGETS)}); "
                            "default: [tool.atenlint] targets, else mps")
    check.add_argument("--format", choices=("text", "json"), default="text", help="output format (default text)")
    check.add_argument("--config", metavar="FILE", help="use this pyproject.toml / TOML file instead of the "
                                                         "nearest pyproject.toml of each file")
    check.add_argument("--timeout", type=float, metavar="SECONDS",
                       help="per-file limit for importing and analysing (default 60)")
    check.add_argument("--jobs", "-j", type=int, metavar="N", help="worker processes (default: up to 2)")
    check.add_argument("--python", metavar="INTERPRETER",
                       help="interpreter that imports your code (default: this one)")
    check.add_argument("--verbose", "-v", action="store_true", help="log worker activity to stderr")
    return parser


def main(argv: Optional[list] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    if args.command == "check":
        return _check(args, parser)
    return EXIT_USAGE


def _check(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    overrides = {}
    try:
        if args.target:
            overrides["targets"] = parse_targets(",".join(args.target), "--target")
        if args.timeout is not None:
            if args.timeout <= 0:
                raise ConfigError("--timeout: must be a positive number of seconds")
            overrides["timeout"] = args.timeout
        if args.config and not os.path.isfile(args.config):
            raise ConfigError(f"--config: no such file: {args.config}")
        resolver = SettingsResolver(args.config, overrides)
    except ConfigError as error:
        parser.error(str(error))
    missing = [p for p in args.paths if not os.path.exists(p)]
    if missing:
        parser.error(f"no such file or directory: {', '.join(missing)}")
    log = (lambda message: print(f"atenlint: {message}", file=sys.stderr)) if args.verbose else (lambda m: None)
    jobs = args.jobs or _default_jobs(args.paths)
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


def _default_jobs(paths: list) -> int:
    if all(os.path.isfile(p) for p in paths) and len(paths) == 1:
        return 1
    return max(1, min(2, os.cpu_count() or 1))


def report_json(report: Report) -> dict:
    return {
        "atenlint": __version__,
        "torch": report.torch_version,
        "targets": report.targets,
        "diagnostics": [finding.as_json() for finding in report.findings],
        "errors": [error.as_json() for error in report.errors],
    }


def report_text(report: Report) -> str:
    lines = []
    for finding in report.findings:
        start = finding.range.start
        target = finding.target or "atenlint"
        lines.append(f"{finding.path}:{start.line + 1}:{start.character + 1}: {finding.severity} [{target}] "
                     f"{finding.message} ({finding.code})")
    for error in report.errors:
        lines.append(f"{error.path}: error: {error.message}")
    counts = report.counts()
    parts = [f"{counts[k]} {name}{'s' if counts[k] != 1 else ''}" for k, name in
             (("error", "error"), ("warning", "warning"), ("information", "note"), ("hint", "hint")) if counts[k]]
    summary = ", ".join(parts) if parts else "no problems"
    lines.append(f"atenlint: {summary} in {report.files} file{'s' if report.files != 1 else ''} "
                 f"({report.classes} module class{'es' if report.classes != 1 else ''}) for "
                 f"{', '.join(report.targets) or 'mps'} on torch {report.torch_version} [{report.seconds:.1f}s]")
    return "\n".join(lines) + "\n"
