"""The export views of a scripted class against the real thing: `torch.export`, then
ExecuTorch's `to_edge`, the dynamo ONNX exporter and coremltools' ExportedProgram frontend,
run on the same module."""

from __future__ import annotations

import importlib.util
import sys
import textwrap

import pytest

from atenlint.config import SettingsResolver

EXPORTERS = ("executorch", "onnxscript", "coremltools")

# TorchScript compiles it (so without inputs the class is scripted), and its export views
# hold what functionalisation makes of its in-place calls: `add_`, `mul_`, `relu_`,
# `sigmoid_` at the top and the `copy_` of `pad_sequence`'s kernel, which export never runs
# (its decomposition table pads and scatters instead).
IN_PLACE_MODEL = """
import torch
from torch import nn
from torch.nn.utils.rnn import pad_sequence


class Model(nn.Module):
    def forward(self, x: torch.Tensor):
        y = x.clone()
        y.add_(1.0)
        y.mul_(x)
        padded = pad_sequence([x[0], x[1, :2]], batch_first=True)
        return torch.relu_(padded), torch.sigmoid_(y)
"""


def _real_failures(module, inputs) -> dict[str, str | None]:
    """Per target, the real toolchain's error on `module` (None: it succeeded)."""
    import coremltools
    import torch
    from executorch.exir import to_edge

    exported = torch.export.export(module, inputs)
    failures: dict[str, str | None] = {}
    runs = {
        "executorch": lambda: to_edge(exported.run_decompositions()),
        "onnx:18": lambda: torch.onnx.export(module, inputs, dynamo=True, opset_version=18),
        # coremltools' ExportedProgram frontend reads the program undecomposed.
        "coreml": lambda: coremltools.convert(exported.run_decompositions({})),
    }
    for target, run in runs.items():
        try:
            run()
        except Exception as error:  # noqa: BLE001 - the exporter's failure is the result
            failures[target] = f"{type(error).__name__}: {error}"
        else:
            failures[target] = None
    return failures


@pytest.mark.skipif(
    any(importlib.util.find_spec(name) is None for name in EXPORTERS),
    reason="needs the exporters extra (executorch, onnxscript, coremltools)",
)
def test_scripted_class_export_verdicts_match_the_real_exporters(engine, tmp_path):
    import torch

    path = tmp_path / "inplace_model.py"
    path.write_text(textwrap.dedent(IN_PLACE_MODEL).lstrip())
    engine.resolver = SettingsResolver(
        overrides={
            "targets": ("executorch", "onnx:18", "coreml"),
            "onnx_exporter": "dynamo",
            "coreml_frontend": "export",
            "infer_inputs": False,  # no inputs: the class is scripted
        }
    )
    report = engine.check_paths([str(tmp_path)], jobs=1, execute=True)
    findings = [f for f in report.findings if f.target]
    assert findings and {f.capture for f in findings} == {"script"}
    errors: dict[str, list[str]] = {}
    for finding in findings:
        if finding.severity == "error":
            errors.setdefault(finding.target or "", []).extend(finding.ops)
    # Export functionalises the whole graph: no export view judges an in-place op.
    in_place = [op for ops in errors.values() for op in ops if op.split("::")[1].split(".")[0].endswith("_")]
    assert not in_place, errors

    sys.path.insert(0, str(tmp_path))
    try:
        module = importlib.import_module("inplace_model").Model().eval()
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("inplace_model", None)
    real = _real_failures(module, (torch.rand(2, 3, 4),))
    assert {target: bool(error) for target, error in real.items()} == {target: target in errors for target in real}, (
        real,
        errors,
    )
    for target, ops in errors.items():
        # The op atenlint names is the one the real toolchain stops at.
        assert all(op.split("::")[1].split(".")[0] in (real[target] or "") for op in ops), (target, ops, real[target])
    # This module exercises both outcomes: coremltools has no `pad_sequence` translation.
    assert real["coreml"] and not real["executorch"] and not real["onnx:18"], real


def test_export_tree_follows_the_table_not_the_kernel():
    """`pad_sequence` has a CompositeImplicitAutograd kernel that copies into slices and a
    decomposition in export's table that pads and scatters: the exported program holds the
    latter's ops, functional at every depth, as the real `run_decompositions()` does."""
    import torch
    from torch.nn.utils.rnn import pad_sequence

    from atenlint.capture.decompose import UNKNOWN
    from atenlint.capture.export_decompose import export_tree

    def leaves(node):
        calls = node.get("calls")
        if calls is None or node.get("via") != "default":
            return [node["op"]]
        return [op for child in calls for op in leaves(child)]

    tree = export_tree(torch.ops.aten.pad_sequence.default, {"sequences": UNKNOWN, "batch_first": True})
    held = {op.split(".")[0] for op in leaves(tree)}

    class Padding(torch.nn.Module):
        def forward(self, x):
            return pad_sequence([x[0], x[1, :2]], batch_first=True)

    exported = torch.export.export(Padding(), (torch.rand(2, 3, 4),)).run_decompositions()
    real = {
        "aten::" + str(node.target).split(".")[1]
        for node in exported.graph.nodes
        if node.op == "call_function" and str(node.target).startswith("aten.")
    }
    # The real program's own selects and slices (of the input list) are the caller's calls.
    assert not [op for op in held if op.split("::")[1].endswith("_")], held
    assert held - {"aten::select", "aten::slice"} <= real, (held, real)
    assert "aten::constant_pad_nd" in held


def test_executorch_trees_belong_to_the_table_they_were_built_with():
    """A worker's warm-up builds trees before any request sends to_edge's changes to the
    table (torch 2.13's ExecuTorch also decomposes `linalg_vector_norm`); a request that
    sends other changes must not be answered from those trees, whichever came first. Here
    the changes take `hardswish` out of the table."""
    from atenlint.capture.decompose import UNKNOWN
    from atenlint.capture.export_decompose import executorch_changes, set_executorch_changes
    from atenlint.capture.script import decomposed

    before = dict(executorch_changes())
    try:
        set_executorch_changes({})
        kept = decomposed("aten::hardswish", {"self": UNKNOWN}, "executorch-export")
        set_executorch_changes({"removed": ["aten::hardswish"]})
        removed = decomposed("aten::hardswish", {"self": UNKNOWN}, "executorch-export")
    finally:
        set_executorch_changes(before)
    assert kept.get("via") == "default"  # torch.export's table decomposes it
    assert removed.get("via") != "default"  # the changed table does not
