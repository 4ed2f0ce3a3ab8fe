"""Editor settings: `initializationOptions` and the `atenlint` section of
`workspace/configuration`, folded into one value. Project settings from pyproject.toml
still apply underneath (the editor's choices override them)."""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass, field
from typing import Any, Optional

from ..config import SEVERITY_NAMES, ConfigError, parse_targets

TRIGGERS = ("onSave", "onType")


@dataclass(frozen=True)
class EditorSettings:
    targets: Optional[tuple] = None  # None: whatever the project's pyproject.toml says
    trigger: str = "onSave"
    on_type_delay_ms: int = 500
    severity: dict = field(default_factory=dict, hash=False)
    timeout: Optional[float] = None
    workers: int = 1
    trusted: bool = True  # a generic client's user configured the server deliberately
    # Import and run unsaved buffers (the editor's text) instead of the saved files: off by
    # default, because importing a module runs its top-level code, keystroke by keystroke.
    execute_unsaved: bool = False
    python: str = sys.executable
    memory_limit_mb: int = 0  # 0: a share of physical memory
    problems: tuple = ()  # settings we could not use, with why (shown to the user once)

    def overrides(self) -> dict:
        """What the editor overrides in every project's settings."""
        out: dict[str, Any] = {}
        if self.targets:
            out["targets"] = self.targets
        if self.timeout:
            out["timeout"] = self.timeout
        if self.severity:
            out["severity"] = dict(self.severity)
        return out


def editor_settings(*sources: Optional[dict], base: EditorSettings = EditorSettings()) -> EditorSettings:
    """Later sources win. Invalid values are skipped and listed in `problems`."""
    values: dict[str, Any] = {}
    problems: list[str] = list(base.problems)
    for source in sources:
        if not isinstance(source, dict):
            continue
        source = source.get("atenlint", source) if isinstance(source.get("atenlint"), dict) else source
        for key, value in source.items():
            try:
                values.update(_one(key, value))
            except (ConfigError, TypeError, ValueError) as error:
                problems.append(f"atenlint.{key}: {error}")
    return dataclasses.replace(base, **values, problems=tuple(dict.fromkeys(problems)))


def _one(key: str, value: Any) -> dict:
    if value is None:
        return {}
    if key == "targets":
        return {"targets": parse_targets(value, "targets") if value else None}
    if key == "trigger":
        if value not in TRIGGERS:
            raise ValueError(f"must be one of {', '.join(TRIGGERS)}")
        return {"trigger": value}
    if key in ("onTypeDelayMs", "onTypeDelay"):
        return {"on_type_delay_ms": max(0, int(value))}
    if key == "severity":
        if not isinstance(value, dict) or any(v not in SEVERITY_NAMES for v in value.values()):
            raise ValueError(f"must map targets to one of {', '.join(SEVERITY_NAMES)}")
        return {"severity": dict(value)}
    if key == "timeout":
        if float(value) <= 0:
            raise ValueError("must be a positive number of seconds")
        return {"timeout": float(value)}
    if key == "workers":
        return {"workers": max(1, int(value))}
    if key == "trusted":
        return {"trusted": bool(value)}
    if key in ("executeUnsaved", "runUnsavedCode"):
        return {"execute_unsaved": bool(value)}
    if key == "memoryLimitMb":
        return {"memory_limit_mb": max(256, int(value))}
    if key in ("python", "interpreter"):
        return {"python": str(value)} if value else {}
    return {}  # keys for other tools (trace level, client-side options) are not ours
