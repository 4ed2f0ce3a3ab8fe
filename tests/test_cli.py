"""The command line as users and CI run it: real subprocesses, real exit codes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

from atenlint.fixes.catalog import ENTRIES
from support import REPO
from torch_facts import mps_missing

# A module whose forward calls an op with no MPS kernel in the installed torch (torch_facts).
_FALLBACK = textwrap.dedent("""
    import torch
    import torch.nn as nn


    class Net(nn.Module):
        def forward(self, x):
            return {call}
""").lstrip()


def fallback() -> str:
    return _FALLBACK.format(call=mps_missing().call.call("x"))


CLEAN = textwrap.dedent("""
    import torch.nn as nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            return self.lin(x).relu()
""").lstrip()


def atenlint(*args, cwd=REPO, module=False):
    command = (
        [sys.executable, "-m", "atenlint"] if module else [os.path.join(os.path.dirname(sys.executable), "atenlint")]
    )
    return subprocess.run(command + list(args), cwd=cwd, capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "bad.py").write_text(fallback())
    (tmp_path / "good.py").write_text(CLEAN)
    return tmp_path


def test_text_output_reads_like_a_compiler_and_exits_1(workspace):
    result = atenlint("check", str(workspace / "bad.py"), str(workspace / "good.py"))
    assert result.returncode == 1, result.stderr
    first, summary = result.stdout.strip().splitlines()
    missing = mps_missing()
    function, op = re.escape(missing.call.function), re.escape(missing.op)
    assert re.fullmatch(rf".*bad\.py:7:16: warning \[mps\] `{function}` reaches `{op}`.* \(MPS001\)", first)
    # Neither class configures inputs: both are traced with inputs inferred from `forward` and
    # the first layer, and the summary says so.
    assert summary.startswith(
        "atenlint: 1 warning in 2 files (2 module classes: 2 traced with inferred inputs) for mps on torch "
    )


def test_clean_file_exits_0(workspace):
    result = atenlint("check", str(workspace / "good.py"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no problems" in result.stdout


def test_json_contract(workspace):
    result = atenlint("check", "--format", "json", "bad.py", cwd=workspace)
    data = json.loads(result.stdout)
    assert set(data) == {"atenlint", "torch", "targets", "diagnostics", "errors", "classes"}
    assert data["targets"] == ["mps"]
    assert (data["classes"]["trace"], data["classes"]["inferred"]) == (1, 1)
    (diagnostic,) = data["diagnostics"]
    missing = mps_missing()
    assert diagnostic == {
        "path": "bad.py",
        "range": {
            "start": {"line": 6, "character": 15},
            "end": {"line": 6, "character": 15 + len(missing.call.site())},
        },
        "severity": "warning",
        "target": "mps",
        "code": "MPS001",
        "ops": [missing.op],
        "call": missing.call.function,
        "module": "bad.Net",
        "modules": ["bad.Net"],
        "capture": "trace",
        "message": diagnostic["message"],
        "fixes": diagnostic["fixes"],
    }
    assert "PYTORCH_ENABLE_MPS_FALLBACK=1" in diagnostic["message"]
    rewrite = diagnostic["fixes"][0]  # the catalog's first fix for the op (tests/fixes cover each one)
    entry = next(e for e in ENTRIES if missing.op in e.ops and "mps" in e.targets)
    assert (rewrite["id"], rewrite["kind"], rewrite["exact"]) == (entry.id, "rewrite", True)
    assert rewrite["edits"][0]["range"]["start"]["line"] == 6


def test_python_dash_m_and_folder_recursion(workspace):
    (workspace / ".venv").mkdir()
    (workspace / ".venv" / "pyvenv.cfg").write_text("home = /usr\n")
    (workspace / ".venv" / "hidden.py").write_text(fallback())
    (workspace / "node_modules").mkdir()
    (workspace / "node_modules" / "x.py").write_text(fallback())
    result = atenlint("check", ".", "--format", "json", cwd=workspace, module=True)
    assert result.returncode == 1
    assert sorted({d["path"] for d in json.loads(result.stdout)["diagnostics"]}) == ["bad.py"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["check", "missing.py"], "no such file or directory: missing.py"),
        (["check", ".", "--target", "tpu"], "unknown target 'tpu'"),
        (["check", ".", "--config", "nope.toml"], "--config: no such file"),
        (["check", ".", "--timeout", "0"], "--timeout must be a positive number"),
        (["check", ".", "--timeout", "nan"], "--timeout must be a positive number"),
        (["check", ".", "--timeout", "1e300"], "--timeout must be a positive number"),
        (["check"], "the following arguments are required: PATH"),
        ([], ""),
    ],
)
def test_usage_errors_exit_2(workspace, args, message):
    result = atenlint(*args, cwd=workspace)
    assert result.returncode == 2
    assert message in result.stderr


def test_config_file_supplies_targets_and_factories(workspace):
    (workspace / "needs_args.py").write_text(
        fallback().replace(
            "class Net(nn.Module):",
            "class Net(nn.Module):\n    def __init__(self, width):\n        super().__init__()\n",
        )
    )
    (workspace / "cfg.toml").write_text(
        '[tool.atenlint]\ntargets = ["mps"]\n[tool.atenlint.modules."needs_args.Net"]\ninit = "Net(width=3)"\n'
    )
    result = atenlint("check", "needs_args.py", "--config", "cfg.toml", "--format", "json", cwd=workspace)
    codes = [d["code"] for d in json.loads(result.stdout)["diagnostics"]]
    assert codes == ["MPS001"]
    without = atenlint("check", "needs_args.py", "--format", "json", cwd=workspace)
    # Without the factory, the class is built with an inferred `width` and traced: the same op.
    assert [d["code"] for d in json.loads(without.stdout)["diagnostics"]] == ["MPS001"]
    assert json.loads(without.stdout)["classes"]["arguments_inferred"] == 1
    text = atenlint("check", "needs_args.py", cwd=workspace)
    assert "1 built with inferred arguments" in text.stderr + text.stdout


def test_invalid_project_config_is_reported(workspace):
    (workspace / "pyproject.toml").write_text("[tool.atenlint]\ntargets = ['tpu']\n")
    result = atenlint("check", "bad.py", "--format", "json", cwd=workspace)
    (diagnostic,) = json.loads(result.stdout)["diagnostics"]
    assert diagnostic["code"] == "ATL010" and "unknown target 'tpu'" in diagnostic["message"]
    assert result.returncode == 1


def test_output_to_a_closed_pipe_is_quiet(workspace):
    command = f"{sys.executable} -m atenlint check . --format json | head -c 10"
    result = subprocess.run(
        command, shell=True, cwd=workspace, capture_output=True, text=True, timeout=300, check=False
    )
    assert "Traceback" not in result.stderr


def test_no_exec_never_imports_and_still_reports(workspace):
    canary = workspace / "canary.txt"
    (workspace / "side_effect.py").write_text(f"open({str(canary)!r}, 'w').write('ran')\n" + fallback())
    result = atenlint("check", "side_effect.py", "--no-exec", "--format", "json", cwd=workspace)
    assert not canary.exists()
    (diagnostic,) = json.loads(result.stdout)["diagnostics"]
    assert (diagnostic["code"], diagnostic["capture"], diagnostic["ops"]) == ("MPS001", "static", [mps_missing().op])
    assert result.returncode == 1


def test_the_projects_workers_size_the_cli_pool_unless_jobs_is_given(tmp_path):
    from atenlint.commands.common import default_jobs
    from atenlint.config import SettingsResolver

    project = tmp_path / "proj"
    project.mkdir()
    (project / "model.py").write_text("import torch\n", encoding="utf-8")
    (project / "pyproject.toml").write_text("[tool.atenlint]\ntargets = ['mps']\n", encoding="utf-8")
    paths = [str(project / "model.py")]
    assert default_jobs(paths, SettingsResolver()) == 1  # not set: one worker for one file
    (project / "pyproject.toml").write_text("[tool.atenlint]\nworkers = 3\n", encoding="utf-8")
    assert default_jobs(paths, SettingsResolver()) == 3
    assert default_jobs([str(project)], SettingsResolver()) == 3
    (project / "pyproject.toml").write_text("[tool.atenlint]\nworkers = 3\ntargets = ['tpu']\n", encoding="utf-8")
    assert default_jobs(paths, SettingsResolver()) == 1  # invalid settings: the check says so (ATL010)


def test_worker_count_is_capped_by_the_machine(tmp_path):
    """`--jobs 100000` (or a cloned project's `workers = 64`) starts no more workers than the
    machine has cores and memory for, and says so once."""
    (tmp_path / "pyproject.toml").write_text("[tool.atenlint]\nworkers = 64\n")
    (tmp_path / "net.py").write_text(CLEAN)
    result = atenlint("check", "net.py", "--no-exec", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "atenlint: " in result.stderr and "worker" in result.stderr
