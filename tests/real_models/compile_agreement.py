"""The comparison behind the compile agreement suites (test_real_models_compile.py on public
models, test_compile_cases.py on hand-written cases of every break kind): the real
torch.compile's breaks, fullgraph verdict and CPU fallbacks (`compile_truth.py`, cached by
package versions and sources) beside atenlint's `compile` findings, per model."""

from __future__ import annotations

import ast
import collections
import dataclasses
import hashlib
import json
import os
import re

from atenlint.targets.compile import ALSO_HERE

from .agreement import MODELS, REPO, cached_truth, run_atenlint_with, versions

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(HERE, "compile_truth.py")
TRUTH_TIMEOUT_S = 900
NO_USER_FRAME = "(no user frame)"


# What the compile runner imports: torch and the model libraries, never the exporters (whose
# versions CI does not pin), so a newer onnx does not invalidate a recorded result.
RUNNER_PACKAGES = ("torch", "torchvision", "timm", "transformers")


def truth_digest(path: str, runner_arguments: list[str]) -> str:
    """The key of one real result: the runner's packages' versions, its arguments, its source
    and the model's source."""
    relevant = {name: version for name, version in versions().items() if name in RUNNER_PACKAGES}
    digest = hashlib.sha256(json.dumps([relevant, runner_arguments], sort_keys=True).encode())
    for source in (RUNNER, path):
        with open(source, "rb") as handle:
            digest.update(handle.read())
    return digest.hexdigest()[:16]


def real_compile(path: str, runner_arguments: list[str] | None = None, use_committed: bool = True) -> dict:
    """What the real torch.compile did with one model file: the committed result for these
    package versions, runner and model source (`committed_compile_truth`) where there is one,
    else computed once into the user cache."""
    arguments = list(runner_arguments or [])
    name = os.path.relpath(path, MODELS)[:-3].replace(os.sep, "-")
    digest = truth_digest(path, arguments)
    committed = committed_compile_truth().get(name) if use_committed else None
    if committed and committed.get("digest") == digest:
        return _relocated(committed["result"], lambda where: os.path.join(REPO, where))
    command = [RUNNER, path, *arguments]
    return cached_truth("real-models-compile-truth", f"{name}-{digest}", command, TRUTH_TIMEOUT_S, "compile")


# Committed ground truth of the hand-written compile cases (test_compile_cases.py runs in CI on
# every supported torch: computing it there costs minutes), one file per set of package versions,
# written by `python scripts/regen_compile_case_truth.py`, never by a test. Paths in it are
# relative to the repository, so a result holds in any checkout.
COMMITTED_TRUTH = os.path.join(HERE, "compile_truth_data")


def committed_truth_path() -> str:
    """One file per torch (`torch-2.13.0+cpu.json`), the runner's only subject; each entry's
    digest holds every package version, so a result for other versions is never used."""
    return os.path.join(COMMITTED_TRUTH, f"torch-{versions()['torch']}.json")


def committed_compile_truth() -> dict[str, dict]:
    """Per case name (`compile-case_x`), {"digest": ..., "result": ...} for the installed
    versions (empty when none is committed)."""
    try:
        with open(committed_truth_path(), encoding="utf-8") as handle:
            return json.load(handle)
    except FileNotFoundError:
        return {}


def write_committed_compile_truth(results: dict[str, tuple[str, dict]]) -> str:
    """Record `results` (case name -> (digest, real result)) for the installed versions."""
    out = {
        name: {"digest": digest, "result": _relocated(result, lambda where: os.path.relpath(where, REPO))}
        for name, (digest, result) in sorted(results.items())
    }
    os.makedirs(COMMITTED_TRUTH, exist_ok=True)
    path = committed_truth_path()
    # Error texts quote paths too; they are read, never compared, and stay readable relative.
    text = json.dumps(out, indent=1, sort_keys=True).replace(REPO + os.sep, "")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text + "\n")
    return path


def _relocated(result: dict, move) -> dict:
    """`result` with every recorded place (`site`, `frames`: `path:line`) passed through
    `move(path)`; the rest (error texts) is kept as recorded."""

    def place(where: str | None) -> str | None:
        if not where:
            return where
        path, _, line = where.rpartition(":")
        return f"{move(path)}:{line}"

    def walk(value):
        if isinstance(value, dict):
            return {
                key: (
                    place(item)
                    if key == "site"
                    else [place(frame) for frame in item]
                    if key == "frames" and isinstance(item, list)
                    else walk(item)
                )
                for key, item in value.items()
            }
        if isinstance(value, list):
            return [walk(item) for item in value]
        return value

    return walk(result)


def run_atenlint_compile(files: list[str]) -> dict:
    """`atenlint check --target compile --format json` with `fullgraph = true`, as a user who
    compiles with `fullgraph=True` runs it (the breaks are the same; the severity says the
    verdict)."""
    return run_atenlint_with(files, "compile", "[tool.atenlint]\nfullgraph = true\n")


# ---------------------------------------------------------------- comparison

_QUOTED_REASON = re.compile(r"Dynamo \(torch [^)]*\): (?P<reason>.*?)(?: — |$)", re.DOTALL)
_TIMES = re.compile(r"\((?P<times>\d+) times\) in `")
_FALLBACK = re.compile(r"no (?P<devices>[\w ]+?) lowering for `(?P<op>[\w.]+)`")
_FULLGRAPH_STOP = "torch.compile(fullgraph=True) raises here"


def op_base(op: str) -> str:
    """`aten.sort.stable` -> `sort`."""
    parts = op.split(".")
    return parts[1] if len(parts) > 1 else op


def _class_line(path: str) -> int:
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if line.startswith("class Model("):
                return number
    return 0


def _where(finding: dict, path: str) -> str:
    """A finding's `path:line`; one at the class line stands for "no user frame" (a class
    result without a site is shown on the class)."""
    line = finding["range"]["start"]["line"] + 1
    return NO_USER_FRAME if line == _class_line(path) else f"{path}:{line}"


@dataclasses.dataclass
class Row:
    """One model: both sides' breaks as Counter((where, reason)), the fullgraph verdicts and
    the CPU fallbacks."""

    model: str
    real_breaks: collections.Counter
    ours_breaks: collections.Counter
    real_fullgraph: bool | None
    ours_fullgraph: bool
    real_fallbacks: set
    ours_fallbacks: set
    notes: list

    @staticmethod
    def _where(breaks: collections.Counter) -> set:
        return {where for where, _ in breaks}

    @property
    def true_positive(self) -> set:
        return self._where(self.real_breaks) & self._where(self.ours_breaks)

    @property
    def false_positive(self) -> set:
        return self._where(self.ours_breaks) - self._where(self.real_breaks)

    @property
    def false_negative(self) -> set:
        return self._where(self.real_breaks) - self._where(self.ours_breaks)

    @property
    def agrees(self) -> bool:
        return (
            self.real_breaks == self.ours_breaks
            and self.real_fullgraph == self.ours_fullgraph
            and (self.real_fallbacks is None or self.real_fallbacks == self.ours_fallbacks)
        )


# A fullgraph error about a value only fullgraph=True keeps symbolic (`.item()`, a
# data-dependent size): `explain` breaks earlier, at the call that makes the value.
_SYMBOLIC_ONLY = "data-dependent expression"


def skipped_frame_break(explain: dict, fullgraph: dict) -> collections.Counter:
    """The break `explain` does not count: where Dynamo cannot resume after a break (inside a
    `for`/`while` loop, a generator) it skips the whole frame, which then runs eagerly with no
    graph and no recorded break, while `torch.compile(fullgraph=True)` raises at that break.
    The innermost user frame of the fullgraph error, once, with its reason, when `explain`
    records no break in that function (a break `explain` records there means Dynamo compiled
    the frame: the fullgraph error is then a break already counted, or one only fullgraph
    has, after a `.item()` it keeps as a symbolic value) and the error is not a guard on
    such a symbolic value (torchvision's detection post-processing: `explain` breaks in the
    library there, with no user frame)."""
    frames = fullgraph.get("frames") or []
    if fullgraph.get("ok") is not False or not frames or _SYMBOLIC_ONLY in fullgraph.get("reason", ""):
        return collections.Counter()
    function = function_at(frames[-1])
    if function is None or any(function_at(b["site"]) == function for b in explain.get("breaks", []) if b["site"]):
        return collections.Counter()
    return collections.Counter({(frames[-1], fullgraph.get("reason", "")): 1})


def function_at(where: str) -> tuple[str, int] | None:
    """The innermost function around `path:line`: its file and first line (None: at module
    level, or the file cannot be read)."""
    path, _, line_text = where.rpartition(":")
    line = int(line_text)
    try:
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
    except (OSError, SyntaxError, ValueError):
        return None
    found = None
    for node in ast.walk(tree):
        inside = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
            node.lineno <= line <= (node.end_lineno or 0)
        )
        if inside and (found is None or node.lineno > found):
            found = node.lineno
    return (path, found) if found is not None else None


def real_breaks(real: dict) -> collections.Counter:
    """The real torch.compile's breaks: Counter((where, reason)), `explain`'s and a skipped
    frame's."""
    explain = real.get("explain") or {}
    found: collections.Counter = collections.Counter(
        (b["site"] or NO_USER_FRAME, b["reason"]) for b in explain.get("breaks", [])
    )
    return found + skipped_frame_break(explain, real.get("fullgraph") or {})


def compare(model: str, path: str, real: dict, findings: list[dict]) -> Row:
    notes = []
    explain = real.get("explain") or {}
    if "crashed" in real or "crashed" in explain:
        notes.append("ground truth crashed: " + (real.get("crashed") or explain.get("crashed", ""))[-200:])
    fullgraph = real.get("fullgraph") or {}
    inductor = real.get("inductor") or {}
    if inductor and not inductor.get("ok"):
        notes.append(f"Inductor failed: {inductor.get('error', inductor.get('crashed', ''))[:200]}")
    real_fallbacks = {op_base(k) for k in inductor.get("kernels", [])} if "kernels" in inductor else None

    # The file's other classes (a submodule analysed on its own) are not the model compiled.
    mine = [
        f
        for f in findings
        if f.get("target") == "compile" and any(m.endswith(".Model") for m in f.get("modules") or [f.get("module", "")])
    ]
    ours_breaks: collections.Counter = collections.Counter()
    ours_fullgraph = True
    ours_fallbacks = set()
    for finding in mine:
        message = finding.get("message", "")
        if finding.get("code") == "COMPILE001":
            if finding.get("severity") == "error":
                ours_fullgraph = False
            if message.startswith(_FULLGRAPH_STOP):
                continue
            for said in message.split(ALSO_HERE):  # the breaks of one place share a finding
                quoted = _QUOTED_REASON.search(said)
                times = _TIMES.search(said)
                ours_breaks[(_where(finding, path), quoted["reason"].strip() if quoted else said)] += (
                    int(times["times"]) if times else 1
                )
        elif finding.get("code") == "COMPILE004":
            for named in _FALLBACK.finditer(message):
                if "cpu" in named["devices"].split(" and "):
                    ours_fallbacks.add(op_base(named["op"]))
        elif finding.get("code") == "COMPILE003":
            notes.append(f"atenlint: {message[:200]}")
    return Row(
        model,
        real_breaks(real),
        ours_breaks,
        fullgraph.get("ok"),
        ours_fullgraph,
        real_fallbacks,
        ours_fallbacks,
        notes,
    )


def _short_where(where: str) -> str:
    return (
        where
        if where == NO_USER_FRAME
        else os.path.relpath(where.rsplit(":", 1)[0], MODELS) + ":" + where.rsplit(":", 1)[1]
    )


def table(rows: list[Row]) -> str:
    lines = [
        "| model | breaks real/ours | locations TP/FP/FN | fullgraph real/ours | CPU fallbacks real / ours |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row.model} | {sum(row.real_breaks.values())}/{sum(row.ours_breaks.values())} | "
            f"{len(row.true_positive)}/{len(row.false_positive)}/{len(row.false_negative)} | "
            f"{row.real_fullgraph}/{row.ours_fullgraph} | "
            f"{sorted(row.real_fallbacks) if row.real_fallbacks is not None else 'not run'} / "
            f"{sorted(row.ours_fallbacks)} |"
        )
    tp = sum(len(r.true_positive) for r in rows)
    fp = sum(len(r.false_positive) for r in rows)
    fn = sum(len(r.false_negative) for r in rows)
    verdicts = sum(r.real_fullgraph == r.ours_fullgraph for r in rows)
    lines.append("")
    lines.append(
        f"break locations: precision {precision(rows):.2f}, recall {recall(rows):.2f} (TP {tp}, FP {fp}, FN {fn}); "
        f"fullgraph verdict right for {verdicts}/{len(rows)}"
    )
    lines += ["", "Disagreements:"]
    for row in rows:
        if row.agrees:
            continue
        detail = []
        only_real = row.real_breaks - row.ours_breaks
        only_ours = row.ours_breaks - row.real_breaks
        if only_real:
            detail.append("real only: " + "; ".join(f"{_short_where(w)} {r!r} x{n}" for (w, r), n in only_real.items()))
        if only_ours:
            detail.append("ours only: " + "; ".join(f"{_short_where(w)} {r!r} x{n}" for (w, r), n in only_ours.items()))
        if row.real_fullgraph != row.ours_fullgraph:
            detail.append(f"fullgraph real {row.real_fullgraph}, ours {row.ours_fullgraph}")
        if row.real_fallbacks is not None and row.real_fallbacks != row.ours_fallbacks:
            detail.append(f"fallbacks real {sorted(row.real_fallbacks)}, ours {sorted(row.ours_fallbacks)}")
        lines.append(f"- {row.model}: {' | '.join(detail + row.notes)}")
    return "\n".join(lines)


def precision(rows: list[Row]) -> float:
    tp = sum(len(r.true_positive) for r in rows)
    found = tp + sum(len(r.false_positive) for r in rows)
    return tp / found if found else 1.0


def recall(rows: list[Row]) -> float:
    tp = sum(len(r.true_positive) for r in rows)
    real = tp + sum(len(r.false_negative) for r in rows)
    return tp / real if real else 1.0


def agreement_rows(paths: dict[str, str], truth: dict[str, dict]) -> list[Row]:
    """One Row per model (`paths`: name -> model file), atenlint run once over all of them."""
    report = run_atenlint_compile(list(paths.values()))
    by_path: dict[str, list[dict]] = collections.defaultdict(list)
    for diagnostic in report.get("diagnostics", []):
        path = diagnostic.get("path", "")
        by_path[os.path.abspath(path if os.path.isabs(path) else os.path.join(REPO, path))].append(diagnostic)
    return [compare(name, path, truth[name], by_path.get(path, [])) for name, path in paths.items()]


# -- the goals each compile agreement suite asserts on its rows ---------------------------------


def assert_disagreements_are(rows: list[Row], known: dict[str, str]) -> None:
    """Every disagreement is documented in `known`, and every documented one still happens."""
    disagreements = {row.model for row in rows if not row.agrees}
    assert not disagreements - set(known), (
        f"new disagreements with the real torch.compile: {disagreements - set(known)}"
    )
    assert not set(known) - disagreements, (
        f"documented disagreements that no longer happen: {set(known) - disagreements}"
    )


def assert_break_location_goals(rows: list[Row]) -> None:
    assert precision(rows) >= 0.95, f"precision {precision(rows):.2f}"
    assert recall(rows) >= 0.90, f"recall {recall(rows):.2f}"


def assert_fullgraph_verdict_goal(rows: list[Row]) -> None:
    right = sum(row.real_fullgraph == row.ours_fullgraph for row in rows)
    assert right / len(rows) >= 0.95, f"{right}/{len(rows)}"
