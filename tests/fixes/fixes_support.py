"""Shared by the fix tests: fixtures, running the real engine on a small workspace, and
building a finding for a call in a source string (for tests that need no capture)."""

from __future__ import annotations

import ast
import json
import os
import re
from dataclasses import dataclass

from atenlint.config import SettingsResolver
from atenlint.engine import SourceCache
from atenlint.findings import Finding
from atenlint.fixes import attach_fixes
from atenlint.fixes.catalog import ENTRIES
from atenlint.fixes.edits import EncodedText, LineIndex, TextEdit, apply_edits
from atenlint.sourcetext import SourceText

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
BY_ID = {entry.id: entry for entry in ENTRIES}
_HEADER = re.compile(r"^# (fix|targets|arg-shapes|config|mps-as-of|flags): (.*)$")
MPS_HISTORY = os.path.join(
    os.path.dirname(os.path.abspath(__import__("atenlint.targets").targets.__file__)), "data", "mps_history.json"
)


@dataclass
class Fixture:
    name: str  # file name without .in.py
    entry: str
    targets: tuple
    arg_shapes: dict | None
    config: dict | None
    source: str
    mps_as_of: str | None = None  # judge with the MPS kernels of this torch release
    flags: tuple = ()  # overloads that release also lacked, which a script capture cannot decompose to

    @property
    def in_path(self) -> str:
        return os.path.join(FIXTURES, f"{self.name}.in.py")

    @property
    def out_path(self) -> str:
        return os.path.join(FIXTURES, f"{self.name}.out.py")

    @property
    def out_config_path(self) -> str:
        return os.path.join(FIXTURES, f"{self.name}.out.toml")


def load_fixtures() -> list[Fixture]:
    fixtures = []
    for file in sorted(os.listdir(FIXTURES)):
        if not file.endswith(".in.py"):
            continue
        with open(os.path.join(FIXTURES, file), encoding="utf-8") as handle:
            source = handle.read()
        header = {}
        for line in source.splitlines():
            match = _HEADER.match(line)
            if not match:
                break
            header[match.group(1)] = match.group(2).strip()
        entry = header["fix"]
        config = json.loads(header["config"]) if "config" in header else None
        targets = tuple(t.strip() for t in header.get("targets", "").split(",") if t.strip())
        if not targets and config:
            targets = tuple(config["targets"])
        fixtures.append(
            Fixture(
                file[: -len(".in.py")],
                entry,
                targets,
                json.loads(header["arg-shapes"]) if "arg-shapes" in header else None,
                config,
                source,
                header.get("mps-as-of"),
                tuple(o.strip() for o in header.get("flags", "").split(",") if o.strip()),
            )
        )
    return fixtures


def write_workspace(root: str, source: str, config: dict | None) -> str:
    """`root/case.py` (+ a pyproject.toml with [tool.atenlint] when the fixture has config)."""
    path = os.path.join(root, "case.py")
    with open(path, "w", encoding="utf-8", newline="") as handle:
        handle.write(source)
    if config is not None:
        lines = ["[tool.atenlint]"] + [f"{key} = {json.dumps(value)}" for key, value in config.items()]
        with open(os.path.join(root, "pyproject.toml"), "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")
    return path


def analyse(
    engine,
    root: str,
    targets: tuple,
    config: dict | None,
    arg_shapes: dict | None = None,
    mps_as_of: str | None = None,
    monkeypatch=None,
    flags: tuple = (),
) -> list:
    """The findings `atenlint check root` reports, with fixes attached (and, when given, the
    input shapes a trace capture would record added first). With `mps_as_of`, the MPS
    target judges with the kernels that torch release had (see `historical_mps`)."""
    # The fixtures check what a fix rewrites on the scripted path they were written for; a
    # trace with inferred inputs would add dtype findings (float64 on MPS) the rewrite keeps.
    overrides: dict = {"infer_inputs": False}
    if not config:
        overrides["targets"] = targets
    engine.resolver = SettingsResolver(overrides=overrides)
    if mps_as_of is not None:
        target = historical_mps(engine, mps_as_of)
        if flags:
            target = AlsoFlags(target, flags)
        built = engine.targets_for
        # Only the MPS target is judged as of that release; the fixture's other targets as
        # the installed packages judge them.
        monkeypatch.setattr(
            engine, "targets_for", lambda settings: [target if t.name == "mps" else t for t in built(settings)]
        )
    try:
        report = engine.check_paths([root], jobs=1)
    finally:
        if mps_as_of is not None:
            monkeypatch.undo()
    findings = report.findings
    if arg_shapes is not None or mps_as_of is not None:
        for finding in findings:
            if finding.target and arg_shapes is not None:
                finding.data["arg_shapes"] = arg_shapes
            if finding.target and mps_as_of is not None:
                finding.data["torch"] = mps_as_of
        attach_fixes(findings, SourceCache(), engine.resolver)
    return findings


_HISTORICAL: dict = {}


class AlsoFlags:
    """A target that also reports calls reaching `ops` (by name, decomposed or not). For
    overloads a release lacked that the script capture leaves undecomposed without input
    shapes (`_upsample_bilinear2d_aa.vec` under F.interpolate)."""

    def __init__(self, target, ops):
        self.target = target
        self.ops = frozenset(ops)
        self.name, self.device, self.tree_view = target.name, target.device, target.tree_view

    def problems(self, tree: dict, phases: tuple) -> list:
        from atenlint.targets.base import Problem

        found = list(self.target.problems(tree, phases))
        stack = [tree]
        while stack:
            node = stack.pop()
            if node.get("op") in self.ops and all(p.op != node["op"] for p in found):
                found.append(Problem(node["op"], "fallback"))
            stack.extend(node.get("calls") or ())
        return found

    def verdict(self, problems):
        return self.target.verdict(problems)

    def __getattr__(self, name):
        return getattr(self.target, name)


def mps_releases() -> list:
    """The torch releases `targets/data/mps_history.json` describes (empty without it)."""
    if not os.path.exists(MPS_HISTORY):
        return []
    with open(MPS_HISTORY, encoding="utf-8") as handle:
        return list(json.load(handle)["versions"])


def fixture_mps_as_of(fixture: Fixture, installed: str) -> str | None:
    """The torch release whose MPS kernels the fixture is judged with: its `# mps-as-of:`,
    else the installed torch when the entry is offered for MPS there, else (its ops gained an
    MPS kernel in the installed torch, so the fix is no longer offered) the newest release in
    the MPS history in which it is offered."""
    from atenlint.fixes.model import offered_in

    if fixture.mps_as_of is not None or "mps" not in fixture.targets:
        return fixture.mps_as_of
    entry = BY_ID[fixture.entry]
    if offered_in(entry, "mps", installed):
        return None
    inside = [release for release in mps_releases() if offered_in(entry, "mps", release)]
    return max(inside, key=_release_key) if inside else None


def historical_mps(engine, version: str):
    """The MPS target as it was in torch `version`: the installed native table with each
    overload's MPS kernel present exactly when that release's native_functions.yaml had one
    (mps_history.json), and that release's forced fallbacks. Call trees still come from the
    installed torch's decompositions."""
    if version in _HISTORICAL:
        return _HISTORICAL[version]
    from atenlint.targets.mps import MpsTarget
    from atenlint.targets.native_table import NativeEntry, NativeTable

    with open(MPS_HISTORY, encoding="utf-8") as handle:
        history = json.load(handle)["ops"]
    wanted = _release_key(version)

    def had_kernel(op: str) -> bool:
        return any(
            _release_key(first) <= wanted and (last is None or wanted <= _release_key(last))
            for first, last in history.get(op, ())
        )

    native = engine.native
    entries = {}
    for name, entry in native.entries.items():
        kernels = set(entry.kernels) - {"MPS"}
        if had_kernel(name):
            kernels.add("MPS")
        entries[name] = NativeEntry(frozenset(kernels), entry.delegate, entry.tags)
    table = NativeTable(entries, version, native.yaml_sha, native.yaml_path)
    target = MpsTarget(table)
    _HISTORICAL[version] = target
    return target


# The package each target's registry comes from, where the target cannot judge without it:
# Core ML's op registry is read from coremltools; `onnx` (the default dynamo exporter) from
# onnxscript's torchlib.
TARGET_PACKAGES = {"coreml": "coremltools", "onnx": "onnxscript"}


def missing_packages(targets: tuple) -> list[str]:
    """The packages (of the `exporters` extra) that `targets` need and that are not installed."""
    import importlib.util

    return sorted(
        {
            TARGET_PACKAGES[t]
            for t in targets
            if t in TARGET_PACKAGES and importlib.util.find_spec(TARGET_PACKAGES[t]) is None
        }
    )


@dataclass
class FixOutcome:
    """A fixture analysed in a workspace and its entry's fix applied wherever it is offered."""

    case_path: str
    before: list
    fixed: list  # the findings whose fix was applied
    new_source: str
    new_config: str | None  # the edited pyproject.toml, when the fix edits it


def run_fixture_fix(
    engine, root: str, fixture: Fixture, targets: tuple, mps_as_of: str | None, monkeypatch
) -> FixOutcome:
    """Write the fixture into `root`, analyse it for `targets` and apply its entry's fix (what
    the golden `.out.py` / `.out.toml` record; scripts/regen_golden.py writes them from this)."""
    case = write_workspace(root, fixture.source, fixture.config)
    before = analyse(engine, root, targets, fixture.config, fixture.arg_shapes, mps_as_of, monkeypatch, fixture.flags)
    texts, fixed = apply_fix(before, fixture.entry)
    config_path = os.path.join(root, "pyproject.toml")
    return FixOutcome(case, before, fixed, texts.get(case, fixture.source), texts.get(config_path))


def _release_key(version: str) -> tuple:
    return tuple(int(part) for part in version.split("+")[0].split(".")[:2])


def apply_fix(findings: list, entry_id: str) -> tuple[dict, list]:
    """Apply `entry_id`'s fix of every finding that offers it (one file per workspace, plus
    the config file a remedy may edit). Returns {path: new text} and the fixed findings."""
    by_path: dict[str, list] = {}
    fixed = []
    for finding in findings:
        fix = next((f for f in finding.fixes if f["id"] == entry_id), None)
        if fix is None:
            continue
        fixed.append(finding)
        for edit in fix["edits"]:
            by_path.setdefault(edit.get("path", finding.abs_path), []).append(edit)
    results = {}
    for path, edits in by_path.items():
        with open(path, "rb") as handle:
            original = EncodedText.read(handle.read())
        index = LineIndex(original.text)
        results[path] = apply_edits(original.text, [TextEdit.from_json(e, index) for e in edits])
    return results, fixed


def finding_for_call(
    source: str,
    call_text: str,
    entry_id: str,
    target: str | None = None,
    data: dict | None = None,
    path: str = "/virtual/case.py",
    **overrides,
) -> Finding:
    """A finding at the first call whose source is `call_text`, as the engine would report
    it for one of the entry's ops (for tests that exercise fixes without a capture)."""
    text = SourceText(source, path)
    tree = ast.parse(source)
    node = next((n for n in ast.walk(tree) if isinstance(n, ast.Call) and text.segment(n) == call_text), None)
    if node is None:
        raise AssertionError(f"no call {call_text!r} in the source")
    entry = BY_ID[entry_id]  # a rewrite: the finding is about its first overload
    target = target or entry.targets[0]
    ops = overrides.pop("ops", [entry.ops[0]])
    code = overrides.pop("code", {"mps": "MPS001"}.get(target.split(":")[0], "X001"))
    finding = Finding(
        "case.py",
        text.node_range(node),
        "warning",
        code,
        "message",
        target=target,
        ops=ops,
        call=call_text.split("(")[0],
        abs_path=path,
        data={"torch": "2.13.0", "args": {}, "kinds": {op: "fallback" for op in ops}, **(data or {})},
        **overrides,
    )
    return finding


class Sources:
    """A SourceCache stand-in over in-memory texts."""

    def __init__(self, texts: dict):
        self.texts = {path: SourceText(text, path) for path, text in texts.items()}

    def get(self, path: str):
        return self.texts.get(path)


def fixes_of(source: str, finding: Finding, resolver=None) -> list[dict]:
    attach_fixes([finding], Sources({finding.abs_path: source}), resolver)
    return finding.fixes


def apply_text(source: str, fix: dict) -> str:
    index = LineIndex(source)
    return apply_edits(source, [TextEdit.from_json(e, index) for e in fix["edits"] if "path" not in e])
