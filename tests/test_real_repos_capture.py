"""Real repositories, first run: every class analysed (never less than `--no-exec`),
build failures that are not the user's fault handled, missing packages named, the
count of classes per capture path reported. Patterns re-typed from public model code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from atenlint.config import SettingsResolver
from torch_facts import with_mps_missing


def write(root, files: dict) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())


def check(engine, root, execute=True):
    engine.resolver = SettingsResolver()
    return engine.check_paths([str(root)], jobs=1, execute=execute)


def problems(report):
    return {
        (os.path.basename(f.abs_path), f.range.start.line, f.code, f.target)
        for f in report.findings
        if f.target and f.severity in ("error", "warning")
    }


# Each class calls an op with no MPS kernel in the installed torch (`MISSING`, torch_facts).
MODE = """
    import torch
    from torch import nn
    {imports}

    class Block(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.proj = nn.Linear(dim, dim)

        def forward(self, x):
            return MISSING(self.proj(x))

    class Head(nn.Module):
        def __init__(self, dim, classes):
            super().__init__()
            self.out = nn.Linear(dim, classes)

        def forward(self, x):
            return MISSING(self.out(x))
"""


def test_missing_package_reads_every_class_from_source(engine, tmp_path):
    write(
        tmp_path,
        {
            "pyproject.toml": "[project]\nname = 'demo'\n",
            "pkg/__init__.py": "from .layers import *\n",
            "pkg/layers.py": with_mps_missing(MODE.format(imports="from pkg import helpers")),
            "pkg/helpers.py": "import numpy\nimport not_a_real_package_xyz\n",
        },
    )
    default, static = check(engine, tmp_path), check(engine, tmp_path, execute=False)
    assert problems(static) and problems(static) <= problems(default)
    assert default.by_capture["static"] == 2 and default.by_capture["none"] == 0
    (note,) = [f for f in default.findings if f.code == "ATL002" and f.abs_path.endswith("layers.py")]
    assert note.severity == "information"
    assert "`not_a_real_package_xyz`" in note.message and "not installed" in note.message
    # It points at the import that failed, in the file where it failed.
    assert note.related and note.related[0]["path"].endswith("helpers.py") and note.related[0]["line"] == 1
    assert all(f.capture == "static" for f in default.findings if f.target)


def test_unbuildable_classes_are_read_from_source_with_one_note_per_file(engine, tmp_path):
    write(
        tmp_path,
        {
            "pyproject.toml": "[project]\nname = 'demo'\n[tool.atenlint]\ninfer-inputs = false\n",
            "layers.py": with_mps_missing(MODE.format(imports="")),
        },
    )
    default, static = check(engine, tmp_path), check(engine, tmp_path, execute=False)
    assert problems(static) <= problems(default) and len(problems(default)) == 2
    notes = [f for f in default.findings if f.code == "ATL003"]
    assert len(notes) == 1 and "`Head`" in notes[0].message and "`dim`" in notes[0].message
    assert default.by_capture == {
        "trace": 0,
        "inferred": 0,
        "script": 0,
        "static": 2,
        "none": 0,
        "arguments_inferred": 0,
    }


def test_classes_needing_arguments_are_built_with_inferred_ones(engine, tmp_path):
    """The same classes with inference on (the default): built with guessed `dim` and
    `classes`, traced with guessed inputs, and the same two findings, no note."""
    write(
        tmp_path,
        {"pyproject.toml": "[project]\nname = 'demo'\n", "layers.py": with_mps_missing(MODE.format(imports=""))},
    )
    default, static = check(engine, tmp_path), check(engine, tmp_path, execute=False)
    assert problems(static) == problems(default) and len(problems(default)) == 2
    assert not [f for f in default.findings if f.code == "ATL003"]
    assert default.by_capture["inferred"] == 2 and default.by_capture["arguments_inferred"] == 2


def test_constructors_meta_cannot_run_are_built_on_the_cpu(engine, tmp_path):
    write(
        tmp_path,
        {
            "pyproject.toml": "[project]\nname = 'demo'\n",
            "speech.py": """
        import torch
        from torch import nn

        # atenlint: inputs=torch.randn(1, 3, 8, 8)
        class Encoder(nn.Module):
            def __init__(self):
                super().__init__()
                # made on the CPU whatever the default device: a meta build keeps it there
                self.register_buffer("pixel_mean", torch.Tensor([0.5, 0.4, 0.3]).view(-1, 1, 1), False)
                self.conv = nn.Conv2d(3, 4, 1)

            def forward(self, x):
                return torch.mode(self.conv(x - self.pixel_mean)).values

        class Decoder(nn.Module):
            def __init__(self):
                super().__init__()
                heads = torch.zeros(2, 4, dtype=torch.bool)
                heads[1:] = True
                self.register_buffer("heads", heads.to_sparse(), persistent=False)  # no meta kernel
                self.lin = nn.Linear(4, 4)

            def forward(self, x):
                return torch.mode(self.lin(x)).values
    """,
        },
    )
    report = check(engine, tmp_path)
    # One class configures inputs; the other is traced with inferred ones (or scripted).
    assert report.by_capture["trace"] == 1 and report.by_capture["inferred"] + report.by_capture["script"] == 1
    assert report.built == {"meta-moved": 1, "cpu": 1}
    assert {f.code for f in report.findings if f.target} == {"MPS001"}
    assert not any(f.code in ("ATL003", "ATL011") for f in report.findings)


def test_memory_cap_stops_a_huge_cpu_build(engine, tmp_path):
    write(
        tmp_path,
        {
            "pyproject.toml": "[project]\nname = 'demo'\n",
            "huge.py": """
        import torch
        from torch import nn

        class Huge(nn.Module):
            def __init__(self):
                super().__init__()
                self.weight = nn.Parameter(torch.empty(200_000, 100_000))  # 80 GB of floats
                self.weight.data.to_sparse()

            def forward(self, x):
                return torch.mode(x @ self.weight).values
    """,
        },
    )
    report = check(engine, tmp_path)
    (note,) = [f for f in report.findings if f.code == "ATL003"]
    assert "on the CPU it needs more than" in note.message
    assert report.by_capture["static"] == 1


def test_namespace_package_keys_use_the_import_name(engine, tmp_path):
    write(
        tmp_path,
        {
            "pyproject.toml": textwrap.dedent("""
        [tool.atenlint.modules."ldm.models.autoencoder.Autoencoder"]
        init = "Autoencoder(width=4)"
        [tool.atenlint.modules."ldm.models.autoencoder.Autoencodr"]
        init = "Autoencoder(width=4)"
    """),
            "ldm/modules/blocks.py": """
            import torch
            from torch import nn

            class Down(nn.Module):
                def __init__(self, width):
                    super().__init__()
                    self.lin = nn.Linear(width, width)

                def forward(self, x):
                    return torch.mode(self.lin(x)).values
        """,
            "ldm/models/autoencoder.py": """
            from torch import nn
            from ldm.modules.blocks import Down

            class Autoencoder(nn.Module):
                def __init__(self, width):
                    super().__init__()
                    self.down = Down(width)

                def forward(self, x):
                    return self.down(x)
        """,
        },
    )
    for _ in range(2):  # the loader's KeyError('ldm') came from a set's order: run it a few times
        report = check(engine, tmp_path)
        assert not any(f.code == "ATL099" for f in report.findings)
        # The factory under the import name was used (the class was built and executed); `Down`,
        # which nothing configures, was built with an inferred `width`.
        assert report.by_capture["inferred"] + report.by_capture["script"] == 2
        assert report.by_capture["arguments_inferred"] == 1
    (warning,) = [f for f in report.findings if f.code == "ATL010"]
    assert warning.abs_path.endswith("pyproject.toml") and warning.range.start.line == 2
    assert '"ldm.models.autoencoder.Autoencoder"' in warning.message


def test_require_exec_fails_ci_when_classes_were_not_executed(tmp_path):
    write(
        tmp_path,
        {
            # No inferred constructor arguments: the classes are read from source only.
            "pyproject.toml": "[project]\nname = 'demo'\n[tool.atenlint]\ninfer-inputs = false\n",
            "layers.py": """
        import torch
        from torch import nn

        class Block(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.proj = nn.Linear(dim, dim)

            def forward(self, x):
                return torch.relu(self.proj(x))

        class Head(Block):
            pass
    """,
        },
    )
    command = [sys.executable, "-m", "atenlint", "check", "layers.py", "--format", "json", "--require-exec"]
    strict = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    counts = json.loads(strict.stdout)["classes"]
    assert counts["static"] == 2 and counts["total"] == 2 and counts["not_analysed"] == 0
    # nothing is wrong with the model: only the flag makes this run fail
    assert not [d for d in json.loads(strict.stdout)["diagnostics"] if d["severity"] in ("error", "warning")]
    assert strict.returncode == 1 and "--require-exec: 2 module classes" in strict.stderr


@pytest.mark.parametrize("parent_first", [True, False])
def test_namespace_package_paths_survive_their_parent_leaving(tmp_path, parent_first):
    from atenlint.capture.loader import _is_user_module

    (tmp_path / "ns" / "inner").mkdir(parents=True)
    (tmp_path / "ns" / "inner" / "leaf.py").write_text("x = 1\n")
    sys.path.insert(0, str(tmp_path))
    try:
        import importlib

        importlib.import_module("ns.inner.leaf")
        inner = sys.modules["ns.inner"]
        if parent_first:
            sys.modules.pop("ns")
        assert _is_user_module(inner, (str(tmp_path) + os.sep,))
    finally:
        sys.path.remove(str(tmp_path))
        for name in ("ns", "ns.inner", "ns.inner.leaf"):
            sys.modules.pop(name, None)


def test_a_package_missing_at_build_time_is_named(engine, tmp_path):
    write(
        tmp_path,
        {
            "pyproject.toml": "[project]\nname = 'demo'\n",
            "latent.py": """
        import torch
        from torch import nn

        def instantiate(spec):
            from yaml_config_lib_not_installed import Config  # imported only when a model is built
            return Config(spec)

        class Latent(nn.Module):
            def __init__(self):
                super().__init__()
                self.cond = instantiate({"target": "x"})

            def forward(self, x):
                return torch.mode(x).values
    """,
        },
    )
    report = check(engine, tmp_path)
    (note,) = [f for f in report.findings if f.code == "ATL003"]
    assert "needs the package `yaml_config_lib_not_installed`" in note.message and "latent.py:5" in note.message
    assert "meta" not in note.message
    assert [f.capture for f in report.findings if f.target] == ["static"]


def test_attention_fast_path_is_never_reported_for_mps(engine, tmp_path):
    write(
        tmp_path,
        {
            "pyproject.toml": "[project]\nname = 'demo'\n",
            "attn.py": """
        from torch import nn

        class Attn(nn.Module):
            def __init__(self):
                super().__init__()
                self.mha = nn.MultiheadAttention(32, 4, batch_first=True)

            def forward(self, x):
                return self.mha(x, x, x)[0]
    """,
        },
    )
    report = check(engine, tmp_path)
    assert report.by_capture["inferred"] + report.by_capture["script"] == 1
    assert not [f for f in report.findings if f.target == "mps"]


def test_a_file_that_kills_the_worker_is_still_read_from_source(engine, tmp_path):
    write(
        tmp_path,
        {
            "pyproject.toml": "[project]\nname = 'demo'\n",
            "exits.py": """
        import os
        import torch
        from torch import nn

        os._exit(3)  # a script guard gone wrong: the worker dies at import

        class Net(nn.Module):
            def forward(self, x: torch.Tensor):
                return torch.mode(x).values
    """,
        },
    )
    default, static = check(engine, tmp_path), check(engine, tmp_path, execute=False)
    assert problems(static) and problems(static) <= problems(default)
    (crash,) = [f for f in default.findings if f.code == "ATL006"]
    assert "analysed from source only" in crash.message
    assert default.by_capture["static"] == 1
