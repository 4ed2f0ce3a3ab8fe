"""MPS verdicts for real torch 2.13 ops, each way a fallback can happen."""

from __future__ import annotations

import json
import os

import pytest

from atenlint.targets.mps import CODES, FALLBACK, FORCED, UNSUPPORTED, MpsOptions, MpsTarget, forced_fallbacks
from atenlint.targets.native_table import NativeTable


@pytest.fixture(scope="module")
def table(engine):
    return engine.native


@pytest.fixture(scope="module")
def mps(table, engine):
    return MpsTarget(table, engine.hello["registered_kernels"]["MPS"])


def leaf(op):
    return {"op": op, "calls": None}


@pytest.mark.parametrize("tree, expected", [
    (leaf("aten::add.Tensor"), []),  # structured, delegate has an MPS kernel
    (leaf("aten::heaviside"), [("aten::heaviside.out", FALLBACK)]),  # structured, delegate lacks one
    (leaf("aten::take"), [("aten::take", FALLBACK)]),  # no kernel at all
    (leaf("aten::linalg_svd"), [("aten::linalg_svd", FORCED)]),  # MPSFallback.mm
    (leaf("aten::linalg_lu_solve.out"), []),  # registered from Python at run time
    ({"op": "aten::adaptive_avg_pool3d", "calls": [leaf("aten::mean.dim")]}, []),  # composite: judged by its calls
    ({"op": "aten::adaptive_avg_pool3d", "calls": [leaf("aten::_adaptive_avg_pool3d")]},
     [("aten::_adaptive_avg_pool3d", FALLBACK)]),
    ({"op": "aten::convolution", "calls": None}, []),  # device-dispatching composite we did not expand
    (leaf("aten::_cudnn_rnn"), [("aten::_cudnn_rnn", UNSUPPORTED)]),  # neither MPS nor CPU kernel
])
def test_problems(mps, tree, expected):
    assert [(p.op, p.kind) for p in mps.problems(tree, ("eval",))] == expected


def test_verdict_wording_and_severity(mps, table, engine):
    problems = mps.problems(leaf("aten::take"), ("eval",))
    verdict = mps.verdict(problems)
    assert (verdict.severity, verdict.code) == ("warning", CODES[FALLBACK])
    assert "NotImplementedError" in verdict.message and "PYTORCH_ENABLE_MPS_FALLBACK=1" in verdict.message
    strict = MpsTarget(table, (), MpsOptions(fallback_enabled=False)).verdict(problems)
    assert strict.severity == "error"
    forced = mps.verdict(mps.problems(leaf("aten::embedding_renorm_"), ("eval",)))
    assert (forced.severity, forced.code) == ("warning", "MPS002") and "always runs on the CPU" in forced.message


def test_forced_fallback_data_names_its_source():
    path = os.path.join(os.path.dirname(__import__("atenlint.targets.mps", fromlist=["x"]).__file__),
                        "data", "mps_forced_fallbacks.json")
    data = json.load(open(path, encoding="utf-8"))
    assert "MPSFallback.mm" in data["source"]
    ops, version, exact = forced_fallbacks("2.13.0")
    assert {"aten::linalg_svd", "aten::linalg_svd.U", "aten::embedding_renorm_"} <= ops and exact
    assert forced_fallbacks("2.20.1")[1] == max(data["versions"], key=lambda v: tuple(map(int, v.split("."))))


def test_table_is_cached_by_version_and_hash(table, tmp_path, monkeypatch):
    monkeypatch.setenv("ATENLINT_CACHE_DIR", str(tmp_path))
    fresh = NativeTable.load(table.yaml_path, table.torch_version)
    cached = [f for f in os.listdir(tmp_path) if f.startswith(f"native-{table.torch_version}-{table.yaml_sha[:16]}")]
    assert len(cached) == 1 and fresh.entries == table.entries
    assert len(fresh.entries) > 3000
