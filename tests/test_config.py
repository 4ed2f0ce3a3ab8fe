from __future__ import annotations

import pytest

from atenlint.config import ConfigError, SettingsResolver, settings_from_table


def test_table_keys():
    settings = settings_from_table(
        {
            "targets": ["mps"],
            "timeout": 5,
            "mps-fallback": False,
            "workers": 2,
            "modules": {"pkg.mod.Net": {"init": "Net(3)", "inputs": "torch.ones(1)"}},
            "ignore": {"mps": ["aten::take"]},
            "severity": {"mps": "error"},
        },
        "pyproject.toml",
    )
    assert settings.targets == ("mps",) and settings.timeout == 5.0 and not settings.mps_fallback
    assert settings.modules["pkg.mod.Net"].init == "Net(3)"
    assert settings.ignore == {"mps": frozenset({"aten::take"})}


@pytest.mark.parametrize(
    "table, message",
    [
        ({"target": ["mps"]}, "unknown key 'target'"),
        ({"targets": ["tpu"]}, "unknown target 'tpu'"),
        ({"timeout": -1}, "timeout must be a positive number"),
        ({"modules": {"a.B": {"init": "B("}}}, "not a Python expression"),
        ({"modules": {"a.B": {"factory": "B()"}}}, "unknown key factory"),
        ({"severity": {"mps": "loud"}}, "severity must map targets"),
    ],
)
def test_errors_name_the_key(table, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        settings_from_table(table, "pyproject.toml")


def test_only_the_projects_own_pyproject_is_read(tmp_path):
    # issue 12: the nearest pyproject.toml (or .git) is the project root; a parent's
    # [tool.atenlint] is outside the project and never read.
    (tmp_path / "pyproject.toml").write_text("[tool.atenlint]\ntimeout = 7\n")
    inner = tmp_path / "inner"
    inner.mkdir()
    (inner / "pyproject.toml").write_text("[project]\nname = 'inner'\n")
    settings = SettingsResolver(overrides={"targets": ("mps",)}).for_file(str(inner / "m.py"))
    assert settings.timeout == 60.0 and settings.config_path is None
    assert settings.project_root == str(inner)
    outer = SettingsResolver().for_file(str(tmp_path / "m.py"))
    assert outer.timeout == 7.0 and outer.config_path == str(tmp_path / "pyproject.toml")


def test_invalid_toml_is_a_config_error(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.atenlint\n")
    with pytest.raises(ConfigError, match="invalid TOML"):
        SettingsResolver().for_file(str(tmp_path / "m.py"))
