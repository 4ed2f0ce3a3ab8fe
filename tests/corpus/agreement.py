"""atenlint's verdicts on the corpus next to what the real exporters do (shared by the
tests and by `python tests/corpus/agreement.py`, which prints the table)."""

from __future__ import annotations

import ast
import concurrent.futures
import hashlib
import importlib.metadata
import json
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
MODULES = os.path.join(HERE, "modules")
TS_OPSETS = ("9", "13", "17")
DYNAMO_OPSET = "18"


def module_files() -> list[str]:
    return sorted(os.path.join(MODULES, f) for f in os.listdir(MODULES) if f.endswith(".py"))


PACKAGES = ("torch", "onnx", "onnxscript", "coremltools", "executorch")
RUNNER = os.path.join(HERE, "ground_truth.py")
# Committed ground truth, one file per set of exporter versions, written by
# `python scripts/regen_corpus_truth.py` (never by a test).
TRUTH = os.path.join(HERE, "truth")


def versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def truth_path(package_versions: dict[str, str | None]) -> str:
    """`truth/torch-2.13.0+cpu_onnx-1.23.2_..._executorch-1.5.1.json` (`-none`: not installed)."""
    slug = "_".join(f"{name}-{package_versions.get(name) or 'none'}" for name in PACKAGES)
    return os.path.join(TRUTH, f"{slug}.json")


def runner_digest() -> str:
    """The runner's code, not its layout: reformatting or a comment keeps the truth valid."""
    with open(RUNNER, encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    for node in ast.walk(tree):  # docstrings say what it does; they do not change what it records
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            body[0] = ast.Pass()
    return hashlib.sha256(ast.dump(tree).encode()).hexdigest()[:16]


def source_digest(path: str) -> str:
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()[:16]


def committed_truth(package_versions: dict[str, str | None] | None = None) -> dict[str, Any]:
    """Per module file name, the committed entry {"source": digest, "result": ...} for these
    versions and this runner (empty when there is none)."""
    package_versions = package_versions or versions()
    path = truth_path(package_versions)
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    if data.get("runner") != runner_digest() or data.get("versions") != package_versions:
        return {}
    return dict(data.get("modules") or {})


def _cached_path(cache_dir: str, path: str, package_versions: dict[str, str | None]) -> str:
    key = hashlib.sha256(
        json.dumps([package_versions, runner_digest(), source_digest(path)], sort_keys=True).encode()
    ).hexdigest()[:16]
    return os.path.join(cache_dir, "corpus-truth", f"{os.path.basename(path)[:-3]}-{key}.json")


def ground_truth(cache_dir: str, use_committed: bool = True, log: Callable[[str], None] = lambda m: None) -> dict:
    """The real exporters' results per module file. Taken from the committed file for the
    installed exporter versions where the module's source and the runner are unchanged, else
    from the user cache, else computed (two subprocesses) into the user cache."""
    package_versions = versions()
    committed = committed_truth(package_versions) if use_committed else {}
    results: dict = {}
    missing: list[tuple[str, str]] = []
    for path in module_files():
        name = os.path.basename(path)
        entry = committed.get(name)
        if entry and entry.get("source") == source_digest(path):
            results[name] = entry["result"]
            continue
        cached = _cached_path(cache_dir, path, package_versions)
        if os.path.exists(cached):
            with open(cached, encoding="utf-8") as handle:
                results[name] = json.load(handle)
        else:
            missing.append((path, cached))
    if not missing:
        return results
    log(
        f"computing the real exporters' results for {len(missing)} corpus modules "
        f"(none recorded for {os.path.basename(truth_path(package_versions))})"
    )
    os.makedirs(os.path.join(cache_dir, "corpus-truth"), exist_ok=True)
    halves = [missing[0::2], missing[1::2]]

    def run(index: int) -> dict:
        if not halves[index]:
            return {}
        out = os.path.join(cache_dir, "corpus-truth", f"part{index}-{os.getpid()}.json")
        subprocess.run(
            [sys.executable, RUNNER, out, *(path for path, _ in halves[index])],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=1800,
        )
        with open(out, encoding="utf-8") as handle:
            part = json.load(handle)
        os.remove(out)
        return part

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        computed: dict = {}
        for part in pool.map(run, range(2)):
            computed.update(part)
    for path, cached in missing:
        name = os.path.basename(path)
        results[name] = computed[name]
        if "crashed" not in computed[name]:  # a crash is reported, never kept
            with open(cached, "w", encoding="utf-8") as handle:
                json.dump(computed[name], handle, indent=1, sort_keys=True)
    return results


def write_truth(results: dict, package_versions: dict[str, str | None] | None = None) -> str:
    """Record `results` (every module's) as the committed truth for these versions."""
    package_versions = package_versions or versions()
    modules = {}
    for path in module_files():
        name = os.path.basename(path)
        modules[name] = {"source": source_digest(path), "result": results[name]}
    os.makedirs(TRUTH, exist_ok=True)
    out = truth_path(package_versions)
    with open(out, "w", encoding="utf-8") as handle:
        json.dump(
            {"versions": package_versions, "runner": runner_digest(), "modules": modules},
            handle,
            indent=1,
            sort_keys=True,
        )
        handle.write("\n")
    return out


def atenlint_verdicts(engine, with_inputs: bool = False) -> dict:
    """Per module file and target, the overloads atenlint reports at error level (and, apart,
    the ones it reports only as conditional). `with_inputs`: each `Model` traced with its
    own `example_inputs()`, as a user who configures inputs runs it (each toolchain's own
    graph); else scripted, as with no configuration."""
    from atenlint.config import ModuleConfig, SettingsResolver

    out: dict = {}
    runs = [
        (("torchscript", "executorch", "coreml") + tuple(f"onnx:{o}" for o in TS_OPSETS), "torchscript"),
        ((f"onnx:{DYNAMO_OPSET}",), "dynamo"),
    ]
    modules = {}
    if with_inputs:
        for path in module_files():
            name = os.path.basename(path)[:-3]
            modules[f"{name}.Model"] = ModuleConfig(inputs="example_inputs()", source="corpus")
    for targets, exporter in runs:
        overrides = {"targets": targets, "onnx_exporter": exporter}
        if modules:
            overrides["modules"] = modules
        engine.resolver = SettingsResolver(overrides=overrides)
        report = engine.check_paths([MODULES], jobs=1)
        for finding in report.findings:
            name = os.path.basename(finding.abs_path or finding.path)
            if finding.target is None:
                continue
            key = (
                finding.target
                if exporter == "torchscript" or not finding.target.startswith("onnx")
                else f"dynamo:{DYNAMO_OPSET}"
            )
            entry = out.setdefault(name, {}).setdefault(key, {"error": set(), "conditional": set(), "codes": set()})
            # A conditional finding (information) is still a report the user sees.
            bucket = "error" if finding.severity == "error" or finding.data.get("conditional") else "conditional"
            entry[bucket].update(finding.ops)
            entry["codes"].add(finding.code)
    return out


def _base(op: str) -> str:
    namespace, _, rest = op.partition("::")
    return f"{namespace}::{rest.split('.', 1)[0]}" if rest else op


def compare(truth: dict, mine: dict) -> list[dict]:
    """One row per module and exporter: agree or not, and both sides."""
    rows = []
    for name in sorted(truth):
        real = truth[name]
        ours = mine.get(name, {})

        def got(key: str, ours: dict = ours) -> dict:
            return ours.get(key) or {"error": set(), "conditional": set(), "codes": set()}

        ts = got("torchscript")
        rows.append(_row(name, "torchscript", real["torchscript"]["ok"], set(), not ts["codes"], set()))
        for opset in TS_OPSETS:
            res = real["onnx_torchscript"][opset]
            expected = set(res.get("unsupported") or ([res["named"]] if res.get("named") else []))
            entry = got(f"onnx:{opset}")
            ours_ops = {_base(op) for op in entry["error"]}
            rows.append(_row(name, f"onnx torchscript opset {opset}", res["ok"], expected, not ours_ops, ours_ops))
        if "onnx_dynamo" in real:
            res = real["onnx_dynamo"][DYNAMO_OPSET]
            entry = got(f"dynamo:{DYNAMO_OPSET}")
            rows.append(
                _row(
                    name,
                    f"onnx dynamo opset {DYNAMO_OPSET}",
                    res["ok"],
                    set(res.get("unsupported") or ()),
                    not entry["error"],
                    set(entry["error"]),
                )
            )
        if "executorch" in real:
            res = real["executorch"]
            entry = got("executorch")
            # The load verdict is the portable runtime's kernels (`missing_kernels`, confirmed by
            # running the program). A run that fails with every kernel present (video_global_pool:
            # InvalidArgument from the runtime) is not a load failure, and not a verdict either.
            real_ok = res["ok"] if "loads" not in res else not res.get("missing_kernels")
            rows.append(
                _row(
                    name,
                    "executorch",
                    real_ok,
                    set(res["not_core"]) | set(res.get("missing_kernels") or ()),
                    not entry["error"],
                    set(entry["error"]),
                )
            )
        if real.get("coreml", {}).get("available"):
            res = real["coreml"]
            entry = got("coreml")
            expected = {f"aten::{res['missing']}"} if res.get("missing") else set()
            rows.append(
                _row(
                    name,
                    "coreml",
                    res["ok"],
                    expected,
                    not entry["error"],
                    {_base(o) for o in entry["error"]},
                    first_only=True,
                )
            )
    return rows


def _row(module, exporter, real_ok, real_ops, ours_ok, ours_ops, first_only=False) -> dict:
    if first_only:  # the converter names only the first op it lacks
        agree = real_ok == ours_ok and (real_ok or not real_ops or real_ops <= ours_ops)
    else:
        agree = real_ok == ours_ok and (not real_ops or real_ops == ours_ops or real_ok)
    return {
        "module": module,
        "exporter": exporter,
        "real_ok": real_ok,
        "real_ops": sorted(real_ops),
        "ours_ok": ours_ok,
        "ours_ops": sorted(ours_ops),
        "agree": agree,
    }


def table(rows: list[dict]) -> str:
    by_exporter: dict = {}
    for row in rows:
        stats = by_exporter.setdefault(row["exporter"], {"modules": 0, "agree": 0, "disagree": []})
        stats["modules"] += 1
        if row["agree"]:
            stats["agree"] += 1
        else:
            stats["disagree"].append(row)
    lines = ["| exporter | modules | agree | disagree |", "|---|---|---|---|"]
    for exporter, stats in by_exporter.items():
        lines.append(f"| {exporter} | {stats['modules']} | {stats['agree']} | {len(stats['disagree'])} |")
    for exporter, stats in by_exporter.items():
        for row in stats["disagree"]:
            lines.append(
                f"- {exporter} / {row['module']}: real {'ok' if row['real_ok'] else 'fails'} "
                f"{row['real_ops']}, atenlint {'ok' if row['ours_ok'] else 'fails'} {row['ours_ops']}"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(HERE))
    from atenlint.cache import cache_dir
    from atenlint.engine import Engine
    from atenlint.worker.pool import WorkerPool

    truth = ground_truth(cache_dir())
    pool = WorkerPool(1)
    try:
        engine = Engine(pool)
        engine.start()
        with_inputs = "--inputs" in sys.argv[1:]
        print(table(compare(truth, atenlint_verdicts(engine, with_inputs=with_inputs))))
    finally:
        pool.close()
