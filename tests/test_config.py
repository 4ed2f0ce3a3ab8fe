from __future__ import annotations

import pytest

from atenlint.config import ConfigError, SettingsResolver, settings_from_table


def test_table_keys():
    settings = settings_from_table({
        "targets": ["mps"], "timeout": 5, "mps-fallback": False, "workers": 2,
        "modules": {"pkg.mod.Net": {"init": "Net(3)", "inputs": "torch.ones(1)"}},
        "ignore": {"mps": ["aten::take"]}, "severity": {"mps": "error"},
    }, "pyproject.toml")
    assert settings.targets == ("mps",) and settings.timeout == 5.0 and not settings.mps_fallback
    assert settings.modules["pkg.mod.Net"].init == "Net(3)"
    assert settings.ignore == {"mps": frozenset({"aten::take"})}


@pytest.mark.parametrize("table, message", [
    ({"target": ["mps"]}, "unknown key 'target'"),
    ({"targets": ["tpu"]}, "unknown target 'tpu'"),
    ({"timeout": -1}, "timeout must be a positive number"),
    ({"modules": {"a.B": {"init": "B("}}}, "not a Python expression"),
    ({"modules": {"a.B": {"factory": "B()"}}}, "unknown key factory"),
    ({"severity": {"mps": "loud"}}, "severity must map targets"),
])
def test_errors_name_the_key(table, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        settings_from_table(table, "pyproject.toml")


def test_nearest_pyproject_with_a_table_wins(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.atenlint]\ntimeout = 7\n")
    inner = tmp_path / "inner"
    inner.mkdir()
    (inner / "pyproject.toml").write_text("[project]\nname = 'inner'\n")  # no [tool.atenlint]: keep looking
    settings = SettingsResolver(overrides={"targets": ("mps",)}).for_file(str(inner / "m.py"))
    assert settings.timeout == 7.0 and settings.config_path == str(tmp_path / "pyproject.toml")
    assert settings.project_root == str(inner)


def test_invalid_toml_is_a_config_error(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.atenlint\n")
    with pytest.raises(ConfigError, match="invalid TOML"):
        SettingsResolver().for_file(str(tmp_path / "m.py"))
