"""The decomposition tables the export views hand to `run_decompositions` are built once per
process (capture/graphs.py, torchcompat): each must stay exactly what the toolchain itself
builds per export, on whichever torch this runs."""

from __future__ import annotations

import importlib.util

import pytest
import torch

from atenlint import torchcompat
from atenlint.capture import graphs


def test_default_table_is_torchs_and_each_caller_gets_its_own_copy() -> None:
    table = torchcompat.export_default_decompositions()
    assert set(table) == set(dict(torch.export.default_decompositions().items()))
    some_op = next(iter(table))
    table.pop(some_op)
    assert some_op in torchcompat.export_default_decompositions()  # the cached one is untouched


@pytest.mark.skipif(importlib.util.find_spec("onnxscript") is None, reason="needs the dynamo ONNX exporter")
def test_onnx_table_equals_the_exporters_own_for_a_registry() -> None:
    from torch.onnx._internal.exporter import _decomp

    everything = _decomp.create_onnx_friendly_decomposition_table(set())
    # A registry that implements every third op the table could decompose, and one op it never holds.
    registered = set(list(everything)[::3]) | {torch.ops.aten.add.Tensor}
    ours = torchcompat.onnx_friendly_decompositions(registered)
    theirs = _decomp.create_onnx_friendly_decomposition_table(registered)
    assert set(ours) == set(theirs)
    assert not registered & set(ours)
    # Same decomposition for each op (CIA entries are fresh closures per build: compare their op).
    for op, function in theirs.items():
        assert getattr(ours[op], "__qualname__", None) == getattr(function, "__qualname__", None), op
    # A later call with fewer registered ops gets them back: the cached table was not thinned.
    assert set(torchcompat.onnx_friendly_decompositions(set())) == set(everything)


def test_resolved_names_are_reused_within_a_process() -> None:
    names = ("aten::add.Tensor", "aten::no_such_op.default", "aten::relu")
    first = graphs._resolved(names)
    assert torch.ops.aten.add.Tensor in first and len(first) == 2
    assert graphs._resolved(names) is first
