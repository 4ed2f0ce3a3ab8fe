"""Edits to a project's `[tool.atenlint]` settings, format-preserving (tomlkit).

The file edited is the one the settings resolver reads for that source file: the
pyproject.toml holding `[tool.atenlint]` that applies to it, or, when the project has no
such table yet, the pyproject.toml at the project's root, where the table is then created
on purpose. Never a nearer or farther pyproject.toml the resolver does not read (in a
monorepo, that would start a new `[tool.atenlint]` table with the default targets for the
files below it).

Comments, inline tables, dotted keys and the user's layout are kept; an edit that would not
leave valid settings with everything but `ignore` unchanged is not offered.

Pure apart from reading the file: no pygls, no torch.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .bounded_read import NotRegularFile, read_regular_file
from .config import ConfigError, SettingsResolver, settings_from_table
from .sourcetext import Position, Range

if TYPE_CHECKING:  # tomlkit is imported by the first edit, not by the server's start (initialize)
    import tomlkit
    from tomlkit.items import Array, InlineTable, Table

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

_MAX_PYPROJECT_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class PyprojectEdit:
    path: str  # the pyproject.toml to change
    range: Range  # what to replace in its current text (characters in UTF-16 code units, as LSP's default)
    new_text: str
    creates_table: bool  # the project had no [tool.atenlint] table: this edit starts one


def config_file_for(path: str, workspace_roots: Sequence[str] = ()) -> tuple[str | None, bool]:
    """(the pyproject.toml that holds the settings for `path`, whether it already has
    `[tool.atenlint]`), as the settings resolver sees it; (None, False) when the project has none
    or its settings cannot be read."""
    try:
        settings = SettingsResolver(workspace_roots=list(workspace_roots)).for_file(path)
    except ConfigError:
        return None, False
    if settings.config_path is not None:
        return settings.config_path, True
    if settings.project_root is not None:
        candidate = os.path.join(settings.project_root, "pyproject.toml")
        if os.path.isfile(candidate):
            return candidate, False
    return None, False


def ignore_ops_edit(
    path: str | None, target: str, ops: Sequence[str], workspace_roots: Sequence[str] = ()
) -> PyprojectEdit | None:
    """The edit adding `ops` to `ignore` for `target` in the settings that apply to source file
    `path`; None when there is no project file to edit, nothing to add, or the file cannot be
    edited safely (unreadable, invalid TOML, a value of an unexpected type)."""
    if not path or not ops:
        return None
    pyproject, has_table = config_file_for(os.path.abspath(path), workspace_roots)
    if pyproject is None:
        return None
    text = _read_text(pyproject)
    if text is None:
        return None
    import tomlkit
    import tomlkit.exceptions

    try:
        document = tomlkit.parse(text)
        changed = _add_ignores(document, target, list(dict.fromkeys(ops)))
        new_text = tomlkit.dumps(document)
    except (tomlkit.exceptions.TOMLKitError, ValueError, TypeError, KeyError):
        return None
    if not changed or new_text == text or not _same_settings_but_ignore(text, new_text, pyproject):
        return None
    return PyprojectEdit(
        pyproject, _changed_range(text, new_text), _changed_text(text, new_text), creates_table=not has_table
    )


def _read_text(path: str) -> str | None:
    try:
        return read_regular_file(path, _MAX_PYPROJECT_BYTES).decode("utf-8")
    except (NotRegularFile, OSError, UnicodeDecodeError):
        return None


def _add_ignores(document: tomlkit.TOMLDocument, target: str, ops: list[str]) -> bool:
    """Adds the ops in place; False when they are all there already."""
    from tomlkit.items import InlineTable, Table

    tool = _child_table(document, "tool", super_table=True)
    atenlint = _child_table(tool, "atenlint", super_table=True)
    had_target = isinstance(atenlint.get("ignore"), (Table, InlineTable)) and target in atenlint["ignore"]
    changed = _add_to_atenlint(atenlint, target, ops)
    if had_target:
        return changed  # a list grew: no key was added to any table
    # tomlkit adds a key to an inline table with no space after the comma: the outermost inline
    # table of the chain is rebuilt, so it reads as a person writes it (comments are kept).
    for parent, key in ((document, "tool"), (tool, "atenlint"), (atenlint, "ignore")):
        item = parent.get(key)
        if isinstance(item, InlineTable):
            parent[key] = _rebuilt(item)
            break
    return changed


def _add_to_atenlint(atenlint: Any, target: str, ops: list[str]) -> bool:
    import tomlkit
    from tomlkit.items import Array, InlineTable, Table

    ignore = atenlint.get("ignore")
    if ignore is None:
        entries = tomlkit.inline_table() if isinstance(atenlint, InlineTable) else tomlkit.table()
        entries[target] = _array(ops)
        atenlint["ignore"] = entries
        return True
    if not isinstance(ignore, (Table, InlineTable)):
        raise TypeError("ignore is not a table")
    existing = ignore.get(target)
    if existing is None:
        ignore[target] = _array(ops)
        return True
    if isinstance(existing, str):  # a lone name, which the settings refuse: made the list it meant
        ignore[target] = _array([str(existing), *[op for op in ops if op != existing]])
        return True
    if not isinstance(existing, Array) or not all(isinstance(item, str) for item in existing):
        raise TypeError(f"ignore.{target} is not a list of names")
    missing = [op for op in ops if op not in existing]
    for op in missing:
        existing.append(op)
    return bool(missing)


def _rebuilt(inline: InlineTable) -> InlineTable:
    import tomlkit
    from tomlkit.items import InlineTable

    fresh = tomlkit.inline_table()
    for key, value in inline.items():
        fresh[key] = _rebuilt(value) if isinstance(value, InlineTable) else value
    return fresh


def _child_table(parent: Any, key: str, super_table: bool) -> Table | InlineTable | tomlkit.TOMLDocument:
    import tomlkit
    from tomlkit.container import Container
    from tomlkit.items import AoT, InlineTable, Table

    child = parent.get(key)
    if child is None:
        created = (
            tomlkit.inline_table() if isinstance(parent, InlineTable) else tomlkit.table(is_super_table=super_table)
        )
        parent[key] = created
        return created
    if isinstance(child, (Table, InlineTable, Container)) and not isinstance(child, AoT):
        return child  # type: ignore[return-value]  # a tomlkit Container behaves as a table here
    raise TypeError(f"{key} is not a table")


def _array(ops: list[str]) -> Array:
    import tomlkit

    array = tomlkit.array()
    array.extend(ops)
    return array


def _same_settings_but_ignore(before: str, after: str, where: str) -> bool:
    """The edited file still parses, its settings are valid, and nothing but `ignore` changed."""
    try:
        old = tomllib.loads(before).get("tool", {}).get("atenlint", {})
        new = tomllib.loads(after).get("tool", {}).get("atenlint")
    except (tomllib.TOMLDecodeError, AttributeError):
        return False
    if not isinstance(new, dict) or not isinstance(old, dict):
        return False
    try:
        settings_from_table(new, where)
    except ConfigError:
        return False
    old_rest = {k: v for k, v in old.items() if k != "ignore"}
    new_rest = {k: v for k, v in new.items() if k != "ignore"}
    return old_rest == new_rest


def _common_prefix(a: str, b: str) -> int:
    limit = min(len(a), len(b))
    index = 0
    while index < limit and a[index] == b[index]:
        index += 1
    return index


def _bounds(before: str, after: str) -> tuple[int, int, int]:
    """(start, end in `before`, end in `after`) of the one changed span."""
    start = _common_prefix(before, after)
    # Back to a line start, so the edit replaces whole lines where it can (a tidier undo).
    start = before.rfind("\n", 0, start) + 1
    suffix = _common_prefix(before[start:][::-1], after[start:][::-1])
    end_before, end_after = len(before) - suffix, len(after) - suffix
    # ...and on to the end of its last line (that stretch is in the common suffix of both).
    line_end = before.find("\n", end_before)
    line_end = len(before) if line_end < 0 else line_end - (before[line_end - 1 : line_end] == "\r")
    stretch = max(0, line_end - end_before)
    if end_before > start and before[end_before - 1] == "\n":
        stretch = 0  # the change already ends a line
    return start, end_before + stretch, end_after + stretch


def _changed_range(before: str, after: str) -> Range:
    start, end, _ = _bounds(before, after)
    return Range(_position(before, start), _position(before, end))


def _changed_text(before: str, after: str) -> str:
    start, _, end = _bounds(before, after)
    return after[start:end]


def _position(text: str, offset: int) -> Position:
    line = text.count("\n", 0, offset)
    line_start = text.rfind("\n", 0, offset) + 1
    return Position(line, len(text[line_start:offset].encode("utf-16-le")) // 2)
