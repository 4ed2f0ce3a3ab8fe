"""`atenlint check PATH...`: analyse files and folders, report like a compiler (or JSON)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..config import KNOWN_TARGETS, ConfigError, SettingsResolver, parse_targets
from ..settings_schema import SettingError, cap_workers, checked_number, machine_capacity
from ..worker.pool import WorkerFailure, WorkerPool, WorkerSettings
from .common import EXIT_CLEAN, EXIT_FINDINGS, EXIT_INTERNAL, UsageError, default_jobs, stderr_log

# The analysis core (engine, pipeline, fixes, report formats: most of this command's import
# time) is imported inside the functions that use it, once `run` has begun starting the
# workers: their torch import overlaps it instead of following it.
if TYPE_CHECKING:
    from ..baseline import Baseline
    from ..engine import Engine
    from ..fixes.apply import FixOutcome
    from ..result_cache import ResultCache
    from ..run_report import Report
    from .common import Subcommands

NAME = "check"
FORMATS = ("text", "json", "sarif", "github")
# The interpreter's thread switch interval during a check (see `run`).
_SWITCH_INTERVAL_S = 0.001


def add_parser(commands: Subcommands) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = commands.add_parser(
        NAME, help="analyse files and folders, report like a compiler"
    )
    parser.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="Python files, notebooks (.ipynb) or folders (searched for *.py and *.ipynb)",
    )
    parser.add_argument(
        "--target",
        "-t",
        action="append",
        metavar="TARGET",
        help=f"backend to judge for (repeat or comma-separate; known: {', '.join(KNOWN_TARGETS)}); "
        "default: [tool.atenlint] targets, else mps",
    )
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help="output format: text (default), json, sarif (SARIF 2.1.0 for code scanning), github "
        "(GitHub Actions annotations)",
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="use this pyproject.toml / TOML file instead of the nearest pyproject.toml of each file",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help="per-file processor-time limit for importing and analysing (default 60; load does not count)",
    )
    parser.add_argument("--jobs", "-j", type=int, metavar="N", help="worker processes (default: up to 2)")
    parser.add_argument(
        "--python", metavar="INTERPRETER", help="interpreter that imports your code (default: this one)"
    )
    parser.add_argument(
        "--no-exec", action="store_true", help="never import or run your code: read the source only (static analysis)"
    )
    parser.add_argument("--verbose", "-v", action="store_true", help="log worker activity to stderr")
    parser.add_argument(
        "--no-sandbox",
        action="store_true",
        help="let analysed code start processes, use the network and write files (the worker's "
        "sandbox refuses them by default; also ATENLINT_SANDBOX=off)",
    )
    parser.add_argument(
        "--require-exec",
        action="store_true",
        help="fail (exit 1) when a module class could not be built and scripted or traced, so was "
        "read from source only or not analysed at all (for CI)",
    )
    parser.add_argument(
        "--add-inputs",
        action="store_true",
        help="write `# atenlint: inputs=...` above each class whose forward has type hints or "
        "tensor defaults and no inputs yet (check the guessed shapes), then check",
    )
    parser.add_argument(
        "--fix",
        action="store_true",
        help="apply every exact rewrite atenlint offers, print what changed, report what is left",
    )
    parser.add_argument(
        "--unsafe-fixes",
        action="store_true",
        help="with --fix, also apply approximate rewrites (each says how it differs)",
    )
    parser.add_argument(
        "--write-baseline",
        metavar="FILE",
        help="record the current findings in FILE (by call text, not line) and exit 0",
    )
    parser.add_argument(
        "--baseline", metavar="FILE", help="report only findings not recorded in FILE (written by --write-baseline)"
    )
    parser.add_argument(
        "--exit-zero", action="store_true", help="exit 0 even when something is found (usage errors still exit 2)"
    )
    parser.add_argument(
        "--statistics",
        action="store_true",
        help="also print how many findings each code and operator has (text: before the summary; "
        'json: "statistics"; sarif/github: on stderr)',
    )
    parser.add_argument("--output-file", "-o", metavar="FILE", help="write the report to FILE instead of stdout")
    parser.add_argument(
        "--incremental",
        action="store_true",
        help="reuse the stored result of each file whose contents, dependencies, settings, atenlint, "
        "Python and installed packages are unchanged since a previous --incremental run "
        "(stored under $ATENLINT_CACHE_DIR, default the user cache folder)",
    )
    return parser


def resolver_from_args(args: argparse.Namespace) -> SettingsResolver:
    overrides = {}
    try:
        if args.target:
            overrides["targets"] = parse_targets(",".join(args.target), "--target")
        if getattr(args, "timeout", None) is not None:
            overrides["timeout"] = checked_number("timeout", args.timeout, "--timeout")
        if args.config and not os.path.isfile(args.config):
            raise ConfigError(f"--config: no such file: {args.config}")
        return SettingsResolver(args.config, overrides)
    except (ConfigError, SettingError) as error:
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
    if getattr(args, "require_exec", False) and args.no_exec:
        raise UsageError("--require-exec cannot be combined with --no-exec (nothing is executed then)")
    baseline = _baseline_from_args(args)
    log = stderr_log(args.verbose)
    # `--jobs 100000` or a cloned project's `workers = 64` must not start more interpreters
    # than the machine holds (each is a torch import: hundreds of MB).
    capped = cap_workers(args.jobs or default_jobs(args.paths, resolver), machine_capacity())
    jobs = capped.workers
    if capped.note:
        print(f"atenlint: {capped.note}", file=sys.stderr)
    worker_settings = WorkerSettings(python=args.python or sys.executable)
    if getattr(args, "no_sandbox", False):
        worker_settings.sandbox = False
    # The thread that sends a worker its next file must not queue behind the thread judging
    # the last answer: each system call on its way (the worker's /proc readings, the pipe)
    # gives up the interpreter lock, and taking it back from a busy thread waits for the
    # switch interval, 5 ms by default, so a worker sat idle for tens of ms between files.
    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(_SWITCH_INTERVAL_S)
    # Closed as the run ends without waiting for the workers' exit: the report is printed
    # meanwhile, and the workers end on their own.
    pool = WorkerPool(jobs, worker_settings, log=log, wait_on_close=False)
    if not getattr(args, "incremental", False):
        # The workers' torch import (seconds) begins now, beside the rest of the setup (the
        # analysis core's import, the baseline, --add-inputs, finding the files); an
        # incremental run starts them only if some file is not in its cache.
        pool.start_in_background()
    try:
        from ..engine import Engine
        from ..fixes.apply import fix_until_clean
        from ..inputs_suggest import add_inputs_to_paths
        from ..pipeline import check_paths

        if getattr(args, "add_inputs", False):
            for line in add_inputs_to_paths(args.paths, resolver):
                print(line, file=sys.stderr)
        engine = Engine(pool, resolver, log=log)
        cache = _result_cache(args, worker_settings, engine, log)
        if cache is None:
            # check_paths waits for it after finding the files.
            engine.start_in_background()

        def check() -> Report:
            return check_paths(engine, args.paths, jobs=jobs, execute=not args.no_exec, cache=cache)

        fixed: FixOutcome | None = None
        if args.fix:
            report, fixed = fix_until_clean(check, args.unsafe_fixes, log, allowed_roots=args.paths)
        else:
            report = check()
    except WorkerFailure as failure:
        last = failure.stderr_tail.strip().splitlines()[-1:]  # the reason, not the worker's traceback
        print(
            f"atenlint: cannot start the analysis worker: {failure.message}"
            + (f" ({last[0].strip()[:300]})" if last else ""),
            file=sys.stderr,
        )
        return EXIT_INTERNAL
    finally:
        pool.close()
        sys.setswitchinterval(switch_interval)
    from ..baseline import new_findings, write_baseline
    from ..findings import once_per_run

    report.seconds = time.perf_counter() - started  # what the user waited, worker start included
    degradations = engine.run_notes if engine.hello or cache is None else cache.torch_degradations
    for lost in degradations:  # once per run, not per file: a torch that moved a private API
        print(f"atenlint: note: {lost}", file=sys.stderr)
    if cache is not None:
        cache.prune()
    report.findings = once_per_run(report.findings)  # "coremltools is not installed" once, not per class
    if args.write_baseline:
        try:
            recorded = write_baseline(args.write_baseline, report.findings, report.torch_version)
        except OSError as error:
            raise UsageError(f"--write-baseline: cannot write {args.write_baseline}: {error.strerror}") from None
        print(
            f"atenlint: recorded {recorded} finding{'s' if recorded != 1 else ''} in the baseline "
            f"{args.write_baseline}",
            file=sys.stderr,
        )
    baselined = 0
    if baseline is not None:
        report.findings, baselined = new_findings(report.findings, baseline)
    rendered = _render(args, report, fixed, baselined)
    if cache is not None:
        rendered = _with_cache_summary(args, report, rendered, cache)
    _write_output(args, rendered)
    counts = report.counts()
    if any(f.code == "ATL099" for f in report.findings):
        return EXIT_INTERNAL  # atenlint itself failed on some file: it was not checked
    if args.write_baseline or args.exit_zero:
        return EXIT_CLEAN
    if getattr(args, "require_exec", False) and report.not_executed:
        print(
            f"atenlint: --require-exec: {report.not_executed} module class"
            f"{'es were' if report.not_executed != 1 else ' was'} not built and executed "
            f"({report.by_capture.get('static', 0)} read from source only, {report.by_capture.get('none', 0)} "
            f"not analysed); give factories or inputs (see the notes)",
            file=sys.stderr,
        )
        return EXIT_FINDINGS
    if any(f.code == "ATL099" for f in report.findings):
        return EXIT_INTERNAL  # atenlint itself failed on some file: it was not checked
    return EXIT_FINDINGS if counts["error"] or counts["warning"] else EXIT_CLEAN


def _result_cache(
    args: argparse.Namespace, worker: WorkerSettings, engine: Engine, log: Callable[[str], None]
) -> ResultCache | None:
    """--incremental: the stored results of runs like this one (same interpreter and
    packages, atenlint, sandbox and mode), or None (not asked, or the interpreter cannot
    describe its packages: then every file is checked, as without the flag)."""
    if not getattr(args, "incremental", False):
        return None
    from ..result_cache import EnvironmentUnknown, ResultCache, environment_fingerprint

    try:
        environment = environment_fingerprint(worker.python)
    except EnvironmentUnknown as error:
        print(f"atenlint: --incremental: checking every file ({error})", file=sys.stderr)
        return None
    try:
        return ResultCache(
            environment,
            execute=not args.no_exec,
            sandbox=worker.sandbox,
            log=log,
            run_notes=lambda: engine.torch_degradations,
            cwd=engine.cwd,
        )
    except OSError as error:
        print(f"atenlint: --incremental: checking every file (no cache folder: {error})", file=sys.stderr)
        return None


def _with_cache_summary(args: argparse.Namespace, report: Report, rendered: str, cache: ResultCache) -> str:
    """The text summary line says how many files came from the cache; machine formats keep
    stdout identical to a run without --incremental, so it goes to stderr there."""
    from ..output import summary_line

    line = summary_line(report)
    if args.format == "text" and rendered.endswith(line + "\n"):
        return rendered[: -len(line) - 1] + f"{line} [{cache.summary()}]\n"
    print(f"atenlint: {cache.summary()}", file=sys.stderr)
    return rendered


def _baseline_from_args(args: argparse.Namespace) -> Baseline | None:
    if args.write_baseline and args.baseline:
        raise UsageError("--write-baseline and --baseline cannot be combined (write a new baseline from a full check)")
    if args.output_file and not os.path.isdir(os.path.dirname(os.path.abspath(args.output_file))):
        raise UsageError(f"--output-file: no such directory: {os.path.dirname(args.output_file)}")
    if not args.baseline:
        return None
    from ..baseline import BaselineError, read_baseline

    try:
        return read_baseline(args.baseline)
    except BaselineError as error:
        raise UsageError(f"--baseline: {error}") from None


def _render(args: argparse.Namespace, report: Report, fixed: FixOutcome | None, baselined: int) -> str:
    """The report in the chosen format. Machine formats keep stdout to themselves: what
    --fix changed and --statistics go to stderr there."""
    from ..fixes.apply import fix_summary
    from ..formats.github import report_github
    from ..formats.sarif import report_sarif
    from ..output import report_json, report_text, statistics, statistics_lines

    rows = statistics(report.findings) if args.statistics else None
    if args.format == "json":
        output = report_json(report)
        if fixed is not None:
            output["fixed"] = [applied.as_json() for applied in fixed.applied]
        if rows is not None:
            output["statistics"] = rows
        if args.baseline:
            output["baselined"] = baselined
        return json.dumps(output, indent=2) + "\n"
    if args.format in ("sarif", "github"):
        if fixed is not None:
            sys.stderr.write(fix_summary(fixed))
        if rows is not None:
            sys.stderr.write("\n".join(statistics_lines(rows)) + "\n")
        if baselined:
            print(
                f"atenlint: {baselined} finding{'s' if baselined != 1 else ''} accepted by the baseline not reported",
                file=sys.stderr,
            )
        if args.format == "sarif":
            return json.dumps(report_sarif(report, statistics=rows), indent=2, ensure_ascii=False) + "\n"
        return report_github(report)
    text = report_text(report, statistics=rows, baselined=baselined)
    return (fix_summary(fixed) if fixed is not None else "") + text


def _write_output(args: argparse.Namespace, rendered: str) -> None:
    if not args.output_file:
        sys.stdout.write(rendered)
        return
    try:
        with open(args.output_file, "w", encoding="utf-8") as handle:
            handle.write(rendered)
    except OSError as error:
        raise UsageError(f"--output-file: cannot write {args.output_file}: {error.strerror}") from None
