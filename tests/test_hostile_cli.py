"""`atenlint check` on a hostile workspace (issue 12): canary files for every escape,
/dev/zero and FIFO files, shadowing module names, an import-time `os.system`, files that
poison the warm worker. No canary may be written, nothing may hang, the good files'
findings must still be reported, and every refused action is one clear diagnostic."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from atenlint import cli
from atenlint.commands.common import EXIT_INTERNAL
from torch_facts import mps_missing, require_no_kernel

# The console script, as users and CI run it: `python -m atenlint` from a folder holding a
# `types.py` or `collections.py` is broken by Python's own start-up (runpy imports them
# from the working folder before any atenlint code runs; see docs/security.md).
ATENLINT = os.path.join(os.path.dirname(sys.executable), "atenlint")

GOOD = """
import torch
import torch.nn as nn


# atenlint: inputs=torch.randn(2, 8)
class Good(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        return torch.take(self.proj(x), torch.tensor([0]))
"""


def good() -> str:
    """GOOD calling, instead of `torch.take`, the first op with no MPS kernel in the installed
    torch (torch_facts): the file's one finding."""
    return GOOD.replace("torch.take(self.proj(x), torch.tensor([0]))", mps_missing().call.call("self.proj(x)"))


def hostile_workspace(root, canaries):
    """A project (its own .git) inside a folder whose pyproject.toml is not the project's."""

    def put(relative, text):
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))

    canary = str(canaries)
    # The parent's settings would hide MPS001 and run an `init` that writes a canary.
    put(
        "../pyproject.toml",
        f"""
        [tool.atenlint]
        ignore = {{mps = ["{mps_missing().op}"]}}
        [tool.atenlint.modules."good.Good"]
        init = "__import__('pathlib').Path({canary!r}, 'parent_init').touch() or Good()"
    """,
    )
    (root / ".git").mkdir()
    put("good.py", good())
    put(
        "installs.py",
        """
        import os
        import torch.nn as nn
        try:
            import ultralytics  # noqa: F401
        except ImportError:
            os.system("pip install -U ultralytics")


        class Detector(nn.Module):
            def forward(self, x):
                return x.relu()
    """,
    )
    # Shadowing names: each writes a canary and breaks if it is ever imported as the module.
    for name in ("json", "random", "types", "typing", "torch"):
        put(
            f"{name}.py",
            f"""
            open({canary!r} + "/{name}", "w").close()
            raise RuntimeError("the workspace's {name}.py stood in for the real one")
        """,
        )
    # Files that poison the warm worker for the files after them (sorted before good.py).
    put(
        "a_poison.py",
        """
        import threading
        import warnings
        import torch
        import torch.nn as nn
        torch.set_default_dtype(torch.float64)
        warnings.simplefilter("error")
        threading.Thread(target=lambda: [None for _ in iter(int, 1)], daemon=True).start()


        class Poison(nn.Module):
            def forward(self, x):
                return x.relu()
    """,
    )
    os.symlink("/dev/zero", root / "zero.py")
    os.mkfifo(root / "fifo.py")
    outside = root.parent / "outside"
    outside.mkdir()
    (outside / "evil.py").write_text(
        f"open({canary!r} + '/outside', 'w').close()\nimport torch.nn as nn\n"
        "class Evil(nn.Module):\n    def forward(self, x):\n        return x\n"
    )
    os.symlink(outside / "evil.py", root / "linked_out.py")
    os.symlink(outside, root / "linked_folder")
    put("rot13.py", "# coding: rot13\nvzcbeg gbepu\n")
    put("deep.py", "x = " + "(" * 50 + "-" * 200_000 + "1" + ")" * 50 + "\n")
    put("new\nline.py", good())
    put("sub/pyproject.toml", f'[tool.atenlint]\nignore = {{mps = "{mps_missing().op}"}}\n')
    put("sub/bad_config.py", good())


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    base = tmp_path_factory.mktemp("hostile")
    root, canaries = base / "project", base / "canaries"
    root.mkdir()
    canaries.mkdir()
    hostile_workspace(root, canaries)
    run = subprocess.run(
        [ATENLINT, "check", "--format", "json", "--timeout", "60", "."],
        check=False,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=400,
    )
    return root, canaries, run


def by_file(report):
    out: dict = {}
    for diagnostic in report["diagnostics"]:
        out.setdefault(diagnostic["path"], []).append(diagnostic)
    return out


def test_no_canary_is_written_and_nothing_crashes(checked):
    _, canaries, run = checked
    assert os.listdir(canaries) == [], os.listdir(canaries)
    assert "Traceback" not in run.stderr and run.returncode == 1, run.stderr[-2000:]


def test_the_good_files_findings_survive_the_poisoned_worker(checked):
    _, _, run = checked
    files = by_file(json.loads(run.stdout))
    assert [d["code"] for d in files["good.py"]] == ["MPS001"]  # no false MPS010, no ATL011, not ignored
    assert [d["code"] for d in files["new\nline.py"]] == ["MPS001"]


def test_an_import_time_install_is_one_diagnostic_on_its_line(checked):
    _, _, run = checked
    (refusal,) = [d for d in json.loads(run.stdout)["diagnostics"] if d["code"] == "ATL012"]
    assert refusal["path"] == "installs.py" and refusal["range"]["start"]["line"] == 5
    assert refusal["message"].startswith(
        "importing this file tried to run `pip install -U ultralytics`; "
        "atenlint does not let analysed code start processes"
    )


def test_hostile_files_are_skipped_or_reported_clearly(checked):
    _, _, run = checked
    report = json.loads(run.stdout)
    files = by_file(report)
    errors = {os.path.basename(e["path"]): e["message"] for e in report["errors"]}
    assert "FIFO" in errors["fifo.py"] and "/dev/zero" in errors["zero.py"]
    assert "not followed" in errors["linked_out.py"] and "not followed" in errors["linked_folder"]
    assert [d["code"] for d in files["rot13.py"]] == ["ATL007"] and "rot13" in files["rot13.py"][0]["message"]
    assert [d["code"] for d in files["deep.py"]] == ["ATL001"]
    (config,) = files[os.path.join("sub", "bad_config.py")]
    assert config["code"] == "ATL010" and "a list even for one name" in config["message"]
    for name in ("json", "random", "types", "typing", "torch"):
        assert f"{name}.py" not in files  # no classes: never imported


def test_no_exec_never_runs_a_workspace_module_from_the_working_folder(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "m.py").write_text(good())
    canary = tmp_path / "json_canary"
    (tmp_path / "json.py").write_text(f"open({str(canary)!r}, 'w').close()\n")
    run = subprocess.run(
        [sys.executable, "-m", "atenlint", "check", "--no-exec", "m.py"],
        cwd=tmp_path,
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert not canary.exists() and run.returncode == 1 and "MPS001" in run.stdout, run.stderr[-2000:]


def test_an_internal_failure_exits_3_without_a_traceback(monkeypatch, capsys, tmp_path):
    from atenlint.worker import pool

    def broken(self):
        raise RuntimeError("simulated failure inside atenlint")

    monkeypatch.setattr(pool.WorkerPool, "warm", broken)
    (tmp_path / "m.py").write_text(good())
    assert cli.main(["check", str(tmp_path / "m.py")]) == EXIT_INTERNAL
    err = capsys.readouterr().err
    assert "internal error: RuntimeError: simulated failure inside atenlint" in err and "Traceback" not in err


def test_fix_never_edits_through_a_link_nor_a_read_only_or_hard_linked_file(tmp_path):
    require_no_kernel("MPS", "aten::take")  # GOOD's fix is take's
    """`--fix` on files it must not rewrite: each is left byte for byte and named with why."""
    (tmp_path / ".git").mkdir()
    elsewhere = tmp_path.parent / f"{tmp_path.name}_elsewhere"
    elsewhere.mkdir()
    (elsewhere / "real.py").write_text(GOOD)
    os.symlink(elsewhere / "real.py", tmp_path / "link.py")
    (tmp_path / "read_only.py").write_text(GOOD)
    os.chmod(tmp_path / "read_only.py", 0o444)
    (tmp_path / "linked.py").write_text(GOOD)
    os.link(tmp_path / "linked.py", elsewhere / "other_name.py")
    run = subprocess.run(
        [ATENLINT, "check", "--no-exec", "--fix", "link.py", "read_only.py", "linked.py"],
        cwd=tmp_path,
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "applied 0 fixes" in run.stdout, run.stdout[-2000:] + run.stderr[-2000:]
    assert "link.py:13:16: not fixed `torch.take`: a symbolic link" in run.stdout
    assert "read_only.py:13:16: not fixed `torch.take`: read-only" in run.stdout
    assert "linked.py:13:16: not fixed `torch.take`: has 2 hard links" in run.stdout
    for path in (elsewhere / "real.py", tmp_path / "read_only.py", tmp_path / "linked.py"):
        assert path.read_text() == GOOD
    assert os.path.islink(tmp_path / "link.py")
