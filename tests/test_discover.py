from __future__ import annotations

import os

from atenlint.discover import import_location, iter_python_files, outline
from atenlint.sourcetext import SourceText


def touch(path, text=""):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def test_walk_skips_environments_and_build_folders(tmp_path):
    for name in (
        "a.py",
        "pkg/b.py",
        ".git/c.py",
        "node_modules/d.py",
        "build/e.py",
        "dist/f.py",
        "env/g.py",
        "x.egg-info/h.py",
        "notes.txt",
    ):
        touch(str(tmp_path / name))
    touch(str(tmp_path / "env" / "pyvenv.cfg"))
    files, errors = iter_python_files([str(tmp_path), str(tmp_path / "a.py"), str(tmp_path / "missing")])
    assert [os.path.relpath(f, tmp_path) for f in files] == ["a.py", os.path.join("pkg", "b.py")]
    assert errors == [(str(tmp_path / "missing"), "no such file or directory")]


def test_import_names_follow_packages_and_src_layouts(tmp_path):
    touch(str(tmp_path / "src/acme/__init__.py"))
    touch(str(tmp_path / "src/acme/nets/__init__.py"))
    touch(str(tmp_path / "src/acme/nets/model.py"))
    touch(str(tmp_path / "scripts/train.py"))
    name, roots = import_location(str(tmp_path / "src/acme/nets/model.py"), str(tmp_path))
    assert name == "acme.nets.model"
    assert roots == [str(tmp_path / "src"), str(tmp_path)]
    assert import_location(str(tmp_path / "src/acme/nets/__init__.py"))[0] == "acme.nets"
    assert import_location(str(tmp_path / "scripts/train.py"))[0] == "train"


def test_outline_reads_directives_only_from_comments():
    text = (
        "import torch.nn as nn\n"
        "# atenlint: init=Net(width=4)\n"
        "# atenlint: inputs=(torch.randn(2, 4),)\n"
        "class Net(nn.Module):\n"
        "    s = '# atenlint: skip'\n"
        "    def forward(self, x):\n"
        "        return x  # atenlint: ignore[aten::take, MPS001] noisy\n"
        "class Plain:  # atenlint: init=Plain(); inputs=torch.ones(3)\n"
        "    pass\n"
        "class Bad(nn.Module):  # atenlint: init=Bad(\n"
        "    pass\n"
    )
    result = outline(SourceText(text))
    net, plain, bad = result.classes
    assert net.directives == {"init": "Net(width=4)", "inputs": "(torch.randn(2, 4),)"}
    assert net.might_be_module() and not plain.might_be_module()
    assert plain.directives == {"init": "Plain()", "inputs": "torch.ones(3)"}
    assert bad.directives == {}
    assert result.ignores == {6: frozenset({"aten::take", "MPS001"})}
    assert [line for line, _ in result.directive_errors] == [9]
    assert (net.name_range.start.character, net.name_range.end.character) == (6, 9)


def test_a_module_named_like_its_namespace_package_is_imported_by_its_full_name(tmp_path):
    """`mypkg/mypkg.py` (no __init__.py) doing `from mypkg.layers import act`: imported as
    `mypkg` from its own folder it would hide the package it imports from; Python, from the
    project root, names it `mypkg.mypkg`, with the root on sys.path and not the folder."""
    for name in ("mypkg/mypkg.py", "mypkg/layers.py", "src/acme/acme.py", "tools/train.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x = 1\n")
    name, roots = import_location(str(tmp_path / "mypkg/mypkg.py"), str(tmp_path))
    assert name == "mypkg.mypkg" and roots[0] == str(tmp_path)
    assert str(tmp_path / "mypkg") not in roots
    assert import_location(str(tmp_path / "src/acme/acme.py"), str(tmp_path)) == (
        "acme.acme",
        [str(tmp_path / "src"), str(tmp_path)],
    )
    # Any other file keeps its own folder first, for its sibling imports.
    assert import_location(str(tmp_path / "mypkg/layers.py"), str(tmp_path))[0] == "layers"
    assert import_location(str(tmp_path / "tools/train.py"), str(tmp_path))[1][0] == str(tmp_path / "tools")


def test_a_file_in_a_folder_without_init_is_named_as_python_imports_it_from_the_root(tmp_path):
    """A folder without __init__.py below a regular package (`dinov2/hub/text/`), or holding
    a file with a relative import, is a namespace package: Python, run from the project
    root, imports its files by their dotted name. A script folder keeps its files' own
    names; a folder named like a standard-library package could not be reached that way."""
    files = {
        "dino/__init__.py": "",
        "dino/hub/__init__.py": "",
        "dino/hub/text/model.py": "from dino.layers import x\n",
        "dino/hub/text/__pycache__/model.cpython-311.pyc": "",
        "__pycache__/setup.cpython-311.pyc": "",
        "tools/pair.py": "from .other import y\n",
        "tools/train.py": "from helpers import z\n",
        "email/__init__.py": "",
        "email/unit/case.py": "x = 1\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    name, roots = import_location(str(tmp_path / "dino/hub/text/model.py"), str(tmp_path))
    assert name == "dino.hub.text.model"
    # The root first; the file's folder last (a script's sibling imports), kept although both
    # hold a __pycache__.
    assert roots == [str(tmp_path), str(tmp_path / "dino/hub/text")]
    assert import_location(str(tmp_path / "tools/pair.py"), str(tmp_path))[0] == "tools.pair"
    assert import_location(str(tmp_path / "tools/train.py"), str(tmp_path)) == (
        "train",
        [str(tmp_path / "tools"), str(tmp_path)],
    )
    assert import_location(str(tmp_path / "email/unit/case.py"), str(tmp_path))[0] == "case"
    # Without a project root nothing is known above the file: its own name.
    assert import_location(str(tmp_path / "dino/hub/text/model.py"))[0] == "model"
