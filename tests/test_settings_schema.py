"""One settings schema (atenlint.settings_schema) and its three consumers: the CLI's
`[tool.atenlint]` parsing, the language server's editor settings, and the VS Code extension
(package.json's settings and the TypeScript module, both generated from the schema)."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import re

import pytest

from atenlint import settings_schema as schema
from atenlint.config import ConfigError, Settings, settings_from_table
from atenlint.lsp.settings import EditorSettings, editor_settings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _generator():
    spec = importlib.util.spec_from_file_location(
        "gen_vscode_settings", os.path.join(ROOT, "scripts", "gen_vscode_settings.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen = _generator()


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def _ts_spec(ts: str, key: str) -> str:
    """The generated TypeScript spec literal of one setting."""
    match = re.search(rf"^    {re.escape(key)}: (\{{.*\}}),$", ts, re.MULTILINE)
    assert match, f"{key} is not in the generated TypeScript"
    return match.group(1)


def test_the_checked_in_package_json_and_typescript_are_generated_from_the_schema():
    assert _read(gen.PACKAGE_JSON) == gen.package_json(_read(gen.PACKAGE_JSON)), (
        "package.json is stale: run python scripts/gen_vscode_settings.py"
    )
    assert _read(gen.TS_MODULE) == gen.ts_module(), "settingsSchema.ts is stale: run scripts/gen_vscode_settings.py"
    assert gen.main(["--check"]) == 0


def test_the_dataclass_defaults_are_the_schemas():
    project, editor = Settings(), EditorSettings()
    for spec in schema.SETTINGS:
        if spec.in_pyproject:
            assert getattr(project, spec.name) == spec.initial, spec.name
        if spec.in_server and spec.name not in ("targets", "timeout", "python"):  # None: the project's / the server's
            assert getattr(editor, spec.name) == spec.initial, spec.name
    assert {f.name for f in dataclasses.fields(Settings)} >= {s.name for s in schema.SETTINGS if s.in_pyproject}
    assert {f.name for f in dataclasses.fields(EditorSettings)} >= {s.name for s in schema.SETTINGS if s.in_server}


def test_settings_the_server_decides_show_no_value_in_the_settings_ui():
    properties = json.loads(_read(gen.PACKAGE_JSON))["contributes"]["configuration"]["properties"]
    for spec in schema.SETTINGS:
        if spec.in_vscode:
            shown = properties[f"atenlint.{spec.editor_key}"]
            expected = list(spec.default) if isinstance(spec.default, tuple) else spec.default
            assert shown["default"] == (expected if spec.has_default else None), spec.name
            assert shown["markdownDescription"] == spec.description
    assert properties["atenlint.targets"]["default"] is None and properties["atenlint.timeout"]["default"] is None
    # A setting shared with pyproject.toml never shows a value the project would not get.
    for spec in schema.SETTINGS:
        if spec.in_vscode and spec.in_pyproject and spec.has_default:
            assert spec.default == spec.initial and spec.name in ("severity", "workers"), spec.name


def test_limits_are_identical_in_every_consumer():
    properties = json.loads(_read(gen.PACKAGE_JSON))["contributes"]["configuration"]["properties"]
    ts = _read(gen.TS_MODULE)
    for spec in schema.SETTINGS:
        if spec.kind not in ("integer", "number"):
            continue
        if spec.in_vscode:
            shown = properties[f"atenlint.{spec.editor_key}"]
            assert (shown.get("minimum"), shown.get("exclusiveMinimum"), shown.get("maximum")) == (
                spec.minimum,
                spec.exclusive_minimum,
                spec.maximum,
            ), spec.name
            literal = _ts_spec(ts, spec.editor_key)
            for name, value in (
                ("minimum", spec.minimum),
                ("exclusiveMinimum", spec.exclusive_minimum),
                ("maximum", spec.maximum),
            ):
                assert (f"{name}: {value}" in literal) == (value is not None), (spec.name, name)
            assert json.dumps(schema.expectation(spec)) in literal
        for beyond in _outside(spec):
            if spec.in_pyproject:
                with pytest.raises(ConfigError, match=re.escape(schema.requirement(spec, spec.pyproject_key))):
                    settings_from_table({spec.pyproject_key: beyond}, "pyproject.toml")
            if spec.in_server:
                read = editor_settings({spec.editor_key: beyond})
                assert read.problems == (f"atenlint.{schema.requirement(spec, spec.editor_key)}",), (spec.name, beyond)
        for edge in _inside(spec):
            if spec.in_pyproject:
                assert getattr(settings_from_table({spec.pyproject_key: edge}, "p.toml"), spec.name) == edge
            if spec.in_server:
                read = editor_settings({spec.editor_key: edge})
                assert read.problems == () and getattr(read, spec.name) == edge, (spec.name, edge)


def _outside(spec):
    values = [True, "5", float("nan")]
    if spec.minimum is not None:
        values.append(spec.minimum - 1)
    if spec.exclusive_minimum is not None:
        values.append(spec.exclusive_minimum)
    if spec.maximum is not None:
        values.append(spec.maximum + 1)
    if spec.kind == "integer":
        values.append((spec.minimum or 1) + 0.5)
    return values


def _inside(spec):
    return [v for v in (spec.minimum, spec.maximum) if v is not None]


def test_workers_are_1_to_64_everywhere():
    # The limits once differed: 1-64 in package.json, 1-1024 in the client, >= 1 in the server.
    properties = json.loads(_read(gen.PACKAGE_JSON))["contributes"]["configuration"]["properties"]
    assert (properties["atenlint.workers"]["minimum"], properties["atenlint.workers"]["maximum"]) == (1, 64)
    assert "minimum: 1, maximum: 64" in _ts_spec(_read(gen.TS_MODULE), "workers")
    assert editor_settings({"workers": 65}).workers == 1 and editor_settings({"workers": 64}).workers == 64
    with pytest.raises(ConfigError, match="workers must be a whole number from 1 to 64"):
        settings_from_table({"workers": 65}, "pyproject.toml")


def test_a_lone_string_where_a_list_is_needed_is_a_clear_error_never_a_set_of_characters(tmp_path):
    where = str(tmp_path / "pyproject.toml")
    with pytest.raises(
        ConfigError,
        match=re.escape(
            f'{where}: ignore must be a table of lists, like {{mps = ["aten::take"]}} (a list even for one name)'
        ),
    ):
        settings_from_table({"ignore": {"mps": "aten::take"}}, where)
    with pytest.raises(ConfigError, match="exclude must be a list of glob patterns"):
        settings_from_table({"exclude": "tests/*"}, where)
    assert settings_from_table({"ignore": {"mps": ["aten::take"]}}, where).ignore == {"mps": {"aten::take"}}


def test_map_keys_must_be_targets():
    with pytest.raises(ConfigError, match="ignore: unknown target 'msp'"):
        settings_from_table({"ignore": {"msp": ["aten::take"]}}, "pyproject.toml")
    with pytest.raises(ConfigError, match="severity: unknown target 'gpu'"):
        settings_from_table({"severity": {"gpu": "error"}}, "pyproject.toml")
    ok = settings_from_table(
        {"ignore": {"*": ["MPS002"], "onnx:17": ["aten::take"]}, "severity": {"onnx:17": "off"}}, "pyproject.toml"
    )
    assert set(ok.ignore) == {"*", "onnx:17"} and ok.severity == {"onnx:17": "off"}
    assert "atenlint.severity: unknown target 'gpu'" in editor_settings({"severity": {"gpu": "error"}}).problems[0]


def test_editor_settings_override_exactly_the_shared_project_settings():
    shared = {s.name for s in schema.SETTINGS if s.in_pyproject and s.in_server}
    assert shared == {"targets", "timeout", "severity", "workers"}
    read = editor_settings(
        {
            "atenlint": {
                "targets": ["onnx"],
                "timeout": 5,
                "severity": {"mps": "error"},
                "trigger": "onType",
                "workers": 2,
            }
        }
    )
    assert read.overrides() == {"targets": ("onnx",), "timeout": 5.0, "severity": {"mps": "error"}, "workers": 2}
    assert EditorSettings().overrides() == {}
    project = settings_from_table({"targets": ["mps"], "timeout": 60}, "pyproject.toml")
    assert project.with_overrides(**read.overrides()).targets == ("onnx",)


def test_a_setting_changed_in_the_schema_reaches_the_cli_the_server_and_vscode(monkeypatch):
    """Change one limit and one default and make one more setting visible in VS Code, in the
    schema only; the CLI's parser, the server's parser, package.json and the TypeScript all
    follow, without another edit."""
    changed = []
    for spec in schema.SETTINGS:
        if spec.name == "workers":
            spec = dataclasses.replace(spec, maximum=8)
        elif spec.name == "memory_limit_mb":
            spec = dataclasses.replace(spec, vscode=True)  # newly contributed to VS Code
        elif spec.name == "on_type_delay_ms":
            spec = dataclasses.replace(spec, default=750)
        changed.append(spec)
    monkeypatch.setattr(schema, "SETTINGS", tuple(changed))

    # The CLI ([tool.atenlint]) and the server (editor settings) read the new limit.
    with pytest.raises(ConfigError, match="workers must be a whole number from 1 to 8"):
        settings_from_table({"workers": 9}, "pyproject.toml")
    assert settings_from_table({"workers": 8}, "pyproject.toml").workers == 8
    assert editor_settings({"workers": 9}).problems == ("atenlint.workers must be a whole number from 1 to 8",)

    # VS Code: the generated manifest and TypeScript carry the change.
    manifest = json.loads(gen.package_json(_read(gen.PACKAGE_JSON)))
    properties = manifest["contributes"]["configuration"]["properties"]
    assert properties["atenlint.workers"]["maximum"] == 8
    assert properties["atenlint.onTypeDelayMs"]["default"] == 750
    assert properties["atenlint.memoryLimitMb"]["minimum"] == 256
    assert properties["atenlint.memoryLimitMb"]["default"] is None  # the server decides: no value shown
    ts = gen.ts_module()
    assert "maximum: 8" in _ts_spec(ts, "workers") and "default: 750" in _ts_spec(ts, "onTypeDelayMs")
    assert "    memoryLimitMb: number | undefined;" in ts  # ExtensionSettings
    assert '"memoryLimitMb"' in ts.split("FORWARDED_SETTINGS = ", 1)[1]  # sent to the server
    # ...and the checked-in files are now stale, which is what CI's --check reports.
    assert gen.main(["--check"]) == 1


def test_every_setting_is_documented():
    doc = _read(os.path.join(ROOT, "docs", "configuration.md"))
    for spec in schema.SETTINGS:
        if spec.in_pyproject:
            assert f"`{spec.pyproject_key}`" in doc, spec.pyproject_key
        if spec.editor_key is not None and (spec.in_vscode or spec.in_server):
            assert f"`{spec.editor_key}`" in doc or f"`atenlint.{spec.editor_key}`" in doc, spec.editor_key


# -- numbers given on the command line, and the worker cap (issue 21) ---------------------


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf"), -1.0, 0.0, 1e12])
def test_a_timeout_that_is_no_limit_is_refused_with_what_it_must_be(value):
    with pytest.raises(schema.SettingError) as error:
        schema.checked_number("timeout", value, "--timeout")
    assert str(error.value) == "--timeout must be a positive number of seconds (at most 86400)"


def test_a_sensible_timeout_passes_as_a_float():
    assert schema.checked_number("timeout", 5, "--timeout") == 5.0


@pytest.mark.parametrize("table", [{"timeout": float("nan")}, {"workers": 100_000}, {"workers": 0}])
def test_a_project_cannot_set_what_the_command_line_cannot(table):
    with pytest.raises(ConfigError):
        settings_from_table(table, "pyproject.toml")


def test_workers_are_capped_by_cores_and_by_memory():
    plenty = 64 * schema.WORKER_BYTES
    assert schema.cap_workers(2, schema.MachineCapacity(4, plenty)) == schema.WorkerCount(2, None)
    by_cores = schema.cap_workers(64, schema.MachineCapacity(4, plenty))
    assert by_cores.workers == 4 and "64 workers asked for" in (by_cores.note or "") and "4 cores" in by_cores.note
    by_memory = schema.cap_workers(100_000, schema.MachineCapacity(32, 3 * schema.WORKER_BYTES + 1))
    assert by_memory.workers == 3 and "starting 3" in (by_memory.note or "")
    assert schema.cap_workers(8, schema.MachineCapacity(8, 0)).workers == 1  # always one
    assert schema.cap_workers(8, schema.MachineCapacity(2, None)).workers == 2  # memory unknown: cores decide


def test_this_machine_is_measured():
    machine = schema.machine_capacity()
    assert machine.cores >= 1 and (machine.available_bytes is None or machine.available_bytes > 0)
    assert 1 <= schema.cap_workers(10_000, machine).workers <= machine.cores
