"""`.pre-commit-hooks.yaml`: the hook's declaration, and `pre-commit try-repo` on a sample
repository (opt-in: ATENLINT_TEST_PRE_COMMIT=1; it builds the hook's virtualenv, which needs PyPI
for setuptools, and takes a minute). The probe `pre-commit try-repo` is `pre-commit run`
with a configuration it writes itself; this test writes it down so the hook's environment
can borrow this environment's torch."""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys

import pytest

from atenlint.cli import build_parser
from support import REPO
from torch_facts import mps_missing

yaml = pytest.importorskip("yaml")

HOOKS = os.path.join(REPO, ".pre-commit-hooks.yaml")


def test_the_hook_is_declared_for_python_files_and_notebooks():
    with open(HOOKS, encoding="utf-8") as handle:
        [hook] = yaml.safe_load(handle)
    assert hook["id"] == "atenlint" and hook["language"] == "python"
    assert set(hook["types_or"]) == {"python", "jupyter"}  # either kind of file, not both at once
    assert hook["require_serial"] is True
    command, *arguments = hook["entry"].split()
    assert command == "atenlint"  # the console script of [project.scripts]
    with open(os.path.join(REPO, "pyproject.toml"), encoding="utf-8") as handle:
        assert 'atenlint = "atenlint.cli:main"' in handle.read()
    args = build_parser().parse_args(arguments + ["--no-exec", "model.py", "nb.ipynb"])
    assert args.command == "check" and args.no_exec and args.paths == ["model.py", "nb.ipynb"]
    with open(HOOKS, encoding="utf-8") as handle:
        assert "--no-exec" in handle.read()  # the file says how to never run repository code


def _git(cwd: str, *args: str) -> None:
    subprocess.run(
        ["git", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        env=dict(
            os.environ,
            GIT_AUTHOR_NAME="t",
            GIT_AUTHOR_EMAIL="t@example.com",
            GIT_COMMITTER_NAME="t",
            GIT_COMMITTER_EMAIL="t@example.com",
        ),
    )


@pytest.mark.skipif(os.environ.get("ATENLINT_TEST_PRE_COMMIT") != "1", reason="set ATENLINT_TEST_PRE_COMMIT=1")
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_pre_commit_runs_the_hook_on_a_sample_repository(tmp_path):
    pytest.importorskip("pre_commit")
    hook_repo = tmp_path / "hook"
    hook_repo.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE", ".pre-commit-hooks.yaml"):
        shutil.copy(os.path.join(REPO, name), hook_repo / name)
    shutil.copytree(
        os.path.join(REPO, "server", "atenlint"),
        hook_repo / "server" / "atenlint",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    _git(str(hook_repo), "init", "-q")
    _git(str(hook_repo), "add", "-A")
    _git(str(hook_repo), "commit", "-qm", "hook")

    sample = tmp_path / "sample"
    sample.mkdir()
    missing = mps_missing()  # an op with no MPS kernel in the installed torch
    (sample / "model.py").write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass M(nn.Module):\n"
        f"    def forward(self, x, i):\n        return {missing.call.call('x')}\n"
    )
    (sample / "clean.py").write_text("x = 1\n")
    _git(str(sample), "init", "-q")
    _git(str(sample), "add", "-A")
    _git(str(sample), "commit", "-qm", "sample")

    home = tmp_path / "pre-commit-home"
    env = dict(os.environ, PRE_COMMIT_HOME=str(home))
    revision = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=hook_repo, capture_output=True, text=True, check=True
    ).stdout.strip()
    # `try-repo` is `run` with this configuration made up on the fly (in a throw-away store);
    # written down, the hook's environment stays in PRE_COMMIT_HOME between the two steps.
    (sample / ".pre-commit-config.yaml").write_text(
        f"repos:\n-   repo: {hook_repo}\n    rev: {revision}\n    hooks:\n    -   id: atenlint\n"
    )
    # The hook's virtualenv would download torch; give it this environment's instead: pip
    # sees it through PYTHONPATH while installing, then a .pth file makes it importable
    # there (the analysis worker runs with -I, so it never reads PYTHONPATH).
    host = site.getsitepackages()[0]
    install = subprocess.run(
        [sys.executable, "-m", "pre_commit", "install-hooks"],
        cwd=sample,
        check=False,
        env=dict(env, PYTHONPATH=host),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    for site_dir in _site_packages(str(home)):
        with open(os.path.join(site_dir, "host-torch.pth"), "w", encoding="utf-8") as handle:
            handle.write(host + "\n")
    result = subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", "--all-files", "--verbose"],
        cwd=sample,
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 1, output  # a finding fails the hook
    assert f"model.py:7:16: warning [mps] `{missing.call.function}`" in output and "(MPS001)" in output


def _site_packages(environment: str) -> list:
    out = []
    for root, names, _ in os.walk(environment):
        out.extend(os.path.join(root, n) for n in names if n == "site-packages")
    return out
