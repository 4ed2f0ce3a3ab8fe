"""Settings: `[tool.atenlint]` in the nearest pyproject.toml (or --config FILE), command-line
and editor overrides, folded into one immutable value per project."""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

from . import settings_schema as schema
from .bounded_read import NotRegularFile, read_regular_file
from .factories import parse_reference
from .python_parse import parse_expression
from .targets.names import listing as _target_listing

KNOWN_TARGETS = _target_listing()


class ConfigError(Exception):
    """A setting the user wrote cannot be used; the message says which and why."""


@dataclass(frozen=True)
class ModuleConfig:
    init: str | None = None  # expression returning an instance
    inputs: str | None = None  # expression returning forward()'s argument(s)
    skip: bool = False
    source: str = ""  # where it came from, for messages
    kwargs: str | None = None  # expression (or pkg.mod:function) returning forward()'s keyword arguments
    options: dict[str, Any] = field(default_factory=dict, hash=False)  # passed to factory functions as `config`


@dataclass(frozen=True)
class Settings:
    """One project's settings. Field defaults come from the schema (settings_schema.SETTINGS)."""

    targets: tuple[str, ...] = schema.initial("targets")
    timeout: float = schema.initial("timeout")
    mps_fallback: bool = schema.initial("mps_fallback")
    infer_inputs: bool = schema.initial("infer_inputs")
    fullgraph: bool = schema.initial("fullgraph")
    onnx_exporter: str | None = schema.initial("onnx_exporter")  # None: torch.onnx.export's default
    coreml_frontend: str = schema.initial("coreml_frontend")
    workers: int = schema.initial("workers")
    max_file_bytes: int = schema.initial("max_file_bytes")
    exclude: tuple[str, ...] = schema.initial("exclude")
    modules: dict[str, ModuleConfig] = field(default_factory=dict, hash=False)  # "pkg.mod.Class" -> config
    ignore: dict[str, frozenset[str]] = field(default_factory=dict, hash=False)  # target or "*" -> ops/codes
    severity: dict[str, str] = field(default_factory=dict, hash=False)  # target -> severity name or "off"
    config_path: str | None = None
    project_root: str | None = None
    factories: str | None = schema.initial("factories")  # a file of init_/inputs_/kwargs_<Class> functions
    # The names the project's table set (a default and a value written down differ for
    # `workers`: the CLI sizes its pool by the workspace unless the project says).
    explicit: frozenset[str] = field(default=frozenset(), hash=False)

    def with_overrides(self, **overrides: Any) -> Settings:
        present = {k: v for k, v in overrides.items() if v is not None}
        return dataclasses.replace(self, **present) if present else self

    def fingerprint(self) -> str:
        """Everything that changes results, as text (part of cache keys)."""
        return repr(
            (
                self.targets,
                self.mps_fallback,
                self.infer_inputs,
                self.fullgraph,
                self.onnx_exporter,
                self.coreml_frontend,
                sorted((k, repr(v)) for k, v in self.modules.items()),
                sorted((k, sorted(v)) for k, v in self.ignore.items()),
                sorted(self.severity.items()),
                self.factories,
                _mtime(self.factories),
            )
        )


def _mtime(path: str | None) -> int | None:
    """A factories file's edits change what gets built: part of the cache key."""
    try:
        return os.stat(path).st_mtime_ns if path else None
    except OSError:
        return None


def _require(condition: bool, where: str, message: str) -> None:
    if not condition:
        raise ConfigError(f"{where}: {message}")


def parse_targets(value: Any, where: str) -> tuple[str, ...]:
    """Target names from a list or a comma-separated string (the CLI's --target, the editor)."""
    try:
        return schema.target_list(value, where)
    except schema.SettingError as problem:
        raise ConfigError(str(problem)) from None


def settings_from_table(table: dict[str, Any], where: str, base: Settings = Settings()) -> Settings:
    """Settings from a `[tool.atenlint]` table (keys in kebab-case, as TOML users write them),
    checked against the one schema (settings_schema.SETTINGS)."""
    values = schema.parse_table(table, where, ConfigError)
    if "modules" in values:
        values["modules"] = _parse_modules(values["modules"], where)
    if "factories" in values:
        values["factories"] = _relative_to(values["factories"], where)
    return dataclasses.replace(base, **values, explicit=base.explicit | frozenset(values))


def _parse_modules(modules: dict[str, Any], where: str) -> dict[str, ModuleConfig]:
    out: dict[str, ModuleConfig] = {}
    for name, entry in modules.items():
        place = f'{where} modules."{name}"'
        _require(isinstance(entry, dict), place, 'expected a table like {init = "Class(dim=64)"}')
        extra = set(entry) - set(schema.MODULE_KEYS)
        _require(
            not extra, place, f"unknown key {', '.join(sorted(extra))}; known keys: {', '.join(schema.MODULE_KEYS)}"
        )
        for key in ("init", "inputs", "kwargs"):
            if key in entry:
                _require(
                    isinstance(entry[key], str),
                    place,
                    f'{key} must be a Python expression or a "pkg.module:function" in a string',
                )
                if parse_reference(entry[key]) is None:
                    _check_expression(entry[key], f"{place} {key}")
        _require(isinstance(entry.get("skip", False), bool), place, "skip must be true or false")
        _require(
            isinstance(entry.get("options", {}), dict),
            place,
            "options must be a table (it is passed to factory functions as `config`)",
        )
        out[name] = ModuleConfig(
            init=entry.get("init"),
            inputs=entry.get("inputs"),
            skip=bool(entry.get("skip", False)),
            source=place,
            kwargs=entry.get("kwargs"),
            options=dict(entry.get("options", {})),
        )
    return out


def _relative_to(path: str, where: str) -> str:
    """A path written in a config file, made absolute against that file's folder."""
    if os.path.isabs(path):
        return path
    base = os.path.dirname(os.path.abspath(where)) if os.path.splitext(where)[1] == ".toml" else os.getcwd()
    return os.path.normpath(os.path.join(base, path))


def _check_expression(text: str, where: str) -> None:
    try:
        parse_expression(text)
    except SyntaxError as error:
        raise ConfigError(f"{where}: not a Python expression ({error.msg}): {text!r}") from None


_MAX_CONFIG_BYTES = 16 * 1024 * 1024


def _read_toml(path: str) -> dict[str, Any]:
    """A TOML file, read only if it is a regular file of sensible size; any problem is a ConfigError."""
    try:
        data = read_regular_file(path, _MAX_CONFIG_BYTES)
    except NotRegularFile as problem:
        raise ConfigError(f"{path}: not read: {problem.message}") from None
    except OSError as error:
        raise ConfigError(f"{path}: cannot read it: {error.strerror or error}") from None
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path}: invalid TOML: not UTF-8 ({error.reason} at byte {error.start})") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: invalid TOML: {error}") from None
    except RecursionError:
        # tomllib recurses per nesting level: a hostile file of nested tables or arrays.
        raise ConfigError(f"{path}: invalid TOML: nested too deeply") from None


def read_pyproject(path: str) -> dict[str, Any] | None:
    """The `[tool.atenlint]` table of a pyproject.toml, or None when it has none."""
    data = _read_toml(path)
    tool = data.get("tool", {})
    _require(isinstance(tool, dict), path, "`tool` must be a table")
    table = tool.get("atenlint")
    if table is None:
        return None
    _require(isinstance(table, dict), path, "`tool.atenlint` must be a table ([tool.atenlint])")
    return dict(table)


def read_config_file(path: str) -> dict[str, Any]:
    """--config FILE: a pyproject.toml with [tool.atenlint], or a bare atenlint TOML file."""
    table = read_pyproject(path)
    if table is not None:
        return table
    data = _read_toml(path)
    bare = data.get("atenlint", data if "tool" not in data else {})
    _require(isinstance(bare, dict), path, "`atenlint` must be a table ([atenlint])")
    return dict(bare)


class SettingsResolver:
    """Finds the settings for any file: the [tool.atenlint] table of its project's own
    pyproject.toml, unless a config file was given; overrides (command line, editor) on top.
    Cached per directory.

    The project root is the nearest folder above the file with a pyproject.toml, setup.py
    or .git, but never above the workspace folder that holds the file (`workspace_roots`,
    the editor's folders): a pyproject.toml in a parent folder outside the project is
    never read, so it cannot supply `init` expressions the worker would evaluate."""

    def __init__(
        self,
        config_file: str | None = None,
        overrides: dict[str, Any] | None = None,
        workspace_roots: Sequence[str] | None = None,
    ) -> None:
        self.workspace_roots = [os.path.realpath(r) for r in (workspace_roots or []) if r]
        self.overrides = overrides or {}
        self._by_dir: dict[str, Settings] = {}
        self._by_config: dict[str, Settings] = {}
        self.config_file = os.path.abspath(config_file) if config_file else None
        if self.config_file is not None:
            self._by_config[self.config_file] = settings_from_table(
                read_config_file(self.config_file), self.config_file
            ).with_overrides(config_path=self.config_file)

    def for_file(self, path: str) -> Settings:
        return self.for_directory(os.path.dirname(os.path.abspath(path)))

    def for_directory(self, directory: str) -> Settings:
        cached = self._by_dir.get(directory)
        if cached is not None:
            return cached
        root = self.project_root(directory)
        config_path = self.config_file or (_atenlint_pyproject(root) if root else None)
        if config_path is None:
            base = Settings()
        elif config_path in self._by_config:
            base = self._by_config[config_path]
        else:
            base = settings_from_table(read_pyproject(config_path) or {}, config_path).with_overrides(
                config_path=config_path
            )
            self._by_config[config_path] = base
        settings = base.with_overrides(project_root=root, **self.overrides)
        self._by_dir[directory] = settings
        return settings

    def project_root(self, directory: str) -> str | None:
        """The nearest folder at or above `directory` with a project marker, stopping at
        the innermost workspace folder that holds it (which is then the root)."""
        real = os.path.realpath(directory)
        holding = [r for r in self.workspace_roots if real == r or real.startswith(r.rstrip(os.sep) + os.sep)]
        boundary = max(holding, key=len) if holding else None
        for folder in _walk_up(directory):
            if _is_project_root(folder):
                return folder
            if boundary is not None and os.path.realpath(folder) == boundary:
                return folder
        return None


def _walk_up(directory: str) -> Iterator[str]:
    while True:
        yield directory
        parent = os.path.dirname(directory)
        if parent == directory:
            return
        directory = parent


def _atenlint_pyproject(directory: str) -> str | None:
    candidate = os.path.join(directory, "pyproject.toml")
    if os.path.isfile(candidate) and read_pyproject(candidate) is not None:
        return candidate
    return None


def _is_project_root(directory: str) -> bool:
    return any(os.path.exists(os.path.join(directory, marker)) for marker in ("pyproject.toml", "setup.py", ".git"))
