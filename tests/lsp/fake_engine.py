"""An engine double for the session's property test: the same interface as `Engine`
(capture, capture_static, findings, call_sites, torch_version, resolver), answered in
microseconds from the texts alone, with the real engine's dependency semantics:

- a full capture imports the file: every workspace module it imports (transitively) is
  read from its overlay or from disk, and its calls are judged where they are written
  (findings in an imported file are located there, as for a helper defined elsewhere);
- an import that fails (a syntax error or a top-level `raise` in a reached file) is one
  ATL002 on the importing line of the checked file, and the failing file is not listed
  among the imported (as for the real worker, which only sees modules that loaded);
- a static capture reads the file and, like the real one, the workspace files it imports
  (nothing runs; a file that does not parse is skipped), and lists none of them as
  imported; a syntax error in the file is ATL001 on its line.

So a stale result in the session shows up as a mismatch against `FreshCheck`, exactly as
with the real engine, but a thousand sequences take seconds instead of minutes."""

from __future__ import annotations

import os
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

from atenlint.findings import Finding
from atenlint.python_parse import parse_module
from atenlint.sourcetext import Position, Range

JUDGED = {
    "torch.take": "aten::take",
    "torch.heaviside": "aten::heaviside.out",
    "torch.special.ndtri": "aten::special_ndtri.out",
}
_IMPORT = re.compile(r"^\s*(?:from\s+(\w+)\s+import|import\s+(\w+))", re.MULTILINE)


# With `slow_target` set, these calls are also findings of that (export) target, which a
# partial capture does not judge yet (the real engine's dispatcher view comes first).
SLOW_JUDGED = {"torch.take": "aten::take"}
FAST_TARGET = "mps"


@dataclass
class FakeCapture:
    path: str
    found: list = field(default_factory=list)
    imported: list = field(default_factory=list)
    views: frozenset | None = None  # a partial capture: only the fast target's findings
    settings: object = None
    # What the pipeline (`atenlint.pipeline.check_file`) reads of a capture besides findings:
    # no outline (no class list: no static fallback, no unknown-key warnings to check).
    module_findings: list = field(default_factory=list)
    classes: list = field(default_factory=list)
    outline: object = None


class _Resolver:
    def for_file(self, path):
        return self

    def fingerprint(self):
        return "fake"


class FakeEngine:
    torch_version = "fake"
    cwd = os.getcwd()
    hello: ClassVar[dict[str, Any]] = {}
    torch_degradations: ClassVar[list[str]] = []

    @property
    def run_notes(self) -> list[str]:
        """As the real engine's: what this torch lacks (a fake worker is never confined)."""
        return list(self.torch_degradations)

    def __init__(self, delay: float = 0.002, slow_target: str | None = None):
        self.delay = delay
        self.resolver = _Resolver()
        self.captures = 0
        # The export target judged after the fast one, like the real engine's onnx/executorch
        # beside mps: a capture then offers the fast findings first (`on_partial`).
        self.slow_target = slow_target
        self.before_partial = threading.Event()  # tests hold a capture here ...
        self.after_partial = threading.Event()  # ... or between its partial and full answer
        self.before_partial.set()
        self.after_partial.set()
        self.partials = 0
        self.log = lambda message: None

    def fast_targets(self, settings) -> list:
        return [_Named(FAST_TARGET)]

    def persist_results(self) -> None:
        """The real engine starts keeping results between runs; the double keeps none."""

    def warm(self, settings) -> list:
        """The real engine warms its workers' views; the double has no views to warm."""
        return []

    def result_cache(self, execute: bool) -> None:
        return None  # every check captures: the tests count captures

    def capture_static(self, path: str, text: str | None = None, display=None) -> FakeCapture:
        return self.capture(path, text=text, execute=False)

    def capture(
        self,
        path: str,
        text: str | None = None,
        overlays: dict | None = None,
        display=None,
        execute: bool = True,
        on_partial=None,
        settings=None,
    ) -> FakeCapture:
        result = self._capture(path, text, overlays, execute)
        if on_partial is not None and self.slow_target and execute:
            assert self.before_partial.wait(30), "the test never released the capture"
            self.partials += 1
            on_partial(
                FakeCapture(result.path, list(result.found), list(result.imported), views=frozenset({"dispatch"}))
            )
            assert self.after_partial.wait(30), "the test never released the capture"
        return result

    def _capture(self, path: str, text: str | None, overlays: dict | None, execute: bool) -> FakeCapture:
        self.captures += 1
        time.sleep(self.delay)  # a check takes a while: edits and saves land while it runs
        path = os.path.abspath(path)
        overlays = {os.path.abspath(p): t for p, t in (overlays or {}).items()}
        text = text if text is not None else _read(path)
        result = FakeCapture(path)
        if text is None:
            return result
        problem = _syntax_error(text)
        if problem is not None:
            result.found.append(
                _finding(
                    path, problem[0], problem[1], "ATL001", "error", f"Python cannot parse this file: {problem[2]}"
                )
            )
            return result
        if not execute:
            # Like the real static pass: it follows the imports to read helpers and base
            # classes (nothing runs, a broken file is skipped), and lists no imported files.
            reached = {path: text}
            self._read_imports(path, text, overlays, reached)
            for where, content in reached.items():
                result.found.extend(_judged(where, content, self.slow_target))
            return result
        reached: dict[str, str] = {path: text}
        failure = self._import(path, text, overlays, reached)
        if failure is not None:
            line, message = failure
            result.found.append(_finding(path, line, 0, "ATL002", "warning", message))
            # like the real worker: the static pass still reads the file itself
            result.found.extend(_judged(path, text, self.slow_target))
            result.imported = [p for p in reached if p != path]
            return result
        for where, content in reached.items():
            result.found.extend(_judged(where, content, self.slow_target))
        result.imported = [p for p in reached if p != path]
        return result

    def _import(self, path, text, overlays, reached, root_line=None) -> tuple | None:
        """Load what `text` imports; (line of the checked file's import, message) when it fails."""
        folder = os.path.dirname(path)
        for match in _IMPORT.finditer(text):
            name = match.group(1) or match.group(2)
            target = os.path.join(folder, f"{name}.py")
            if target in reached or (not os.path.exists(target) and target not in overlays):
                continue  # loaded already, or torch and friends
            line = root_line if root_line is not None else text.count("\n", 0, match.start())
            content = overlays.get(target, _read(target)) or ""
            problem = _syntax_error(content)
            if problem is not None:
                return line, f"importing failed: SyntaxError in {name}.py line {problem[0] + 1}"
            if "\nraise " in "\n" + content:
                return line, f"importing failed: {name} raised"
            reached[target] = content
            failure = self._import(target, content, overlays, reached, line)
            if failure is not None:
                return failure
        return None

    def _read_imports(self, path, text, overlays, reached) -> None:
        folder = os.path.dirname(path)
        for match in _IMPORT.finditer(text):
            target = os.path.join(folder, f"{match.group(1) or match.group(2)}.py")
            if target in reached or not os.path.exists(target):
                continue
            content = _read(target) or ""
            if _syntax_error(content) is None:
                reached[target] = content
                self._read_imports(target, content, overlays, reached)

    def findings(self, captures, sources=None) -> list:
        out, seen = [], set()
        for capture in captures:
            # A capture the pipeline made itself (its own failure) carries module findings only.
            for finding in getattr(capture, "found", None) or capture.module_findings:
                if capture.views is not None and finding.target not in (None, FAST_TARGET):
                    continue  # a partial capture is judged by the fast target only
                if finding.identity() not in seen:
                    seen.add(finding.identity())
                    out.append(finding)
        return out

    def call_sites(self, captures, sources=None) -> list:
        return []


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError:
        return None


def _syntax_error(text: str) -> tuple | None:
    try:
        parse_module(text)  # the session's threads parse at once: the locked entry point
    except SyntaxError as error:
        return max((error.lineno or 1) - 1, 0), max((error.offset or 1) - 1, 0), error.msg
    return None


def _judged(path: str, text: str, slow_target: str | None = None) -> list:
    out = []
    for number, line in enumerate(text.splitlines()):
        for call, op in JUDGED.items():
            column = line.find(call + "(")
            if column >= 0:
                out.append(
                    _finding(
                        path,
                        number,
                        column,
                        "MPS001",
                        "warning",
                        f"`{call}` reaches `{op}`, which has no MPS kernel",
                        target=FAST_TARGET,
                        ops=[op],
                        width=len(call),
                    )
                )
        for call, op in SLOW_JUDGED.items() if slow_target else ():
            column = line.find(call + "(")
            if column >= 0:
                out.append(
                    _finding(
                        path,
                        number,
                        column,
                        "ONNX001",
                        "error",
                        f"`{call}` reaches `{op}`, which {slow_target} cannot export",
                        target=slow_target,
                        ops=[op],
                        width=len(call),
                    )
                )
    return out


@dataclass
class _Named:
    name: str


def _finding(path, line, column, code, severity, message, target=None, ops=(), width=1) -> Finding:
    rng = Range(Position(line or 0, column), Position(line or 0, column + width))
    return Finding(os.path.basename(path), rng, severity, code, message, target=target, ops=list(ops), abs_path=path)
