"""Example inputs written as `# atenlint: inputs=...` comments: `atenlint check --add-inputs`
and the editor's code action (parent side). What the comment says is read off forward's
signature by `input_hints.py`, which the worker's inferred-input trace reads too.
"""

from __future__ import annotations

import ast

from .config import SettingsResolver
from .discover import import_location, import_names, iter_python_files, outline, read_regular_file
from .input_hints import InputsSuggestion, classes_in, suggest_inputs
from .python_parse import parse_module
from .sourcetext import DecodeError, SourceText, decode_source

__all__ = ["InputsSuggestion", "add_inputs_to_paths", "apply_suggestions", "code_action_edit", "suggest_inputs"]


def apply_suggestions(text: str, suggestions: list[InputsSuggestion]) -> str:
    """The text with each suggestion's comment inserted above its class."""
    lines = text.splitlines(True)
    for suggestion in sorted(suggestions, key=lambda s: s.insert_line, reverse=True):
        lines.insert(suggestion.insert_line, suggestion.comment())
    return "".join(lines)


def classes_with_inputs(text: str) -> set[str]:
    """Classes that already have `inputs=` (or are skipped) in a `# atenlint:` comment."""
    file_outline = outline(SourceText(text, "<text>"))
    return {
        c.qualname
        for c in file_outline.classes
        if "inputs" in c.directives or c.directives.get("skip") or "kwargs" in c.directives
    }


def code_action_edit(text: str, line: int) -> tuple[str, int, str] | None:
    """For the class whose header (decorators, `class` line) or `def forward` line is the
    0-based `line`: (title, insert line, text to insert), or None."""
    suggestions = suggest_inputs(text, classes_with_inputs(text))
    if not suggestions:
        return None
    tree = parse_module(text)
    headers: dict[str, set[int]] = {}
    for qualname, cls in classes_in(tree, ""):
        forward = next(
            (n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "forward"),
            None,
        )
        lines = {cls.lineno - 1} | {d.lineno - 1 for d in cls.decorator_list}
        if forward is not None:
            lines.add(forward.lineno - 1)
        headers[qualname] = lines
    inside = [s for s in suggestions if line in headers.get(s.qualname, ())]
    if not inside:
        return None
    suggestion = inside[-1]
    title = f"Add example inputs for `{suggestion.qualname.split('.')[-1]}` (# atenlint: inputs=...)"
    if suggestion.guessed:
        title += ", shapes guessed: check them"
    return title, suggestion.insert_line, suggestion.comment()


def add_inputs_to_paths(paths: list[str], resolver: SettingsResolver | None = None) -> list[str]:
    """`atenlint check --add-inputs`: write the comments into the files; what was written."""
    files, _ = iter_python_files(paths)
    written = []
    for path in files:
        try:
            text = decode_source(read_regular_file(path))
        except (OSError, DecodeError):
            continue  # unreadable (or no longer a regular file): the check itself reports it
        if "def forward" not in text:
            continue
        skip = classes_with_inputs(text) | _configured(path, resolver)
        suggestions = suggest_inputs(text, skip)
        if not suggestions:
            continue
        with open(path, "w", encoding="utf-8", newline="") as handle:
            handle.write(apply_suggestions(text, suggestions))
        for suggestion in suggestions:
            written.append(
                f"{path}:{suggestion.insert_line + 1}: added `{suggestion.comment().strip()}`"
                + (" (shapes guessed: check them)" if suggestion.guessed else "")
            )
    return written


def _configured(path: str, resolver: SettingsResolver | None) -> set[str]:
    """Classes of the file that pyproject.toml already gives inputs to."""
    if resolver is None:
        return set()
    try:
        settings = resolver.for_file(path)
    except Exception:  # noqa: BLE001 - a bad config is reported by the check itself
        return set()
    module_name, _ = import_location(path, settings.project_root)
    names = import_names(path, module_name, settings.project_root)
    out = set()
    for key, config in settings.modules.items():
        for name in names:
            if key.startswith(name + ".") and (config.inputs or config.kwargs or config.skip):
                out.add(key[len(name) + 1 :])
    return out
