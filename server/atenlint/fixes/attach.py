"""Findings -> the fixes the catalog offers for them, as JSON-able edits.

A rewrite is offered only when everything it depends on is known: the call resolves to
one of the entry's functions, methods or module classes; its arguments bind; every
condition holds; an argument written twice by the template is a plain name or attribute
(never a call evaluated twice); no comment would be lost; and the edited statement parses
to exactly the original one with the call replaced (an import is a line of its own).
Anything less, and the finding simply has no rewrite.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable, Iterable
from typing import Protocol

from ..config import ConfigError, Settings, SettingsResolver
from ..finding_data import Fix
from ..findings import Finding
from ..python_parse import parse_module
from ..sourcetext import SourceText, SpannedNode
from .callsite import Bound, CallSite, FileContext, call_site, is_pure, parent
from .catalog import REMEDIES, REWRITES
from .conditions import CHECKS, DERIVATIONS, Context
from .edits import TextEdit, apply_edits, text_fingerprint
from .imports import import_edit, import_statement
from .model import MODULES, SUPPRESS, Entry, Remedy, Rewrite, offered_in, placeholders
from .remedies import BUILDERS
from .template import RenderError, Value, expand_optional, parse_value, render, trimmed_edit

CPU_DIRECTIVE_REMARK = "runs on the CPU on purpose"


class _Refused(Exception):
    """This entry cannot be offered for this call (the message says why, for logs and tests)."""


class SourceLookup(Protocol):
    """The engine's SourceCache, as far as fixes read it."""

    def get(self, path: str) -> SourceText | None: ...


FindingsByLine = dict[tuple[str, int], list[Finding]]  # (abs_path, 0-based line) -> target findings there


def attach_fixes(
    findings: list[Finding],
    sources: SourceLookup,
    resolver: SettingsResolver | None = None,
    log: Callable[[str], None] | None = None,
) -> list[Finding]:
    """Set `finding.fixes` for every finding (and return the list). `sources` is the
    engine's SourceCache (`get(path) -> SourceText`); `resolver` gives each file's settings."""
    files: dict[str, FileContext | None] = {}
    fingerprints: dict[str, str] = {}
    by_line: FindingsByLine = {}
    for finding in findings:
        if finding.target and finding.abs_path:
            for line in {finding.range.start.line, finding.range.end.line}:
                by_line.setdefault((finding.abs_path, line), []).append(finding)
    for finding in findings:
        finding.fixes = []
        if not finding.target or not finding.abs_path:
            continue
        if finding.abs_path not in files:
            source = sources.get(finding.abs_path)
            files[finding.abs_path] = FileContext.build(source) if source is not None else None
        file = files[finding.abs_path]
        settings = _settings(resolver, finding.abs_path)
        finding.fixes = fixes_for(finding, file, settings, by_line, log)
        if finding.fixes and file is not None:
            if finding.abs_path not in fingerprints:
                fingerprints[finding.abs_path] = text_fingerprint(file.text)
            # What the edits were computed on: --fix and editors skip a file edited since.
            finding.data["text_sha256"] = fingerprints[finding.abs_path]
    return findings


def _settings(resolver: SettingsResolver | None, path: str) -> Settings | None:
    if resolver is None:
        return None
    try:
        return resolver.for_file(path)
    except ConfigError:  # reported as ATL010 elsewhere; fixes use the defaults
        return None


def fixes_for(
    finding: Finding,
    file: FileContext | None,
    settings: Settings | None = None,
    by_line: FindingsByLine | None = None,
    log: Callable[[str], None] | None = None,
) -> list[Fix]:
    out: list[Fix] = []
    entries: tuple[Entry, ...] = (*REWRITES, *REMEDIES)
    for entry in entries:
        # Also for findings on a path the library picks at run time: a rewrite computes the
        # same thing whichever path is taken.
        if not matches(entry, finding):
            continue
        try:
            if isinstance(entry, Remedy):
                built = BUILDERS[entry.builder](entry, finding, file, settings)
            else:
                built = build_rewrite(entry, finding, file, by_line or {})
        except _Refused:
            continue
        except Exception as error:  # noqa: BLE001 - a bug here must cost a fix, never the analysis
            if log is not None:
                log(
                    f"fix {entry.id} failed for {finding.path}:{finding.range.start.line + 1}: "
                    f"{type(error).__name__}: {error}"
                )
            continue
        if built is not None:
            out.append(built)
    # Silencing hides the problem and solves nothing: whatever else is offered comes first,
    # in every list (the editor's actions, a notebook's, the JSON's `fixes`).
    out.sort(key=lambda fix: fix.get("kind") == SUPPRESS)
    return out


def explain_refusal(entry: Rewrite, finding: Finding, file: FileContext | None) -> str | None:
    """Why `entry` is not offered for `finding` (None: it is). For tests and debugging."""
    if not matches(entry, finding):
        return "the entry does not apply to this target, torch version or these ops"
    try:
        build_rewrite(entry, finding, file, {})
    except _Refused as refused:
        return str(refused)
    return None


def target_matches(targets: Iterable[str], target: str | None) -> bool:
    """`onnx` in an entry covers the finding targets `onnx` and `onnx:17`."""
    return target is not None and any(target == t or target.startswith(f"{t}:") for t in targets)


def matches(entry: Entry, finding: Finding) -> bool:
    if finding.target is None or not target_matches(entry.targets, finding.target):
        return False
    if not offered_in(entry, finding.target, finding.data.get("torch", "")):
        return False
    if isinstance(entry, Remedy):
        return finding.code in entry.codes
    return bool(finding.ops) and all(op in entry.ops for op in finding.ops)


# -- rewrites ---------------------------------------------------------------------------


def build_rewrite(entry: Rewrite, finding: Finding, file: FileContext | None, by_line: FindingsByLine) -> Fix:
    if file is None:
        raise _Refused("the file does not parse")
    call = file.call_at(finding.range)
    if call is None:
        raise _Refused("no call expression at the finding's range")
    site = call_site(file, call)
    if site is None:
        raise _Refused("what this call calls cannot be known from the file")
    if not _form_matches(entry, site):
        raise _Refused(f"the call is {site.form} {site.name}, which the entry does not cover")
    if site.form != "module" and not _op_called_here(finding):
        raise _Refused("the op is called inside a library function this call reaches, not by the call itself")
    bound = site.bind(entry.parsed_signature, entry.parsed_module_signature)
    if bound is None:
        raise _Refused("the arguments cannot be bound statically")
    context = Context(site, bound, finding.data)
    for condition in entry.when:
        reason = CHECKS[condition.check](context, *condition.args)
        if reason is not None:
            raise _Refused(f"condition {condition} does not hold: {reason}")
    derived: dict[str, Value] = {}
    for name, derivation in entry.derive.items():
        text = DERIVATIONS[derivation](context)
        if text is None:
            raise _Refused(f"{derivation} cannot be computed here (shapes unknown or not dividing)")
        derived[name] = Value(text, parse_value(text))
    modules, imports = _spell_modules(entry, site)
    if entry.template is not None:
        node, edits, new_node_text = _template_edits(entry, site, bound, derived, modules)
    else:
        node, edits, new_node_text = _wrap_edits(entry, site, bound, modules)
    import_edits = [import_edit(file.tree, file.index, import_statement(m)) for m in imports]
    edits = _verified(file, node, edits, new_node_text, import_edits)
    if entry.runs_on_cpu:
        edits.append(_cpu_directive(file, finding, edits, by_line))
    only_while = _only_while(entry, derived)
    title = f"{entry.title}: `{_preview(new_node_text)}`"
    return {
        "id": entry.id,
        "title": f"{title} ({only_while})" if only_while else title,
        "kind": entry.kind,
        "exact": entry.exact,
        "approximation": entry.approximation,
        # False: right only while `condition` holds (never preferred; --fix needs --unsafe-fixes).
        "safe": only_while is None,
        "condition": only_while,
        "edits": [edit.as_json(file.index) for edit in import_edits + edits],
        "description": _description(entry) + (f" Only right {only_while}." if only_while else ""),
    }


def _only_while(entry: Rewrite, derived: dict[str, Value]) -> str | None:
    if not entry.only_while:
        return None
    text = entry.only_while
    for name in placeholders(text):
        text = text.replace("{" + name + "}", derived[name].text)
    return text


def _form_matches(entry: Rewrite, site: CallSite) -> bool:
    return (
        (site.form == "function" and site.name in entry.functions)
        or (site.form == "method" and site.name in entry.methods)
        or (site.form == "module" and site.name in entry.modules)
    )


def _op_called_here(finding: Finding) -> bool:
    """A function or method call reaches the op itself, or through torch's own Python
    (F.interpolate is functional.py): not through some other library's wrapper of the
    same name."""
    for related in finding.related or []:
        path = related.get("path") or ""
        if f"{os.sep}torch{os.sep}" not in path:
            return False
    return True


def _spell_modules(entry: Rewrite, site: CallSite) -> tuple[dict[str, Value], list[str]]:
    texts = [entry.template or "", entry.suffix, *entry.wrap.values()]
    wanted = {name for text in texts for name in placeholders(text) if name in MODULES}
    spelled: dict[str, Value] = {}
    imports: list[str] = []
    for name in sorted(wanted):
        module = MODULES[name]
        spelling = site.file.bindings.spell(module, site.shadowed, _head(site))
        if spelling is None:
            root = module.split(".")[0]
            if root in site.shadowed or root in site.file.bindings.other:
                raise _Refused(f"`{root}` is rebound here, so `{module}` cannot be named")
            if root not in imports and site.file.bindings.spell(root, site.shadowed) is None:
                imports.append(root)
            spelling = module
        spelled[name] = Value(spelling)
    return spelled, imports


def _head(site: CallSite) -> str | None:
    """The first name of the call as written (`th` in `th.heaviside(x, v)`)."""
    node = site.node.func
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _argument_values(bound: Bound) -> dict[str, Value]:
    return {name: Value(argument.text, argument.node) for name, argument in bound.items()}


def _require_pure(texts: list[str], bound: Bound) -> None:
    counts: dict[str, int] = {}
    for text in texts:
        for name in placeholders(text):
            counts[name] = counts.get(name, 0) + 1
    for name, count in counts.items():
        argument = bound.get(name)
        if count > 1 and argument is not None and argument.given and not is_pure(argument.node):
            raise _Refused(
                f"`{argument.text}` would be written {count} times; it is not a plain name "
                f"or attribute, so that would compute it {count} times"
            )


def _template_edits(
    entry: Rewrite, site: CallSite, bound: Bound, derived: dict[str, Value], modules: dict[str, Value]
) -> tuple[ast.expr, list[TextEdit], str]:
    given = {name for name, argument in bound.items() if argument.given}
    template = expand_optional(entry.template or "", given)
    _require_pure([template], bound)
    values = {**_argument_values(bound), **derived, **modules}
    try:
        new_text = render(template, values)
    except RenderError as error:
        raise _Refused(str(error)) from None
    file = site.file
    start, end = file.offsets(site.node)
    old_text = file.text[start:end]
    head, tail, piece = trimmed_edit(old_text, new_text)
    replaced = (start + head, start + tail)
    for comment_start, comment_end in file.comments:
        if replaced[0] <= comment_start < replaced[1] and file.text[comment_start:comment_end] not in piece:
            raise _Refused("the call has a comment the rewrite would drop")
    return site.node, [TextEdit(replaced[0], replaced[1], piece)], new_text


def _wrap_edits(
    entry: Rewrite, site: CallSite, bound: Bound, modules: dict[str, Value]
) -> tuple[ast.expr, list[TextEdit], str]:
    file = site.file
    _require_pure([*entry.wrap.values(), entry.suffix], bound)
    values = {**_argument_values(bound), **modules}
    edits: list[TextEdit] = []
    for name, template in entry.wrap.items():
        argument = bound[name]
        if not argument.given:
            raise _Refused(f"`{name}` is not written in the call")
        try:
            wrapped = render(template, values)
        except RenderError as error:
            raise _Refused(str(error)) from None
        head, tail, piece = trimmed_edit(argument.text, wrapped)
        edits.append(TextEdit(argument.start + head, argument.start + tail, piece))
    for name in entry.drop:
        edits.append(_drop_edit(site, bound, name))
    node: ast.expr = site.node
    if entry.suffix:
        if entry.fields:
            node = _field_access(site.node, entry.fields)
        start, end = file.offsets(node)
        node_text = file.text[start:end]
        try:
            rendered = render("{_atenlint_node}" + entry.suffix, {**values, "_atenlint_node": Value(node_text, node)})
        except RenderError as error:
            raise _Refused(str(error)) from None
        if not rendered.startswith(node_text):
            raise _Refused("the suffix cannot follow the call as written")
        edits.append(TextEdit(end, end, rendered[len(node_text) :]))
    start, end = file.offsets(node)
    local = [TextEdit(e.start - start, e.end - start, e.new_text) for e in edits]
    return node, edits, apply_edits(file.text[start:end], local)


def _field_access(call: ast.Call, fields: tuple[str, ...]) -> ast.expr:
    """`torch.linalg.eigh(A).eigenvalues` or `torch.mode(x)[0]`: the access that takes one
    tensor out of a call returning several."""
    outer = parent(call)
    if isinstance(outer, ast.Attribute) and outer.value is call and outer.attr in fields:
        return outer
    if (
        isinstance(outer, ast.Subscript)
        and outer.value is call
        and isinstance(outer.slice, ast.Constant)
        and isinstance(outer.slice.value, int)
        and not isinstance(outer.slice.value, bool)
    ):
        return outer
    raise _Refused(
        f"the call returns several tensors and none of them is taken right here (`.{fields[0]}`, `[0]`, ...)"
    )


def _drop_edit(site: CallSite, bound: Bound, name: str) -> TextEdit:
    """Delete `name=...` with the comma that separates it (only a keyword can be dropped)."""
    file = site.file
    argument = bound[name]
    keyword = next((k for k in site.node.keywords if k.arg == name), None)
    if keyword is None or not argument.given:
        raise _Refused(f"`{name}` is not written as a keyword argument")
    written: list[ast.expr | ast.keyword] = [*site.node.args, *site.node.keywords]
    items = sorted(written, key=lambda n: (n.lineno, n.col_offset))
    index = next(i for i, item in enumerate(items) if item is keyword)
    key_start, key_end = file.offsets(keyword)
    if index > 0:
        start, end = file.offsets(items[index - 1])[1], key_end  # ", name=value"
    elif len(items) > 1:
        start, end = key_start, file.offsets(items[1])[0]  # "name=value, "
    else:
        start, end = key_start, key_end
    for comment_start, _ in file.comments:
        if start <= comment_start < end:
            raise _Refused(f"a comment sits in `{name}=`'s place")
    return TextEdit(start, end, "")


def _verified(
    file: FileContext, node: ast.expr, edits: list[TextEdit], new_node_text: str, import_edits: list[TextEdit]
) -> list[TextEdit]:
    """The edits, once the edited code is proven to parse to the original statement with
    `node` replaced by the new expression; else parenthesised once more; else refused.

    Only the top-level statement holding the call is re-parsed: the text around it is
    untouched, and a top-level statement parses the same alone as in its file. Imports are
    whole lines inserted between top-level statements."""
    for edit in import_edits:
        inserted = parse_module(edit.new_text).body
        if len(inserted) != 1 or not isinstance(inserted[0], (ast.Import, ast.ImportFrom)):
            raise _Refused("the import would not be one statement")
    expected_node = parse_value(new_node_text)
    if expected_node is None:
        raise _Refused("the replacement does not parse")
    top = _top_statement(node)
    expected = _dump_swapped(node, expected_node, top)
    decorators = top.decorator_list if isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else []
    spanned: list[SpannedNode] = [top, *decorators]
    first = min(spanned, key=lambda n: (n.lineno, n.col_offset))
    span_start, span_end = file.offsets(first)[0], file.offsets(top)[1]
    node_start, node_end = file.offsets(node)
    for attempt in (edits, [TextEdit(node_start, node_end, f"({new_node_text})")]):
        if any(e.start < span_start or e.end > span_end for e in attempt):
            raise _Refused("an edit would leave the statement it belongs to")
        local = [TextEdit(e.start - span_start, e.end - span_start, e.new_text) for e in attempt]
        try:
            statements = parse_module(apply_edits(file.text[span_start:span_end], local)).body
        except (SyntaxError, ValueError):
            continue
        if len(statements) == 1 and ast.dump(statements[0]) == expected:
            return list(attempt)
    raise _Refused("the rewritten code would not parse to the intended code")


def _top_statement(node: ast.AST) -> ast.stmt:
    current, above = node, parent(node)
    while above is not None and not isinstance(above, ast.Module):
        current, above = above, parent(above)
    if not isinstance(current, ast.stmt):
        raise _Refused("the call is not inside a statement")
    return current


def _dump_swapped(node: ast.AST, replacement: ast.expr, top: ast.AST) -> str:
    """`ast.dump(top)` as if `node` were `replacement` (the private tree is restored)."""
    holder = parent(node)
    if holder is None:
        raise _Refused("the call has no enclosing node")
    swapped: list[tuple[str, int | None]] = []
    for field, value in ast.iter_fields(holder):
        if value is node:
            setattr(holder, field, replacement)
            swapped.append((field, None))
        elif isinstance(value, list) and any(item is node for item in value):
            position = next(i for i, item in enumerate(value) if item is node)
            value[position] = replacement
            swapped.append((field, position))
    try:
        return ast.dump(top)
    finally:
        for field, place in swapped:
            if place is None:
                setattr(holder, field, node)
            else:
                getattr(holder, field)[place] = node


def _cpu_directive(file: FileContext, finding: Finding, edits: list[TextEdit], by_line: FindingsByLine) -> TextEdit:
    """`# atenlint: ignore[MPS001] runs on the CPU on purpose` at the end of the call's first
    line: after an explicit round trip the op no longer falls back, but the capture still
    sees it. Refused when another finding with the same code shares the line (it would be
    hidden too)."""
    line = finding.range.start.line
    for other in by_line.get((finding.abs_path, line), []):
        if (
            other is not finding
            and other.target == finding.target
            and other.code == finding.code
            and other.range != finding.range
        ):
            raise _Refused(f"another {finding.code} finding on this line would be silenced too")
    line_start = file.index.starts[line]
    line_end = line_start + len(file.index.line_text(line))
    if any(e.start < line_end < e.end for e in edits):
        raise _Refused("the rewrite replaces the end of the call's first line")
    comments = [span for span in file.comments if line_start <= span[0] < line_end]
    existing = file.text[comments[-1][0] : comments[-1][1]] if comments else ""
    match = re.search(r"#\s*atenlint:\s*ignore(\[(?P<items>[^\]]*)\])?", existing)
    if match and match.group("items") is None:
        raise _Refused("the line already ignores every finding")
    if match:
        items = [i.strip() for i in match.group("items").split(",") if i.strip()]
        if finding.code in items:
            raise _Refused("the line already ignores this code")
        start = comments[-1][0] + match.start("items")
        edit = TextEdit(start, start + len(match.group("items")), ", ".join(items + [finding.code]))
    else:
        # Only where a comment can end the physical line: not after a backslash, not inside
        # a string that continues on the next line.
        if file.text[line_start:line_end].rstrip().endswith("\\"):
            raise _Refused("the call's line continues with a backslash")
        if any(start < line_end < end for start, end in file.multiline_strings):
            raise _Refused("the call's line ends inside a string")
        edit = TextEdit(line_end, line_end, f"  # atenlint: ignore[{finding.code}] {CPU_DIRECTIVE_REMARK}")
    return edit


def _preview(text: str, limit: int = 72) -> str:
    flat = re.sub(r"\s+", " ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _description(entry: Rewrite) -> str:
    exactness = (
        "Exact: the same result to floating-point round-off." if entry.exact else f"Approximate: {entry.approximation}"
    )
    return f"{entry.why[0].upper()}{entry.why[1:]}. {exactness} Checked by atenlint's tests: {entry.equivalence}."
