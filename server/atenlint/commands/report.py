"""`atenlint report PATH --target T[,T...]`: per module, every op it uses with its verdict
per target, and the suggestions (text, JSON, or Markdown for a pull-request comment)."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from typing import TYPE_CHECKING, Any, TypedDict

from ..config import ConfigError, SettingsResolver, parse_targets
from ..discover import iter_python_files
from ..engine import Engine
from ..judging import problems_for
from ..report_markdown import section, verdict_table
from ..targets.site_verdict import CONDITIONAL, PROBLEM, SUPPORTED, SiteVerdict, VerdictAggregate
from ..worker.pool import WorkerPool, WorkerSettings
from .common import EXIT_CLEAN, EXIT_FINDINGS, UsageError, stderr_log

if TYPE_CHECKING:
    from .common import Subcommands

NAME = "report"


def add_parser(commands: Subcommands) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = commands.add_parser(
        NAME, help="per module: every op, its verdict per target, and suggestions"
    )
    parser.add_argument("paths", nargs="+", metavar="PATH")
    parser.add_argument("--target", "-t", action="append", metavar="TARGET", help="comma-separated targets")
    parser.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    parser.add_argument("--config", metavar="FILE")
    parser.add_argument("--python", metavar="INTERPRETER")
    parser.add_argument("--verbose", "-v", action="store_true")
    return parser


def build(engine: Engine, paths: list[str]) -> dict[str, Any]:
    """{"torch", "modules": {module: {"ops": {op: {target: SiteVerdict JSON}}, "suggestions", "notes"}}}."""
    captures = [engine.capture(path) for path in _files(paths)]
    findings = engine.findings(captures)
    aggregates: dict[str, dict[str, dict[str, VerdictAggregate]]] = {}
    coverage: dict[str, dict[str, DelegateCoverage]] = {}
    for capture in captures:
        targets = engine.targets_for(capture.settings)
        for occurrence in capture.occurrences:
            _count_delegated(coverage.setdefault(occurrence.module, {}), targets, occurrence.op, occurrence.trees)
            by_target = aggregates.setdefault(occurrence.module, {}).setdefault(occurrence.op, {})
            for target in targets:
                problems = problems_for(target, occurrence)
                if problems is not None:
                    by_target.setdefault(target.name, VerdictAggregate(target)).add(problems, occurrence.conditional)
    modules: dict[str, ModuleReport] = {
        module: {
            "ops": {
                op: {name: aggregate.verdict().as_json() for name, aggregate in by_target.items()}
                for op, by_target in ops.items()
            },
            "suggestions": [],
            "notes": [],
            "delegates": coverage.get(module, {}),
        }
        for module, ops in aggregates.items()
    }
    for finding in findings:
        if finding.module is None:
            continue
        report = modules.setdefault(finding.module, {"ops": {}, "suggestions": [], "notes": [], "delegates": {}})
        start = finding.range.start
        line = (
            f"{finding.path}:{start.line + 1}:{start.character + 1} [{finding.target or 'atenlint'}] "
            f"{finding.message} ({finding.code})"
        )
        report["suggestions" if finding.severity in ("error", "warning") else "notes"].append(line)
        for fix in finding.fixes:
            title = fix.get("title") if isinstance(fix, dict) else str(fix)
            if title:
                report["suggestions"].append(f"  fix: {title}")
    return {"torch": engine.torch_version, "modules": dict(sorted(modules.items()))}


class DelegateCoverage(TypedDict):
    """How much of a module's edge program one ExecuTorch delegate takes (its partitioner's
    own decision per node): all op nodes, and the FLOP-heavy ones."""

    nodes: int
    taken: int
    heavy_nodes: int
    heavy_taken: int


class ModuleReport(TypedDict):
    ops: dict[str, dict[str, dict[str, Any]]]  # op -> target -> SiteVerdict.as_json()
    suggestions: list[str]
    notes: list[str]
    delegates: dict[str, DelegateCoverage]  # executorch:<delegate> target -> coverage


# The ops that carry a model's arithmetic (convolutions, matrix products, attention): where
# a delegate earns its keep. Matched on the overload's base name.
_FLOP_HEAVY = re.compile(
    r"^(convolution|conv\w*|_convolution|linear|addmm|mm|bmm|baddbmm|matmul|"
    r"_?scaled_dot_product\w*|_scaled_mm|multi_head_attention\w*|_native_multi_head_attention)$"
)


def flop_heavy(op: str) -> bool:
    return _FLOP_HEAVY.match(op.partition("::")[2].split(".", 1)[0]) is not None


def _count_delegated(into: dict[str, DelegateCoverage], targets: list[Any], op: str, trees: Any) -> None:
    for target in targets:
        if not target.tree_view.startswith("executorch:"):
            continue
        tree = trees.get(target.tree_view)
        facts = tree.get("delegate") if tree else None
        if not facts:
            continue  # no delegate view for this call (a scripted stand-in): not counted
        nodes = int(facts.get("nodes", 1))
        taken = int(facts.get("taken", nodes if facts.get("delegated") else 0))
        counts = into.setdefault(target.name, {"nodes": 0, "taken": 0, "heavy_nodes": 0, "heavy_taken": 0})
        counts["nodes"] += nodes
        counts["taken"] += taken
        if flop_heavy(op):
            counts["heavy_nodes"] += nodes
            counts["heavy_taken"] += taken


def coverage_line(target: str, counts: DelegateCoverage) -> str:
    """`executorch:xnnpack takes 3 of 5 nodes (60%); FLOP-heavy (...): 2 of 3 (67%)`."""

    def share(taken: int, total: int, noun: str = "") -> str:
        return f"{taken} of {total}{noun} ({100 * taken / total:.0f}%)" if total else f"none{noun}"

    return (
        f"{target} takes {share(counts['taken'], counts['nodes'], ' nodes')}; "
        f"FLOP-heavy (conv, linear, matmul, attention): {share(counts['heavy_taken'], counts['heavy_nodes'])}"
    )


def _verdicts(entry: dict[str, dict[str, Any]]) -> dict[str, SiteVerdict]:
    return {
        target: SiteVerdict(v["status"], tuple(v["ops"]), v["severity"], v["code"], v["message"])
        for target, v in entry.items()
    }


def _files(paths: list[str]) -> list[str]:
    files, _ = iter_python_files(paths)
    return files


def text(report: dict[str, Any], targets: list[str]) -> str:
    lines = []
    for module, data in report["modules"].items():
        lines.append(f"Model structure: {module}")
        for op, entry in sorted(data["ops"].items()):
            verdicts = _verdicts(entry)
            for target in targets:
                verdict = verdicts.get(target)
                if verdict is None:
                    continue
                if verdict.status == SUPPORTED:
                    lines.append(f"  + Supported op [{target}]: {op}")
                    continue
                doubtful = verdict.status == CONDITIONAL or verdict.severity in ("information", "hint")
                mark = "+ Maybe unsupported op" if doubtful else "+ Unsupported op"
                lines.append(f"  {mark} [{target}]: {op} -> {', '.join(verdict.ops)} ({verdict.code})")
        for target, counts in data.get("delegates", {}).items():
            lines.append(f"  Delegate coverage: {coverage_line(target, counts)}")
        if data["suggestions"] or data["notes"]:
            lines.append("Suggestions")
            lines.extend(f"  {s}" for s in data["suggestions"] + data["notes"])
        lines.append("")
    return "\n".join(lines) + "\n"


def markdown(report: dict[str, Any], targets: list[str]) -> str:
    lines = [f"### atenlint report (torch {report['torch']})", ""]
    for module, data in report["modules"].items():
        lines += [f"#### `{module}`", ""]
        lines += verdict_table(
            ["op"], targets, [([f"`{op}`"], _verdicts(entry)) for op, entry in sorted(data["ops"].items())]
        )
        lines += section(
            "Delegate coverage", [coverage_line(t, c) for t, c in data.get("delegates", {}).items()], level=5
        )
        lines += section("Suggestions", [s.strip() for s in data["suggestions"] + data["notes"]], level=5)
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
    targets = list(
        overrides.get("targets")
        or resolver.for_directory(
            os.path.abspath(args.paths[0])
            if os.path.isdir(args.paths[0])
            else os.path.dirname(os.path.abspath(args.paths[0]))
        ).targets
    )
    report["targets"] = targets
    if args.format == "json":
        json.dump(report, sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif args.format == "markdown":
        sys.stdout.write(markdown(report, targets))
    else:
        sys.stdout.write(text(report, targets))
    problems = any(
        v["status"] == PROBLEM and v["severity"] in ("error", "warning")
        for m in report["modules"].values()
        for verdicts in m["ops"].values()
        for v in verdicts.values()
    )
    return EXIT_FINDINGS if problems else EXIT_CLEAN
