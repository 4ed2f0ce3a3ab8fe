"""EXPORT001: when torch.export itself fails on a class's own code (a branch on a tensor's
value), every export toolchain fails the same way on the real model — torch.export traces
on fake tensors whatever it is given — so export targets get an error at that line (a warning
naming the guess when atenlint inferred the inputs); the device targets, which run the
code eagerly, get nothing."""

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


# Whisper's TextDecoder attention: under torch.jit.trace a size is a traced tensor, so
# `is_causal=n_ctx > 1` is a Tensor where a bool is required; run untraced, it is a bool.
SIZE_AS_FLAG = textwrap.dedent("""\
    import torch
    import torch.nn as nn
    import torch.nn.functional as F


    class Attention(nn.Module):  # atenlint: inputs=torch.randn(5, 16)
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(16, 48)

        def forward(self, x):
            n_ctx, width = x.shape
            q, k, v = self.qkv(x).view(n_ctx, 3, 2, -1).permute(1, 2, 0, 3)
            out = F.scaled_dot_product_attention(q, k, v, is_causal=n_ctx > 1)
            return out.transpose(0, 1).reshape(n_ctx, width)
    """)


def _check_targets(pool, monkeypatch, capsys, tmp_path, text, *targets):
    (tmp_path / "attention.py").write_text(text)
    arguments = [item for target in targets for item in ("--target", target)]
    status, out, err = run_check(
        pool, monkeypatch, capsys, str(tmp_path), "attention.py", *arguments, "--format", "json"
    )
    return status, json.loads(out)["diagnostics"], err


def test_a_trace_that_fails_where_the_forward_runs_is_the_jit_toolchains_error(pool, monkeypatch, capsys, tmp_path):
    """With configured inputs, torch.jit.trace failing in the user's code while the same
    forward runs untraced is what coremltools meets (its first step is that trace): an
    error at the line. torch.export takes the size as an int, so the export targets pass."""
    status, found, err = _check_targets(pool, monkeypatch, capsys, tmp_path, SIZE_AS_FLAG, "coreml", "executorch")
    failed = [f for f in found if f["code"] == "EXPORT001"]
    assert [(f["target"], f["severity"], f["range"]["start"]["line"]) for f in failed] == [("coreml", "error", 13)], (
        found
    )
    assert failed[0]["message"].startswith("torch.jit.trace fails here, so coreml cannot export `Attention`")
    assert "is_causal" in failed[0]["message"]
    assert not [f for f in found if f["code"] == "ATL020"], found
    assert status == 1, err


def test_a_trace_failure_with_inferred_inputs_is_a_warning_naming_the_guess(pool, monkeypatch, capsys, tmp_path):
    """Inputs atenlint guessed: torch.jit.trace fails at `is_causal=n_ctx > 1` for any inputs
    (a traced size is a tensor), but the user's own inputs might never reach the line, so
    the failure is a warning that names the guess, never the error configured inputs give."""
    text = SIZE_AS_FLAG.replace("  # atenlint: inputs=torch.randn(5, 16)", "")
    (tmp_path / "attention.py").write_text(text)
    _, out, _ = run_check(
        pool,
        monkeypatch,
        capsys,
        str(tmp_path),
        "attention.py",
        "--target",
        "mps",
        "--target",
        "coreml",
        "--format",
        "json",
    )
    report = json.loads(out)
    assert report["classes"]["inferred"] == 1, report["classes"]  # the guess ran the forward (for mps)
    assert not [f for f in report["diagnostics"] if f["severity"] == "error"], out
    failed = [f for f in report["diagnostics"] if f["code"] == "EXPORT001"]
    assert [(f["target"], f["severity"], f["range"]["start"]["line"]) for f in failed] == [("coreml", "warning", 13)]
    assert "Found with the inputs atenlint inferred, `(torch.randn(2, 16),)`" in failed[0]["message"], failed
