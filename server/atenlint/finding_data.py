"""What a finding carries beyond the JSON contract, for fixes, editors and notebooks.

One definition of every key the engine, the fix catalog, the notebook support and the
server read or write on `Finding.data` (it never appears in `--format json`). A TypedDict,
not a dataclass: most of it is the worker's JSON passed along (call arguments, script
errors), and it travels as JSON again to the editor (`lsp/convert.py`'s `DiagnosticData`).
Every key is optional: which are set depends on the finding's code.
"""

from __future__ import annotations

from typing import Any, TypedDict

from .sourcetext import JsonRange
from .worker.protocol import ErrorInfo, Site


class NotebookPlace(TypedDict):
    """Where a finding in a notebook's generated module lies in the notebook."""

    cell: int
    file_range: JsonRange | None  # the range in the .ipynb file's own text, where known


class RelatedPlace(TypedDict):
    """Another place the finding concerns (where a library calls the operator)."""

    path: str
    line: int  # 0-based
    character: int  # UTF-16 code units
    message: str


# `class` is a keyword: the functional form names it.
_ClassKeys = TypedDict("_ClassKeys", {"class": str}, total=False)


class FindingData(_ClassKeys, total=False):
    # Target findings (one user call site, one target): judging.Judge._site_finding.
    reached: list[str]  # every overload the call reached, before the target's judgement
    kinds: dict[str, str]  # op -> the target's problem kind ("fallback", "forced", ...)
    args: dict[str, Any]  # the call's constant arguments, as captured (fix conditions read them)
    arg_shapes: dict[str, Any]  # input shapes by argument, when a trace knew them
    torch: str  # the torch version judged against (fixes are offered per torch release)
    conditional: bool  # only on a path the library picks at run time
    required_opset: int  # ONNX002: the opset from which every reached op exports (the opset fix)
    # Module findings about a class ("class" above is its name): ATL003, ATL004, ATL011, ATL020.
    key: str  # the name the user imports the class by (pyproject `modules` keys)
    missing: list[str]  # ATL003: the constructor arguments a factory must give
    kind: str  # ATL003: why the class could not be built ("arguments", "factory", ...)
    classes: list[str]  # ATL003: every class of the file that could not be built
    class_line: int  # ATL004: the class's 0-based line
    script_error: ErrorInfo  # ATL004
    graph_errors: list[ErrorInfo]  # ATL020
    # ATL002: the import that failed.
    package: str | None
    site: Site | None
    # ATL002, ATL011: text the analysed code controls (its exception's message) quoted in the
    # message; machine formats cut it to a headline (formats/redact.py).
    untrusted_text: list[str]
    # Set after analysis.
    text_sha256: str  # the text the fixes were computed on (a fix applies only to that text)
    notebook: NotebookPlace  # the finding lies in a notebook cell
    source_text: str  # the text the finding covers, when the file on disk is not that text


class _FixEditRequired(TypedDict):
    range: JsonRange
    newText: str  # LSP's spelling: editors read the edit as is


class FixEdit(_FixEditRequired, total=False):
    path: str  # only when the edit is in another file than its finding (a pyproject.toml)
    cell: int  # a notebook's code cell, whose own text the range is in (notebook.py)


class _FixRequired(TypedDict):
    id: str  # the catalog entry's id
    title: str
    kind: str  # "rewrite" | "suppress" | "explain" | "config" (fixes/model.py KINDS)
    exact: bool  # the same results for every input
    approximation: str | None  # how it differs, when not exact
    edits: list[FixEdit]  # none: an explanation
    description: str


class Fix(_FixRequired, total=False):
    """One quick fix as `--format json`, the editor and `check --fix` read it."""

    safe: bool  # False: right only while `condition` holds (never preferred; --fix needs --unsafe-fixes)
    condition: str | None


def no_data() -> FindingData:
    """A finding's data before anything is known (the dataclass field's default)."""
    return {}
