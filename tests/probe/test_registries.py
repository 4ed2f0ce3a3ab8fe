"""The exporter-registry probe: its child process failing is an error, never an empty
table; ExecuTorch's portable kernels are matched by the ops' own out= schemas."""

from __future__ import annotations

import importlib.util
import sys

import pytest
import torch

from atenlint.probe import registries


def test_a_failing_probe_process_raises_with_its_cause(tmp_path, monkeypatch):
    # An interpreter that dies at start (as the probe did under heavy load).
    dying = tmp_path / "python"
    dying.write_text("#!/bin/sh\necho 'killed by the OOM killer' >&2\nexit 137\n")
    dying.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(dying))
    with pytest.raises(RuntimeError) as failure:
        registries.tables_in_subprocess(timeout=60)
    assert "exit status 137" in str(failure.value) and "OOM" in str(failure.value)


def test_a_probe_process_without_an_answer_raises(tmp_path, monkeypatch):
    silent = tmp_path / "python"
    silent.write_text("#!/bin/sh\nexit 0\n")
    silent.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(silent))
    with pytest.raises(RuntimeError, match="no answer"):
        registries.tables_in_subprocess(timeout=60)


def test_a_broken_table_read_is_marked_failed_not_unavailable(monkeypatch):
    def broken() -> dict:
        raise ImportError("coremltools.libmilstoragepython: cannot open shared object file")

    for name in ("core_aten", "onnx_torchscript", "onnx_dynamo", "executorch"):
        monkeypatch.setattr(registries, name, lambda: {"available": True})
    monkeypatch.setattr(registries, "coreml", broken)
    tables = registries.tables()
    assert tables["coreml"]["failed"] and "cannot open shared object" in tables["coreml"]["reason"]
    assert not tables["core_aten"].get("failed")


@pytest.mark.parametrize(
    ("functional", "out"),
    [
        (torch.ops.aten.pow.Tensor_Scalar, "aten::pow.Tensor_Scalar_out"),
        (torch.ops.aten.pow.Tensor_Tensor, "aten::pow.Tensor_Tensor_out"),
        (torch.ops.aten.pow.Scalar, "aten::pow.Scalar_out"),
        (torch.ops.aten.add.Tensor, "aten::add.out"),
        (torch.ops.aten.max.dim, "aten::max.dim_max"),
    ],
)
def test_out_variants_from_torchs_own_schemas(functional, out):
    assert registries._name(registries._out_variant(functional)) == out


def test_an_op_without_an_out_variant_has_none():
    assert registries._out_variant(torch.ops.aten._local_scalar_dense.default) is None


@pytest.mark.skipif(importlib.util.find_spec("executorch") is None, reason="needs executorch (the exporters extra)")
def test_pow_has_portable_kernels():
    # minGPT's NewGELU (`torch.pow(x, 3.0)`) runs on the portable runtime: executorch's
    # `to_out_variant` fails on `pow` (a TorchScript builtin schema), which is not a missing kernel.
    table = registries.executorch()
    assert table["available"] and table["portable_kernels"] > 100
    assert not any(op.startswith("aten::pow") for op in table["no_portable_kernel"]), table["no_portable_kernel"]
    assert "aten::randperm" in table["no_portable_kernel"]  # a real gap is still reported
    # Run by the runtime's prim ops (executorch_prim_ops_registry.is_sym_op), not kernels.
    assert "aten::sym_size.int" not in table["no_portable_kernel"]
    assert "aten::_local_scalar_dense" not in table["no_portable_kernel"]
    # Which delegate partitioners load here, each by the class the delegate target runs.
    for name in ("xnnpack", "coreml", "vulkan"):
        delegate = table["delegates"][name]
        assert delegate["available"] or delegate["reason"], delegate
    assert table["delegates"]["xnnpack"]["partitioner"].endswith("XnnpackPartitioner")
