"""`atenlint report PATH --target T[,T...]`: per module, every op it uses with its verdict
per target, and the suggestions (text, JSON, or Markdown for a pull-request comment)."""

from __future__ import annotations

import argparse
import json
import os
import sys

from ..config import ConfigError, SettingsResolver, parse_targets
from ..engine import Engine, problems_for
from ..worker.pool import WorkerPool, WorkerSettings
from .common import EXIT_CLEAN, EXIT_FINDINGS, UsageError, stderr_log

NAME = "report"


def add_parser(commands) -> argparse.ArgumentParser:
    parser = commands.add_parser(NAME, help="per module: every op, its verdict per target, and suggestions")
    parser.add_argument("paths", nargs="+", metavar="PATH")
    parser.add_argument("--target", "-t", action="append", metavar="TARGET", help="comma-separated targets")
    parser.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    parser.add_argument("--config", metavar="FILE")
    parser.add_argument("--python", metavar="INTERPRETER")
    parser.add_argument("--verbose", "-v", action="store_true")
    return parser


def build(engine: Engine, paths: list[str]) -> dict:
    """{"modules": {module: {"ops": {op: {target: verdict}}, "suggestions": [...]}}, ...}."""
    captures = [engine.capture(path) for path in _files(paths)]
    findings = engine.findings(captures)
    modules: dict = {}
    for capture in captures:
        targets = engine.targets_for(capture.settings)
        for occurrence in capture.occurrences:
            module = modules.setdefault(occurrence.module, {"ops": {}, "suggestions": [], "notes": []})
            entry = module["ops"].setdefault(occurrence.op, {})
            for target in targets:
                problems = problems_for(target, occurrence)
                if problems is None:
                    continue
                previous = entry.get(target.name)
                if problems:
                    verdict = target.verdict(problems)
                    status = "conditional" if occurrence.conditional else verdict.severity
                    if previous is None or previous["status"] in ("supported", "conditional"):
                        entry[target.name] = {"status": status, "code": verdict.code,
                                              "ops": [p.op for p in problems]}
                elif previous is None:
                    entry[target.name] = {"status": "supported"}
    for finding in findings:
        if finding.module is None:
            continue
        module = modules.setdefault(finding.module, {"ops": {}, "suggestions": [], "notes": []})
        start = finding.range.start
        line = f"{finding.path}:{start.line + 1}:{start.character + 1} [{finding.target or 'atenlint'}] " \
               f"{finding.message} ({finding.code})"
        bucket = "suggestions" if finding.severity in ("error", "warning") else "notes"
        module[bucket].append(line)
        for fix in finding.fixes:
            title = fix.get("title") if isinstance(fix, dict) else str(fix)
            if title:
                module["suggestions"].append(f"  fix: {title}")
    return {"torch": engine.torch_version, "modules": dict(sorted(modules.items()))}


def _files(paths: list[str]) -> list[str]:
    from ..discover import iter_python_files

    files, _ = iter_python_files(paths)
    return files


def text(report: dict, targets: list[str]) -> str:
    lines = []
    for module, data in report["modules"].items():
        lines.append(f"Model structure: {module}")
        for op, verdicts in sorted(data["ops"].items()):
            for target in targets:
                verdict = verdicts.get(target)
                if verdict is None:
                    continue
                mark = "+ Supported op" if verdict["status"] == "supported" else "+ Unsupported op"
                if verdict["status"] in ("information", "conditional"):
                    mark = "+ Maybe unsupported op"
                detail = "" if verdict["status"] == "supported" else f" -> {', '.join(verdict['ops'])} ({verdict['code']})"
                lines.append(f"  {mark} [{target}]: {op}{detail}")
        if data["suggestions"] or data["notes"]:
            lines.append("Suggestions")
            lines.extend(f"  {s}" for s in data["suggestions"] + data["notes"])
        lines.append("")
    return "\n".join(lines) + "\n"


def markdown(report: dict, targets: list[str]) -> str:
    lines = [f"### atenlint report (torch {report['torch']})", ""]
    for module, data in report["modules"].items():
        lines += [f"#### `{module}`", "", "| op | " + " | ".join(targets) + " |",
                  "|---|" + "---|" * len(targets)]
        for op, verdicts in sorted(data["ops"].items()):
            cells = []
            for target in targets:
                verdict = verdicts.get(target)
                if verdict is None:
                    cells.append("")
                elif verdict["status"] == "supported":
                    cells.append("✅")
                else:
                    icon = "❌" if verdict["status"] == "error" else ("⚠️" if verdict["status"] == "warning" else "❔")
                    cells.append(f"{icon} {verdict['code']}")
            lines.append(f"| `{op}` | " + " | ".join(cells) + " |")
        if data["suggestions"] or data["notes"]:
            lines += ["", "**Suggestions**", ""] + [f"- {s.strip()}" for s in data["suggestions"] + data["notes"]]
        lines.append("")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    missing = [p for p in args.paths if not os.path.exists(p)]
    if missing:
        raise UsageError(f"no such file or directory: {', '.join(missing)}")
    overrides = {}
    try:
        if args.target:
            overrides["targets"] = parse_targets(",".join(args.target), "--target")
        resolver = SettingsResolver(args.config, overrides)
    except ConfigError as error:
        raise UsageError(str(error)) from None
    log = stderr_log(args.verbose)
    pool = WorkerPool(1, WorkerSettings(python=args.python or sys.executable), log=log)
    try:
        engine = Engine(pool, resolver, log=log)
        engine.start()
        report = build(engine, args.paths)
    finally:
        pool.close()
    targets = list(overrides.get("targets") or resolver.for_directory(os.path.abspath(args.paths[0])
                                                                     if os.path.isdir(args.paths[0])
                                                                     else os.path.dirname(os.path.abspath(args.paths[0]))).targets)
    report["targets"] = targets
    if args.format == "json":
        json.dump(report, sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif args.format == "markdown":
        sys.stdout.write(markdown(report, targets))
    else:
        sys.stdout.write(text(report, targets))
    problems = any(v["status"] in ("error", "warning") for m in report["modules"].values()
                   for verdicts in m["ops"].values() for v in verdicts.values())
    return EXIT_FINDINGS if problems else EXIT_CLEAN
