"""Where a finding is, as CI formats want it: a file relative to the repository root and a
1-based region. A notebook finding is placed on the .ipynb file's own line (the line of
the cell's source in the JSON), so code scanning and annotations show it where it is."""

from __future__ import annotations

import os
import urllib.parse
from dataclasses import dataclass

from ..findings import Finding


@dataclass(frozen=True)
class Region:
    """1-based lines and columns (UTF-16 code units), end column exclusive as SARIF counts."""

    start_line: int
    start_column: int
    end_line: int
    end_column: int


def repository_root(start: str | None = None) -> str:
    """The folder CI paths are relative to: $GITHUB_WORKSPACE, else the nearest folder
    above `start` (the working directory) holding `.git`, else `start` itself."""
    start = os.path.abspath(start or os.getcwd())
    workspace = os.environ.get("GITHUB_WORKSPACE")
    if workspace and os.path.isdir(workspace) and _inside(start, os.path.abspath(workspace)):
        return os.path.abspath(workspace)
    directory = start
    while True:
        if os.path.exists(os.path.join(directory, ".git")):
            return directory
        parent = os.path.dirname(directory)
        if parent == directory:
            return start
        directory = parent


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def absolute(finding: Finding) -> str:
    return os.path.abspath(finding.abs_path or finding.path)


def relative_to_root(path: str, root: str) -> str | None:
    """`path` relative to `root` with forward slashes, or None when it lies outside."""
    path = os.path.abspath(path)
    if not _inside(path, root):
        return None
    return os.path.relpath(path, root).replace(os.sep, "/")


# The folders installed distributions live in (pip and venv's, and Debian's): a file under
# one is named by its path inside it, the same on every machine and environment.
SITE_FOLDERS = ("site-packages", "dist-packages")


def site_relative(path: str) -> str | None:
    """`path` inside the innermost site-packages (or dist-packages) folder it lies in, with
    forward slashes (`torch/nn/functional.py`); None when it lies in none. An absolute
    path would name the user's home and environment, and differ on every machine."""
    parts = os.path.abspath(path).split(os.sep)
    for index in range(len(parts) - 2, -1, -1):
        if parts[index] in SITE_FOLDERS:
            return "/".join(parts[index + 1 :])
    return None


def portable(path: str, root: str) -> tuple[str, str]:
    """Where a file is, for a CI report: (relative path, "root") inside the repository,
    (path inside site-packages, "site") for an installed library, else (absolute, "")."""
    relative = relative_to_root(path, root)
    if relative is not None:
        return relative, "root"
    inside_site = site_relative(path)
    if inside_site is not None:
        return inside_site, "site"
    return os.path.abspath(path), ""


# How the JSON contract names a file inside site-packages, as SARIF's uriBaseId does.
SITE_PACKAGES_PREFIX = "%SITE_PACKAGES%/"


def contract_path(finding: Finding) -> str:
    """`path` in `--format json`: as the user gave it or relative to the working directory,
    and for a file of an installed library outside it (a finding placed in a library's
    frame) `%SITE_PACKAGES%/` and its path inside site-packages, as SARIF and the GitHub
    format name it: never this machine's absolute path, and never confused with a path
    relative to the working directory."""
    if not os.path.isabs(finding.path):
        return finding.path
    inside_site = site_relative(finding.path)
    return SITE_PACKAGES_PREFIX + inside_site if inside_site is not None else finding.path


def uri_reference(relative: str) -> str:
    """A relative path as a URI reference (spaces, `#`, `%` ... percent-encoded)."""
    return urllib.parse.quote(relative, safe="/")


def file_uri(path: str) -> str:
    from pathlib import Path

    return Path(os.path.abspath(path)).as_uri()


def region(finding: Finding) -> Region:
    """The finding's region in its file. For a notebook cell, the .ipynb file's own
    coordinates when they are known (`data["notebook"]["file_range"]`)."""
    notebook = finding.data.get("notebook")
    rng = notebook.get("file_range") if notebook is not None else None
    if rng is not None:
        start, end = rng["start"], rng["end"]
        return _region(start["line"], start["character"], end["line"], end["character"])
    return _region(
        finding.range.start.line, finding.range.start.character, finding.range.end.line, finding.range.end.character
    )


def _region(line0: int, char0: int, end_line0: int, end_char0: int) -> Region:
    start_line, start_column = line0 + 1, char0 + 1
    end_line, end_column = end_line0 + 1, end_char0 + 1
    end_line, end_column = max((end_line, end_column), (start_line, start_column))
    return Region(start_line, start_column, end_line, end_column)
