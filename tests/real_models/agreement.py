"""atenlint's verdicts on real public models next to what the real exporters do.

    python tests/real_models/agreement.py [--jobs 2] [--json OUT.json] [--markdown OUT.md] [MODEL.py ...]

Needs torchvision, timm and transformers beside torch (the models are theirs, built with
random weights; nothing is downloaded). The real exporters run per model file in a
subprocess (`ground_truth.py`), cached by the package versions, the runner's source and the
model file's source, so a second run only repeats what changed. atenlint runs as a user
runs it: `atenlint check --format json` in a subprocess, once with the TorchScript ONNX
exporter (`onnx:9,onnx:13,onnx:17,executorch,coreml,torchscript`) and once with the dynamo
exporter (`onnx:18`). With ATENLINT_AGREEMENT_REPORTS=FOLDER set, each run's JSON report is
kept there too (to compare the findings of two runs).

Per target it reports, over the models:
- pass/fail agreement: the real exporter succeeds exactly when atenlint has no error;
- precision and recall of the op base names atenlint reports at error level against the
  ops the real exporter rejects (per model; ops only where the real exporter's list is
  complete, see `_truth_complete`);
- the share of true findings whose line is on a failing node's recorded source stack;
- every disagreement, with what each side said.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import hashlib
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
MODELS = os.path.join(HERE, "models")
RUNNER = os.path.join(HERE, "ground_truth.py")
PACKAGES = ("torch", "torchvision", "timm", "transformers", "onnx", "onnxscript", "coremltools", "executorch")
TS_OPSETS = ("9", "13", "17")
DYNAMO_OPSET = "18"
# The targets of the goals, in the order the table prints them.
TARGETS = ("onnx:9", "onnx:13", "onnx:17", f"dynamo:{DYNAMO_OPSET}", "executorch", "coreml", "torchscript")
GOAL_TARGETS = ("onnx:13", "onnx:17", "executorch", "coreml")
LOAD_VERDICT_CODE = "ET002"  # no kernel in the runtime: judged past `to_edge`, where the truth here stops
# Findings that say a model (or part of it) was not analysed as asked.
LOST_CODES = {
    "ATL002": "import failed",
    "ATL003": "class not built",
    "ATL005": "timed out",
    "ATL006": "worker died",
    "ATL011": "trace with the example inputs failed",
}
GROUND_TRUTH_TIMEOUT_S = 900
ATENLINT_TIMEOUT_S = 3600


def model_files() -> list[str]:
    return sorted(os.path.join(MODELS, f) for f in os.listdir(MODELS) if f.endswith(".py"))


def versions() -> dict:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def _digest(path: str, package_versions: dict) -> str:
    digest = hashlib.sha256(json.dumps(package_versions, sort_keys=True).encode())
    for source in (RUNNER, path):
        with open(source, "rb") as handle:
            digest.update(handle.read())
    return digest.hexdigest()[:16]


def ground_truth(cache_dir: str, files: list[str] | None = None, jobs: int = 2, log=None, compute: bool = True) -> dict:
    """Per model file name, what the real exporters did (see ground_truth.py). Each model is
    computed once per (package versions, runner source, model source) and cached."""
    files = files or model_files()
    folder = os.path.join(cache_dir, "real-models-truth")
    os.makedirs(folder, exist_ok=True)
    package_versions = versions()
    results: dict = {}
    missing = []
    for path in files:
        cached = os.path.join(folder, f"{os.path.basename(path)[:-3]}-{_digest(path, package_versions)}.json")
        if os.path.exists(cached):
            with open(cached, encoding="utf-8") as handle:
                results[os.path.basename(path)] = json.load(handle)
        else:
            missing.append((path, cached))

    def compute_one(item) -> tuple[str, dict]:
        path, cached = item
        partial = cached + f".part{os.getpid()}"
        env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONWARNINGS="ignore")
        try:
            subprocess.run(
                [sys.executable, RUNNER, partial, path],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=GROUND_TRUTH_TIMEOUT_S,
                env=env,
                cwd=REPO,
                check=False,
            )
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
        try:
            with open(partial, encoding="utf-8") as handle:
                result = json.load(handle)
            os.remove(partial)
        except (OSError, ValueError):
            result = {"crashed": "the ground-truth runner left no result (killed or crashed)"}
        if timed_out:
            result["timed_out"] = True
        if result.get("complete") and not timed_out:  # only a finished run is worth keeping
            with open(cached, "w", encoding="utf-8") as handle:
                json.dump(result, handle, indent=1, sort_keys=True)
        if log:
            log(f"ground truth: {os.path.basename(path)} {'done' if result.get('complete') else 'INCOMPLETE'}")
        return os.path.basename(path), result

    if not compute:
        return results
    with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
        for name, result in pool.map(compute_one, missing):
            results[name] = result
    return results


# ---------------------------------------------------------------- atenlint's side


def cached_truth(folder: str, name: str, command: list[str], timeout: float, what: str) -> dict:
    """The JSON a ground-truth runner writes to the path it is given (`command` + that
    path's place: its first argument after the runner), kept in the user cache under
    `folder`/`name` once it says it is complete; `what` names the runner in the crash note."""
    from atenlint.cache import cache_dir as user_cache_dir

    where = os.path.join(user_cache_dir(), folder)
    os.makedirs(where, exist_ok=True)
    # The runners write absolute paths, so a result belongs to the checkout that computed it:
    # the command (absolute runner and model paths) is part of the key. A user cache carried to
    # another checkout (a CI machine made from this one) must not answer for it.
    checkout = hashlib.sha256(json.dumps(command).encode()).hexdigest()[:8]
    cached = os.path.join(where, f"{name}-{checkout}.json")
    if os.path.exists(cached):
        with open(cached, encoding="utf-8") as handle:
            return json.load(handle)
    partial = f"{cached}.part{os.getpid()}"
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONWARNINGS="ignore")
    try:
        subprocess.run(
            [sys.executable, command[0], partial, *command[1:]],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=timeout,
            env=env,
            cwd=REPO,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pass  # what finished is in the partial file
    try:
        with open(partial, encoding="utf-8") as handle:
            result = json.load(handle)
        os.remove(partial)
    except (OSError, ValueError):
        return {"crashed": f"the {what} ground-truth runner left no result (killed or crashed)"}
    if result.get("complete"):  # only a finished run is worth keeping
        with open(cached, "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=1, sort_keys=True)
    return result


def run_atenlint(files: list[str], targets: str, exporter: str, jobs: int = 2) -> dict:
    """`atenlint check --format json` as a user runs it, with the ONNX exporter `exporter`."""
    return run_atenlint_with(files, targets, f'[tool.atenlint]\nonnx-exporter = "{exporter}"\n', jobs)


def run_atenlint_with(files: list[str], targets: str, config_text: str, jobs: int = 2) -> dict:
    """`atenlint check --format json` as a user runs it, with `config_text` as its
    pyproject.toml; the JSON report."""
    with tempfile.TemporaryDirectory() as scratch:
        config = os.path.join(scratch, "pyproject.toml")
        with open(config, "w", encoding="utf-8") as handle:
            handle.write(config_text)
        out = os.path.join(scratch, "report.json")
        env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONWARNINGS="ignore")
        command = [
            sys.executable,
            "-m",
            "atenlint",
            "check",
            *files,
            "--target",
            targets,
            "--format",
            "json",
            "--config",
            config,
            "--timeout",
            "600",
            "--jobs",
            str(jobs),
            "--exit-zero",
            "--output-file",
            out,
        ]
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=ATENLINT_TIMEOUT_S, env=env, cwd=REPO, check=False
        )
        if not os.path.exists(out):
            raise RuntimeError(f"atenlint check failed ({done.returncode}): {done.stderr[-3000:]}")
        with open(out, encoding="utf-8") as handle:
            report = json.load(handle)
        _keep_report(report, targets, config_text)
        return report


# A folder to keep each atenlint report in (for comparing two runs' findings: the issue's
# "identical findings on a loaded machine"); unset, nothing is kept.
KEEP_REPORTS_VARIABLE = "ATENLINT_AGREEMENT_REPORTS"


def _keep_report(report: dict, targets: str, config_text: str) -> None:
    folder = os.environ.get(KEEP_REPORTS_VARIABLE)
    if not folder:
        return
    os.makedirs(folder, exist_ok=True)
    key = hashlib.sha256(json.dumps([targets, config_text]).encode()).hexdigest()[:12]
    with open(os.path.join(folder, f"report-{key}.json"), "w", encoding="utf-8") as handle:
        json.dump({"targets": targets, "config": config_text, "report": report}, handle, indent=1, sort_keys=True)


def atenlint_findings(files: list[str], jobs: int = 2) -> list[dict]:
    """Every diagnostic of both runs, each with `target_key` (dynamo runs' onnx become `dynamo:18`)."""
    ts_targets = ",".join([f"onnx:{o}" for o in TS_OPSETS] + ["executorch", "coreml", "torchscript"])
    runs = [(ts_targets, "torchscript"), (f"onnx:{DYNAMO_OPSET}", "dynamo")]
    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # the two runs share the cores: one at a time
        reports = list(pool.map(lambda run: (run[1], run_atenlint(files, run[0], run[1], jobs)), runs))
    out = []
    for exporter, report in reports:
        for diagnostic in report.get("diagnostics", []):
            target = diagnostic.get("target")
            if exporter == "dynamo" and target and target.startswith("onnx"):
                key = f"dynamo:{DYNAMO_OPSET}"
            elif exporter == "dynamo":
                key = None if target else "(file)"  # file-level findings: counted once, from the first run
                if key:
                    continue
            else:
                key = target or "(file)"
            if key is None:
                continue
            out.append(dict(diagnostic, target_key=key))
    return out


# ---------------------------------------------------------------- comparison


def base_name(op: str) -> str:
    namespace, _, rest = op.partition("::")
    return f"{namespace}::{rest.split('.', 1)[0]}" if rest else op


@dataclasses.dataclass
class Row:
    """One model under one target."""

    model: str
    target: str
    real_ok: bool | None  # None: the real exporter never ran (torch.export failed first, a crash)
    real_ops: list
    truth_complete: bool  # the real side lists every op it rejects, not only the first
    ours_ok: bool
    ours_ops: list
    soft_ops: list  # ops atenlint reports below error level (conditional, warnings)
    true_positive: list
    false_positive: list
    false_negative: list
    findings_true: int  # error findings naming a really rejected op
    findings_on_stack: int  # ... whose line is on a failing node's recorded stack
    off_stack: list  # "path:line op" of true findings not on the stack
    real_error: str
    lost: list  # atenlint's own "not analysed" findings for this file
    notes: list

    @property
    def verdict_agrees(self) -> bool:
        return self.real_ok is None or self.real_ok == self.ours_ok

    @property
    def agrees(self) -> bool:
        if self.target == "torchscript":
            return self.verdict_agrees
        return self.verdict_agrees and not self.false_negative and not self.false_positive


# Lower-case: an aten op's symbolic ("cumsum"); "ONNX export of Pad" names the ONNX op whose
# arguments (dynamic pad sizes) the symbolic cannot take, not an op a registry lacks.
_SYMBOLIC_RAISED = re.compile(r"ONNX export of (?:operator )?(?:aten::)?([a-z_]\w*)(?: in opset|,| is| for)")


def _real(truth: dict, target: str) -> dict | None:
    if target.startswith("onnx:"):
        real = truth.get("onnx_torchscript", {}).get(target.split(":")[1])
        named = _SYMBOLIC_RAISED.search((real or {}).get("error", ""))
        if real and not real.get("ok") and not real.get("rejected") and named:
            # A registered symbolic that raises ("Unsupported: ONNX export of cumsum in opset 9")
            # rejects that op although the registry lists it.
            real = dict(real, rejected=[f"aten::{named.group(1)}"], symbolic_raised=True)
        return real
    if target in (f"dynamo:{DYNAMO_OPSET}", "executorch") and truth.get("export_error"):
        # The toolchain fails at its first step, before any op is judged: a real failure
        # of the deployment all the same.
        return {"ok": False, "error": "torch.export: " + truth["export_error"], "rejected": [], "export_failed": True}
    if target.startswith("dynamo:"):
        return truth.get("onnx_dynamo", {}).get(target.split(":")[1])
    return truth.get(target)


def _truth_complete(target: str, real: dict) -> bool:
    """Whether ops the real side does not list were really accepted (so an extra op atenlint
    reports is a false positive, not an op the exporter never reached)."""
    if real.get("ok"):
        return True
    if real.get("export_failed") or real.get("trace_failed"):
        return False
    if target.startswith("onnx:"):
        return real.get("unsupported") is not None and not real.get("symbolic_raised")
    if target.startswith("dynamo:"):
        return real.get("unsupported") is not None
    if target == "executorch":
        return "not_core" in real
    if target == "coreml":  # the stand-ins let it go on past each missing op; any other error stops it
        return bool(real.get("missing")) and not real.get("error")
    return True


def _frames_of(finding: dict) -> str:
    path = finding.get("path", "")
    path = path if os.path.isabs(path) else os.path.join(REPO, path)
    return f"{os.path.abspath(path)}:{finding['range']['start']['line'] + 1}"


def _erased_before_verification() -> frozenset[str]:
    """The ops ExecuTorch's `to_edge` erases before its verifier runs (assertion nodes:
    `RemoveNonCoreAtenOpGraphAssertsPass`), read from the installed executorch's own source:
    an exported graph that holds them does not fail `to_edge` on them."""
    import ast
    import importlib.util

    spec = importlib.util.find_spec("executorch.exir.passes.remove_graph_asserts_pass")
    if spec is None or spec.origin is None:
        return frozenset()
    with open(spec.origin, encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "RemoveNonCoreAtenOpGraphAssertsPass":
            for inner in ast.walk(node):
                # torch.ops.aten.<name>.<overload>
                if (
                    isinstance(inner, ast.Attribute)
                    and isinstance(inner.value, ast.Attribute)
                    and isinstance(inner.value.value, ast.Attribute)
                    and inner.value.value.attr == "aten"
                ):
                    found.add(f"aten::{inner.value.attr}")
    return frozenset(found)


def _claimed(target: str, op: str) -> bool:
    """Whether an error finding's op is one it says the toolchain rejects. An ExecuTorch
    finding at a call lists every problem op there, and says that `to_edge` rejects only
    those that are not core ATen (torch's own `core` tag); a core op with no portable kernel
    (a load-time verdict) or a library's own op (which `to_edge` keeps) rides along in its
    text, not as a `to_edge` claim."""
    if target != "executorch":
        return True
    import torch

    namespace, _, rest = op.partition("::")
    if namespace != "aten":
        return False
    name, _, overload = rest.partition(".")
    found = getattr(getattr(torch.ops.aten, name, None), overload or "default", None)
    return found is None or torch.Tag.core not in found.tags


def compare(truth_by_model: dict, findings: list[dict]) -> list[Row]:
    by_model: dict = {}
    for finding in findings:
        name = os.path.basename(finding.get("path", ""))
        by_model.setdefault(name, []).append(finding)
    rows = []
    for model in sorted(truth_by_model):
        truth = truth_by_model[model]
        mine = by_model.get(model, [])
        lost = sorted({f"{f['code']}: {f.get('message', '')[:160]}" for f in mine if f.get("code") in LOST_CODES})
        for target in TARGETS:
            real = _real(truth, target) or {}
            notes = []
            if "crashed" in real:
                notes.append("ground truth crashed: " + real["crashed"].strip().splitlines()[-1][:200])
            real_ok = real.get("ok") if "ok" in real else None
            real_ops = set(real.get("rejected") or ())
            if target == "executorch":
                real_ops -= _erased_before_verification()
            complete = bool(real) and real_ok is not None and _truth_complete(target, real)
            if target == "torchscript":
                real_ops = set()
            ours = [f for f in mine if f.get("target_key") == target]
            # ET002 (no portable kernel: the program will not load) is judged after
            # `to_executorch()`, past where this suite's ExecuTorch truth stops (`to_edge`);
            # the delegate suite checks it against the real runtime (test_real_models_delegates.py).
            load_only = [f for f in ours if f.get("code") == LOAD_VERDICT_CODE]
            if load_only:
                notes.append(
                    f"load verdict (checked by the delegate suite): {sorted({o for f in load_only for o in f['ops']})}"
                )
            ours = [f for f in ours if f.get("code") != LOAD_VERDICT_CODE]
            errors = [f for f in ours if f.get("severity") == "error"]
            ours_ops = {base_name(op) for f in errors for op in f.get("ops") or () if _claimed(target, op)}
            soft_ops = {base_name(op) for f in ours if f.get("severity") != "error" for op in f.get("ops") or ()}
            true_positive = ours_ops & real_ops
            false_positive = (ours_ops - real_ops) if complete else set()
            if not complete and ours_ops - real_ops:
                notes.append(f"not judged (the exporter stopped before them): {sorted(ours_ops - real_ops)}")
            false_negative = real_ops - ours_ops
            stacks = real.get("stacks") or {}
            findings_true = on_stack = 0
            off_stack = []
            if target == "torchscript":
                real_frames = set(real.get("frames") or ())
                for finding in errors:
                    if real_frames:
                        findings_true += 1
                        if _frames_of(finding) in real_frames:
                            on_stack += 1
                        else:
                            off_stack.append(_frames_of(finding))
            else:
                for finding in errors:
                    hit = {base_name(op) for op in finding.get("ops") or ()} & real_ops
                    frames = set().union(*(stacks.get(op, ()) for op in hit))
                    if not frames:  # not a rejected op, or one whose failing node's stack is unknown
                        continue
                    findings_true += 1
                    if _frames_of(finding) in frames:
                        on_stack += 1
                    else:
                        off_stack.append(f"{_frames_of(finding)} {sorted(hit)}")
            export_note = [f for f in mine if f.get("code") == "ATL020"]
            if export_note and target in (f"dynamo:{DYNAMO_OPSET}", "executorch") and real.get("export_failed"):
                notes.append("atenlint notes the torch.export failure as ATL020 (information, not an error)")
            for op in sorted(false_negative):
                lines = set(stacks.get(op, ()))
                near = [f for f in ours if _frames_of(f) in lines]
                if op in soft_ops:
                    notes.append(f"{op}: reported below error level only")
                elif near:
                    notes.append(f"{op}: atenlint reports that line as {sorted({o for f in near for o in f['ops']})}")
                else:
                    notes.append(f"{op}: atenlint has nothing at its line(s) {sorted(lines)[:3]}")
            rows.append(
                Row(
                    model,
                    target,
                    real_ok,
                    sorted(real_ops),
                    complete,
                    not errors,
                    sorted(ours_ops),
                    sorted(soft_ops - ours_ops),
                    sorted(true_positive),
                    sorted(false_positive),
                    sorted(false_negative),
                    findings_true,
                    on_stack,
                    off_stack,
                    (real.get("error") or "")[:300],
                    lost,
                    notes,
                )
            )
    return rows


@dataclasses.dataclass
class Summary:
    target: str
    models: int
    verdict_agree: int
    true_positive: int
    false_positive: int
    false_negative: int
    findings_true: int
    findings_on_stack: int

    @property
    def precision(self) -> float:
        found = self.true_positive + self.false_positive
        return self.true_positive / found if found else 1.0

    @property
    def recall(self) -> float:
        real = self.true_positive + self.false_negative
        return self.true_positive / real if real else 1.0

    @property
    def verdict_share(self) -> float:
        return self.verdict_agree / self.models if self.models else 1.0

    @property
    def on_stack_share(self) -> float:
        return self.findings_on_stack / self.findings_true if self.findings_true else 1.0


def summarise(rows: list[Row]) -> dict[str, Summary]:
    out = {}
    for target in TARGETS:
        mine = [r for r in rows if r.target == target and r.real_ok is not None]
        out[target] = Summary(
            target,
            len(mine),
            sum(r.verdict_agrees for r in mine),
            sum(len(r.true_positive) for r in mine),
            sum(len(r.false_positive) for r in mine),
            sum(len(r.false_negative) for r in mine),
            sum(r.findings_true for r in mine),
            sum(r.findings_on_stack for r in mine),
        )
    return out


def table(rows: list[Row]) -> str:
    summaries = summarise(rows)
    lines = [
        "| target | models | pass/fail right | TP | FP | FN | precision | recall | on the failing stack |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for target, s in summaries.items():
        lines.append(
            f"| {target} | {s.models} | {s.verdict_agree} ({s.verdict_share:.2f}) | {s.true_positive} | "
            f"{s.false_positive} | {s.false_negative} | {s.precision:.2f} | {s.recall:.2f} | "
            f"{s.findings_on_stack}/{s.findings_true} ({s.on_stack_share:.2f}) |"
        )
    lost = sorted({(r.model, item) for r in rows for item in r.lost})
    if lost:
        lines += ["", "Models (partly) not analysed by atenlint:"]
        lines += [f"- {model}: {item}" for model, item in lost]
    never = sorted({r.model for r in rows if r.real_ok is None and r.target == "onnx:13"})
    if never:
        lines += ["", f"Models whose ground truth did not run: {never}"]
    lines += ["", "Disagreements:"]
    for row in rows:
        if row.agrees and not row.off_stack:
            continue
        real = "no result" if row.real_ok is None else ("ok" if row.real_ok else f"fails {row.real_ops}")
        ours = "ok" if row.ours_ok else f"errors {row.ours_ops}"
        detail = []
        if row.false_positive:
            detail.append(f"FP {row.false_positive}")
        if row.false_negative:
            detail.append(f"FN {row.false_negative}")
        if not row.verdict_agrees:
            detail.append("verdict differs")
        if row.off_stack:
            detail.append(f"off the failing stack: {row.off_stack[:3]}")
        text = f"- {row.target} / {row.model}: real {real}; atenlint {ours}"
        if row.soft_ops:
            text += f" (+ below error: {row.soft_ops})"
        text += f" — {'; '.join(detail)}"
        if row.notes:
            text += f" [{'; '.join(row.notes)}]"
        if not row.verdict_agrees and row.real_error and not row.real_ok:
            text += f" (real error: {' '.join(row.real_error.split())[:200]})"
        lines.append(text)
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--markdown", help="write the table here")
    parser.add_argument("--truth-only", action="store_true", help="compute (or check) the cached ground truth only")
    parser.add_argument(
        "--known",
        action="store_true",
        help="also print the disagreements as a KNOWN skeleton for test_real_models.py "
        "(each cause still has to be written by hand)",
    )
    parser.add_argument("--cached-only", action="store_true", help="compare only models whose ground truth is cached")
    parser.add_argument("--save-findings", help="run atenlint only and keep its findings in this file")
    parser.add_argument(
        "--load-findings", help="compare the findings kept by --save-findings instead of running atenlint"
    )
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(REPO, "server"))
    from atenlint.cache import cache_dir

    files = [os.path.abspath(f) for f in args.files] or model_files()
    if args.save_findings:
        with open(args.save_findings, "w", encoding="utf-8") as handle:
            json.dump(atenlint_findings(files, jobs=args.jobs), handle)
        return 0
    truth = ground_truth(
        cache_dir(),
        files,
        jobs=args.jobs,
        log=lambda m: print(m, file=sys.stderr, flush=True),
        compute=not args.cached_only,
    )
    if args.truth_only:
        print(
            json.dumps(
                {
                    name: {
                        k: v.get("ok") if isinstance(v, dict) else v
                        for k, v in result.items()
                        if k in ("torchscript", "executorch", "coreml")
                    }
                    for name, result in truth.items()
                },
                indent=1,
            )
        )
        return 0
    if args.load_findings:
        with open(args.load_findings, encoding="utf-8") as handle:
            findings = json.load(handle)
    else:
        findings = atenlint_findings(files, jobs=args.jobs)
    rows = compare(truth, findings)
    text = table(rows)
    print(text)
    if args.known:
        print("\nKNOWN = {")
        for row in rows:
            if not row.agrees and row.real_ok is not None:
                hint = "; ".join(row.notes) or (
                    f"FP {row.false_positive}"
                    if row.false_positive
                    else f"real {'ok' if row.real_ok else 'fails'}, atenlint {'ok' if row.ours_ok else 'errors'}"
                )
                print(f"    ({row.target!r}, {row.model!r}): {('TODO: ' + hint)[:150]!r},")
        print("}")
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump([dataclasses.asdict(r) for r in rows], handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
