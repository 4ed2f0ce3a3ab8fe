"""Speed of `atenlint check` against the work it cannot avoid, measured in the same run.

Baseline: a fresh interpreter that imports torch, imports every file, builds each
nn.Module class on meta and calls `torch.jit.script` on it: the bare cost of the
TorchScript path. atenlint adds discovery, the call-site walk, decompositions, verdicts
and the worker protocol on top; the ratio says how much that costs.

Also measured (issue 22): a class with no configured inputs gets them inferred, each guess
checked by a forward on fake tensors, then its dispatch view traced in training and eval
mode. The check is now that trace's eval phase, recorded once (`trace.recorded_check`):
timed against the check followed by the two-phase trace it replaced, on the inputs atenlint
keeps for the example classes, both in one fresh interpreter, alternated.

Also measured: the first run with an empty table cache (parses native_functions.yaml)
against a second run served from the cache; and both on two cores (issue 10's goal: a scan
within 1.3 x the raw capture of the same classes using both cores): the baseline split over
two processes against `atenlint check --jobs 2`.

    python benchmarks/bench_check.py [--files 40] [--repeat 3] [--json] [--two-cores-only]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from table import Row

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ATENLINT = [sys.executable, "-m", "atenlint"]

BASELINE = textwrap.dedent("""
    import importlib.util, inspect, os, sys, warnings
    warnings.simplefilter("ignore")
    import torch
    roots = sys.argv[1:]
    count = 0
    for root in roots:
        files = [root] if os.path.isfile(root) else \
            [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if f.endswith(".py")]
        for path in sorted(files):
            sys.path.insert(0, os.path.dirname(path))
            name = "bench_" + str(abs(hash(path)))
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            try:
                spec.loader.exec_module(module)
            except Exception:
                continue
            for _, cls in inspect.getmembers(module, inspect.isclass):
                if issubclass(cls, torch.nn.Module) and cls.__module__ == name:
                    try:
                        with torch.device("meta"):
                            instance = cls()
                        torch.jit.script(instance)
                        count += 1
                    except Exception:
                        pass
    print(count)
""")

INFERRED_CHECK = textwrap.dedent("""
    import inspect, json, os, statistics, sys, time, warnings
    warnings.simplefilter("ignore")
    import torch
    from atenlint.capture.infer_inputs import candidates, evaluate
    from atenlint.capture.loader import build, import_file, user_import_context
    from atenlint.capture.trace import recorded_check, forward_runs, trace_ops
    repeat = int(sys.argv[1])
    kept = []
    for spec in sys.argv[2:]:
        path, name, root = spec.split("|")
        with user_import_context([root], {}):
            module = import_file(name, path)
            for _, cls in inspect.getmembers(module, inspect.isclass):
                if not issubclass(cls, torch.nn.Module) or cls.__module__ != name:
                    continue
                try:
                    instance = build(cls, module, None, {}, infer_arguments=True, roots=[root])
                    tried = candidates(cls, instance, module)
                except Exception:
                    continue
                for candidate in tried:
                    inputs = evaluate(candidate.expression, "meta")
                    if forward_runs(instance, inputs):
                        kept.append((instance, inputs))
                        break
    def before(instance, inputs):  # the check, then the dispatch trace's two phases
        forward_runs(instance, inputs)
        trace_ops(instance, inputs)
    def now(instance, inputs):  # the check recorded as the eval phase, then the training phase
        trace_ops(instance, inputs, eval_run=recorded_check(instance, inputs))
    for instance, inputs in kept:  # warm: first-call costs are neither's
        before(instance, inputs)
        now(instance, inputs)
    times = {"before": [], "now": []}
    for round_ in range(repeat):
        for label in ("before", "now") if round_ % 2 == 0 else ("now", "before"):
            started = time.process_time()
            for instance, inputs in kept:
                (before if label == "before" else now)(instance, inputs)
            times[label].append(time.process_time() - started)
    print(json.dumps({"classes": len(kept), **{k: statistics.median(v) for k, v in times.items()}}))
""")

LAYERS = [
    ("nn.Conv2d({c}, {c}, 3, padding=1)", "x = self.{n}(x)"),
    ("nn.BatchNorm2d({c})", "x = self.{n}(x)"),
    ("nn.GELU()", "x = self.{n}(x)"),
    ("nn.Dropout(0.1)", "x = self.{n}(x)"),
    ("nn.GroupNorm(4, {c})", "x = self.{n}(x)"),
    ("nn.Hardsigmoid()", "x = self.{n}(x)"),
    (None, "x = F.interpolate(x, scale_factor=1.0, mode='bilinear')"),
    (None, "x = x + torch.heaviside(x, x)"),
    (None, "x = x * torch.special.ndtri(x.sigmoid())"),
    (None, "x = F.max_pool2d(x, 1)"),
    (None, "x = torch.softmax(x, dim=1)"),
]


def generate_workspace(root: str, files: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    for index in range(files):
        chosen = [rng.choice(LAYERS) for _ in range(rng.randint(4, 9))]
        init_lines, forward_lines = [], []
        for position, (layer, call) in enumerate(chosen):
            name = f"layer{position}"
            if layer:
                init_lines.append(f"        self.{name} = {layer.format(c=16)}")
            forward_lines.append("        " + call.format(n=name))
        body = "\n".join(init_lines) or "        pass"
        source = (
            f"import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
            f"class Model{index}(nn.Module):\n    def __init__(self):\n        super().__init__()\n{body}\n\n"
            f"    def forward(self, x):\n" + "\n".join(forward_lines) + "\n        return x\n"
        )
        with open(os.path.join(root, f"model_{index:02d}.py"), "w", encoding="utf-8") as handle:
            handle.write(source)


def timed(command: list, env: dict) -> float:
    started = time.perf_counter()
    subprocess.run(command, env=env, check=False, capture_output=True, text=True, timeout=1800, cwd=REPO)
    return time.perf_counter() - started


def measure(paths: list, repeat: int, cache: str) -> dict:
    env = dict(os.environ, ATENLINT_CACHE_DIR=cache, PYTHONWARNINGS="ignore")
    baseline = [timed([sys.executable, "-c", BASELINE, *paths], env) for _ in range(repeat)]
    shutil.rmtree(cache, ignore_errors=True)
    cold_cache = timed(ATENLINT + ["check", *paths, "--format", "json"], env)
    warm = [timed(ATENLINT + ["check", *paths, "--format", "json"], env) for _ in range(repeat)]
    return {
        "baseline_script_s": statistics.median(baseline),
        "atenlint_cold_table_s": cold_cache,
        "atenlint_warm_table_s": statistics.median(warm),
        "ratio_vs_script": statistics.median(warm) / statistics.median(baseline),
        "cache_speedup_s": cold_cache - statistics.median(warm),
    }


def measure_inferred_check(repeat: int) -> dict:
    """CPU of the inferred-input check and the dispatch trace on the example classes whose
    inputs atenlint infers: recorded once (now) against checked then traced (before)."""
    specs = []
    for path in python_files([os.path.join(REPO, "examples")]):
        parts = path.split(os.sep)
        root = os.sep.join(parts[: parts.index("src") + 1]) if "src" in parts else os.path.dirname(path)
        name = os.path.relpath(path, root)[: -len(".py")].replace(os.sep, ".")
        if not name.endswith("__init__"):
            specs.append(f"{path}|{name}|{root}")
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    done = subprocess.run(
        [sys.executable, "-c", INFERRED_CHECK, str(max(repeat, 5)), *specs],
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        cwd=REPO,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def python_files(paths: list) -> list:
    return sorted(os.path.join(d, f) for p in paths for d, _, fs in os.walk(p) for f in fs if f.endswith(".py"))


def timed_together(commands: list, env: dict) -> float:
    """Wall time of several processes run at once (one per core)."""
    started = time.perf_counter()
    running = [
        subprocess.Popen(c, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO) for c in commands
    ]
    for process in running:
        process.wait(timeout=1800)
    return time.perf_counter() - started


def measure_two_cores(paths: list, repeat: int, cache: str) -> dict:
    """The raw capture split over two processes against `atenlint check --jobs 2` (table cache warm)."""
    env = dict(os.environ, ATENLINT_CACHE_DIR=cache, PYTHONWARNINGS="ignore")
    files = python_files(paths)
    halves = [files[0::2], files[1::2]]
    baseline = [
        timed_together([[sys.executable, "-c", BASELINE, *half] for half in halves if half], env) for _ in range(repeat)
    ]
    timed(ATENLINT + ["check", *paths, "--format", "json", "--jobs", "2"], env)  # fills the table cache
    checks = [timed(ATENLINT + ["check", *paths, "--format", "json", "--jobs", "2"], env) for _ in range(repeat)]
    return {
        "baseline_two_processes_s": statistics.median(baseline),
        "atenlint_jobs2_s": statistics.median(checks),
        "ratio": statistics.median(checks) / statistics.median(baseline),
        "baseline_runs_s": [round(b, 2) for b in baseline],
        "atenlint_runs_s": [round(c, 2) for c in checks],
    }


def rows(quick: bool) -> list[Row]:
    """`atenlint check examples/` vs raw jit.script, and the 40-file scan on two cores (full run),
    for benchmarks/run.py."""
    repeat = 1 if quick else 3
    out = []
    with tempfile.TemporaryDirectory() as scratch:
        cache = os.path.join(scratch, "cache")
        if not quick:
            generated = os.path.join(scratch, "generated")
            os.makedirs(generated)
            generate_workspace(generated, 40)
            two = measure_two_cores([generated], repeat, cache)
            out.append(
                Row(
                    "scan of the generated 40-file package vs raw capture on two cores",
                    two["atenlint_jobs2_s"],
                    two["baseline_two_processes_s"],
                    goal_ratio=1.3,
                    note="bench_check, --jobs 2, table cache warm",
                )
            )
        inferred = measure_inferred_check(5 if quick else 11)
        out.append(
            Row(
                "inferred inputs: check + dispatch trace, one recorded eval run vs check then two-phase trace",
                inferred["now"],
                inferred["before"],
                goal_ratio=1.0,
                note=f"CPU, median of rounds over {inferred['classes']} example classes, one interpreter",
            )
        )
        examples = measure([os.path.join(REPO, "examples")], repeat, cache)
        out.append(
            Row(
                "`atenlint check examples/` vs raw `jit.script`",
                examples["atenlint_warm_table_s"],
                examples["baseline_script_s"],
                goal_ratio=1.10,
                note=f"median of {repeat}, table cache warm",
            )
        )
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--two-cores-only", action="store_true", help="only the two-core scan against the baseline")
    args = parser.parse_args()
    results: dict = {}
    with tempfile.TemporaryDirectory() as scratch:
        generated = os.path.join(scratch, "generated")
        os.makedirs(generated)
        generate_workspace(generated, args.files)
        cache = os.path.join(scratch, "cache")
        results[f"generated_{args.files}_files_two_cores"] = measure_two_cores([generated], args.repeat, cache)
        if args.two_cores_only:
            print(json.dumps(results, indent=2))
            return 0
        results["examples"] = measure([os.path.join(REPO, "examples")], args.repeat, cache)
        results["inferred_check"] = measure_inferred_check(args.repeat)
        results[f"generated_{args.files}_files"] = measure([generated], args.repeat, cache)
    if args.json:
        json.dump(results, sys.stdout, indent=2)
        print()
    else:
        two = results.pop(f"generated_{args.files}_files_two_cores")
        print(
            f"two cores, {args.files} files: atenlint --jobs 2 {two['atenlint_jobs2_s']:.2f}s vs the raw capture "
            f"in two processes {two['baseline_two_processes_s']:.2f}s (ratio {two['ratio']:.2f}, goal 1.3)"
        )
        inferred = results.pop("inferred_check")
        print(
            f"inferred inputs on {inferred['classes']} example classes: check + dispatch trace "
            f"{inferred['now'] * 1000:.0f} ms CPU with one recorded eval run vs {inferred['before'] * 1000:.0f} ms "
            f"checked then traced (ratio {inferred['now'] / inferred['before']:.2f})"
        )
        for name, row in results.items():
            print(
                f"{name}: atenlint {row['atenlint_warm_table_s']:.2f}s vs torch.jit.script "
                f"{row['baseline_script_s']:.2f}s (ratio {row['ratio_vs_script']:.2f}); "
                f"first run with an empty table cache {row['atenlint_cold_table_s']:.2f}s"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
