"""Helpers the CI-format tests share: a small workspace (a model file and a notebook) and
`atenlint check` run in-process on the session's warm worker pool (real argument parsing,
output and exit codes, without a torch import per run)."""

from __future__ import annotations

import json
import os

from atenlint import cli
from torch_facts import mps_missing_two

# Calls two ops with no MPS kernel in the installed torch (torch_facts), one on each line.
_MODEL = """import torch
import torch.nn as nn


class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x, index):
        picked = {first}
        return picked + {second}.sum()
"""


def model_calls() -> tuple[str, str]:
    """The two calls `model_source()` makes, in source order (the first on line 11)."""
    first, second = mps_missing_two()
    return first.call.call("self.proj(x)"), second.call.call("x")


def model_source() -> str:
    first, second = model_calls()
    return _MODEL.format(first=first, second=second)


NOTEBOOK_CELLS = [
    ("markdown", ["# Pooling\n"]),
    ("code", ["import torch\n", "import torch.nn as nn\n", "%matplotlib inline"]),
    (
        "code",
        [
            "class Pool(nn.Module):\n",
            "    def __init__(self):\n",
            "        super().__init__()\n",
            "        self.pool = nn.AdaptiveAvgPool3d((2, 4, 4))\n",
            "\n",
            "    def forward(self, x):\n",
            "        return self.pool(x)\n",
        ],
    ),
]


def notebook_text(cells) -> str:
    out = []
    for kind, source in cells:
        cell = {"cell_type": kind, "metadata": {}, "source": source}
        if kind == "code":
            cell.update(execution_count=None, outputs=[])
        out.append(cell)
    return (
        json.dumps(
            {
                "cells": out,
                "metadata": {"kernelspec": {"name": "python3", "language": "python"}},
                "nbformat": 4,
                "nbformat_minor": 5,
            },
            indent=1,
        )
        + "\n"
    )


def make_workspace(root) -> str:
    """A repository (a `.git` folder marks its root) with `src/model.py` and `nb.ipynb`."""
    root = str(root)
    os.makedirs(os.path.join(root, ".git"), exist_ok=True)
    os.makedirs(os.path.join(root, "src"), exist_ok=True)
    with open(os.path.join(root, "src", "model.py"), "w", encoding="utf-8") as handle:
        handle.write(model_source())
    with open(os.path.join(root, "nb.ipynb"), "w", encoding="utf-8") as handle:
        handle.write(notebook_text(NOTEBOOK_CELLS))
    return root


class BorrowedPool:
    """The session's pool for a command that closes its pool when done: close is a no-op."""

    def __init__(self, pool):
        self._pool = pool

    def __getattr__(self, name):
        return getattr(self._pool, name)

    def close(self) -> None:
        pass


def run_check(pool, monkeypatch, capsys, cwd: str, *args: str) -> tuple[int, str, str]:
    """`atenlint check ARGS` in `cwd`: (exit status, stdout, stderr)."""
    monkeypatch.chdir(cwd)
    monkeypatch.delenv("GITHUB_WORKSPACE", raising=False)
    monkeypatch.setattr("atenlint.commands.check.WorkerPool", lambda *a, **k: BorrowedPool(pool))
    capsys.readouterr()
    try:
        status = cli.main(["check", *args])
    except SystemExit as exit_:  # usage errors exit through argparse
        status = exit_.code
    captured = capsys.readouterr()
    return status, captured.out, captured.err
