"""Every atenlint setting, defined once.

Each `SettingSpec` says where a setting can be written (`[tool.atenlint]` in pyproject.toml,
the editor's `atenlint.*` settings, or both), its type, default (or `UNSET`: someone else
decides, and no value is shown in the editor's Settings UI), limits, allowed values,
description and VS Code scope. Everything else is derived from this table:

- `config.settings_from_table` validates a `[tool.atenlint]` table with it (the CLI and
  the server read projects through it);
- `lsp/settings.py` parses `initializationOptions` / `workspace/configuration` with it;
- `scripts/gen_vscode_settings.py` writes `package.json`'s `contributes.configuration` and
  `vscode-client/src/generated/settingsSchema.ts` (what the VS Code client reads) from it,
  and `--check` fails CI when either is stale.

Pure: no torch, no pygls, no I/O (except `machine_capacity`, which reads how many cores
and how much memory this machine has, for the worker cap).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from .bounded_read import read_regular_file
from .targets.names import COREML_FRONTENDS, ONNX_EXPORTERS, TARGETS
from .targets.names import known as known_target


class _Unset:
    """The value of a setting nobody set: the project, the server or a tool decides (one instance)."""

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET: Final = _Unset()

Kind = Literal[
    "boolean",  # true / false
    "integer",  # a whole number within [minimum, maximum]
    "number",  # a number within (exclusive_minimum or minimum, maximum]
    "string",  # any text
    "choice",  # one of `choices`
    "targets",  # a non-empty list of target names ("mps", "onnx:17", ...)
    "patterns",  # a list of glob patterns
    "severity-map",  # target -> one of SEVERITIES
    "ignore-map",  # target or "*" -> list of op names / rule codes
    "modules",  # "pkg.mod.Class" -> {init, inputs, kwargs, options, skip}
    "python-file",  # the path of a .py file, relative to the config file
]
Scope = Literal["application", "machine", "window", "resource", "machine-overridable", "language-overridable"]

SEVERITIES: Final = ("error", "warning", "information", "hint", "off")
TRIGGERS: Final = ("onSave", "onType")
IMPORT_STRATEGIES: Final = ("useBundled", "fromEnvironment")
TRACE_LEVELS: Final = ("off", "messages", "verbose")
ALL_TARGETS: Final = "*"  # an ignore key: every target


@dataclass(frozen=True)
class SettingSpec:
    """One setting, for every place it can be written and read."""

    name: str  # the attribute of config.Settings / lsp.settings.EditorSettings
    kind: Kind
    description: str  # Markdown (VS Code shows it; docs/configuration.md quotes it)
    pyproject_key: str | None = None  # key in [tool.atenlint]; None: not a project setting
    editor_key: str | None = None  # key under `atenlint.` in editor settings; None: not an editor setting
    editor_aliases: tuple[str, ...] = ()  # older editor keys the server still accepts
    server: bool = True  # the language server reads the editor key (else: only the VS Code client)
    vscode: bool = True  # contributed to VS Code's Settings UI (package.json), when it has an editor key
    default: Any = UNSET  # UNSET: not shown in the Settings UI; the project, the server or a tool decides
    builtin: Any = None  # the value that applies when `default` is UNSET and nothing sets it
    builtin_note: str = ""  # what applies then, in words, for the docs (when `builtin` alone says too little)
    minimum: float | None = None
    exclusive_minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    choice_descriptions: tuple[str, ...] = ()
    scope: Scope = "resource"
    restricted: bool = False  # in an untrusted workspace only the user's own value counts (it runs code)
    extension_reads: bool = True  # the VS Code extension reads it (trace.server: vscode-languageclient does)
    extension_supplies: bool = False  # not a VS Code setting, but the extension works it out and sends it
    example: str = ""  # a TOML value for the docs
    project_description: str = ""  # for [tool.atenlint] in the docs, when `description` speaks of the editor

    @property
    def in_pyproject(self) -> bool:
        return self.pyproject_key is not None

    @property
    def in_server(self) -> bool:
        return self.editor_key is not None and self.server

    @property
    def in_vscode(self) -> bool:
        return self.editor_key is not None and self.vscode

    @property
    def has_default(self) -> bool:
        return self.default is not UNSET

    @property
    def initial(self) -> Any:
        """The value in effect when nothing sets the setting."""
        return self.default if self.has_default else self.builtin


_TIMEOUT_MAX = 24 * 3600
_WORKERS_MAX = 64

SETTINGS: Final[tuple[SettingSpec, ...]] = (
    SettingSpec(
        "targets",
        "targets",
        pyproject_key="targets",
        editor_key="targets",
        builtin=("mps",),
        example='["mps", "onnx:17"]',
        project_description="The backends your modules must run on (`onnx:N`: ONNX at opset N). The editor's and "
        "the command line's targets, when given, replace them.",
        description="The backends your modules must run on; **atenlint: Select Targets...** picks them. "
        "Set here, they replace `targets` of every project's `[tool.atenlint]` table; not set, each "
        "project's `pyproject.toml` decides (and without one, `mps`).",
    ),
    SettingSpec(
        "trigger",
        "choice",
        editor_key="trigger",
        default="onSave",
        choices=TRIGGERS,
        choice_descriptions=(
            "Check a file when it is opened and each time it is saved (imports the saved file, never unsaved text).",
            (
                "Also check while you type, after `#atenlint.onTypeDelayMs#` of quiet: unsaved text is read statically "
                "(nothing runs) unless `#atenlint.executeUnsaved#` is on; saved files get the full check."
            ),
        ),
        description="When a file is checked.",
    ),
    SettingSpec(
        "on_type_delay_ms",
        "integer",
        editor_key="onTypeDelayMs",
        editor_aliases=("onTypeDelay",),
        default=500,
        minimum=100,
        maximum=10_000,
        description="With `#atenlint.trigger#` set to `onType`: milliseconds without a keystroke before a check "
        "starts.",
    ),
    SettingSpec(
        "execute_unsaved",
        "boolean",
        editor_key="executeUnsaved",
        editor_aliases=("runUnsavedCode",),
        default=False,
        restricted=True,
        description="Import and run the **unsaved** text of your files. Off (the default): only saved files are "
        "imported (a module's top-level code runs when it is imported); with `#atenlint.trigger#` set "
        "to `onType`, unsaved text is read statically, without running it. Ignored in the workspace "
        "settings of an untrusted folder.",
    ),
    SettingSpec(
        "severity",
        "severity-map",
        pyproject_key="severity",
        editor_key="severity",
        default={},
        example='{ mps = "error" }',
        description='Severity per target, overriding each rule\'s own (for example `{"mps": "error"}`), or '
        "`off`. Unset targets keep the rule severities documented in docs/rules.md.",
    ),
    SettingSpec(
        "timeout",
        "number",
        pyproject_key="timeout",
        editor_key="timeout",
        builtin=60.0,
        exclusive_minimum=0,
        maximum=_TIMEOUT_MAX,
        example="60",
        project_description="Seconds of processor time allowed per file to import it, build its modules and "
        "capture their operators (`ATL005` past that); machine load does not count. Code that waits without "
        "computing is stopped after 10 times this in wall-clock time.",
        description="Seconds of processor time allowed per file to import it, build its modules and capture their "
        "operators (`ATL005` past that); machine load does not count. Code that waits without computing is "
        "stopped after 10 times this in wall-clock time. Set here, it replaces `timeout` of `[tool.atenlint]`; not set (the "
        "default), `pyproject.toml` decides (and without it, 60).",
    ),
    SettingSpec(
        "workers",
        "integer",
        pyproject_key="workers",
        editor_key="workers",
        default=1,
        minimum=1,
        maximum=_WORKERS_MAX,
        scope="window",
        example="2",
        project_description="Analysis worker processes `atenlint check` starts (`--jobs` overrides it; not set, "
        "one, or two for a workspace of more than 60 files). In an editor, `atenlint.workers` sizes the pool.",
        description="Analysis worker processes in your interpreter. Each imports torch (about 300 MB); more of "
        "them make **atenlint: Check Workspace** faster on big projects.",
    ),
    SettingSpec(
        "mps_fallback",
        "boolean",
        pyproject_key="mps-fallback",
        default=True,
        example="false",
        description="`false`: you do not set `PYTORCH_ENABLE_MPS_FALLBACK=1`, so an op with no MPS kernel "
        "(MPS001) is an error rather than a slow CPU fallback.",
    ),
    SettingSpec(
        "fullgraph",
        "boolean",
        pyproject_key="fullgraph",
        default=False,
        example="true",
        description="`true`: you compile with `torch.compile(fullgraph=True)` (or `torch.export(strict=True)`, "
        "AOTInductor), where Dynamo raises at the first graph break, so the `compile` target reports each break "
        "(COMPILE001) as an error rather than a warning. Breaks read from source alone stay warnings.",
    ),
    SettingSpec(
        "infer_inputs",
        "boolean",
        pyproject_key="infer-inputs",
        default=True,
        example="false",
        description="A class with no configured `inputs` is traced with example inputs atenlint infers from "
        "its code (signature, first layer, sizes it declares; the 3 widest classes of a file, then every one "
        "TorchScript cannot compile), and a class whose "
        "constructor needs arguments, with no `init` or factory configured, is built with arguments inferred "
        "from calls of it in the project or from its parameters' names; the output says so. A front end's "
        "failure on a guess is never reported as your code's. `false`: such classes are scripted or read "
        "from source, as without inputs, and classes that need arguments are not built.",
    ),
    SettingSpec(
        "onnx_exporter",
        "choice",
        pyproject_key="onnx-exporter",
        choices=ONNX_EXPORTERS,
        builtin_note="torch.onnx.export's own default",
        example='"dynamo"',
        description="The ONNX exporter judged: `dynamo` (torch.export based) or `torchscript` (`dynamo=False`). "
        "Not set: whichever `torch.onnx.export` uses by default.",
    ),
    SettingSpec(
        "coreml_frontend",
        "choice",
        pyproject_key="coreml-frontend",
        choices=COREML_FRONTENDS,
        default="torchscript",
        example='"export"',
        description="coremltools' PyTorch frontend judged: `torchscript` (a `torch.jit.trace` graph, its "
        "documented default) or `export` (an ExportedProgram).",
    ),
    SettingSpec(
        "max_file_bytes",
        "integer",
        pyproject_key="max-file-size",
        default=5 * 1024 * 1024,
        minimum=1,
        example="5000000",
        description="Files larger than this many bytes are not analysed (a note says so).",
    ),
    SettingSpec(
        "exclude",
        "patterns",
        pyproject_key="exclude",
        default=(),
        example='["scripts/*"]',
        description="Glob patterns of files never checked, relative to the project root.",
    ),
    SettingSpec(
        "ignore",
        "ignore-map",
        pyproject_key="ignore",
        default={},
        example='{ mps = ["aten::take"] }',
        description='Ops (or rule codes) never reported, per target (`"*"`: every target). Each value is a '
        "list, even for one name.",
    ),
    SettingSpec(
        "modules",
        "modules",
        pyproject_key="modules",
        default={},
        example='{ "pkg.model.Net" = { init = "Net(dim=64)", inputs = "torch.randn(1, 64)" } }',
        description="Per module class (the dotted name you import it by): `init` (an expression or "
        '"pkg.mod:function" returning an instance), `inputs` and `kwargs` (forward\'s arguments), '
        "`options` (passed to factory functions as `config`), `skip`.",
    ),
    SettingSpec(
        "factories",
        "python-file",
        pyproject_key="factories",
        example='"atenlint_factories.py"',
        description="A Python file of `init_<Class>` / `inputs_<Class>` / `kwargs_<Class>` functions, relative "
        "to the pyproject.toml.",
    ),
    SettingSpec(
        "trusted",
        "boolean",
        editor_key="trusted",
        vscode=False,
        default=True,
        extension_supplies=True,
        description="`false`: never import the workspace's code, only read it (static pass). The VS Code "
        "extension sends the folder's workspace trust.",
    ),
    SettingSpec(
        "python",
        "string",
        editor_key="python",
        editor_aliases=("interpreter",),
        vscode=False,
        extension_supplies=True,
        builtin_note="the interpreter running the server",
        description="The interpreter the analysis workers import your code with (it needs torch). The VS Code "
        "extension sends the interpreter it chose (`#atenlint.interpreter#`).",
    ),
    SettingSpec(
        "memory_limit_mb",
        "integer",
        editor_key="memoryLimitMb",
        vscode=False,
        minimum=256,
        builtin=0,
        builtin_note="60 % of physical memory",
        description="A worker using more memory than this many MB is replaced.",
    ),
    SettingSpec(
        "interpreter",
        "string",
        editor_key="interpreter",
        server=False,
        default="",
        scope="machine-overridable",
        restricted=True,
        description="Python interpreter that runs atenlint and imports your modules; it needs `torch`. Empty: "
        "the environment selected in the Python extension, else `python3` on `PATH`. "
        "`${workspaceFolder}`, `${userHome}`, `~` and `${env:NAME}` are expanded. Ignored in "
        "workspace settings of an untrusted folder.",
    ),
    SettingSpec(
        "import_strategy",
        "choice",
        editor_key="importStrategy",
        server=False,
        default="useBundled",
        choices=IMPORT_STRATEGIES,
        scope="machine-overridable",
        restricted=True,
        choice_descriptions=(
            (
                "Run the atenlint server shipped with this extension (its pure-Python dependencies are bundled; your "
                "interpreter only needs torch)."
            ),
            (
                "Run the atenlint installed in the interpreter (`pip install atenlint`), for example a development "
                "checkout."
            ),
        ),
        description="Which atenlint server to run.",
    ),
    SettingSpec(
        "trace_server",
        "choice",
        editor_key="trace.server",
        server=False,
        default="off",
        choices=TRACE_LEVELS,
        scope="window",
        extension_reads=False,
        choice_descriptions=(
            "No protocol trace.",
            "Log each LSP message's method and timing.",
            "Log each LSP message with its content.",
        ),
        description="Trace of the messages between VS Code and the atenlint server, in the **atenlint** output "
        "channel (its own log level is set with **Developer: Set Log Level...**).",
    ),
)


# The views below are computed from SETTINGS on each call (a couple of dozen entries), so a
# change to the table (a test's monkeypatch included) reaches every consumer at once.
def by_name() -> dict[str, SettingSpec]:
    return {spec.name: spec for spec in SETTINGS}


def initial(name: str) -> Any:
    """The value of setting `name` when nothing sets it (for the dataclasses' field defaults)."""
    return by_name()[name].initial


def pyproject_keys() -> dict[str, SettingSpec]:
    """`[tool.atenlint]` key -> spec."""
    return {spec.pyproject_key: spec for spec in SETTINGS if spec.pyproject_key is not None}


def server_keys() -> dict[str, SettingSpec]:
    """Editor key the language server reads (aliases included) -> spec."""
    return {
        key: spec
        for spec in SETTINGS
        if spec.in_server
        for key in (spec.editor_key, *spec.editor_aliases)
        if key is not None
    }


MODULE_KEYS: Final = ("init", "inputs", "kwargs", "options", "skip")


class SettingError(ValueError):
    """A value a setting cannot take; the message says what it must be (the caller names key and file)."""


def requirement(spec: SettingSpec, key: str) -> str:
    """What a value of the setting must be, as a sentence about `key`."""
    if spec.kind == "severity-map":
        return f"{key} must map targets to one of {', '.join(SEVERITIES)}"
    return f"{key} must be {expectation(spec)}"


def expectation(spec: SettingSpec) -> str:
    """What a value must be, in words (`a whole number from 1 to 64`); the VS Code client
    says the same (it is generated into its settings module)."""
    kind = spec.kind
    if kind == "boolean":
        return "true or false"
    if kind in ("integer", "number"):
        return _number_phrase(spec)
    if kind == "string":
        return "a string"
    if kind == "choice":
        return f"one of {', '.join(spec.choices)}"
    if kind == "targets":
        return "a non-empty list of target names"
    if kind == "patterns":
        return 'a list of glob patterns, like ["tests/*"]'
    if kind == "severity-map":
        return f"a table mapping targets to one of {', '.join(SEVERITIES)}"
    if kind == "ignore-map":
        return 'a table of lists, like {mps = ["aten::take"]} (a list even for one name)'
    if kind == "python-file":
        return 'the path of a Python file, like "atenlint_factories.py"'
    return 'a table of "pkg.mod.Class" = {init = "..."}'


_UNITS: Final = {
    "timeout": "seconds",
    "max_file_bytes": "bytes",
    "on_type_delay_ms": "milliseconds",
    "memory_limit_mb": "MB",
}


def _number_phrase(spec: SettingSpec) -> str:
    """`a positive number of seconds (at most 86400)`, `a whole number from 1 to 64`, ..."""
    unit = _UNITS.get(spec.name)
    whole = spec.kind == "integer"
    positive = spec.exclusive_minimum == 0 and spec.minimum is None
    noun = "a positive number" if positive else "a whole number" if whole and unit is None else "a number"
    noun += f" of {unit}" if unit else ""
    low = spec.minimum
    if low is not None and spec.maximum is not None:
        limits = f"from {_number(low)} to {_number(spec.maximum)}"
    elif low is not None:
        limits = f"of at least {_number(low)}"
    elif spec.maximum is not None:
        limits = f"at most {_number(spec.maximum)}"
    else:
        limits = ""
    if unit is None:
        return f"{noun} {limits}".strip()
    detail = f"a whole number {limits}".strip() if whole else limits
    return f"{noun} ({detail})" if detail else noun


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _is_number(value: Any, whole: bool) -> bool:
    """JSON/TOML numbers only: `true` is not 1, "5" is not 5, NaN is no limit."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if isinstance(value, float) and not math.isfinite(value):
        return False
    return isinstance(value, int) or not whole


def _within(spec: SettingSpec, value: float) -> bool:
    if spec.minimum is not None and value < spec.minimum:
        return False
    if spec.exclusive_minimum is not None and value <= spec.exclusive_minimum:
        return False
    return spec.maximum is None or value <= spec.maximum


def _string_list(value: Any) -> bool:
    """A list of strings (a lone string is not: it would become a set of its characters)."""
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def target_list(value: Any, key: str) -> tuple[str, ...]:
    """Target names, from a list or a comma-separated string; duplicates dropped, order kept."""
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",") if v.strip()]
    if not (isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value)):
        raise SettingError(requirement(by_name()["targets"], key))
    names = [v.strip() for v in value]
    unknown = [v for v in names if not known_target(v)]
    if unknown:
        raise SettingError(
            f"{key}: unknown target {', '.join(map(repr, unknown))}; known targets: {', '.join((*TARGETS, 'onnx:N'))}"
        )
    return tuple(dict.fromkeys(names))


def _map_keys_are_targets(value: Mapping[Any, Any], key: str, allow_all: bool) -> None:
    unknown = [k for k in value if not (isinstance(k, str) and (known_target(k) or (allow_all and k == ALL_TARGETS)))]
    if unknown:
        extra = f' or "{ALL_TARGETS}"' if allow_all else ""
        raise SettingError(
            f"{key}: unknown target {', '.join(map(repr, unknown))}; "
            f"keys are target names ({', '.join((*TARGETS, 'onnx:N'))}){extra}"
        )


def convert(spec: SettingSpec, value: Any, key: str) -> Any:
    """The value checked against the spec and converted to the setting's Python type.
    `modules` and `python-file` values are checked for shape only (config.py knows more)."""
    kind = spec.kind
    if kind == "boolean":
        if isinstance(value, bool):
            return value
    elif kind in ("integer", "number"):
        if _is_number(value, whole=kind == "integer") and _within(spec, value):
            return int(value) if kind == "integer" else float(value)
    elif kind == "string":
        if isinstance(value, str):
            return value
    elif kind == "choice":
        if isinstance(value, str) and value in spec.choices:
            return value
    elif kind == "targets":
        return target_list(value, key)
    elif kind == "patterns":
        if _string_list(value):
            return tuple(value)
    elif kind == "severity-map":
        if isinstance(value, Mapping) and all(isinstance(v, str) and v in SEVERITIES for v in value.values()):
            _map_keys_are_targets(value, key, allow_all=False)
            return {str(k): str(v) for k, v in value.items()}
    elif kind == "ignore-map":
        if isinstance(value, Mapping) and all(_string_list(v) for v in value.values()):
            _map_keys_are_targets(value, key, allow_all=True)
            return {str(k): frozenset(v) for k, v in value.items()}
    elif kind == "python-file":
        if isinstance(value, str) and value.endswith(".py"):
            return value
    elif kind == "modules" and isinstance(value, Mapping):
        return dict(value)
    raise SettingError(requirement(spec, key))


def parse_table(table: Mapping[str, Any], where: str, error: Callable[[str], Exception]) -> dict[str, Any]:
    """`{attribute: value}` for the keys of a `[tool.atenlint]` table; `error(message)` is
    raised for an unknown key or a value the schema refuses (the message names key and file)."""
    known = pyproject_keys()
    unknown = sorted(k for k in table if k not in known)
    if unknown:
        raise error(f"{where}: unknown key {', '.join(map(repr, unknown))}; known keys: {', '.join(sorted(known))}")
    values: dict[str, Any] = {}
    for key, raw in table.items():
        spec = known[key]
        try:
            values[spec.name] = convert(spec, raw, key)
        except SettingError as problem:
            raise error(f"{where}: {problem}") from None
    return values


def json_schema(spec: SettingSpec) -> dict[str, Any]:
    """The JSON schema of one VS Code setting (package.json `contributes.configuration`)."""
    out: dict[str, Any] = {}
    kind = spec.kind
    nullable = not spec.has_default
    if kind == "targets":
        out["type"] = ["array", "null"]
        out.update(
            minItems=1,
            uniqueItems=True,
            items={
                "type": "string",
                "anyOf": [
                    {"enum": list(TARGETS), "enumDescriptions": [_target_description(t) for t in TARGETS]},
                    {"pattern": "^onnx:[0-9]+$", "patternErrorMessage": "A target name, or onnx:N for ONNX opset N"},
                ],
            },
        )
    elif kind == "severity-map":
        out["type"] = "object"
        out["additionalProperties"] = False
        out["properties"] = {
            target: {
                "type": "string",
                "enum": list(SEVERITIES),
                "description": f"Severity of every finding for the {target} target.",
                "enumDescriptions": _severity_descriptions(target),
            }
            for target in TARGETS
        }
        out["patternProperties"] = {
            "^onnx:[0-9]+$": {
                "type": "string",
                "enum": list(SEVERITIES),
                "description": "Severity of every finding for this ONNX opset.",
            }
        }
    else:
        json_type = {
            "boolean": "boolean",
            "integer": "integer",
            "number": "number",
            "string": "string",
            "choice": "string",
        }[kind]
        out["type"] = [json_type, "null"] if nullable else json_type
        if spec.choices:
            out["enum"] = list(spec.choices)
            if spec.choice_descriptions:
                out["enumDescriptions"] = list(spec.choice_descriptions)
        if spec.minimum is not None:
            out["minimum"] = spec.minimum
        if spec.exclusive_minimum is not None:
            out["exclusiveMinimum"] = spec.exclusive_minimum
        if spec.maximum is not None:
            out["maximum"] = spec.maximum
    out["scope"] = spec.scope
    out["default"] = _json_default(spec)
    out["markdownDescription"] = spec.description
    return out


def _json_default(spec: SettingSpec) -> Any:
    if not spec.has_default:
        return None
    default = spec.default
    return list(default) if isinstance(default, tuple) else default


# Shown in the Settings UI next to each target name (a target without one: names.TARGETS's words).
_TARGET_DESCRIPTIONS: Final = {
    "mps": "Apple GPUs through PyTorch's MPS backend: ops with no MPS kernel (MPS001), ops torch always runs on "
    "the CPU (MPS002), ops with neither an MPS nor a CPU kernel (MPS003).",
    "cuda": "NVIDIA GPUs through PyTorch's CUDA backend: ops with no CUDA kernel.",
    "xla": "TPUs and other XLA devices through torch_xla: ops torch_xla does not lower.",
    "onnx": "ONNX through torch.onnx.export, at the exporter's default opset (write onnx:N, e.g. onnx:17, for "
    "opset N).",
    "executorch": "ExecuTorch: the core ATen opset after torch.export, as to_edge verifies it.",
    "core-aten": "The core ATen opset after torch.export decomposition (ops tagged torch.Tag.core).",
    "coreml": "Apple Core ML through coremltools.convert: ops coremltools has no converter for.",
    "tensorrt": "NVIDIA TensorRT through Torch-TensorRT (dynamo): ops with no converter.",
    "torchscript": "torch.jit.script: code TorchScript cannot compile.",
}


def _severity_descriptions(target: str) -> list[str]:
    label = target.upper() if len(target) <= 4 else target
    return [
        f"Every {label} finding is an error.",
        f"Every {label} finding is a warning.",
        f"Every {label} finding is information.",
        f"Every {label} finding is a hint (no squiggle, only dots).",
        f"Do not report {label} findings.",
    ]


def _target_description(target: str) -> str:
    return _TARGET_DESCRIPTIONS.get(target, TARGETS[target] + ".")


def vscode_configuration() -> dict[str, Any]:
    """package.json's `contributes.configuration`."""
    return {
        "title": "atenlint",
        "properties": {f"atenlint.{spec.editor_key}": json_schema(spec) for spec in SETTINGS if spec.in_vscode},
    }


def restricted_configurations() -> list[str]:
    """package.json's `capabilities.untrustedWorkspaces.restrictedConfigurations`."""
    return sorted(f"atenlint.{spec.editor_key}" for spec in SETTINGS if spec.in_vscode and spec.restricted)


def checked_number(name: str, value: Any, key: str) -> Any:
    """A numeric option given outside a table (the CLI's `--timeout 60`, `--jobs 4`) checked
    against the same spec as `[tool.atenlint]` and the editor: `nan`, `inf`, negative and
    huge values are a SettingError whose message names `key` and what it must be."""
    return convert(by_name()[name], value, key)


# -- how many workers this machine can hold ---------------------------------------------

# What one analysis worker costs: an interpreter with torch imported (about 240 MB
# resident) and room for its files' modules on meta.
WORKER_BYTES: Final = 300 * 1024 * 1024


@dataclass(frozen=True)
class MachineCapacity:
    cores: int
    available_bytes: int | None  # None: unknown (then memory does not limit)


@dataclass(frozen=True)
class WorkerCount:
    workers: int
    note: str | None  # why fewer than asked for (one line for the log / stderr), None if not capped


def cap_workers(requested: int, machine: MachineCapacity) -> WorkerCount:
    """At most one worker per core and per WORKER_BYTES of available memory (and never
    over the schema's maximum): a project's `workers = 64` or `--jobs 100000` must not
    start more interpreters than the machine holds. At least one, always."""
    by_memory = max(1, machine.available_bytes // WORKER_BYTES) if machine.available_bytes is not None else _WORKERS_MAX
    limit = max(1, min(machine.cores, by_memory, _WORKERS_MAX))
    if requested <= limit:
        return WorkerCount(max(requested, 1), None)
    memory = (
        f" and {machine.available_bytes // (1024 * 1024)} MB of available memory"
        if machine.available_bytes is not None
        else ""
    )
    return WorkerCount(
        limit,
        f"{requested} workers asked for; this machine has {machine.cores} "
        f"core{'s' if machine.cores != 1 else ''}{memory} (each worker needs about "
        f"{WORKER_BYTES // (1024 * 1024)} MB): starting {limit}",
    )


def machine_capacity() -> MachineCapacity:
    """The cores this process may run on and the memory it may still use (the smaller of
    the system's available memory and its cgroup's room, as on a CI runner or container)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    readings = [m for m in (_meminfo_available(), _cgroup_room()) if m is not None]
    return MachineCapacity(max(cores, 1), min(readings) if readings else None)


def _small_file(path: str) -> str | None:
    try:
        return read_regular_file(path, 1 << 20).decode("ascii", errors="replace")
    except OSError:
        return None


def _meminfo_available() -> int | None:
    text = _small_file("/proc/meminfo")
    for line in (text or "").splitlines():
        if line.startswith("MemAvailable:"):
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit():
                return int(parts[1]) * 1024
    if hasattr(os, "sysconf"):
        try:
            return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
        except (ValueError, OSError):
            return None
    return None


def _cgroup_room() -> int | None:
    """cgroup v2: memory.max minus memory.current of this process's group ("max": no limit)."""
    group = _small_file("/proc/self/cgroup")
    if not group:
        return None
    relative = next((line[3:] for line in group.splitlines() if line.startswith("0::")), None)
    if relative is None:
        return None
    base = os.path.join("/sys/fs/cgroup", relative.strip().lstrip("/"))
    limit, current = _small_file(os.path.join(base, "memory.max")), _small_file(os.path.join(base, "memory.current"))
    if limit is None or current is None or not limit.strip().isdigit() or not current.strip().isdigit():
        return None
    return max(int(limit) - int(current), 0)
