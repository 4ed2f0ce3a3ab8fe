"""MPS verdicts for real ops of the installed torch, each way a fallback can happen."""

from __future__ import annotations

import json
import os

import pytest

from atenlint.targets.mps import CODES, FALLBACK, FORCED, UNSUPPORTED, MpsOptions, MpsTarget, forced_fallbacks
from atenlint.targets.native_table import NativeTable
from torch_facts import missing_on


@pytest.fixture(scope="module")
def table(engine):
    return engine.native


@pytest.fixture(scope="module")
def mps(table, engine):
    return MpsTarget(table, engine.hello["registered_kernels"]["MPS"])


def leaf(op):
    return {"op": op, "calls": None}


@pytest.mark.parametrize(
    "tree, expected",
    [
        (leaf("aten::add.Tensor"), []),  # structured, delegate has an MPS kernel
        (leaf("aten::linalg_lu_solve.out"), []),  # registered from Python at run time
        ({"op": "aten::adaptive_avg_pool3d", "calls": [leaf("aten::mean.dim")]}, []),  # composite: judged by its calls
        ({"op": "aten::convolution", "calls": None}, []),  # device-dispatching composite we did not expand
    ],
)
def test_problems(mps, tree, expected):
    assert [(p.op, p.kind) for p in mps.problems(tree, ("eval",))] == expected


def test_a_composite_reports_the_call_without_a_kernel(mps):
    missing = missing_on("MPS", structured=False)[0].op
    tree = {"op": "aten::adaptive_avg_pool3d", "calls": [leaf("aten::mean.dim"), leaf(missing)]}
    assert [(p.op, p.kind) for p in mps.problems(tree, ("eval",))] == [(missing, FALLBACK)]


def test_forced_fallbacks_and_ops_without_any_kernel(mps, table):
    """MPSFallback.mm's ops (the data file's entry for this torch) always run on the CPU; an
    op this torch gives neither an MPS nor a CPU kernel (a CUDA-only one) fails even with
    the fallback."""
    assert mps.backend.forced
    for op in sorted(mps.backend.forced):
        assert [(p.op, p.kind) for p in mps.problems(leaf(op), ("eval",))] == [(op, FORCED)]
    cuda_only = next(
        name
        for name, entry in sorted(table.entries.items())
        if "CUDA" in entry.kernels
        and entry.delegate is None
        and not entry.kernels & {"CPU", "MPS"}
        and not any(key.startswith("Composite") for key in entry.kernels)
    )
    assert [(p.op, p.kind) for p in mps.problems(leaf(cuda_only), ("eval",))] == [(cuda_only, UNSUPPORTED)]


@pytest.mark.parametrize("structured", [False, True], ids=["no-kernel", "delegate-lacks-one"])
def test_an_op_without_an_mps_kernel_falls_back(mps, structured):
    """An overload with no MPS kernel of its own, or a structured one whose out= delegate has
    none (reported as the delegate): a CPU fallback."""
    missing = missing_on("MPS", structured=structured)[0]
    assert [(p.op, p.kind) for p in mps.problems(leaf(missing.call.overload), ("eval",))] == [(missing.op, FALLBACK)]


def test_verdict_wording_and_severity(mps, table, engine):
    problems = mps.problems(leaf(missing_on("MPS")[0].op), ("eval",))
    verdict = mps.verdict(problems)
    assert (verdict.severity, verdict.code) == ("warning", CODES[FALLBACK])
    assert "NotImplementedError" in verdict.message and "PYTORCH_ENABLE_MPS_FALLBACK=1" in verdict.message
    strict = MpsTarget(table, (), MpsOptions(fallback_enabled=False)).verdict(problems)
    assert strict.severity == "error"
    forced = mps.verdict(mps.problems(leaf("aten::embedding_renorm_"), ("eval",)))
    assert (forced.severity, forced.code) == ("warning", "MPS002") and "always runs on the CPU" in forced.message


def test_forced_fallback_data_names_its_source():
    path = os.path.join(
        os.path.dirname(__import__("atenlint.targets.mps", fromlist=["x"]).__file__),
        "data",
        "mps_forced_fallbacks.json",
    )
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    assert "MPSFallback.mm" in data["source"]
    ops, _version, exact = forced_fallbacks("2.13.0")
    assert {"aten::linalg_svd", "aten::linalg_svd.U", "aten::embedding_renorm_"} <= ops and exact
    assert forced_fallbacks("2.20.1")[1] == max(data["versions"], key=lambda v: tuple(map(int, v.split("."))))


def test_table_is_cached_by_version_and_hash(table, tmp_path, monkeypatch):
    monkeypatch.setenv("ATENLINT_CACHE_DIR", str(tmp_path))
    fresh = NativeTable.load(table.yaml_path, table.torch_version)
    cached = [f for f in os.listdir(tmp_path) if f.startswith(f"native-{table.torch_version}-{table.yaml_sha[:16]}")]
    assert len(cached) == 1 and fresh.entries == table.entries
    assert len(fresh.entries) > 3000


SVD = """import torch
import torch.nn as nn


class Plain(nn.Module):
    def forward(self, x):
        u, s, v = torch.linalg.svd(x)
        return u


# atenlint: inputs=torch.randn(4, 4)
class Traced(nn.Module):
    def forward(self, x):
        u, s, v = torch.linalg.svd(x)
        return u + torch.linalg.svdvals(x).sum()
"""


def test_one_verdict_per_call_whichever_path_captured_it(engine, tmp_path):
    """`torch.linalg.svd` on MPS: MPSFallback.mm registers the composite `linalg_svd` itself to
    the CPU fallback, so it never decomposes there and torch warns naming `aten::linalg_svd`
    (MPS002). The scripted graph says so; a trace on meta saw only `_linalg_svd` and said
    MPS001 `_linalg_svd.U`. `svdvals` does decompose on MPS: MPS001 for `_linalg_svd.U` stays."""
    from atenlint.capture.device_composites import kept_composites
    from atenlint.config import Settings

    if "aten::linalg_svd" not in forced_fallbacks(engine.native.torch_version)[0]:
        pytest.skip(f"MPSFallback.mm of torch {engine.native.torch_version} (the data file) does not force linalg_svd")
    assert "aten::linalg_svd" in kept_composites() and "aten::embedding_renorm" not in kept_composites()
    path = tmp_path / "svd.py"
    path.write_text(SVD)
    # `Plain` has no inputs and is scripted (inference off); `Traced` has configured inputs.
    capture = engine.capture(str(path), settings=Settings(targets=("mps",), infer_inputs=False))
    found = {
        (f.range.start.line, f.module.rsplit(".", 1)[-1]): f for f in engine.findings([capture]) if f.target == "mps"
    }
    plain, traced = found[(6, "Plain")], found[(13, "Traced")]
    assert traced.capture == "trace" and plain.capture == "script"
    assert (plain.code, plain.ops) == (traced.code, traced.ops) == ("MPS002", ["aten::linalg_svd"])
    if engine.native.has_kernel("aten::_linalg_svd.U", "MPS"):  # torch 2.14 and later
        assert (14, "Traced") not in found
    else:
        svdvals = found[(14, "Traced")]
        assert (svdvals.code, svdvals.ops) == ("MPS001", ["aten::_linalg_svd.U"])
