"""Editor settings: `initializationOptions` and the `atenlint` section of
`workspace/configuration`, folded into one value. Project settings from pyproject.toml
still apply underneath (the editor's choices override them).

Which keys exist, their types, limits and defaults come from the one schema
(`settings_schema.SETTINGS`, the keys with an editor key that the server reads)."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import settings_schema as schema

TRIGGERS = schema.TRIGGERS


@dataclass(frozen=True)
class EditorSettings:
    targets: tuple[str, ...] | None = None  # None: whatever the project's pyproject.toml says
    trigger: str = schema.initial("trigger")
    on_type_delay_ms: int = schema.initial("on_type_delay_ms")
    severity: dict[str, str] = field(default_factory=dict, hash=False)
    timeout: float | None = None  # None: the project's
    workers: int = schema.initial("workers")
    trusted: bool = schema.initial("trusted")  # a generic client's user configured the server deliberately
    # Import and run unsaved buffers (the editor's text) instead of the saved files: off by
    # default, because importing a module runs its top-level code, keystroke by keystroke.
    execute_unsaved: bool = schema.initial("execute_unsaved")
    python: str = sys.executable
    memory_limit_mb: int = schema.initial("memory_limit_mb")  # 0: a share of physical memory
    problems: tuple[str, ...] = ()  # settings we could not use, with why (shown to the user once)

    def overrides(self) -> dict[str, Any]:
        """What the editor overrides in every project's settings: the values set here of the
        settings that are also project settings (in [tool.atenlint])."""
        unset = {
            f.name: (f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default)
            for f in dataclasses.fields(self)
        }
        out: dict[str, Any] = {}
        for spec in schema.SETTINGS:
            value = getattr(self, spec.name, None) if spec.in_pyproject and spec.in_server else None
            if value is not None and value != unset.get(spec.name):
                out[spec.name] = dict(value) if isinstance(value, dict) else value
        return out


def editor_settings(*sources: Mapping[str, Any] | None, base: EditorSettings = EditorSettings()) -> EditorSettings:
    """Later sources win. Invalid values are skipped and listed in `problems`; a key set to
    null keeps its current value; keys for other tools (trace level, client options) are not ours."""
    known = schema.server_keys()
    values: dict[str, Any] = {}
    problems: list[str] = list(base.problems)
    for source in sources:
        if not isinstance(source, Mapping):
            continue
        section = source.get("atenlint")
        if isinstance(section, Mapping):
            source = section
        for key, value in source.items():
            spec = known.get(key)
            if spec is None or value is None or (spec.name == "python" and value == ""):
                continue
            try:
                values[spec.name] = _editor_value(spec, value, key)
            except schema.SettingError as problem:
                problems.append(f"atenlint.{problem}")
    return dataclasses.replace(base, **values, problems=tuple(dict.fromkeys(problems)))


def _editor_value(spec: schema.SettingSpec, value: Any, key: str) -> Any:
    if spec.name == "targets" and not value:
        return None  # an empty list: the projects decide, as when unset
    return schema.convert(spec, value, key)
