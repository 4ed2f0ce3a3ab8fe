"""Findings and call sites -> LSP values (diagnostics, code actions, hover), and position
encodings. The analysis speaks UTF-16 columns; a client may negotiate UTF-8 or UTF-32."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypedDict

from lsprotocol import types
from pygls.uris import to_fs_path

from ..config import SettingsResolver
from ..engine import CallSite
from ..finding_data import Fix
from ..findings import Finding
from ..fixes.safe_write import editor_refusal
from ..pyproject_edit import ignore_ops_edit
from ..sourcetext import ENCODINGS, UTF16, JsonRange, Position, Range, SourceText, convert_column
from ..targets.site_verdict import CONDITIONAL, SUPPORTED
from ..uris import path_uri
from .capabilities import FIX_ALL_KIND

SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "information": types.DiagnosticSeverity.Information,
    "hint": types.DiagnosticSeverity.Hint,
}


class Encoding:
    """Converts between the analysis' UTF-16 columns and the negotiated encoding."""

    def __init__(self, name: str | types.PositionEncodingKind = UTF16) -> None:
        spelled = (name.value if isinstance(name, types.PositionEncodingKind) else name).lower()
        self.name = spelled if spelled in ENCODINGS else UTF16  # LSP: UTF-16 unless negotiated

    def to_client(self, rng: Range, source: SourceText | None) -> types.Range:
        return types.Range(self._out(rng.start, source), self._out(rng.end, source))

    def from_client(self, position: types.Position, source: SourceText | None) -> Position:
        if source is None:
            return Position(position.line, position.character)
        return Position(
            position.line, convert_column(source.line_text(position.line), position.character, self.name, UTF16)
        )

    def _out(self, position: Position, source: SourceText | None) -> types.Position:
        if source is None:
            return types.Position(position.line, position.character)
        return types.Position(
            position.line, convert_column(source.line_text(position.line), position.character, UTF16, self.name)
        )


# What an editor's list (VS Code's Problems panel, a Vim echo line) shows of a message.
HEADLINE_LIMIT = 100
# Where a message may be cut into its gist and its details, best first.
_CLAUSE_ENDS = ("; ", ". ", " — ", ": ")
_SUPPORTED_FROM = re.compile(r"supported(?: on [\w-]+)? from torch (\d+\.\d+)")


def headline(finding: Finding) -> str:
    """The first clause of the message, carrying its gist within `HEADLINE_LIMIT`
    characters: the op and the verdict (the squiggle already shows which call), what it
    means, and from which torch it is supported. The whole message goes to the hover and to
    `relatedInformation`."""
    message = finding.message.strip()
    # "`self.pool` reaches `aten::X`, which has no MPS kernel" -> "`aten::X` has no MPS kernel"
    message = re.sub(
        r"^`[^`]+` reaches (`[^`]+`), which torch ([\w.+]+) always runs (.*?) on ([\w-]+)",
        r"\1 always runs \3 on \4 in torch \2",
        message,
    )
    message = re.sub(r"^`[^`]+` reaches (`[^`]+`), which ", r"\1 ", message)
    head = _first_clause(message, room=16 if finding.code == "MPS001" else 0)  # " → CPU fallback"
    extras = []
    if finding.code == "MPS001" and "runs on the CPU" in message:
        extras.append(" → CPU fallback")
    supported = _SUPPORTED_FROM.search(message)
    if supported and supported.group(0) not in head:
        extras.append(f"; supported from {supported.group(1)}")
    if "only on a path" in message and "only on a path" not in head:
        extras.append(" (on a path chosen at run time)")
    for extra in extras:
        if len(head) + len(extra) <= HEADLINE_LIMIT:
            head += extra
    if len(head) > HEADLINE_LIMIT:
        cut = head.rfind(" ", 0, HEADLINE_LIMIT - 1)
        head = head[: cut if cut > HEADLINE_LIMIT // 2 else HEADLINE_LIMIT - 1]
        if head.count("`") % 2:
            head = head[: head.rfind("`")]  # never half a code span
        head = head.rstrip(" ,;:(") + "…"
    return head


def _first_clause(message: str, room: int = 0) -> str:
    """The longest prefix ending at a top-level clause boundary (outside backticks and
    brackets) that fits the limit (less `room`); a head too short to say why ("`X` was not
    analysed") takes the next clause too, cut later if need be."""
    cuts: list[int] = []
    depth, quoted = 0, False
    for index, char in enumerate(message):
        if char == "`":
            quoted = not quoted
        elif not quoted and char in "([{":
            depth += 1
        elif not quoted and char in ")]}":
            depth = max(0, depth - 1)
        elif not quoted and depth == 0 and any(message.startswith(end, index) for end in _CLAUSE_ENDS):
            if char == "." and index > 0 and message[index - 1].isdigit():
                continue  # "2.13. " is a version, not a sentence end
            cuts.append(index)
    cuts.append(len(message))
    fitting = [c for c in cuts if c <= HEADLINE_LIMIT - room]
    end = fitting[-1] if fitting else cuts[0]
    while room == 0 and end < len(message) and end < _SHORT_HEAD:
        end = next(c for c in cuts if c > end)
    return message[:end]


_SHORT_HEAD = 60


def details(finding: Finding, head: str | None = None) -> str | None:
    """What the message says beyond its headline, for `relatedInformation`: the clauses
    after the one the headline shows, so the editor does not say "its constructor needs
    `dim`" in the headline, again in the details and a third time in their hover. The
    whole message when the headline had to be cut mid-clause; None when it says it all."""
    head = headline(finding) if head is None else head
    message = finding.message.strip()
    if head == message:
        return None
    if head.endswith("…"):
        return message
    shown = head.split(" → ", 1)[0].split("; supported from", 1)[0]
    if message.startswith(shown):
        start = len(shown)
    else:  # a rewritten headline ("`aten::X` has no MPS kernel"): the clauses after the first
        start = len(_first_clause(message, room=HEADLINE_LIMIT))
    rest = message[start:].lstrip(" .;:,—")
    return rest[:1].upper() + rest[1:] if rest else None


def diagnostic(
    finding: Finding, source: SourceText | None, encoding: Encoding, version: int | None = None
) -> types.Diagnostic:
    """`version`: the document version whose text the finding's positions refer to (its
    quick fixes are stamped with it, so a client rejects them once the buffer moved on)."""
    related = []
    for item in finding.related:
        location = types.Location(
            uri=path_uri(item["path"]),
            range=types.Range(
                types.Position(item["line"], item["character"]), types.Position(item["line"], item["character"])
            ),
        )
        related.append(types.DiagnosticRelatedInformation(location=location, message=item["message"]))
    rng = encoding.to_client(finding.range, source)
    message = headline(finding)
    rest = details(finding, message)
    if rest:
        # The details, where every client lists them under the diagnostic.
        related.insert(
            0,
            types.DiagnosticRelatedInformation(
                location=types.Location(uri=path_uri(finding.abs_path or finding.path), range=rng), message=rest
            ),
        )
    return types.Diagnostic(
        range=rng,
        message=message,
        severity=SEVERITY.get(finding.severity, types.DiagnosticSeverity.Warning),
        code=finding.code,
        code_description=types.CodeDescription(href=rule_url(finding.code)),
        source="atenlint",
        related_information=related or None,
        data=diagnostic_data(finding, version),
    )


RULES_URL = "https://github.com/atenlint/atenlint/blob/main/docs/rules.md#"


def rule_url(code: str) -> str:
    """docs/rules.md has one anchor per code (`tests/lsp/test_rules_doc.py` checks it)."""
    return f"{RULES_URL}{code.lower()}"


# `Diagnostic.data`: what the editor echoes back with a code action request. Keyword `class`
# needs the functional form.
DiagnosticData = TypedDict(
    "DiagnosticData",
    {
        "target": str | None,
        "code": str,
        "ops": list[str],
        "call": str | None,
        "module": str | None,
        "capture": str | None,
        "fixes": list[Fix],
        "range": JsonRange,
        "path": str,
        "class": str | None,
        "key": str | None,
        "missing": list[str] | None,
        "version": int | None,
    },
)


def diagnostic_data(finding: Finding, version: int | None = None) -> DiagnosticData:
    """Everything a code action needs, so answering one never re-analyses (a module
    finding's class and missing constructor arguments: the factory stub)."""
    return {
        "target": finding.target,
        "code": finding.code,
        "ops": list(finding.ops),
        "call": finding.call,
        "module": finding.module,
        "capture": finding.capture,
        "fixes": list(finding.fixes),
        "range": finding.range.as_json(),
        "path": finding.abs_path or finding.path,
        "class": finding.data.get("class"),
        "key": finding.data.get("key"),
        "missing": finding.data.get("missing"),
        "version": version,
    }


# -- code actions ----------------------------------------------------------------


# Diagnostic data as a client echoes it back (or the server's own DiagnosticData): JSON,
# read defensively.
EchoedData = Mapping[str, Any]


def code_actions(
    uri: str,
    text: str,
    diagnostics: list[types.Diagnostic],
    only: list[str] | None,
    encoding: Encoding,
    all_diagnostics_data: Sequence[EchoedData],
    request_range: types.Range | None = None,
    known: Sequence[tuple[types.Diagnostic, EchoedData]] | None = None,
    workspace_roots: Sequence[str] = (),
    versioned: bool = False,
) -> list[types.CodeAction]:
    """Quick fixes and ignores for the diagnostics of the request, plus fix-all.
    `versioned` (the client supports `documentChanges`): each edit of this document carries
    the version its diagnostic was computed for, so a client rejects a fix computed before
    an unsaved edit instead of applying it at stale positions.
    `workspace_roots` bound the search for the project's settings, as in the session's
    settings resolver (a pyproject.toml above the workspace is never edited).

    `known` is the server's own (diagnostic, data) for the file: a client that does not
    echo `data` (Vim + ALE, and clients that send no diagnostics at all) gets the actions
    of the server's diagnostics it names, or else of those overlapping the range."""
    source = SourceText(text, uri)
    actions: list[types.CodeAction] = []
    wants = _kinds_filter(only)
    bounds = list(workspace_roots) or project_of(uri)
    for diag, data in diagnostics_for_request(diagnostics, request_range, known or []):
        if wants(types.CodeActionKind.QuickFix):
            ranked = _fix_actions(uri, source, diag, data, encoding) + _ignore_actions(
                uri, source, diag, data, encoding, workspace_roots
            )
            actions.extend(
                stamped(action, uri, data, versioned)
                for _, action in sorted(ranked, key=lambda pair: _ORDER[pair[0]])
                if editable(action, uri, bounds)
            )
    if wants(FIX_ALL_KIND) and only and any(k.startswith("source") for k in only):
        fix_all = fix_all_action(uri, source, all_diagnostics_data, encoding)
        if fix_all is not None and editable(fix_all, uri, bounds):
            first = all_diagnostics_data[0] if all_diagnostics_data else {}
            actions.append(stamped(fix_all, uri, first, versioned))
    return actions


def project_of(uri: str) -> list[str]:
    """Without workspace folders, what bounds a document's quick fixes: its project, as the
    settings resolver finds it (the nearest folder with a project marker), else its folder."""
    path = to_fs_path(uri)
    if not path:
        return []
    folder = os.path.dirname(os.path.abspath(path))
    return [SettingsResolver().project_root(folder) or folder]


def editable(action: types.CodeAction, uri: str, workspace_roots: Sequence[str]) -> bool:
    """Whether the editor may be offered every file the action edits: a fix's location
    came from an analysis of untrusted code (or from data the client echoes), so a file
    outside the workspace folders, reached through a link that leaves them, or not a
    regular file is never edited (`fixes.safe_write.editor_refusal`, as `--fix` checks
    the paths it was given). An unsaved buffer (no file path) is editable only as the
    request's own document."""
    changes = (action.edit.changes if action.edit is not None else None) or {}
    for edit_uri in changes:
        path = to_fs_path(edit_uri)
        if path is None:
            if edit_uri != uri:
                return False
        elif editor_refusal(os.path.abspath(path), workspace_roots, open_document=edit_uri == uri) is not None:
            return False
    return True


def stamped(action: types.CodeAction, uri: str, data: EchoedData, versioned: bool) -> types.CodeAction:
    """The action's edits as `documentChanges`, this document's stamped with the version
    `data` was computed for (other files, such as pyproject.toml, with none). Unchanged
    when the client takes only `changes`, or the data names no version (an older server's)."""
    version = data.get("version")
    if not versioned or action.edit is None or not action.edit.changes or not isinstance(version, int):
        return action
    document_changes: list[types.TextDocumentEdit] = [
        types.TextDocumentEdit(
            text_document=types.OptionalVersionedTextDocumentIdentifier(
                uri=edit_uri, version=version if edit_uri == uri else None
            ),
            edits=list(edits),
        )
        for edit_uri, edits in action.edit.changes.items()
    ]
    action.edit = types.WorkspaceEdit(document_changes=document_changes)
    return action


def diagnostics_for_request(
    diagnostics: Sequence[types.Diagnostic],
    request_range: types.Range | None,
    known: Sequence[tuple[types.Diagnostic, EchoedData]],
) -> list[tuple[types.Diagnostic, EchoedData]]:
    """(diagnostic, data) pairs the request is about: echoed data first; else the server's
    own diagnostic with the same code and range; else every one of ours the range touches."""
    pairs: list[tuple[types.Diagnostic, EchoedData]] = []
    unmatched = False
    for diag in diagnostics:
        if diag.source not in (None, "atenlint"):
            continue
        if isinstance(diag.data, dict) and diag.data.get("code"):
            pairs.append((diag, diag.data))
            continue
        same = [(d, data) for d, data in known if _code_of(d) == _code_of(diag) and d.range == diag.range] or [
            (d, data)
            for d, data in known
            if _code_of(d) == _code_of(diag) and d.range.start.line == diag.range.start.line
        ]
        if same:
            pairs.extend((diag, data) for _, data in same[:1])
        else:
            unmatched = True
    if not pairs and request_range is not None and (unmatched or not diagnostics):
        pairs = [(d, data) for d, data in known if _touches(d.range, request_range)]
    return pairs


def _code_of(diag: types.Diagnostic) -> str | None:
    code = diag.code
    return str(code) if code is not None else None


def _touches(a: types.Range, b: types.Range) -> bool:
    a_start, a_end = (a.start.line, a.start.character), (a.end.line, a.end.character)
    b_start, b_end = (b.start.line, b.start.character), (b.end.line, b.end.character)
    return a_start <= b_end and b_start <= a_end


# Menu order: rewrites you can apply blindly, then conditional ones, then ignores, then
# remedies that change no code the lint looks at (silencing the runtime warning).
_ORDER = {"preferred": 0, "rewrite": 1, "ignore": 2, "suppress": 3, "other": 4}


def is_preferred_fix(fix: Mapping[str, Any]) -> bool:
    """Preferred (applied by "auto fix"): an exact rewrite that holds whatever the inputs."""
    return bool(fix.get("exact")) and fix.get("kind", "rewrite") == "rewrite" and fix.get("safe", True) is not False


def _kinds_filter(only: list[str] | None) -> Callable[[str], bool]:
    if not only:
        return lambda kind: kind != FIX_ALL_KIND
    return lambda kind: any(kind == k or kind.startswith(f"{k}.") for k in only)


def _edit(uri: str, edits: list[types.TextEdit]) -> types.WorkspaceEdit:
    return types.WorkspaceEdit(changes={uri: edits})


def _text_edit(fix_edit: Mapping[str, Any], source: SourceText, encoding: Encoding) -> types.TextEdit:
    rng = Range.from_json(fix_edit["range"])
    return types.TextEdit(range=encoding.to_client(rng, source), new_text=fix_edit["newText"])


def _fix_actions(
    uri: str, source: SourceText, diag: types.Diagnostic, data: EchoedData, encoding: Encoding
) -> list[tuple[str, types.CodeAction]]:
    actions = []
    path = data.get("path")
    for fix in data.get("fixes") or []:
        edits = fix.get("edits") or []
        if not edits:
            continue  # an explanation, not an edit: the hover shows it
        by_file: dict[str, list[types.TextEdit]] = {}
        for edit in edits:
            target = edit.get("path") or path
            edit_uri = uri if not target or os.path.abspath(target) == os.path.abspath(path or "") else path_uri(target)
            by_file.setdefault(edit_uri, []).append(
                _text_edit(edit, source, encoding)
                if edit_uri == uri
                else types.TextEdit(range=_plain_range(edit["range"]), new_text=edit["newText"])
            )
        action = types.CodeAction(
            title=fix.get("title", "Apply atenlint fix"),
            kind=types.CodeActionKind.QuickFix,
            diagnostics=[diag],
            is_preferred=is_preferred_fix(fix),
            edit=types.WorkspaceEdit(changes=by_file) if by_file else None,
        )
        rank = (
            "preferred" if action.is_preferred else "rewrite" if fix.get("kind", "rewrite") == "rewrite" else "suppress"
        )
        actions.append((rank, action))
    return actions


def _plain_range(data: Mapping[str, Any]) -> types.Range:
    return types.Range(types.Position(**data["start"]), types.Position(**data["end"]))


def _ignore_actions(
    uri: str,
    source: SourceText,
    diag: types.Diagnostic,
    data: EchoedData,
    encoding: Encoding,
    workspace_roots: Sequence[str] = (),
) -> list[tuple[str, types.CodeAction]]:
    actions = []
    ops = data.get("ops") or []
    target = data.get("target")
    if ops and target:
        label = ", ".join(ops)
        line = Range.from_json(data["range"]).start.line
        edit = ignore_comment_edit(source, line, ops)
        actions.append(
            (
                "ignore",
                types.CodeAction(
                    title=f"Ignore {label} on this line",
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[diag],
                    edit=_edit(uri, [types.TextEdit(range=encoding.to_client(edit[0], source), new_text=edit[1])]),
                ),
            )
        )
        project_edit = ignore_in_project_edit(data.get("path"), target, ops, workspace_roots)
        if project_edit is not None:
            pyproject, rng, new_text = project_edit
            actions.append(
                (
                    "ignore",
                    types.CodeAction(
                        title=f"Ignore {label} for target {target} in this project",
                        kind=types.CodeActionKind.QuickFix,
                        diagnostics=[diag],
                        edit=_edit(path_uri(pyproject), [types.TextEdit(range=_plain_range(rng), new_text=new_text)]),
                    ),
                )
            )
    if data.get("code") == "ATL003" and data.get("class"):
        stub = factory_stub_edit(source, data)
        if stub is not None:
            actions.append(
                (
                    "other",
                    types.CodeAction(
                        title=f"Add a factory for `{data['class']}`",
                        kind=types.CodeActionKind.QuickFix,
                        diagnostics=[diag],
                        edit=_edit(uri, [types.TextEdit(range=encoding.to_client(stub[0], source), new_text=stub[1])]),
                    ),
                )
            )
    return actions


_IGNORE_COMMENT = re.compile(r"#\s*atenlint:\s*ignore\[(?P<items>[^\]]*)\]")


def ignore_comment_edit(source: SourceText, line: int, ops: list[str]) -> tuple[Range, str]:
    """`# atenlint: ignore[aten::X]` at the end of the line, merged into an existing one."""
    text = source.line_text(line)
    existing = _IGNORE_COMMENT.search(text)
    if existing:
        items = [i.strip() for i in existing["items"].split(",") if i.strip()]
        merged = items + [op for op in ops if op not in items]
        start = source.utf16_from_char(line, existing.start())
        end = source.utf16_from_char(line, existing.end())
        return Range(Position(line, start), Position(line, end)), f"# atenlint: ignore[{', '.join(merged)}]"
    end = source.utf16_from_char(line, len(text))
    return Range(Position(line, end), Position(line, end)), f"  # atenlint: ignore[{', '.join(ops)}]"


def ignore_in_project_edit(
    path: str | None, target: str, ops: list[str], workspace_roots: Sequence[str] = ()
) -> tuple[str, JsonRange, str] | None:
    """An edit adding the ops to `ignore` in the `[tool.atenlint]` settings that apply to `path`:
    the config file the settings resolver reads, or the project root's pyproject.toml (tomlkit,
    format-preserving; see atenlint.pyproject_edit).

    Computing it reads and rewrites the project's TOML (about 10 ms, most of a code action
    request); an editor asks at every cursor move, so the edit is kept while nothing it was
    read from changed (`_project_stamp`)."""
    if not path:
        return None
    key = (os.path.abspath(path), target, tuple(ops), tuple(workspace_roots))
    stamp = _project_stamp(key[0])
    kept = _PROJECT_EDITS.get(key)
    if kept is not None and kept[0] == stamp:
        return kept[1]
    edit = ignore_ops_edit(path, target, ops, workspace_roots)
    answer = None if edit is None else (edit.path, edit.range.as_json(), edit.new_text)
    if len(_PROJECT_EDITS) >= _PROJECT_EDITS_KEPT:
        _PROJECT_EDITS.pop(next(iter(_PROJECT_EDITS)))
    _PROJECT_EDITS[key] = (stamp, answer)
    return answer


ProjectStamp = tuple[tuple[int, int, int, int] | None, ...]
_PROJECT_EDITS: dict[
    tuple[str, str, tuple[str, ...], tuple[str, ...]], tuple[ProjectStamp, tuple[str, JsonRange, str] | None]
] = {}
_PROJECT_EDITS_KEPT = 256


def _project_stamp(path: str) -> ProjectStamp:
    """What the settings resolver reads to find and read `path`'s project settings (in each
    folder above the file: pyproject.toml, setup.py, .git, which mark a project root), as
    stat signatures: any change there (a file written, created, removed) changes it."""
    stamp: list[tuple[int, int, int, int] | None] = []
    folder = os.path.dirname(path)
    while True:
        for marker in ("pyproject.toml", "setup.py", ".git"):
            try:
                found = os.stat(os.path.join(folder, marker))
                stamp.append((found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns))
            except OSError:
                stamp.append(None)
        parent = os.path.dirname(folder)
        if parent == folder:
            return tuple(stamp)
        folder = parent


def factory_stub_edit(source: SourceText, data: EchoedData) -> tuple[Range, str] | None:
    """`# atenlint: init=Class(a=..., b=...)` above the class, for the user to fill in."""
    line = Range.from_json(data["range"]).start.line
    text = source.line_text(line)
    indent = text[: len(text) - len(text.lstrip())]
    missing = data.get("missing") or []
    arguments = ", ".join(f"{name}=..." for name in missing)
    stub = f"{indent}# atenlint: init={data['class']}({arguments})\n"
    first = line
    while first > 0 and source.line_text(first - 1).lstrip().startswith("@"):
        first -= 1
    return Range(Position(first, 0), Position(first, 0)), stub


def fix_all_action(
    uri: str, source: SourceText, diagnostics_data: Sequence[EchoedData], encoding: Encoding
) -> types.CodeAction | None:
    """Every exact rewrite in the file, non-overlapping, in one edit."""
    chosen: list[Mapping[str, Any]] = []
    taken: list[Range] = []
    for data in diagnostics_data:
        here = os.path.abspath(data.get("path") or "")
        for fix in data.get("fixes") or []:
            if not is_preferred_fix(fix) or any(
                e.get("path") and os.path.abspath(e["path"]) != here for e in fix.get("edits", [])
            ):
                continue  # an edit of another file is offered with its own diagnostic, never in this one
            ranges = [Range.from_json(e["range"]) for e in fix.get("edits", [])]
            if any(_overlaps(r, t) for r in ranges for t in taken if r != t):
                continue
            taken.extend(ranges)
            chosen.extend(fix.get("edits", []))
            break
    if not chosen:
        return None
    unique = []
    for edit in chosen:
        if edit not in unique:
            unique.append(edit)
    return types.CodeAction(
        title="atenlint: apply every exact fix",
        kind=FIX_ALL_KIND,
        edit=_edit(uri, [_text_edit(e, source, encoding) for e in unique]),
    )


def _overlaps(a: Range, b: Range) -> bool:
    a_start, a_end = (a.start.line, a.start.character), (a.end.line, a.end.character)
    b_start, b_end = (b.start.line, b.start.character), (b.end.line, b.end.character)
    return a_start < b_end and b_start < a_end


# -- hover -------------------------------------------------------------------------


def hover_markdown(
    site: CallSite, torch_version: str, notes: Sequence[str] | None = None, markdown: bool = True
) -> str:
    """The call, its overloads, each target's verdict once (in full: the diagnostic shows only
    its headline), and advice that is not already in a verdict. `markdown=False` for clients
    that render plain text (no literal backticks or asterisks)."""
    lines = [f"**`{site.call}`** → " + ", ".join(f"`{op}`" for op in site.ops)]
    reached = [op for op in site.reached if op not in site.ops]
    if reached:
        lines += ["", "reaches " + ", ".join(f"`{op}`" for op in reached[:12]) + (" …" if len(reached) > 12 else "")]
    supported: list[str] = []
    verdicts: list[str] = []
    for target, verdict in sorted(site.verdicts.items()):
        if verdict.status == SUPPORTED:
            supported.append(target)
        elif verdict.status == CONDITIONAL:
            verdicts.append(f"**{target}**: may fall back ({', '.join(verdict.ops)}) on a path chosen at run time")
        else:
            verdicts.append(f"**{target}**: {verdict.message}")
    for said_of_target in verdicts:
        lines += ["", said_of_target]
    if supported:
        lines += ["", "Runs on " + ", ".join(f"**{t}**" for t in supported) + "."]
    said = " ".join(verdicts)
    extra = []
    for note in notes or []:
        if note and note not in extra and note[:60] not in said:
            extra.append(note)
    for note in extra:
        lines += ["", f"> {note}"]
    lines += ["", f"_torch {torch_version}, {site.capture} capture_"]
    text = "\n".join(lines)
    return text if markdown else plain_text(text)


def plain_text(markdown: str) -> str:
    """Markdown markers a plain-text client would show literally, removed."""
    text = re.sub(r"\*\*(.+?)\*\*", r"\1", markdown)
    text = re.sub(r"(?<![\w])_(.+?)_(?![\w])", r"\1", text)
    text = text.replace("`", "")
    return re.sub(r"^> ", "", text, flags=re.MULTILINE)
