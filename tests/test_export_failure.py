"""EXPORT001: when torch.export itself fails on a class's own code (a branch on a tensor's
value), every export toolchain fails the same way on the real model — torch.export traces
on fake tensors whatever it is given — so export targets get an error at that line; the
device targets, which run the code eagerly, get nothing."""

from __future__ import annotations

import json
import textwrap

from ci_support import run_check

BRANCH_ON_VALUE = textwrap.dedent("""\
    import torch
    import torch.nn as nn


    class Gate(nn.Module):  # atenlint: inputs=torch.randn(2, 8)
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(8, 8)

        def forward(self, x):
            h = self.proj(x)
            if h.sum() > 0:
                return h.relu()
            return h.tanh()
    """)

NO_BRANCH = BRANCH_ON_VALUE.replace("if h.sum() > 0:", "if h.dim() > 1:")


def _check(pool, monkeypatch, capsys, tmp_path, text):
    (tmp_path / "gate.py").write_text(text)
    status, out, err = run_check(
        pool,
        monkeypatch,
        capsys,
        str(tmp_path),
        "gate.py",
        "--target",
        "executorch",
        "--target",
        "mps",
        "--format",
        "json",
    )
    return status, json.loads(out)["diagnostics"], err


def test_a_branch_on_a_tensor_value_is_an_error_for_export_targets_at_its_line(pool, monkeypatch, capsys, tmp_path):
    status, found, err = _check(pool, monkeypatch, capsys, tmp_path, BRANCH_ON_VALUE)
    export = [f for f in found if f["code"] == "EXPORT001"]
    assert [(f["target"], f["severity"], f["range"]["start"]["line"]) for f in export] == [
        ("executorch", "error", 11)
    ], found
    assert export[0]["message"].startswith("torch.export fails here, so executorch cannot export `Gate`"), export
    assert not [f for f in found if f["code"] == "ATL020"], found  # the error says it; no second note
    assert not [f for f in found if f["target"] == "mps"], found  # eager code runs the branch
    assert status == 1, err


def test_code_torch_export_accepts_gets_no_export_error(pool, monkeypatch, capsys, tmp_path):
    status, found, err = _check(pool, monkeypatch, capsys, tmp_path, NO_BRANCH)
    assert not [f for f in found if f["code"] in ("EXPORT001", "ATL020")], found
    assert status == 0, (found, err)


def test_with_only_an_export_target_the_failure_is_its_error_not_a_trace_failure(pool, monkeypatch, capsys, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.atenlint]\ntargets = ["onnx:18"]\nonnx-exporter = "dynamo"\n')
    (tmp_path / "gate.py").write_text(BRANCH_ON_VALUE)
    status, out, err = run_check(pool, monkeypatch, capsys, str(tmp_path), "gate.py", "--format", "json")
    found = json.loads(out)["diagnostics"]
    assert [(f["code"], f["target"], f["range"]["start"]["line"]) for f in found] == [("EXPORT001", "onnx:18", 11)], (
        found
    )
    assert status == 1, err
