"""`[tool.atenlint.modules."pkg.mod.Class"]` keys that name no class: a warning that says
which real class is nearest, instead of a setting ignored in silence.

Pure (no torch, no user code): compares the configured keys with the import names of the
classes the check saw, and with the files of the project.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable, Iterable

from . import findings as codes
from .bounded_read import read_regular_file
from .captured import FileCapture
from .config import Settings
from .discover import import_location, import_names
from .findings import Finding
from .sourcetext import Position, Range


def unknown_module_keys(captures: Iterable[FileCapture], display: Callable[[str], str]) -> list[Finding]:
    """One warning per configured key that matches no class, placed on the key's line
    in the configuration file. A key for a module the check did not look at is left
    alone unless no file of the project could be that module."""
    known: set[str] = set()
    checked_modules: set[str] = set()
    by_config: dict[str, Settings] = {}
    for capture in captures:
        settings = capture.settings
        if capture.outline is None:
            continue
        module_name, _ = import_location(capture.path, settings.project_root)
        names = import_names(capture.path, module_name, settings.project_root)
        checked_modules.update(names)
        for info in capture.outline.classes:
            known.update(f"{name}.{info.qualname}" for name in names)
        if settings.modules and settings.config_path:
            by_config.setdefault(settings.config_path, settings)
    out = []
    for config_path, settings in by_config.items():
        for key in settings.modules:
            if key in known:
                continue
            module = _checked_prefix(key, checked_modules)
            root = settings.project_root or os.path.dirname(config_path)
            if _project_has_module(key, root, module):
                # A class of a file this check did not look at (with `module`, one below
                # it: `models.encoder.Encoder` when only `models/__init__.py` was checked).
                continue
            nearest = _nearest(key, known, module)
            message = f'[tool.atenlint.modules."{key}"] names no module class'
            message += f': did you mean "{nearest}"?' if nearest else " atenlint found; it is ignored"
            message += " Keys are the dotted name you import the class by (package.module.Class)."
            line0 = _key_line(config_path, key)
            out.append(
                Finding(
                    display(config_path),
                    Range(Position(line0, 0), Position(line0, 0)),
                    "warning",
                    codes.CONFIG_ERROR,
                    message,
                    abs_path=os.path.abspath(config_path),
                    data={"key": key},
                )
            )
    return out


def _checked_prefix(key: str, modules: set[str]) -> str | None:
    parts = key.split(".")
    for end in range(len(parts) - 1, 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in modules:
            return candidate
    return None


def _project_has_module(key: str, root: str | None, below: str | None = None) -> bool:
    """A file of the project could be the module of `key` (one deeper than `below`, if given)."""
    if not root:
        return False
    parts = key.split(".")
    shortest = len(below.split(".")) + 1 if below else 1
    for base in (root, os.path.join(root, "src")):
        for end in range(len(parts) - 1, shortest - 1, -1):
            relative = os.path.join(base, *parts[:end])
            if os.path.isfile(relative + ".py") or os.path.isfile(os.path.join(relative, "__init__.py")):
                return True
    return False


def _nearest(key: str, known: set[str], module: str | None) -> str | None:
    pool = sorted(k for k in known if module is None or k.startswith(module + "."))
    matches = difflib.get_close_matches(key, pool, n=1, cutoff=0.5)
    if matches:
        return str(matches[0])
    # The class name alone, under another module name (`ddpm.DDPM` for `ldm.models.diffusion.ddpm.DDPM`).
    tail = key.rsplit(".", 1)[-1]
    same_class = [k for k in sorted(known) if k.rsplit(".", 1)[-1] == tail]
    return same_class[0] if same_class else None


# A pyproject.toml is kilobytes; the bound only keeps a FIFO or a device from hanging the read.
CONFIG_LIMIT = 16 << 20


def _key_line(path: str, key: str) -> int:
    try:
        lines = read_regular_file(path, CONFIG_LIMIT).decode("utf-8", errors="replace").splitlines()
    except OSError:
        return 0
    for number, line in enumerate(lines):
        if key in line:
            return number
    return 0
