"""Configuration a real model needs: factories and inputs as Python functions (by
reference or in a factories file), keyword inputs, and settings that are checked."""

from __future__ import annotations

import textwrap

import pytest

from atenlint.config import ConfigError, SettingsResolver, settings_from_table
from atenlint.factories import parse_reference


def write(root, files: dict) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())


def check(engine, root):
    engine.resolver = SettingsResolver()
    return engine.check_paths([str(root)], jobs=1)


MODEL = """
    import torch
    from torch import nn

    class Config:
        def __init__(self, hidden, vocab):
            self.hidden, self.vocab = hidden, vocab

    class Detector(nn.Module):
        def __init__(self, config, backbone):
            super().__init__()
            self.embed = nn.Embedding(config.vocab, config.hidden)
            self.backbone = backbone

        def forward(self, input_ids=None, pixel_values=None):
            if pixel_values is not None:
                return torch.mode(self.backbone(pixel_values)).values
            return self.embed(input_ids)
"""


def test_function_factory_with_keyword_inputs(engine, tmp_path):
    write(
        tmp_path,
        {
            "pyproject.toml": """
            [tool.atenlint.modules."detector.Detector"]
            init = "tools/make.py:detector"
            kwargs = "dict(pixel_values=torch.randn(1, 8))"
            options = {hidden = 8, vocab = 32}
        """,
            "detector.py": MODEL,
            "tools/make.py": """
            from torch import nn

            def detector(cls, config, module):
                # `config` is the options table; `module` the user's module (its Config class)
                return cls(module.Config(**config), nn.Linear(8, 8))
        """,
        },
    )
    report = check(engine, tmp_path)
    assert report.by_capture["trace"] == 1
    (finding,) = [f for f in report.findings if f.target]
    assert finding.capture == "trace" and finding.code == "MPS001" and finding.range.start.line == 15


def test_factories_file_supplies_init_and_inputs(engine, tmp_path):
    write(
        tmp_path,
        {
            "pyproject.toml": '[tool.atenlint]\nfactories = "atenlint_factories.py"\n',
            "detector.py": MODEL,
            "atenlint_factories.py": """
            import torch
            from torch import nn

            def init_Detector(cls, module):
                return cls(module.Config(hidden=8, vocab=32), nn.Linear(8, 8))

            def kwargs_Detector(model):
                return {"pixel_values": torch.randn(2, model.embed.embedding_dim)}

            def init(cls):
                return None  # any other class: keep the default
        """,
        },
    )
    report = check(engine, tmp_path)
    assert report.by_capture["trace"] == 1
    assert [f.capture for f in report.findings if f.target] == ["trace"]


def test_a_broken_factory_reference_says_so(engine, tmp_path):
    write(
        tmp_path,
        {
            "pyproject.toml": '[tool.atenlint.modules."detector.Detector"]\ninit = "tools.missing:make"\n',
            "detector.py": MODEL,
        },
    )
    report = check(engine, tmp_path)
    (note,) = [f for f in report.findings if f.code == "ATL003"]
    assert "tools.missing:make" in note.message and "could not be loaded" in note.message
    assert report.by_capture["static"] == 1  # still read from source


def test_settings_accept_references_kwargs_and_a_factories_file(tmp_path):
    where = str(tmp_path / "pyproject.toml")
    settings = settings_from_table(
        {
            "factories": "tools/f.py",
            "modules": {
                "m.C": {
                    "init": "pkg.make:build",
                    "inputs": "pkg.make:inputs",
                    "kwargs": "{'mask': None}",
                    "options": {"depth": 2},
                }
            },
        },
        where,
    )
    assert settings.factories == str(tmp_path / "tools" / "f.py")
    config = settings.modules["m.C"]
    assert (config.kwargs, config.options) == ("{'mask': None}", {"depth": 2})
    with pytest.raises(ConfigError, match="factories must be the path of a Python file"):
        settings_from_table({"factories": 3}, where)
    with pytest.raises(ConfigError, match="known keys: init, inputs, kwargs, options, skip"):
        settings_from_table({"modules": {"m.C": {"kwarg": "{}"}}}, where)
    with pytest.raises(ConfigError, match="not a Python expression"):
        settings_from_table({"modules": {"m.C": {"kwargs": "dict(("}}}, where)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("pkg.module:function", ("pkg.module", "function")),
        ("tools/factories.py:make_detr", ("tools/factories.py", "make_detr")),
        ("pkg.mod:Holder.build", ("pkg.mod", "Holder.build")),
        ("torch.randn(1, 3)", None),
        ("{'a': 1}", None),
        ("x[1:2]", None),
        ("lambda: 1", None),
        (".rel:fn", None),
    ],
)
def test_function_references_are_told_from_expressions(text, expected):
    reference = parse_reference(text)
    assert (None if reference is None else (reference.module, reference.attribute)) == expected
