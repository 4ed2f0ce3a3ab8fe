"""Evaluate atenlint on repositories as cloned: coverage, and precision against the real toolchains.

    python scripts/eval_repos.py [--target T,...] [--jobs N] [--out FILE] PATH [PATH ...]

1. Runs `atenlint check` on each PATH (the same per-file pipeline as the CLI, with each
   class's capture kept): how many classes were traced (configured or inferred inputs),
   scripted, read from source only, and why the rest were not traced.
2. For every error and warning of an export target whose class was traced, runs that
   target's own toolchain on the class, built as atenlint builds it (its constructor, or
   the config-class guess) and called with the inputs atenlint used:
   - `onnx:N`: `torch.onnx.export` at opset N with torch's default exporter (dynamo), the
     one atenlint judges when `onnx-exporter` is not set;
   - `coreml`: `coremltools.convert` of the `torch.jit.trace`;
   - `executorch`: `torch.export.export`, `to_edge`, `to_executorch`, and loading the
     program's method in ExecuTorch's runtime (where a missing kernel fails);
   - `torchscript`: `torch.jit.script` (any class that builds: it needs no inputs).
   A class atenlint built with constructor arguments it inferred is built with the same call.
   A finding is right when that toolchain fails on the class; it is counted as naming the
   cause when the op it names is among the ones the toolchain rejects.
3. Prints coverage per repository and precision per target; `--out` writes every record.

The analysed code runs in the confined worker for step 1 and, for step 2, in one child
process per class (`--oracle`), never in this process. Step 2 is not confined: run it only
on code you would run yourself.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import re
import subprocess
import sys
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

EXPORT_TARGETS = ("onnx:13", "onnx:17", "executorch", "coreml", "torchscript")
DEFAULT_TARGETS = ",".join(EXPORT_TARGETS)
ORACLE_TIMEOUT_S = 600


# -- step 1: atenlint itself -------------------------------------------------------------------


@dataclass
class ClassRecord:
    """One module class as atenlint analysed it."""

    file: str  # absolute path
    module: str  # dotted module.qualname (what findings name)
    module_name: str  # the file's dotted import name
    qualname: str
    roots: list[str]
    capture: str  # "trace", "script", "static", or "none"
    inferred: str | None  # the inputs expression atenlint inferred, if it traced with one
    reason: str | None  # why it was not traced (None when traced)
    arguments: str | None = None  # the constructor call atenlint inferred, if it built it so


@dataclass
class RepoRecord:
    path: str
    files: int = 0
    classes: list[ClassRecord] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0


def not_traced_reason(answer: dict[str, Any], timed_out: bool) -> str | None:
    """Why a class's capture did not come from a trace, in a few words (for the tally)."""
    from atenlint.answers import class_capture

    capture = class_capture(answer)  # type: ignore[arg-type]
    if capture == "trace":
        return None
    if timed_out and capture == "static":
        return "file timed out"
    build_error = answer.get("build_error")
    if build_error:
        if "atenlint inferred" in str(build_error.get("message")):
            return "not built: arguments (an inferred call built it, nothing could analyse it)"
        return f"not built: {build_error.get('kind') or 'error'}"
    if answer.get("trace_error"):
        return "trace failed"
    if capture == "script":
        return "built, no inputs ran (scripted)"
    if answer.get("script_error"):
        return "script failed"
    return "not imported" if capture == "static" else capture


def analyse(paths: list[str], targets: str, jobs: int, timeout: float | None, python: str) -> list[RepoRecord]:
    """Check each path as the CLI does, keeping each class's capture."""
    from concurrent.futures import ThreadPoolExecutor

    from atenlint import findings as codes
    from atenlint.answers import class_capture
    from atenlint.config import SettingsResolver, parse_targets
    from atenlint.discover import import_location, iter_python_files
    from atenlint.engine import Engine
    from atenlint.pipeline import FileSnapshot, check_file, merge_results
    from atenlint.worker.pool import WorkerPool, WorkerSettings

    overrides: dict[str, Any] = {"targets": parse_targets(targets, "--target")}
    if timeout is not None:
        overrides["timeout"] = timeout
    resolver = SettingsResolver(None, overrides)
    pool = WorkerPool(jobs, WorkerSettings(python=python))
    engine = Engine(pool, resolver)
    records = []
    try:
        engine.start()
        for path in paths:
            started = time.perf_counter()
            record = RepoRecord(os.path.abspath(path))
            files, _ = iter_python_files([path], notebooks=True)
            record.files = len(files)
            snapshots = [FileSnapshot.of(f, resolver=resolver) for f in files]
            with ThreadPoolExecutor(max_workers=max(1, jobs)) as executor:
                results = list(executor.map(lambda s: check_file(engine, s, with_call_sites=False), snapshots))
            for result in results:
                capture = result.capture
                timed_out = any(f.code == codes.TIMEOUT for f in capture.module_findings)
                try:
                    module_name, roots = import_location(capture.path, capture.settings.project_root)
                except Exception:  # noqa: BLE001 - a notebook: its classes are counted, not re-run
                    module_name, roots = "", []
                for answer in capture.classes:
                    inferred = answer.get("inputs_inferred")
                    record.classes.append(
                        ClassRecord(
                            capture.path,
                            answer.get("module", ""),
                            module_name,
                            answer.get("qualname", ""),
                            list(roots),
                            class_capture(answer),
                            inferred,
                            not_traced_reason(dict(answer), timed_out),
                            answer.get("arguments_inferred"),
                        )
                    )
            # One finding per call site and target, as the CLI reports them (a base class's
            # line reached from several files' subclasses is one finding).
            record.findings = [f.as_json() | {"abs_path": f.abs_path} for f in merge_results(results)]
            record.seconds = time.perf_counter() - started
            records.append(record)
    finally:
        pool.close()
    return records


def repo_name(path: str, paths: list[str]) -> str:
    """The shortest tail of `path` that no other of `paths` ends with (`dinov2/layers` beside
    `detectron2/layers`)."""
    parts = os.path.normpath(path).split(os.sep)
    others = [os.path.normpath(p).split(os.sep) for p in paths if os.path.normpath(p) != os.path.normpath(path)]
    for size in range(1, len(parts) + 1):
        if all(other[-size:] != parts[-size:] for other in others):
            return "/".join(parts[-size:])
    return path


def save_records(records: list[RepoRecord], path: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        json.dump([dataclasses.asdict(r) for r in records], handle)


def load_records(path: str) -> list[RepoRecord]:
    with open(path, encoding="utf-8") as handle:
        raw = json.load(handle)
    return [
        RepoRecord(**{k: v for k, v in r.items() if k != "classes"}, classes=[ClassRecord(**c) for c in r["classes"]])
        for r in raw
    ]


# -- step 2: the real toolchains, one child process per class ----------------------------------


def _short(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"[:800]


def _base(op: str) -> str:
    """`aten::scaled_dot_product_attention.default` -> `scaled_dot_product_attention`."""
    return op.split("::")[-1].split(".")[0]


def _onnx(model: Any, args: tuple[Any, ...], opset: int) -> dict[str, Any]:
    """`torch.onnx.export` with its own default exporter (dynamo in torch >= 2.9), as
    atenlint judges `onnx:N` when `onnx-exporter` is not set."""
    import torch

    out: dict[str, Any] = {}
    try:
        torch.onnx.export(model, args, opset_version=opset)
        out["ok"] = True
    except Exception as error:  # noqa: BLE001
        out["ok"], out["error"] = False, _short(error)
        named = re.findall(r"aten[.:]+(\w+)", str(error))
        if named:
            out["rejected"] = sorted({_base(n) for n in named})
    return out


def _coreml(model: Any, args: tuple[Any, ...]) -> dict[str, Any]:
    import coremltools as ct
    import numpy as np
    import torch

    try:
        traced = torch.jit.trace(model, args)
    except Exception as error:  # noqa: BLE001 - the front end coremltools reads fails: it fails
        return {"ok": False, "error": "torch.jit.trace: " + _short(error)}
    inputs = [
        ct.TensorType(name=f"input_{i}", shape=tuple(a.shape), dtype=np.float32 if a.is_floating_point() else np.int32)
        for i, a in enumerate(args)
        if isinstance(a, torch.Tensor)
    ]
    try:
        ct.convert(traced, inputs=inputs, convert_to="mlprogram", skip_model_load=True)
        return {"ok": True}
    except Exception as error:  # noqa: BLE001
        out: dict[str, Any] = {"ok": False, "error": _short(error)}
        named = re.search(r"convert function for op '([\w:.]+)' not implemented", str(error))
        if named:
            out["rejected"] = [_base(named.group(1))]
        return out


def _executorch(model: Any, args: tuple[Any, ...]) -> dict[str, Any]:
    import torch
    from executorch.exir import to_edge

    try:
        exported = torch.export.export(model, args)
    except Exception as error:  # noqa: BLE001
        return {"ok": False, "error": "torch.export: " + _short(error)}
    try:
        edge = to_edge(exported)
    except Exception as error:  # noqa: BLE001
        named = re.findall(r"aten\.(\w+)", str(error))
        return {"ok": False, "error": "to_edge: " + _short(error), "rejected": sorted(set(named))}
    try:
        program = edge.to_executorch()
    except Exception as error:  # noqa: BLE001
        return {"ok": False, "error": "to_executorch: " + _short(error)}
    try:
        # The runtime resolves every instruction's kernel when it loads the method: a
        # missing kernel (ET002) fails here, not in to_executorch.
        from executorch.runtime import Runtime

        method = Runtime.get().load_program(program.buffer).load_method("forward")
    except Exception as error:  # noqa: BLE001
        return {"ok": False, "error": "runtime load_method: " + _short(error)}
    del method
    return {"ok": True}


def _torchscript(model: Any) -> dict[str, Any]:
    import torch

    try:
        torch.jit.script(model)
        return {"ok": True}
    except Exception as error:  # noqa: BLE001
        return {"ok": False, "error": _short(error)}


def oracle(spec: dict[str, Any]) -> dict[str, Any]:
    """In the child: import the class's file as the worker does, build it on the CPU as
    atenlint builds it, and run each asked target's toolchain."""
    import torch

    from atenlint.capture.constructor_args import evaluate_call
    from atenlint.capture.infer_inputs import evaluate
    from atenlint.capture.loader import config_factory, import_file, required_parameters, user_import_context

    results: dict[str, Any] = {}
    with user_import_context(spec["roots"], {}, []):
        module = import_file(spec["module_name"], spec["file"])
        cls: Any = module
        for part in spec["qualname"].split("."):
            cls = getattr(cls, part)
        missing, _ = required_parameters(cls)
        init = spec.get("arguments") or (config_factory(cls, module, missing) if missing else None)

        def make() -> Any:
            if init is None:
                return cls()
            # A part atenlint built on the instance its model built (`CCT().classifier.blocks.0.attn`):
            # build the model, then take the part by its module path.
            part = re.fullmatch(r"(.*\))\.([\w.]+)", init)
            if part:
                return evaluate_call(part.group(1), cls, module).get_submodule(part.group(2))
            return evaluate_call(init, cls, module)

        torch.manual_seed(0)
        model = make().eval()
        args = evaluate(spec["inputs"], "cpu") if spec.get("inputs") else None
        for target in spec["targets"]:
            try:
                with torch.no_grad():
                    if target == "torchscript":
                        results[target] = _torchscript(make())
                    elif args is None:
                        results[target] = {"skipped": "no inputs"}
                    elif target.startswith("onnx:"):
                        results[target] = _onnx(model, args, int(target.split(":")[1]))
                    elif target == "coreml":
                        results[target] = _coreml(model, args)
                    elif target == "executorch":
                        results[target] = _executorch(model, args)
            except Exception as error:  # noqa: BLE001 - our harness, not the toolchain: no verdict
                results[target] = {"harness_error": _short(error)}
    return results


def _spec(record: ClassRecord, targets: list[str]) -> dict[str, Any]:
    return {
        "file": record.file,
        "module_name": record.module_name,
        "roots": record.roots,
        "qualname": record.qualname,
        "inputs": record.inferred,
        "arguments": record.arguments,
        "targets": targets,
    }


def run_oracle(records: list[ClassRecord], targets: list[str], timeout: float, python: str) -> list[dict[str, Any]]:
    """The toolchains' verdicts on `records` (classes of one file), in one child process:
    the child imports torch and the exporters once for them all and prints one line per
    class as it finishes, so a class that hangs or kills the child loses only itself and
    the classes after it (each rerun alone)."""
    specs = [_spec(r, targets) for r in records]
    try:
        done = subprocess.run(
            [python, os.path.abspath(__file__), "--oracle", json.dumps(specs)],
            capture_output=True,
            text=True,
            timeout=timeout * len(specs),
            check=False,
        )
        stdout, stderr, failure = done.stdout, done.stderr, (done.stderr or "no answer")[-600:]
    except subprocess.TimeoutExpired as expired:
        stdout = expired.stdout.decode() if isinstance(expired.stdout, bytes) else (expired.stdout or "")
        stderr, failure = "", f"timed out after {timeout * len(specs):.0f} s"
    del stderr
    answers: list[dict[str, Any]] = []
    for line in stdout.splitlines():
        if line.startswith(_ANSWER):
            answers.append(dict(json.loads(line[len(_ANSWER) :])))
    if len(answers) < len(specs) and len(specs) > 1:
        # The child died or timed out at class len(answers): that class alone gets the
        # failure, the ones after it run again in their own child.
        answers.append({t: {"harness_error": failure} for t in targets})
        for record in records[len(answers) :]:
            answers.extend(run_oracle([record], targets, timeout, python))
    while len(answers) < len(specs):
        answers.append({t: {"harness_error": failure} for t in targets})
    return answers


_ANSWER = "eval_repos-answer "


# -- step 3: judging each finding ---------------------------------------------------------------


def judge(finding: dict[str, Any], verdict: dict[str, Any]) -> str:
    """ "right" (the toolchain fails and rejects the op, or names no ops), "right-other" (it
    fails on something else), "false" (it succeeds), or "unknown" (no verdict)."""
    if "ok" not in verdict:
        return "unknown"
    if verdict["ok"]:
        return "false"
    rejected = verdict.get("rejected")
    ops = {_base(o) for o in finding.get("ops") or ()}
    if not rejected or not ops or ops & set(rejected) or any(o in verdict.get("error", "") for o in ops):
        return "right"
    return "right-other"


def evaluate_repos(
    records: list[RepoRecord], targets: list[str], timeout: float, python: str, log: Any = None
) -> list[dict[str, Any]]:
    """Every error and warning of `targets`, each with the toolchain's verdict on its class."""
    judged = []
    wanted = [t for t in targets if t in EXPORT_TARGETS]
    for record in records:
        by_module = {c.module: c for c in record.classes}
        rows: list[tuple[dict[str, Any], ClassRecord | None]] = []
        for finding in record.findings:
            target = finding.get("target")
            if finding.get("severity") not in ("error", "warning") or target not in targets:
                continue
            names = [finding.get("module")] + list(finding.get("modules") or [])
            known = [by_module[n] for n in names if n in by_module]
            traced = [c for c in known if c.capture == "trace"]
            # torch.jit.script needs no inputs: any class that was built (traced, scripted, or
            # read from source after its script failed).
            built = [c for c in known if c.capture in ("trace", "script") or c.reason == "script failed"]
            chosen = traced[0] if traced else (built[0] if built and target == "torchscript" else None)
            row = {
                "repo": repo_name(record.path, [r.path for r in records]),
                "path": finding.get("path"),
                "line": finding["range"]["start"]["line"] + 1,
                "severity": finding.get("severity"),
                "code": finding.get("code"),
                "target": target,
                "ops": finding.get("ops"),
                "module": finding.get("module"),
                "capture": finding.get("capture"),
                "message": (finding.get("message") or "")[:300],
            }
            rows.append((row, chosen))
        # One child per file for the classes its findings name, each run only on the
        # targets those findings are about (an ONNX export of a big model takes minutes).
        by_file: dict[str, dict[str, ClassRecord]] = {}
        asked: dict[str, set[str]] = {}
        for row, chosen in rows:
            if chosen is not None:
                by_file.setdefault(chosen.file, {})[chosen.module] = chosen
                asked.setdefault(chosen.module, set()).add(row["target"])
        verdicts: dict[str, dict[str, Any]] = {}
        for classes in by_file.values():
            if log:
                log(f"toolchains on {', '.join(classes)}")
            chosen_classes = list(classes.values())
            for_file = [t for t in wanted if any(t in asked[c.module] for c in chosen_classes)]
            for chosen, answer in zip(chosen_classes, run_oracle(chosen_classes, for_file, timeout, python)):
                verdicts[chosen.module] = answer
        for row, chosen in rows:
            if chosen is None:
                row["verdict"] = "not traced"
            else:
                toolchain = verdicts[chosen.module].get(row["target"], {})
                row["class"] = chosen.module
                row["inputs"] = chosen.inferred
                row["arguments"] = chosen.arguments
                row["toolchain"] = toolchain
                row["verdict"] = judge(row, toolchain)
            judged.append(row)
    return judged


def coverage(record: RepoRecord) -> dict[str, Any]:
    classes = record.classes
    return {
        "files": record.files,
        "classes": len(classes),
        "traced": sum(c.capture == "trace" for c in classes),
        "traced_inferred": sum(c.capture == "trace" and c.inferred is not None for c in classes),
        # Of those traced or scripted: built with constructor arguments atenlint inferred.
        "traced_inferred_arguments": sum(c.capture == "trace" and c.arguments is not None for c in classes),
        "built_inferred_arguments": sum(c.capture in ("trace", "script") and c.arguments is not None for c in classes),
        # Built by atenlint (traced, scripted, or read from source after its script failed):
        # what the goal counts coverage against.
        "built": sum(c.capture in ("trace", "script") or c.reason == "script failed" for c in classes),
        "scripted": sum(c.capture == "script" for c in classes),
        "source_only": sum(c.capture == "static" for c in classes),
        "not_analysed": sum(c.capture == "none" for c in classes),
        "not_traced_because": dict(Counter(c.reason for c in classes if c.reason).most_common()),
        "seconds": round(record.seconds, 1),
    }


def precision(judged: list[dict[str, Any]], targets: list[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for target in targets:
        rows = [r for r in judged if r["target"] == target]
        counts = Counter(r["verdict"] for r in rows)
        right = counts["right"] + counts["right-other"]
        decided = right + counts["false"]
        out[target] = {
            "errors": sum(r["severity"] == "error" for r in rows),
            "warnings": sum(r["severity"] == "warning" for r in rows),
            **dict(counts),
            "precision": round(right / decided, 3) if decided else None,
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", metavar="PATH")
    parser.add_argument("--target", default=DEFAULT_TARGETS, help=f"comma-separated (default {DEFAULT_TARGETS})")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=None, help="atenlint's per-file limit (its default if unset)")
    parser.add_argument("--oracle-timeout", type=float, default=ORACLE_TIMEOUT_S, help="seconds per class")
    parser.add_argument(
        "--python", default=sys.executable, help="interpreter that imports the code, for atenlint and the toolchains"
    )
    parser.add_argument("--out", help="write coverage, findings and verdicts as JSON here")
    parser.add_argument(
        "--analysis",
        help="keep step 1's records in this JSON file: written after step 1, read instead of step 1 when it exists "
        "(to judge again without analysing again)",
    )
    parser.add_argument("--oracle", help=argparse.SUPPRESS)  # the child: one class's toolchains
    args = parser.parse_args(argv)
    if args.oracle:
        import logging
        import warnings

        warnings.filterwarnings("ignore")
        logging.disable(logging.WARNING)
        specs = json.loads(args.oracle)
        for spec in specs if isinstance(specs, list) else [specs]:
            try:
                with contextlib.redirect_stdout(sys.stderr):
                    result = oracle(spec)
            except Exception:  # noqa: BLE001 - no verdict for any target of this class
                result = {t: {"harness_error": traceback.format_exc()[-600:]} for t in spec["targets"]}
            print(_ANSWER + json.dumps(result), flush=True)
        return 0
    if not args.paths:
        parser.error("give at least one PATH")
    targets = [t.strip() for t in args.target.split(",") if t.strip()]

    def log(message: str) -> None:
        print(f"eval_repos: {message}", file=sys.stderr, flush=True)

    if args.analysis and os.path.exists(args.analysis):
        records = load_records(args.analysis)
    else:
        records = analyse(args.paths, ",".join(targets), args.jobs, args.timeout, args.python)
        if args.analysis:
            save_records(records, args.analysis)
    judged = evaluate_repos(records, targets, args.oracle_timeout, args.python, log)

    def name(record: RepoRecord) -> str:
        return repo_name(record.path, [r.path for r in records])

    report = {
        "coverage": {name(r): coverage(r) for r in records},
        "precision": precision(judged, targets),
        "precision_by_repo": {
            name(r): precision([j for j in judged if j["repo"] == name(r)], targets) for r in records
        },
        "judged": judged,
        "classes": {
            name(r): [
                {
                    "class": c.module,
                    "capture": c.capture,
                    "inputs": c.inferred,
                    "arguments": c.arguments,
                    "not_traced_because": c.reason,
                }
                for c in r.classes
            ]
            for r in records
        },
        "findings": {name(r): r.findings for r in records},
    }
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=1, sort_keys=True)
    print(json.dumps({k: report[k] for k in ("coverage", "precision", "precision_by_repo")}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
