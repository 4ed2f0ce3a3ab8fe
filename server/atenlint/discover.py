"""Files -> the nn.Module candidates they define and the import names they really have.

Pure standard library (no torch, no user code): which files to look at, which classes
might be modules, the `# atenlint:` comments next to them, and where on sys.path a file
must be imported from so that its package-relative and sibling imports work.
"""

from __future__ import annotations

import ast
import fnmatch
import io
import os
import re
import stat
import sys
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass, field

# Reading files is shared with the CLI, the server and the fixes (bounded_read.py); older
# callers import the two names from here.
from .bounded_read import NotRegularFile, file_kind, read_regular_file
from .python_parse import parse_expression
from .sourcetext import Position, Range, SourceText

__all__ = ["NotRegularFile", "read_regular_file"]  # re-exported; the rest is defined here

SKIPPED_DIRS = {
    ".git",
    ".hg",
    ".svn",
    "node_modules",
    "build",
    "dist",
    "__pycache__",
    ".tox",
    ".nox",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".eggs",
    "site-packages",
    ".ipynb_checkpoints",
}
_DIRECTIVE_RE = re.compile(r"#\s*atenlint:\s*(?P<body>.*)$")
# Text after `ignore` / `ignore[...]` is the user's own remark.
_IGNORE_RE = re.compile(r"^ignore(?:\[(?P<items>[^\]]*)\])?(?:\s.*)?$")
# Bases that are certainly not nn.Module; anything else might be (through imports).
_NON_MODULE_BASES = {
    "object",
    "Exception",
    "BaseException",
    "ValueError",
    "RuntimeError",
    "TypeError",
    "KeyError",
    "Enum",
    "IntEnum",
    "StrEnum",
    "Flag",
    "IntFlag",
    "NamedTuple",
    "TypedDict",
    "Protocol",
    "ABC",
    "Generic",
    "dict",
    "list",
    "tuple",
    "set",
    "str",
    "int",
    "float",
    "enum.Enum",
    "abc.ABC",
    "typing.NamedTuple",
    "typing.Protocol",
    "typing.Generic",
}


def is_virtualenv(directory: str) -> bool:
    return os.path.isfile(os.path.join(directory, "pyvenv.cfg")) or os.path.isfile(
        os.path.join(directory, "conda-meta", "history")
    )


def iter_python_files(
    paths: Iterable[str], exclude: Iterable[str] = (), notebooks: bool = False
) -> tuple[list[str], list[tuple[str, str]]]:
    """Expand files and folders into Python files (sorted, no duplicates); also the
    paths that do not exist, with why. `notebooks`: folders also yield `*.ipynb`."""
    suffixes = (".py", ".ipynb") if notebooks else (".py",)
    files: list[str] = []
    errors: list[tuple[str, str]] = []
    patterns = tuple(exclude)
    for path in paths:
        if os.path.isdir(path):
            boundary = os.path.realpath(path)
            linked: list[str] = []  # followed after the walk, so a file's own path wins
            for root, dirs, names in os.walk(path):
                # os.walk lists symlinked folders without entering them; one that stays inside
                # the folder being checked is entered, one that leaves it is not followed.
                kept = []
                for d in sorted(dirs):
                    full = os.path.join(root, d)
                    if d in SKIPPED_DIRS or d.endswith(".egg-info") or is_virtualenv(full) or excluded(full, patterns):
                        continue
                    if os.path.islink(full):
                        if _inside(os.path.realpath(full), boundary):
                            linked.append(full)
                        else:
                            errors.append(
                                (
                                    full,
                                    (f"skipped: a symlink to {os.path.realpath(full)}, outside {path}: not followed"),
                                )
                            )
                        continue
                    kept.append(d)
                dirs[:] = kept
                for name in sorted(names):
                    full = os.path.join(root, name)
                    if not name.endswith(suffixes) or excluded(full, patterns):
                        continue
                    problem = _not_checkable(full, boundary)
                    if problem:
                        errors.append((full, problem))
                    else:
                        files.append(full)
            for folder in linked:
                files.extend(_linked_folder(folder, suffixes, patterns, boundary))
        elif os.path.lexists(path):
            problem = _not_checkable(path, None)
            if problem:
                errors.append((path, problem))
            else:
                files.append(path)
        else:
            errors.append((path, "no such file or directory"))
    seen: set[str] = set()
    unique = []
    for file in files:
        key = os.path.realpath(file)
        if key not in seen:
            seen.add(key)
            unique.append(file)
    return unique, errors


def _inside(real: str, boundary: str) -> bool:
    return real == boundary or real.startswith(boundary.rstrip(os.sep) + os.sep)


def _linked_folder(folder: str, suffixes: tuple[str, ...], patterns: tuple[str, ...], boundary: str) -> list[str]:
    """The files of a symlinked folder that stays inside the checked folder."""
    found = []
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not os.path.islink(os.path.join(root, d)))
        for name in sorted(names):
            full = os.path.join(root, name)
            if name.endswith(suffixes) and not excluded(full, patterns) and not _not_checkable(full, boundary):
                found.append(full)
    return found


def _not_checkable(path: str, boundary: str | None) -> str | None:
    """Why `path` is skipped (a FIFO, a device, a socket, a broken link, a link leaving
    `boundary`), or None for a regular file. Never opens it."""
    if boundary is not None and os.path.islink(path):
        real = os.path.realpath(path)
        if not _inside(real, boundary):
            return f"skipped: a symlink to {real}, outside the folder being checked: not followed"
    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        return f"skipped: cannot read it ({error.strerror or error})"
    if not stat.S_ISREG(mode):
        return f"skipped: not a regular file ({file_kind(mode)}); atenlint reads regular files only"
    return None


def excluded(path: str, patterns: tuple[str, ...]) -> bool:
    normalized = path.replace(os.sep, "/")
    return any(fnmatch.fnmatch(normalized, p) or fnmatch.fnmatch(os.path.basename(path), p) for p in patterns)


def import_location(path: str, project_root: str | None = None) -> tuple[str, list[str]]:
    """The dotted name `path` is imported as, and the sys.path roots it needs.

    Walks up through folders with an __init__.py (so `src/pkg/mod.py` is `pkg.mod` with
    root `src/`); the folder itself (for sibling imports) and the project root and its
    src/ (for absolute imports of the project's own packages) come after.
    """
    path = os.path.abspath(path)
    directory, filename = os.path.split(path)
    stem = filename.removesuffix(".py")
    parts = [] if stem == "__init__" else [stem]
    root = directory
    while os.path.isfile(os.path.join(root, "__init__.py")):
        parts.insert(0, os.path.basename(root))
        root = os.path.dirname(root)
    if project_root and root == directory:
        in_package = _name_below_root(path, stem, project_root)
        if in_package is not None:
            return in_package
    roots = [root]
    if project_root:
        for extra in (project_root, os.path.join(project_root, "src")):
            if os.path.isdir(extra) and extra not in roots:
                roots.append(os.path.abspath(extra))
    return ".".join(parts), roots


def _name_below_root(path: str, stem: str, project_root: str) -> tuple[str, list[str]] | None:
    """The dotted name Python, run from the project root (or its src/), imports a file by
    when its folder has no __init__.py but the file belongs to a package all the same:

    - `mypkg/mypkg.py`: imported as `mypkg` with its folder first on sys.path, it would
      hide the namespace package `mypkg` its own `from mypkg.layers import ...` needs;
    - a file below a regular package (`dinov2/hub/text/x.py`, `dinov2/` and `hub/` with
      an __init__.py): it is part of that package, and its package's `__init__.py` runs;
    - a file with a relative import (`from .tower import Tower`): only a package module
      can make one.

    Its folder comes last on sys.path (a script's sibling imports), unless one of its
    files would hide a namespace package of a root before it. None for any other file:
    a script folder's file keeps its own name and folder (`tools/train.py` is `train`)."""
    for base in (os.path.join(project_root, "src"), project_root):
        base = os.path.abspath(base)
        if not os.path.isdir(base) or not path.startswith(base.rstrip(os.sep) + os.sep):
            continue
        parts = os.path.relpath(path, base)[: -len(".py")].split(os.sep)
        if len(parts) < 2 or not all(part.isidentifier() for part in parts):
            return None
        if parts[0] in sys.stdlib_module_names:
            return None  # `test/x.py`: the dotted name would reach the standard library's package
        folders = [os.path.join(base, *parts[:depth]) for depth in range(1, len(parts))]
        if not (
            parts[0] == stem
            or any(os.path.isfile(os.path.join(folder, "__init__.py")) for folder in folders)
            or _has_relative_import(path)
        ):
            return None
        roots = [base] + [
            os.path.abspath(extra)
            for extra in (project_root, os.path.join(project_root, "src"))
            if os.path.isdir(extra) and os.path.abspath(extra) != base
        ]
        folder = os.path.dirname(path)
        if not _hides_namespace_package(folder, roots):
            roots.append(folder)
        return ".".join(parts), roots
    return None


_RELATIVE_IMPORT_RE = re.compile(rb"^[ \t]*from[ \t]+\.", re.MULTILINE)


def _has_relative_import(path: str) -> bool:
    """Whether the file on disk has a `from .x import y` line (read, never parsed: a file
    with a syntax error still has its name)."""
    try:
        return _RELATIVE_IMPORT_RE.search(read_regular_file(path)) is not None
    except OSError:
        return False


def _hides_namespace_package(folder: str, roots: list[str]) -> bool:
    """Whether a module or folder in `folder` has the name of a namespace package (a folder
    without __init__.py) in `roots`: after them on sys.path, it would win the import of
    that name, since a namespace portion only counts when no path entry has a module."""
    try:
        entries = os.listdir(folder)
    except OSError:
        return True
    for entry in entries:
        name = entry.removesuffix(".py")
        if not name.isidentifier() or name.startswith("__"):  # __pycache__, data files: not importable
            continue
        for root in roots:
            candidate = os.path.join(root, name)
            if os.path.isdir(candidate) and not os.path.isfile(os.path.join(candidate, "__init__.py")):
                return True
    return False


@dataclass
class ClassInfo:
    qualname: str
    name: str
    line: int  # 0-based line of the `class` keyword
    name_range: Range
    bases: list[str]
    # init / inputs / kwargs (expression text) and skip (True) from `# atenlint:` comments
    directives: dict[str, str | bool] = field(default_factory=dict)
    directive_errors: list[tuple[int, str]] = field(default_factory=list)  # (line0, message)

    def might_be_module(self) -> bool:
        return any(base not in _NON_MODULE_BASES for base in self.bases)


@dataclass
class FileOutline:
    classes: list[ClassInfo]
    ignores: dict[int, frozenset[str]]  # 0-based line -> op/code names (empty: everything)
    skip_file: bool
    directive_errors: list[tuple[int, str]]  # (line0, message)

    @property
    def module_candidates(self) -> list[ClassInfo]:
        return [c for c in self.classes if c.might_be_module()]


def outline(source: SourceText) -> FileOutline:
    comments = _comments(source.text)
    ignores: dict[int, frozenset[str]] = {}
    errors: list[tuple[int, str]] = []
    skip_file = False
    class_directives: dict[int, dict[str, str | bool]] = {}
    for line0, body in comments.items():
        if body == "skip-file":
            skip_file = True
            continue
        ignore = _IGNORE_RE.match(body)
        if ignore:
            items = ignore["items"]
            ignores[line0] = frozenset(i.strip() for i in items.split(",") if i.strip()) if items else frozenset()
            continue
        parsed, problem = _parse_class_directive(body)
        if problem:
            errors.append((line0, problem))
        else:
            class_directives[line0] = parsed
    classes: list[ClassInfo] = []
    tree = source.tree
    if tree is not None:
        _collect_classes(tree, "", source, class_directives, comments, classes)
    return FileOutline(classes, ignores, skip_file, errors)


def _collect_classes(
    node: ast.AST,
    prefix: str,
    source: SourceText,
    directives: dict[int, dict[str, str | bool]],
    comments: dict[int, str],
    out: list[ClassInfo],
) -> None:
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, ast.ClassDef):
            continue
        qualname = f"{prefix}{child.name}"
        line0 = child.lineno - 1
        found: dict[str, str | bool] = {}
        first = min([d.lineno - 1 for d in child.decorator_list] + [line0])
        # A directive applies from the class line or the comment lines right above it.
        above = first - 1
        block = []
        while above >= 0 and above in comments and source.line_text(above).lstrip().startswith("#"):
            block.append(above)
            above -= 1
        for line in reversed(block):
            found.update(directives.get(line, {}))
        found.update(directives.get(line0, {}))
        info = ClassInfo(
            qualname, child.name, line0, _name_range(source, child), [ast.unparse(b) for b in child.bases], found
        )
        out.append(info)
        _collect_classes(child, qualname + ".", source, directives, comments, out)


def _name_range(source: SourceText, node: ast.ClassDef) -> Range:
    line0 = node.lineno - 1
    text = source.line_text(line0)
    match = re.search(r"\bclass\s+(" + re.escape(node.name) + r")\b", text)
    if match is None:
        return source.line_range(line0)
    return Range(
        Position(line0, source.utf16_from_char(line0, match.start(1))),
        Position(line0, source.utf16_from_char(line0, match.end(1))),
    )


def _comments(text: str) -> dict[int, str]:
    """0-based line -> the body of an `# atenlint:` comment on it (real comments only)."""
    found: dict[int, str] = {}
    if "atenlint:" not in text:
        return found
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                match = _DIRECTIVE_RE.search(token.string)
                if match:
                    found[token.start[0] - 1] = match["body"].strip()
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    return found


def _parse_class_directive(body: str) -> tuple[dict[str, str | bool], str | None]:
    """`init=Net(dim=64); inputs=torch.randn(1, 8)` or `skip`."""
    parsed: dict[str, str | bool] = {}
    for part in _split_top_level(body, ";"):
        part = part.strip()
        if not part:
            continue
        if part == "skip":
            parsed["skip"] = True
            continue
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or key not in ("init", "inputs", "kwargs"):
            return {}, (
                f"unknown atenlint directive {part!r}: expected `init=<expression>`, "
                f"`inputs=<expression>`, `kwargs=<expression>`, `skip`, `ignore[aten::op]` or `skip-file`"
            )
        try:
            parse_expression(value.strip())
        except SyntaxError as error:
            return {}, f"`{key}=` needs a Python expression ({error.msg}): {value.strip()!r}"
        parsed[key] = value.strip()
    return parsed, None


def _split_top_level(text: str, separator: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    quote: str | None = None
    for char in text:
        if quote:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == separator and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    parts.append("".join(current))
    return parts


def import_names(path: str, module_name: str, project_root: str | None) -> list[str]:
    """The dotted names a file can be imported by, the one users write first: below the
    project root (or its src/) through folders without __init__.py (namespace packages,
    like stable-diffusion's `ldm/`), and the name its __init__.py chain gives."""
    names = []
    if project_root:
        for root in (os.path.join(project_root, "src"), project_root):
            relative = os.path.relpath(os.path.abspath(path), os.path.abspath(root))
            if relative.startswith(os.pardir) or not relative.endswith(".py"):
                continue
            parts = relative[:-3].split(os.sep)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if parts and all(p.isidentifier() for p in parts):
                names.append(".".join(parts))
                break
    if module_name not in names:
        # The __init__.py chain's name is what imports use when it starts at the root.
        names.append(module_name)
    if len(names) > 1 and os.path.isfile(os.path.join(os.path.dirname(os.path.abspath(path)), "__init__.py")):
        names.reverse()  # a regular package: imported by its __init__.py chain's name
    return names
