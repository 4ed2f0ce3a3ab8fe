"""The worker's answer for one file -> the parent's `FileCapture`: module-level findings
(import failures, classes not built, TorchScript or trace failures) and the captured calls.

Parent side: reads `worker/protocol.py` records only, never the worker's modules.
"""

from __future__ import annotations

import functools
import os
import re
import stat
from collections.abc import Callable, Iterable, Sequence
from typing import Any, cast

from . import findings as codes
from . import notebook
from .bounded_read import read_regular_file
from .captured import FileCapture, Occurrence, display_path
from .discover import ClassInfo, FileOutline, import_location
from .finding_data import RelatedPlace
from .findings import Finding
from .refusals import refusal_findings
from .script_typing import only_int_for_float
from .sourcetext import Position, Range, SourceText, decode_source, python_lines
from .targets.base import Target
from .worker.protocol import ClassAnswer, FileAnswer, Site
from .worker.vocabulary import (
    CAPTURE_SCRIPT,
    CAPTURE_STATIC,
    CAPTURE_TRACE,
    CAPTURES,
    EXPORT_VIEWS,
    JIT_VIEWS,
    STATUS_BUILD_FAILED,
    STATUS_OK,
    STATUS_SCRIPT_FAILED,
    STATUS_STATIC,
    VIEW_DISPATCH,
    VIEW_EXECUTORCH,
    VIEW_EXPORT,
    VIEW_JIT,
    VIEW_ONNX_EXPORT,
    VIEW_ONNX_JIT,
)


def read_answer(
    result: FileCapture,
    answer: FileAnswer,
    module_name: str,
    file_outline: FileOutline,
    targets: list[Target],
    cwd: str,
    log: Callable[[str], None],
) -> None:
    """Fill `result` from the worker's answer: its module-level findings and the captured calls.
    The answer is read as a claim (`vet_answer`): analysed code can write its own."""
    roots = answer_roots(result.path, result.settings.project_root)
    answer = vet_answer(answer, result.path, result.source, roots)
    result.imported = vetted_paths(result.imported, result.path, roots)
    result.module_findings.extend(refusal_findings(result, answer))  # ATL012: what the sandbox refused
    for lost in answer.get("torch_degraded", []):  # torchcompat: a capability this torch lacks
        log(f"{result.path}: {lost.get('message', '')}")

    if "import_error" in answer and not answer["import_error"].get("refused"):  # a refusal says it already
        result.module_findings.append(_import_finding(result, answer, module_name, cwd))
    by_qualname = {c.qualname: c for c in file_outline.classes}
    result.classes = answer.get("classes", [])
    reported_failures = _script_failures_to_report(result.classes, file_outline)
    not_built = [cls for cls in result.classes if cls["status"] == STATUS_BUILD_FAILED]
    if not_built:
        # One note per file, not one per class: what a factory would add for all of them.
        result.module_findings.append(_not_built_finding(result, not_built, by_qualname, module_name))
    for cls in result.classes:
        info = by_qualname.get(cls["qualname"])
        name_range = info.name_range if info else Range(Position(0, 0), Position(0, 0))
        if cls["status"] == STATUS_BUILD_FAILED and cls.get("capture") != CAPTURE_STATIC:
            continue
        if cls.get("trace_error"):
            error = cls["trace_error"]
            error_site = error.get("site")
            where = f" (line {error_site['line']})" if error_site else ""
            # A gap of fake tensors (an op whose output shape depends on the data) is not
            # the user's mistake: a note; a forward that raises on these inputs is.
            gap = _FAKE_TENSOR_GAP.search(error.get("message", "")) is not None
            result.module_findings.append(
                Finding(
                    result.display,
                    name_range,
                    "information" if gap else "warning",
                    codes.TRACE_FAILED,
                    f"`{cls['name']}` could not be traced with its example inputs{where}: {error['message']}; "
                    f"it was analysed without them"
                    + (" (fake tensors cannot compute this op's output shape without data)" if gap else ""),
                    module=cls["module"],
                    abs_path=result.path,
                    data={"class": cls["name"], "key": cls["module"], "untrusted_text": [error["message"]]},
                )
            )
        if cls.get("graph_errors"):
            export_errors = _export_failure_findings(result, cls, name_range, targets)
            # The error says it all when torch.export itself was the only front end that failed.
            if not export_errors or not all(e.get("toolchain_fails") for e in cls["graph_errors"]):
                result.module_findings.append(
                    Finding(
                        result.display,
                        name_range,
                        "information",
                        codes.PARTIAL_CAPTURE,
                        _graph_errors_message(cls),
                        module=cls["module"],
                        abs_path=result.path,
                        data={"class": cls["name"], "key": cls["module"], "graph_errors": cls["graph_errors"]},
                    )
                )
            result.module_findings.extend(export_errors)
        if (
            cls["status"] == STATUS_SCRIPT_FAILED
            and cls["qualname"] in reported_failures
            and not _source_read_just_as_well(cls)
        ):
            result.module_findings.append(
                Finding(
                    result.display,
                    name_range,
                    "information",
                    codes.SCRIPT_FAILED,
                    _script_message(cls, result.path),
                    module=cls["module"],
                    abs_path=result.path,
                    data={
                        "script_error": cls["script_error"],
                        "class": cls["name"],
                        "key": cls["module"],
                        "class_line": info.line if info else 0,
                    },
                )
            )
        capture = cls.get("capture") or (CAPTURE_STATIC if cls["status"] == STATUS_STATIC else CAPTURE_SCRIPT)
        for raw in cls["ops"]:
            result.occurrences.append(
                Occurrence(
                    cls["module"],
                    raw["op"],
                    raw["trees"],
                    tuple(raw.get("phases") or ()),  # optional in the protocol
                    raw["sites"],
                    capture,
                    raw.get("args", {}),
                    bool(raw.get("conditional")),
                    tuple(raw.get("devices", ())),
                    dict(raw.get("facts") or {}),
                )
            )


def _export_failure_findings(
    result: FileCapture, cls: ClassAnswer, name_range: Range, targets: list[Target]
) -> list[Finding]:
    """EXPORT001, once per target whose front end fails on the class's own code, as the real
    toolchain's does: torch.export (a guard on a data-dependent value; it always traces on
    fake tensors: capture/graphs.py `_export_itself_fails`) for every export-based target,
    torch.jit.trace where the untraced forward runs (`_trace_itself_fails`) for its jit view.
    A failure that may be a gap of atenlint's own stays the ATL020 note."""
    failures = [e for e in cls.get("graph_errors", []) if e.get("toolchain_fails") and e.get("site")]
    if not failures or result.source is None:
        return []
    found = []
    for target in targets:
        # torch.export's failure holds for every export view; torch.jit.trace's for its own.
        failure = next(
            (
                f
                for f in failures
                if (f.get("view") in JIT_VIEWS and f.get("view") == target.tree_view)
                or (f.get("view") in EXPORT_VIEWS and target.tree_view in EXPORT_VIEWS)
            ),
            None,
        )
        if failure is None:
            continue
        site = cast(Site, failure["site"])
        here = os.path.abspath(site["file"]) == result.path
        where = "" if here else f" (at {os.path.basename(site['file'])}:{site['line']})"
        rng = result.source.line_range(site["line"] - 1) if here else name_range
        message = failure.get("message", "")
        text = (
            f"torch.jit.trace fails here{where}, so {target.name} cannot export `{cls['name']}` with these "
            f"inputs, though its forward runs untraced ({message}): the trace records sizes and such as tensors"
            if failure.get("view") in JIT_VIEWS
            else f"torch.export fails here{where}, so {target.name} cannot export `{cls['name']}`: a branch or "
            f"size depends on tensor values ({message}); use torch.cond or torch._check"
        )
        guess = failure.get("inputs_inferred")
        if guess:
            # Found with inputs atenlint guessed: the user's own inputs may take another path
            # (one that never reaches this line), so it is not the promise an error makes.
            text += f". Found with the inputs atenlint inferred, `{guess}`; configure the class's inputs for a certain verdict"
        found.append(
            Finding(
                result.display,
                rng,
                "warning" if guess else "error",
                codes.EXPORT_FAILS,
                text,
                target=target.name,
                module=cls["module"],
                abs_path=result.path,
                capture=CAPTURE_TRACE,
                data={"class": cls["name"], "key": cls["module"]},
            )
        )
    return found


def _build_message(cls: ClassAnswer, module_name: str) -> str:
    """Why one class could not be built, and what to do about it (whose move it is)."""
    error = cls["build_error"]
    name = cls["name"]
    key = cls.get("key") or cls["module"]
    missing = error.get("missing") or []
    kind = error.get("kind") or ("arguments" if missing else "meta")
    static = cls.get("capture") == CAPTURE_STATIC
    analysed = "was analysed from its source only" if static else "was not analysed"
    if kind == "missing_package":
        site = error.get("site")
        where = f" ({os.path.basename(site['file'])}:{site['line']})" if site and site.get("file") else ""
        return (
            f"`{name}` {analysed}: building it needs the package `{error.get('package')}`{where}, which is not "
            f"installed in the interpreter atenlint uses; install the distribution that provides it (its pip "
            f"name can differ: `PIL` comes from Pillow) or point atenlint at the project's interpreter (--python)"
        )
    if kind == "arguments":
        arguments = ", ".join(f"{m}=..." for m in missing)
        return (
            f"`{name}` {analysed}: its constructor needs {', '.join(f'`{m}`' for m in missing)}. "
            f'Add to pyproject.toml: [tool.atenlint.modules."{key}"] init = "{name}({arguments})", '
            f"or put `# atenlint: init={name}({arguments})` on the class line"
        )
    if kind == "factory":
        return f"`{name}` {analysed}: {error['message']}"
    if kind == "memory":
        return f"`{name}` {analysed}: {error['message']}"
    failed_at = error.get("site")
    where = f" at {os.path.basename(failed_at['file'])}:{failed_at['line']}" if failed_at else ""
    return (
        f"`{name}` {analysed}: its constructor fails on the meta device and on the CPU{where} "
        f'({error["message"]}). Give a factory that works: [tool.atenlint.modules."{key}"] init = '
        f'"{name}(...)" in pyproject.toml, or `# atenlint: init=...` on the class line'
    )


def _not_built_finding(
    result: FileCapture, classes: list[ClassAnswer], by_qualname: dict[str, ClassInfo], module_name: str
) -> Finding:
    """One note for the classes of a file that could not be built, on the first of them
    (one that only needs constructor arguments first: its stub is the quickest fix)."""
    classes = sorted(
        classes,
        key=lambda c: (c["build_error"].get("kind") != "arguments", getattr(by_qualname.get(c["qualname"]), "line", 0)),
    )
    first = classes[0]
    info = by_qualname.get(first["qualname"])
    name_range = info.name_range if info else Range(Position(0, 0), Position(0, 0))
    message = _build_message(first, module_name)
    if len(classes) > 1:
        others = [
            f"`{c['name']}`"
            + (f" (needs {', '.join(c['build_error']['missing'])})" if c["build_error"].get("missing") else "")
            for c in classes[1:]
        ]
        shown = ", ".join(others[:6]) + (f" and {len(others) - 6} more" if len(others) > 6 else "")
        static = all(c.get("capture") == CAPTURE_STATIC for c in classes)
        message += (
            f". Also {'read from source only' if static else 'not built'}: {shown} — a factory for each "
            f"(pyproject.toml, a factories file, or `# atenlint: init=...`) lets atenlint build and "
            f"script them; example inputs (`inputs=`) add dtypes and shapes"
        )
    elif first.get("capture") == CAPTURE_STATIC:
        message += (
            "; with it atenlint builds and scripts the class, and example inputs (`inputs=`) add dtypes and shapes"
        )
    error = first["build_error"]
    severity = "information"
    return Finding(
        result.display,
        name_range,
        severity,
        codes.CANNOT_BUILD,
        message,
        module=first.get("module"),
        abs_path=result.path,
        data={
            "class": first["name"],
            "key": first.get("key") or first["module"],
            "missing": error.get("missing") or [],
            "kind": error.get("kind") or "",
            "classes": [c.get("key") or c["module"] for c in classes],
        },
    )


def _import_finding(result: FileCapture, answer: FileAnswer, module_name: str, cwd: str) -> Finding:
    """The import failed: say where and why; a package that is not installed is said as such
    (information when the static pass read every class instead, the user's bug otherwise)."""
    error = answer["import_error"]
    line = error.get("line")
    line0 = (line - 1) if line else 0
    site = error.get("site")
    static = [c for c in answer.get("classes", []) if c.get("capture") == CAPTURE_STATIC]
    elsewhere = bool(site and site.get("file") and os.path.abspath(site["file"]) != os.path.abspath(result.path))
    where = ""
    if site and site.get("file"):
        shown = f"{display_path(site['file'], cwd)}:{site['line']}" if elsewhere else f"line {site['line']}"
        where = f" at {shown}" + (f" (`{site['text']}`)" if site.get("text") else "")
    if elsewhere and not error.get("line"):
        line0 = 0
    fallback = (
        f"; its {len(static)} module class{'es were' if len(static) != 1 else ' was'} analysed from source only"
        if static
        else ""
    )
    package = error.get("package")
    stood_in = error.get("stood_in") or []
    if package and stood_in:
        skipped = ", ".join(f"`{name.replace('.', '/')}/__init__.py`" for name in stood_in)
        message = (
            f"importing `{module_name}` needs the package `{package}`{where}, which is not installed in the "
            f"interpreter atenlint uses; atenlint imported `{module_name}` without running {skipped} (a bare "
            f"package stood in for it), and analysed its module classes as usual. Install the distribution that "
            f"provides `{package}` (its pip name can differ: `PIL` comes from Pillow) or point atenlint at the "
            f"project's interpreter (--python) to import it as Python does"
        )
        severity = "information"
    elif package:
        message = (
            f"importing `{module_name}` needs the package `{package}`{where}, which is not installed in the "
            f"interpreter atenlint uses: install the distribution that provides it (its pip name can differ: "
            f"`PIL` comes from Pillow) or point atenlint at the project's interpreter (--python){fallback}"
        )
        severity = "information" if static or not answer.get("classes") else "warning"
    else:
        message = (
            f"importing `{module_name}` raised {error['type']}: {error['message']}{where}; atenlint imports "
            f"the file to build and analyse its modules{fallback}"
        )
        severity = "warning"
    related: list[RelatedPlace] = []
    if elsewhere and site:
        related.append(
            {
                "path": os.path.abspath(site["file"]),
                "line": max(site["line"] - 1, 0),
                "character": 0,
                "message": f"the import fails here{f': {package} is not installed' if package else ''}",
            }
        )
    rng = (
        result.source.line_range(line0) if result.source is not None else Range(Position(line0, 0), Position(line0, 0))
    )
    return Finding(
        result.display,
        rng,
        severity,
        codes.IMPORT_ERROR,
        message,
        abs_path=result.path,
        related=related,
        # The exception's text is the analysed code's: machine formats cut it to a headline.
        data={"package": package, "site": site or None, "untrusted_text": [error["message"]]},
    )


# A key of `capture_paths` that is not a capture path: of the classes counted there, those
# built with constructor arguments atenlint inferred (traced or scripted; output.py says so).
ARGUMENTS_INFERRED = "arguments_inferred"


def capture_paths(captures: Iterable[FileCapture]) -> dict[str, int]:
    """Module classes by how they were analysed: traced with configured inputs ("trace") or
    with inputs atenlint inferred ("inferred"), scripted, read from source, or not at all;
    and, beside them (ARGUMENTS_INFERRED), how many were built with inferred arguments."""
    counts = {"trace": 0, "inferred": 0, "script": 0, "static": 0, "none": 0, ARGUMENTS_INFERRED: 0}
    for capture in captures:
        answered = {cls.get("qualname") for cls in capture.classes}
        for cls in capture.classes:
            path = class_capture(cls)
            counts["inferred" if path == "trace" and cls.get("inputs_inferred") else path] += 1
            if cls.get("arguments_inferred") and path in ("trace", "script"):
                counts[ARGUMENTS_INFERRED] += 1
        if (
            not capture.classes
            and capture.outline is not None
            and any(f.code in _FAILED_FILE_CODES for f in capture.module_findings)
        ):
            # The worker gave no answer for this file: its candidates were not analysed.
            counts["none"] += sum(
                1
                for c in capture.outline.module_candidates
                if c.qualname not in answered and not c.directives.get("skip")
            )
    return counts


def build_paths(captures: Iterable[FileCapture]) -> dict[str, int]:
    """How classes that were built got built (meta, meta with CPU tensors moved, CPU)."""
    counts: dict[str, int] = {}
    for capture in captures:
        for cls in capture.classes:
            if cls.get("build"):
                counts[cls["build"]] = counts.get(cls["build"], 0) + 1
    return counts


_FAILED_FILE_CODES = (codes.TIMEOUT, codes.WORKER_CRASHED, codes.INTERNAL_ERROR, codes.IMPORT_ERROR)


def class_capture(cls: ClassAnswer) -> str:
    """The capture path that analysed one class of a worker answer, or "none"."""
    capture = cls.get("capture")
    if capture in CAPTURES:
        return capture
    status = cls.get("status")
    if status == STATUS_OK:
        return CAPTURE_SCRIPT
    if status == STATUS_STATIC:
        return CAPTURE_STATIC
    return "none"


_FAKE_TENSOR_GAP = re.compile(
    r"DynamicOutputShapeException|DataDependentOutputException|UnsupportedOperatorException"
    r"|GuardOnDataDependentSymNode|meta tensor|Meta kernel|fake impl"
)

_VIEW_FRONT_ENDS = {
    VIEW_DISPATCH: "the dispatcher-level trace (device targets)",
    VIEW_JIT: "torch.jit.trace (Core ML)",
    VIEW_ONNX_JIT: "the TorchScript ONNX exporter's trace",
    VIEW_EXPORT: "torch.export",
    VIEW_ONNX_EXPORT: "torch.export (dynamo ONNX)",
    VIEW_EXECUTORCH: "torch.export (ExecuTorch)",
}


def _graph_errors_message(cls: ClassAnswer) -> str:
    """One note per class: which toolchain front ends failed on its example inputs, and
    what stood in for them (the scripted graph, or the source)."""
    fallback = cls.get("fallback") or {}
    parts = []
    for error in cls["graph_errors"]:
        view = error.get("view", "")
        error_site = error.get("site")
        where = f" at line {error_site['line']}" if error_site else ""
        instead = fallback.get(view)
        parts.append(
            f"{_VIEW_FRONT_ENDS.get(view, view)} failed{where} ({error.get('message', '')})"
            + (f"; judged from the {'scripted graph' if instead == 'script' else 'source'} instead" if instead else "")
        )
    return (
        f"`{cls['name']}`: "
        + "; ".join(parts)
        + ". With real tensors the toolchain may fail the same way: then it cannot export this class"
    )


def _script_failures_to_report(classes: list[ClassAnswer], file_outline: FileOutline) -> set[str]:
    """One ATL004 per place TorchScript stopped: classes that fail only because a submodule
    fails (at the same line) say nothing; the class whose body holds that line says it."""
    # By the failing (file, line); a failure without a site is its class's own.
    by_site: dict[tuple[str | None, int], list[ClassAnswer]] = {}
    unplaced: list[str] = []
    for cls in classes:
        if cls["status"] != STATUS_SCRIPT_FAILED:
            continue
        site = cls.get("script_error", {}).get("site")
        if site:
            by_site.setdefault((site["file"], site["line"]), []).append(cls)
        else:
            unplaced.append(cls["qualname"])
    spans = {}
    for info in file_outline.classes:
        spans[info.qualname] = info.line
    keep: set[str] = set(unplaced)
    for (_, line), group in by_site.items():
        if len(group) == 1:
            keep.update(c["qualname"] for c in group)
            continue
        # The innermost class that starts before the failing line.
        candidates = [c for c in group if spans.get(c["qualname"], 10**9) < line]
        owner = max(candidates, key=lambda c: spans[c["qualname"]]) if candidates else group[0]
        keep.add(owner["qualname"])
    return keep


def _source_read_just_as_well(cls: ClassAnswer) -> bool:
    """TorchScript refused the class only for an int where a float is annotated
    (`scale_factor=2`), which Python accepts: the static pass replays those calls as
    Python means them, so an ATL004 note would only be noise (the torchscript target still
    reports TS001)."""
    return cls.get("capture") == CAPTURE_STATIC and only_int_for_float(
        (cls.get("script_error") or {}).get("details", "")
    )


def _script_message(cls: ClassAnswer, path: str) -> str:
    error = cls["script_error"]
    site = error.get("site")
    where = f" at {os.path.basename(site['file'])}:{site['line']}" if site else ""
    name, key = cls["name"], cls["module"]
    if cls.get("capture") == CAPTURE_STATIC:
        return (
            f"`{name}` was analysed from its source only: TorchScript cannot compile it{where} "
            f"({error['message']}). Calls decided at run time, dtypes and shapes are not seen; give example "
            f'inputs so atenlint can trace it: [tool.atenlint.modules."{key}"] inputs = "torch.randn(...)" '
            f"in pyproject.toml, or `# atenlint: inputs=torch.randn(...)` on the class line"
        )
    return (
        f"`{name}` was not analysed: TorchScript cannot compile it{where} ({error['message']}), "
        f"so atenlint cannot see its operators"
    )


# -- the worker's answer, read as a claim (issue 21) ---------------------------------------
# The analysed code runs in the worker and can write to the pipe its answer goes out on,
# so an answer may be forged. Nothing in it is trusted about *where*: every path must be
# one the parent confirms itself, every position is clamped to the real text, every count
# and text is bounded. (Trust, settings and which files `--fix` or a quick fix may edit
# never come from an answer at all: they are the parent's, from the command line, the
# client and the project's configuration.)

MAX_IMPORTED = 10_000  # dependency paths kept of one answer
MAX_CLASSES = 2_000  # module classes of one file
MAX_OPS = 100_000  # captured calls of one file, all classes together
MAX_LIST = 10_000  # items of any other list (a call's stack, graph errors, refusals, ...)
MAX_TEXT = 64 * 1024  # characters of any one text (an exception message, a trace)
MAX_DEPTH = 64  # nesting of the answer's JSON (call trees are far shallower)
_MAX_PATH = 4096
_LIBRARY_FOLDERS = ("site-packages", "dist-packages")


def answer_roots(path: str, project_root: str | None) -> list[str]:
    """The folders a dependency of `path` may lie in: the search roots its analysis put on
    `sys.path` (the package root, the project root and its src/, computed here as the
    engine computes them) and the file's own folder."""
    locate = notebook.module_location if notebook.is_notebook(path) else import_location
    _, roots = locate(path, project_root)
    return [*roots, *([project_root] if project_root else []), os.path.dirname(os.path.abspath(path))]


def _utf8_lines(text: str) -> tuple[bytes, ...]:
    return tuple(line.encode("utf-8") for line in python_lines(text) or [""])


def _read_lines(file: str) -> tuple[bytes, ...] | None:
    """`file`'s lines as UTF-8, read through the bounded reader; None when it cannot be read."""
    try:
        return _utf8_lines(decode_source(read_regular_file(file)))
    except (OSError, ValueError, SyntaxError):
        return None


@functools.lru_cache(maxsize=32)
def _library_lines(file: str, identity: tuple[int, int, int, int]) -> tuple[bytes, ...] | None:
    """`_read_lines` of an installed library's file, kept while its device, inode, size and
    modification time stay the same (`identity`): a workspace scan's answers point into the
    same few torch modules, each thousands of lines, which every answer read and split again
    (a second of the parent's processor time in 40 files)."""
    return _read_lines(file)


class _Vetter:
    """Confirms paths and clamps positions of one answer, each file looked at once."""

    def __init__(self, path: str, source: SourceText | None, roots: Sequence[str]):
        self.path = os.path.abspath(path)
        self.source = source
        self.roots = sorted({os.path.realpath(root) for root in roots if root})
        self._confirmed: dict[tuple[str, bool], str | None] = {}
        self._lines: dict[str, Sequence[bytes] | None] = {}
        self.ops = 0

    def confirm(self, file: object, library: bool = False) -> str | None:
        """`file` as an absolute path when the parent can confirm it: the analysed file, or
        a regular file inside the search roots (a library's frame: or inside a
        site-packages folder); None for anything else (a forged location)."""
        if not isinstance(file, str) or not file or len(file) > _MAX_PATH or "\x00" in file:
            return None
        key = (file, library)
        if key not in self._confirmed:
            self._confirmed[key] = self._confirm(file, library)
        return self._confirmed[key]

    def _confirm(self, file: str, library: bool) -> str | None:
        if not os.path.isabs(file):
            return None
        absolute = os.path.abspath(file)
        if absolute == self.path:
            return absolute
        try:
            real = os.path.realpath(absolute)
            if not stat.S_ISREG(os.stat(real).st_mode):
                return None
        except (OSError, ValueError):
            return None
        inside = any(real == root or real.startswith(root.rstrip(os.sep) + os.sep) for root in self.roots)
        if not inside and library:
            inside = any(part in _LIBRARY_FOLDERS for part in real.split(os.sep)[:-1])
        return absolute if inside else None

    def lines(self, file: str) -> Sequence[bytes] | None:
        """The file's lines as UTF-8 (the analysed file's from the text being checked),
        read through the bounded reader; None when it cannot be read. An installed
        library's file (torch's own modules, where every answer's call stacks lead) is
        read once per process while it stays the same file (`_library_lines`)."""
        if file not in self._lines:
            if file == self.path and self.source is not None:
                self._lines[file] = _utf8_lines(self.source.text)
            elif any(part in _LIBRARY_FOLDERS for part in file.split(os.sep)[:-1]):
                try:
                    found = os.stat(file)
                except (OSError, ValueError):
                    self._lines[file] = None
                else:
                    self._lines[file] = _library_lines(
                        file, (found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns)
                    )
            else:
                self._lines[file] = _read_lines(file)
        return self._lines[file]

    def line_in(self, file: str, line: object) -> int | None:
        """A 1-based line clamped to the file's real lines."""
        lines = self.lines(file)
        if lines is None or not isinstance(line, int) or isinstance(line, bool):
            return None
        return min(max(line, 1), len(lines))

    def site(self, site: dict[str, Any]) -> dict[str, Any] | None:
        """A source position: confirmed file, line, columns and extent within its text."""
        file = self.confirm(site.get("file"), library=bool(site.get("library")))
        line = self.line_in(file, site.get("line")) if file is not None else None
        lines = self.lines(file) if file is not None else None
        if file is None or line is None or lines is None:
            return None
        out = dict(site, file=file, line=line)
        width = len(lines[line - 1].rstrip(b"\r\n"))
        if "col" in out:
            col = out["col"]
            out["col"] = min(max(col, -1), width) if isinstance(col, int) and not isinstance(col, bool) else -1
        if "span_lines" in out:
            span = out["span_lines"]
            span = span if isinstance(span, int) and not isinstance(span, bool) else 1
            out["span_lines"] = min(max(span, 1), len(lines) - line + 1)
        if out.get("end_col") is not None:
            end_line = line + out.get("span_lines", 1) - 1
            end_width = len(lines[end_line - 1].rstrip(b"\r\n"))
            end_col = out["end_col"]
            out["end_col"] = (
                min(max(end_col, 0), end_width) if isinstance(end_col, int) and not isinstance(end_col, bool) else None
            )
        return out

    def refusal(self, refusal: dict[str, Any]) -> dict[str, Any]:
        """A refusal's place: its file only when confirmed; its line in the analysed file clamped."""
        out = dict(refusal)
        file = self.confirm(refusal.get("file"))
        out["file"] = file
        out["line"] = self.line_in(file, refusal.get("line")) if file is not None else None
        if "analysed_line" in out:
            out["analysed_line"] = self.line_in(self.path, refusal.get("analysed_line"))
        return out

    def value(self, value: Any, depth: int = 0) -> Any:
        """Any part of the answer, with its positions vetted and its size bounded."""
        if depth > MAX_DEPTH:
            return None
        if isinstance(value, str):
            return value if len(value) <= MAX_TEXT else value[:MAX_TEXT] + " … (cut)"
        if isinstance(value, list):
            items = (self.value(item, depth + 1) for item in value[:MAX_LIST])
            return [item for item in items if item is not None]
        if not isinstance(value, dict):
            return value
        if "file" in value and "line" in value and "action" not in value:  # a source position
            value = self.site(value)
            if value is None:
                return None
        elif "action" in value and "kind" in value:  # a sandbox refusal
            value = self.refusal(value)
        return {str(key)[:MAX_TEXT]: self.value(item, depth + 1) for key, item in value.items()}


def vet_answer(answer: FileAnswer, path: str, source: SourceText | None, roots: Sequence[str]) -> FileAnswer:
    """The answer with every claim the parent cannot confirm taken out: a position in a
    file outside the search roots (or site-packages, for a library's frame), in something
    that is not a regular file, or past the end of the text is dropped or clamped; counts
    and texts are bounded. What is left places findings only in files the analysis may
    legitimately reach."""
    vetter = _Vetter(path, source, roots)
    out: dict[str, Any] = {}
    for key, item in cast(dict[str, Any], answer).items():
        if key == "classes":
            out[key] = [_vetted_class(vetter, cls) for cls in item[:MAX_CLASSES] if isinstance(cls, dict)]
        elif key == "imported":
            out[key] = vetted_paths(item if isinstance(item, list) else [], path, roots)
        else:
            out[key] = vetter.value(item)
    error = out.get("import_error")
    if isinstance(error, dict) and error.get("line") is not None:
        error["line"] = vetter.line_in(vetter.path, error["line"])
    return cast(FileAnswer, out)


def _vetted_class(vetter: _Vetter, cls: dict[str, Any]) -> ClassAnswer:
    ops = list(cls.get("ops") or [])[: max(0, MAX_OPS - vetter.ops)]
    vetter.ops += len(ops)
    out = vetter.value({key: item for key, item in cls.items() if key != "ops"})
    out["ops"] = [_vetted_op(vetter, op) for op in ops if isinstance(op, dict)]
    return cast(ClassAnswer, out)


def _vetted_op(vetter: _Vetter, op: dict[str, Any]) -> dict[str, Any]:
    """A captured call. Its call trees hold op names and what they decompose into, no
    position: they are kept as parsed (the message's bound holds their size), the most
    of an answer's bulk, not walked again."""
    out = vetter.value({key: item for key, item in op.items() if key != "trees"})
    if "trees" in op:
        out["trees"] = op["trees"]
    return cast(dict[str, Any], out)


def vetted_paths(paths: Iterable[object], path: str, roots: Sequence[str]) -> list[str]:
    """The dependency paths of an answer the parent confirms (regular files inside the
    search roots), each once, the analysed file's own excluded, at most MAX_IMPORTED."""
    vetter = _Vetter(path, None, roots)
    out: list[str] = []
    for claimed in paths:
        confirmed = vetter.confirm(claimed)
        if confirmed is not None and confirmed != vetter.path and confirmed not in out:
            out.append(confirmed)
            if len(out) >= MAX_IMPORTED:
                break
    return out
