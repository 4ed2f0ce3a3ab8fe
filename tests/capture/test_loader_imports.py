"""Importing a workspace file as Python would from the project root (capture/loader.py,
discover.py): folders without __init__.py, a folder and a module of the same name, and a
package whose __init__.py needs a package that is not installed (CLIP's `clip/__init__.py`
imports PIL; `clip/model.py` only torch)."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap
import traceback
import uuid

import pytest

from atenlint.capture.building import missing_package
from atenlint.capture.loader import import_file, import_stand_ins, is_stand_in, user_import_context
from atenlint.config import SettingsResolver
from atenlint.discover import import_location
from torch_facts import with_mps_missing

MISSING = "atenlint_surely_missing_pkg_xyz"


def write(root, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())


def unique_name() -> str:
    """A package name no other test (nor this process's earlier imports) uses."""
    return f"atl_{uuid.uuid4().hex[:10]}"


def load(root, relative: str):
    """The file imported the way the worker does: its import_location name and roots."""
    path = str(root / relative)
    name, roots = import_location(path, str(root))
    with user_import_context(roots, {}):
        module = import_file(name, path)
        return name, module, import_stand_ins(), dict(sys.modules)


def python_imports(root, name: str) -> str:
    """What Python itself, run from the project root, imports `name` as: its __file__."""
    done = subprocess.run(
        [sys.executable, "-s", "-E", "-c", f"import {name} as m; print(m.__file__)"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return os.path.abspath(done.stdout.strip())


def test_a_module_in_a_namespace_folder_below_a_package_imports_with_its_relative_imports(tmp_path):
    pkg = unique_name()
    write(
        tmp_path,
        {
            f"{pkg}/__init__.py": "",
            f"{pkg}/hub/__init__.py": "",
            f"{pkg}/hub/text/tower.py": "WIDTH = 8\n",
            f"{pkg}/hub/text/model.py": "from .tower import WIDTH\nSIZE = WIDTH * 2\n",
        },
    )
    name, module, stand_ins, _ = load(tmp_path, f"{pkg}/hub/text/model.py")
    assert name == f"{pkg}.hub.text.model"
    assert module.SIZE == 16 and stand_ins == []
    assert python_imports(tmp_path, name) == module.__file__ == str(tmp_path / f"{pkg}/hub/text/model.py")
    assert not [n for n in sys.modules if n.split(".")[0] == pkg]  # nothing of the user's stays loaded


def test_a_top_level_namespace_folder_with_a_relative_import_is_a_package_module(tmp_path):
    folder = unique_name()
    write(tmp_path, {f"{folder}/a.py": "from .b import B\n", f"{folder}/b.py": "B = 3\n"})
    name, module, _, _ = load(tmp_path, f"{folder}/a.py")
    assert name == f"{folder}.a" and module.B == 3
    assert python_imports(tmp_path, name) == module.__file__


def test_a_script_folder_keeps_its_sibling_imports(tmp_path):
    """No package around it and no relative import: a script, named by its file, with its
    folder first on sys.path (`python tools/train.py`)."""
    folder = unique_name()
    write(tmp_path, {f"{folder}/train.py": "from helpers_x import H\n", f"{folder}/helpers_x.py": "H = 1\n"})
    name, module, _, _ = load(tmp_path, f"{folder}/train.py")
    assert name == "train" and module.H == 1


def test_a_module_named_like_its_folder_imports_the_folders_other_modules(tmp_path):
    pkg = unique_name()
    write(
        tmp_path,
        {f"{pkg}/layers.py": "DEPTH = 2\n", f"{pkg}/{pkg}.py": f"from {pkg}.layers import DEPTH\nTOTAL = DEPTH + 1\n"},
    )
    name, module, _, _ = load(tmp_path, f"{pkg}/{pkg}.py")
    assert name == f"{pkg}.{pkg}" and module.TOTAL == 3
    assert python_imports(tmp_path, name) == module.__file__


def test_a_namespace_folder_whose_module_would_hide_a_namespace_package_stays_off_sys_path(tmp_path):
    pkg, other = unique_name(), unique_name()
    write(
        tmp_path,
        {
            f"{pkg}/__init__.py": "",
            f"{pkg}/text/model.py": f"from .tower import T\nfrom {other}.x import X\n",
            f"{pkg}/text/tower.py": "T = 1\n",
            f"{pkg}/text/{other}.py": "X = 'the wrong one'\n",
            f"{other}/x.py": "X = 2\n",
        },
    )
    name, roots = import_location(str(tmp_path / f"{pkg}/text/model.py"), str(tmp_path))
    assert name == f"{pkg}.text.model" and str(tmp_path / f"{pkg}/text") not in roots
    _, module, _, _ = load(tmp_path, f"{pkg}/text/model.py")
    assert module.X == 2


def test_a_package_whose_init_needs_a_missing_package_is_stood_in_for_its_submodule(tmp_path):
    pkg = unique_name()
    write(
        tmp_path,
        {
            f"{pkg}/__init__.py": "from .front import *\n",
            f"{pkg}/front.py": f"import {MISSING}\nfrom .model import Net\n",
            f"{pkg}/layers.py": "WIDTH = 4\n",
            f"{pkg}/model.py": "from . import layers\nfrom .layers import WIDTH\nclass Net:\n    width = WIDTH\n",
        },
    )
    name, module, stand_ins, modules = load(tmp_path, f"{pkg}/model.py")
    assert name == f"{pkg}.model" and module.Net.width == 4 and module.layers.WIDTH == 4
    (stand_in,) = stand_ins
    assert (stand_in.package, stand_in.missing, stand_in.file) == (pkg, MISSING, str(tmp_path / pkg / "__init__.py"))
    assert stand_in.error.name == MISSING
    package = modules[pkg]
    assert is_stand_in(package) and not is_stand_in(module)
    assert list(package.__path__) == [str(tmp_path / pkg)] and package.__file__ == stand_in.file
    assert package.__spec__.name == pkg
    with pytest.raises(AttributeError, match="stood it in"):
        _ = package.Net  # what __init__.py would have defined is not faked
    # Nothing stays: the next import of the package in this process runs its __init__.py again.
    assert not [n for n in sys.modules if n.split(".")[0] == pkg]
    assert import_stand_ins() == []
    with user_import_context([str(tmp_path)], {}), pytest.raises(ModuleNotFoundError) as raised:
        import_file(pkg, str(tmp_path / pkg / "__init__.py"))
    assert raised.value.name == MISSING


def test_only_the_failing_package_level_is_stood_in(tmp_path):
    pkg = unique_name()
    write(
        tmp_path,
        {
            f"{pkg}/__init__.py": "READY = True\n",
            f"{pkg}/io/__init__.py": f"from {MISSING}.images import load\n",
            f"{pkg}/io/net.py": "VALUE = 5\n",
        },
    )
    _, module, stand_ins, modules = load(tmp_path, f"{pkg}/io/net.py")
    assert module.VALUE == 5
    assert [s.package for s in stand_ins] == [f"{pkg}.io"]
    assert modules[pkg].READY and not is_stand_in(modules[pkg])


def test_every_failing_package_level_is_stood_in(tmp_path):
    pkg = unique_name()
    write(
        tmp_path,
        {
            f"{pkg}/__init__.py": f"import {MISSING}\n",
            f"{pkg}/io/__init__.py": f"import {MISSING}_too\n",
            f"{pkg}/io/net.py": "VALUE = 6\n",
        },
    )
    with user_import_context([str(tmp_path)], {}):
        module = import_file(f"{pkg}.io.net", str(tmp_path / pkg / "io" / "net.py"))
        assert module.VALUE == 6
        assert [(s.package, s.missing) for s in import_stand_ins()] == [
            (pkg, MISSING),
            (f"{pkg}.io", f"{MISSING}_too"),
        ]
        assert sys.modules[pkg].io.net is module  # `import pkg.io.net; pkg.io.net` works as usual
    assert not [n for n in sys.modules if n.split(".")[0] == pkg]


def test_a_submodule_that_needs_the_missing_package_itself_fails_as_python_does(tmp_path):
    pkg = unique_name()
    write(
        tmp_path,
        {
            f"{pkg}/__init__.py": "from .front import *\n",
            f"{pkg}/front.py": f"import {MISSING}\n",
            f"{pkg}/model.py": f"from {MISSING} import thing\n",
        },
    )
    with pytest.raises(ModuleNotFoundError) as raised:
        load(tmp_path, f"{pkg}/model.py")
    # The error Python gives: the package's own __init__ chain, at front.py's import.
    assert raised.value.name == MISSING
    assert raised.value.__traceback__ is not None
    frames = [os.path.basename(frame.filename) for frame in traceback.extract_tb(raised.value.__traceback__)]
    assert "front.py" in frames and "model.py" not in frames
    assert not [n for n in sys.modules if n.split(".")[0] == pkg]


def test_a_user_path_problem_is_not_stood_in(tmp_path):
    """`import helpers.missing` where the project has a `helpers` folder: the user's own
    layout is wrong (or needs another root), not a package to install."""
    pkg, helpers = unique_name(), unique_name()
    write(
        tmp_path,
        {
            f"{helpers}/present.py": "",
            f"{pkg}/__init__.py": f"import {helpers}.absent\n",
            f"{pkg}/model.py": "VALUE = 1\n",
        },
    )
    with pytest.raises(ModuleNotFoundError):
        load(tmp_path, f"{pkg}/model.py")


def test_missing_package_names_packages_that_are_not_installed_only():
    def raised(name: str) -> ModuleNotFoundError:
        with pytest.raises(ModuleNotFoundError) as error:
            importlib.import_module(name)
        return error.value

    assert missing_package(raised(MISSING)) == MISSING
    assert missing_package(raised(f"{MISSING}.sub")) == MISSING
    # A module missing from an installed package is a version mismatch, not an install.
    assert missing_package(raised("json.atenlint_no_such_module")) is None


# Each class calls an op with no MPS kernel in the installed torch (`MISSING`, torch_facts).
NET = """
    import torch
    from torch import nn
    {imports}

    # atenlint: inputs=torch.randn(2, 8)
    class {name}(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(8, 8)

        def forward(self, x):
            return MISSING(self.proj(x))
"""


def test_check_traces_classes_in_namespace_folders_and_below_a_package_that_needs_a_missing_package(engine, tmp_path):
    write(
        tmp_path,
        {
            "pyproject.toml": "[project]\nname = 'demo'\n",
            "vendored/__init__.py": f"from .front import *\nimport {MISSING}\n",
            "vendored/front.py": "from .model import Stood\n",
            "vendored/model.py": with_mps_missing(NET.format(name="Stood", imports="")),
            "vendored/needy.py": with_mps_missing(NET.format(name="Needy", imports=f"import {MISSING}")),
            "hubpkg/__init__.py": "",
            "hubpkg/text/model.py": with_mps_missing(NET.format(name="Spaced", imports="from .tower import WIDTH")),
            "hubpkg/text/tower.py": "WIDTH = 8\n",
            "twin/twin.py": with_mps_missing(NET.format(name="Twin", imports="from twin.extra import WIDTH")),
            "twin/extra.py": "WIDTH = 8\n",
        },
    )
    engine.resolver = SettingsResolver()
    report = engine.check_paths([str(tmp_path)], jobs=1)
    captured = {(os.path.relpath(f.abs_path, tmp_path), f.capture) for f in report.findings if f.target == "mps"}
    assert captured == {
        ("vendored/model.py", "trace"),
        ("hubpkg/text/model.py", "trace"),
        ("twin/twin.py", "trace"),
        ("vendored/needy.py", "static"),
    }
    assert report.by_capture["trace"] == 3 and report.by_capture["static"] == 1
    notes = {os.path.relpath(f.abs_path, tmp_path): f for f in report.findings if f.code == "ATL002"}
    assert set(notes) == {"vendored/model.py", "vendored/needy.py"}
    # Analysed as usual, and said how: its package's __init__.py was not run.
    stood = notes["vendored/model.py"]
    assert stood.severity == "information" and f"`{MISSING}`" in stood.message
    assert "without running `vendored/__init__.py`" in stood.message
    # The file that needs the package itself: today's note, naming the package to install.
    needy = notes["vendored/needy.py"]
    assert f"`{MISSING}`" in needy.message and "not installed" in needy.message and "stood in" not in needy.message
