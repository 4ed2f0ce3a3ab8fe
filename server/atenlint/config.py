"""Settings: `[tool.atenlint]` in the nearest pyproject.toml (or --config FILE), command-line
and editor overrides, folded into one immutable value per project."""

from __future__ import annotations

import dataclasses
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Optional

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

from .factories import parse_reference
from .targets.names import ONNX_EXPORTERS, known as _known_target, listing as _target_listing

KNOWN_TARGETS = _target_listing()
SEVERITY_NAMES = ("error", "warning", "information", "hint", "off")


class ConfigError(Exception):
    """A setting the user wrote cannot be used; the message says which and why."""


@dataclass(frozen=True)
class ModuleConfig:
    init: Optional[str] = None  # expression returning an instance
    inputs: Optional[str] = None  # expression returning forward()'s argument(s)
    skip: bool = False
    source: str = ""  # where it came from, for messages
    kwargs: Optional[str] = None  # expression (or pkg.mod:function) returning forward()'s keyword arguments
    options: dict = field(default_factory=dict, hash=False)  # passed to factory functions as `config`


@dataclass(frozen=True)
class Settings:
    targets: tuple[str, ...] = ("mps",)
    timeout: float = 60.0
    mps_fallback: bool = True
    onnx_exporter: Optional[str] = None  # "dynamo" | "torchscript"; None: torch.onnx.export's default
    coreml_frontend: str = "torchscript"  # "torchscript" (a jit.trace graph) | "export" (an ExportedProgram)
    workers: int = 0  # 0: automatic
    max_file_bytes: int = 5 * 1024 * 1024
    exclude: tuple[str, ...] = ()
    modules: dict = field(default_factory=dict, hash=False)  # "pkg.mod.Class" -> ModuleConfig
    ignore: dict = field(default_factory=dict, hash=False)  # target or "*" -> frozenset of ops/codes
    severity: dict = field(default_factory=dict, hash=False)  # target -> severity name or "off"
    config_path: Optional[str] = None
    project_root: Optional[str] = None
    factories: Optional[str] = None  # a Python file of init_<Class> / inputs_<Class> / kwargs_<Class> functions

    def with_overrides(self, **overrides: Any) -> "Settings":
        present = {k: v for k, v in overrides.items() if v is not None}
        return dataclasses.replace(self, **present) if present else self

    def fingerprint(self) -> str:
        """Everything that changes results, as text (part of cache keys)."""
        return repr((self.targets, self.mps_fallback, self.onnx_exporter, self.coreml_frontend, sorted((k, repr(v)) for k, v in self.modules.items()),
                     sorted((k, sorted(v)) for k, v in self.ignore.items()), sorted(self.severity.items()),
                     self.factories, _mtime(self.factories)))


def _mtime(path: Optional[str]) -> Optional[int]:
    """A factories file's edits change what gets built: part of the cache key."""
    try:
        return os.stat(path).st_mtime_ns if path else None
    except OSError:
        return None


def _require(condition: bool, where: str, message: str) -> None:
    if not condition:
        raise ConfigError(f"{where}: {message}")


def parse_targets(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",") if v.strip()]
    _require(isinstance(value, list) and value and all(isinstance(v, str) for v in value), where,
             "targets must be a non-empty list of target names")
    unknown = [v for v in value if not _known_target(v)]
    _require(not unknown, where, f"unknown target {', '.join(map(repr, unknown))}; "
                                 f"known targets: {', '.join(KNOWN_TARGETS)}")
    return tuple(dict.fromkeys(value))


def settings_from_table(table: dict, where: str, base: Settings = Settings()) -> Settings:
    """Settings from a `[tool.atenlint]` table (keys in kebab-case, as TOML users write them)."""
    known = {"targets", "timeout", "mps-fallback", "onnx-exporter", "coreml-frontend", "workers", "max-file-size", "exclude", "modules",
             "ignore", "severity", "factories"}
    unknown = sorted(set(table) - known)
    _require(not unknown, where, f"unknown key {', '.join(map(repr, unknown))}; known keys: {', '.join(sorted(known))}")
    values: dict[str, Any] = {}
    if "targets" in table:
        values["targets"] = parse_targets(table["targets"], f"{where} targets")
    if "timeout" in table:
        _require(_is_number(table["timeout"]) and table["timeout"] > 0, where,
                 "timeout must be a positive number of seconds")
        values["timeout"] = float(table["timeout"])
    if "mps-fallback" in table:
        _require(isinstance(table["mps-fallback"], bool), where, "mps-fallback must be true or false")
        values["mps_fallback"] = table["mps-fallback"]
    if "onnx-exporter" in table:
        _require(table["onnx-exporter"] in ONNX_EXPORTERS, where,
                 f"onnx-exporter must be one of {', '.join(map(repr, ONNX_EXPORTERS))}")
        values["onnx_exporter"] = table["onnx-exporter"]
    if "coreml-frontend" in table:
        from .targets.names import COREML_FRONTENDS

        _require(table["coreml-frontend"] in COREML_FRONTENDS, where,
                 f"coreml-frontend must be one of {', '.join(map(repr, COREML_FRONTENDS))}")
        values["coreml_frontend"] = table["coreml-frontend"]
    if "workers" in table:
        _require(_is_number(table["workers"], whole=True) and table["workers"] >= 0, where,
                 "workers must be a whole number")
        values["workers"] = table["workers"]
    if "max-file-size" in table:
        _require(_is_number(table["max-file-size"], whole=True) and table["max-file-size"] > 0, where,
                 "max-file-size must be a number of bytes")
        values["max_file_bytes"] = table["max-file-size"]
    if "exclude" in table:
        _require(_is_string_list(table["exclude"]), where, 'exclude must be a list of glob patterns, like ["tests/*"]')
        values["exclude"] = tuple(table["exclude"])
    if "modules" in table:
        values["modules"] = _parse_modules(table["modules"], where)
    if "factories" in table:
        _require(isinstance(table["factories"], str) and table["factories"].endswith(".py"), where,
                 'factories must be the path of a Python file, like "atenlint_factories.py"')
        values["factories"] = _relative_to(table["factories"], where)
    if "ignore" in table:
        ignore = table["ignore"]
        _require(isinstance(ignore, dict) and all(_is_string_list(v) for v in ignore.values()), where,
                 'ignore must be a table of lists, like {mps = ["aten::take"]} (a list even for one name)')
        values["ignore"] = {str(k): frozenset(v) for k, v in ignore.items()}
    if "severity" in table:
        severity = table["severity"]
        _require(isinstance(severity, dict) and all(isinstance(v, str) and v in SEVERITY_NAMES
                                                    for v in severity.values()), where,
                 f"severity must map targets to one of {', '.join(SEVERITY_NAMES)}")
        values["severity"] = dict(severity)
    return dataclasses.replace(base, **values)


def _is_number(value: Any, whole: bool = False) -> bool:
    """TOML numbers only: `true` is not 1 second, "5" is not 5."""
    return not isinstance(value, bool) and isinstance(value, int if whole else (int, float))


def _is_string_list(value: Any) -> bool:
    """A list of strings (a lone string is not: it would become a set of its characters)."""
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _parse_modules(modules: Any, where: str) -> dict:
    _require(isinstance(modules, dict), where, 'modules must be a table of "pkg.mod.Class" = {init = "..."}')
    out = {}
    for name, entry in modules.items():
        place = f'{where} modules."{name}"'
        _require(isinstance(entry, dict), place, 'expected a table like {init = "Class(dim=64)"}')
        extra = set(entry) - {"init", "inputs", "kwargs", "options", "skip"}
        _require(not extra, place, f"unknown key {', '.join(sorted(extra))}; known keys: init, inputs, kwargs, "
                                   f"options, skip")
        for key in ("init", "inputs", "kwargs"):
            if key in entry:
                _require(isinstance(entry[key], str), place,
                         f'{key} must be a Python expression or a "pkg.module:function" in a string')
                if parse_reference(entry[key]) is None:
                    _check_expression(entry[key], f"{place} {key}")
        _require(isinstance(entry.get("skip", False), bool), place, "skip must be true or false")
        _require(isinstance(entry.get("options", {}), dict), place,
                 "options must be a table (it is passed to factory functions as `config`)")
        out[name] = ModuleConfig(init=entry.get("init"), inputs=entry.get("inputs"),
                                 skip=bool(entry.get("skip", False)), source=place, kwargs=entry.get("kwargs"),
                                 options=dict(entry.get("options", {})))
    return out


def _relative_to(path: str, where: str) -> str:
    """A path written in a config file, made absolute against that file's folder."""
    if os.path.isabs(path):
        return path
    base = os.path.dirname(os.path.abspath(where)) if os.path.splitext(where)[1] == ".toml" else os.getcwd()
    return os.path.normpath(os.path.join(base, path))


def _check_expression(text: str, where: str) -> None:
    import ast

    try:
        ast.parse(text, mode="eval")
    except SyntaxError as error:
        raise ConfigError(f"{where}: not a Python expression ({error.msg}): {text!r}") from None


_MAX_CONFIG_BYTES = 16 * 1024 * 1024


def _read_toml(path: str) -> dict:
    """A TOML file, read only if it is a regular file of sensible size; any problem is a ConfigError."""
    from .discover import NotRegularFile, read_regular_file

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


def read_pyproject(path: str) -> Optional[dict]:
    """The `[tool.atenlint]` table of a pyproject.toml, or None when it has none."""
    data = _read_toml(path)
    tool = data.get("tool", {})
    _require(isinstance(tool, dict), path, "`tool` must be a table")
    table = tool.get("atenlint")
    _require(table is None or isinstance(table, dict), path, "`tool.atenlint` must be a table ([tool.atenlint])")
    return table


def read_config_file(path: str) -> dict:
    """--config FILE: a pyproject.toml with [tool.atenlint], or a bare atenlint TOML file."""
    table = read_pyproject(path)
    if table is not None:
        return table
    data = _read_toml(path)
    table = data.get("atenlint", data if "tool" not in data else {})
    _require(isinstance(table, dict), path, "`atenlint` must be a table ([atenlint])")
    return table


class SettingsResolver:
    """Finds the settings for any file: the [tool.atenlint] table of its project's own
    pyproject.toml, unless a config file was given; overrides (command line, editor) on top.
    Cached per directory.

    The project root is the nearest folder above the file with a pyproject.toml, setup.py
    or .git, but never above the workspace folder that holds the file (`workspace_roots`,
    the editor's folders): a pyproject.toml in a parent folder outside the project is
    never read, so it cannot supply `init` expressions the worker would evaluate."""

    def __init__(self, config_file: Optional[str] = None, overrides: Optional[dict] = None,
                 workspace_roots: Optional[list] = None):
        self.workspace_roots = [os.path.realpath(r) for r in (workspace_roots or []) if r]
        self.overrides = overrides or {}
        self._by_dir: dict[str, Settings] = {}
        self._by_config: dict[str, Settings] = {}
        self.config_file = os.path.abspath(config_file) if config_file else None
        if self.config_file is not None:
            self._by_config[self.config_file] = settings_from_table(
                read_config_file(self.config_file), self.config_file).with_overrides(config_path=self.config_file)

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
                config_path=config_path)
            self._by_config[config_path] = base
        settings = base.with_overrides(project_root=root, **self.overrides)
        self._by_dir[directory] = settings
        return settings


    def project_root(self, directory: str) -> Optional[str]:
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


def _walk_up(directory: str):
    while True:
        yield directory
        parent = os.path.dirname(directory)
        if parent == directory:
            return
        directory = parent


def _atenlint_pyproject(directory: str) -> Optional[str]:
    candidate = os.path.join(directory, "pyproject.toml")
    if os.path.isfile(candidate) and read_pyproject(candidate) is not None:
        return candidate
    return None


def _is_project_root(directory: str) -> bool:
    return any(os.path.exists(os.path.join(directory, marker)) for marker in ("pyproject.toml", "setup.py", ".git"))
