"""The targets' verdicts against the real exporters, on small modules: the registries'
answer for every op of the graph each toolchain converts must match whether
`torch.onnx.export(dynamo=False)` / `coremltools.convert` really fails, and ExecuTorch's
portable runtime really runs what it is not warned about."""

from __future__ import annotations

import importlib.util
import io
import math
import warnings

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from atenlint.capture.decompose import UNKNOWN
from atenlint.capture.graphs import _coreml_front_end, _onnx_front_end
from atenlint.capture.script import decomposed
from atenlint.config import Settings
from atenlint.targets import build_target
from atenlint.targets.registry_data import load


class Attention(nn.Module):
    def forward(self, q):
        return F.scaled_dot_product_attention(q, q, q)


class Diff(nn.Module):
    def forward(self, x):
        return torch.diff(x, dim=-1)


class Histc(nn.Module):
    def forward(self, x):
        return torch.histc(x, bins=4, min=0, max=1)


class NewOnes(nn.Module):
    def forward(self, x):
        return x.new_ones(x.shape) + x


class Chunk(nn.Module):
    def forward(self, x):
        a, b = x.chunk(2, dim=1)
        return a * b


class Up(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose2d(4, 4, 2, stride=2)

    def forward(self, x):
        return self.up(x)


CASES = {
    "sdpa": (Attention, (1, 2, 4, 8)),
    "diff": (Diff, (1, 4, 8, 8)),
    "histc": (Histc, (1, 4, 8, 8)),
    "new_ones": (NewOnes, (1, 4, 8, 8)),
    "chunk": (Chunk, (1, 4, 8, 8)),
    "conv_transpose2d": (Up, (1, 4, 8, 8)),
}


@pytest.fixture(scope="module")
def registries(engine):
    return load(engine.pool)


def target(engine, registries, name, **settings):
    return build_target(name, Settings(targets=(name,), **settings), engine.native, engine.hello, registries)


def traced_ops(module, shape, front_end):
    """The aten nodes of the graph the toolchain converts: its trace after its own passes
    (capture/graphs.py's, as the trace path applies them)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = front_end(torch.jit.trace(module.eval(), torch.rand(shape)).forward.graph)
    return sorted({node.kind() for node in graph.nodes() if node.kind().startswith("aten::")})


def judged(onnx_or_coreml, ops):
    return [p.op for op in ops for p in onnx_or_coreml.problems({"op": op, "calls": None}, ("eval",))]


@pytest.mark.parametrize("opset", [13, 17])
@pytest.mark.parametrize("case", ["sdpa", "diff", "histc", "new_ones", "chunk"])
def test_onnx_torchscript_exporter_agrees(engine, registries, case, opset):
    cls, shape = CASES[case]
    onnx = target(engine, registries, f"onnx:{opset}", onnx_exporter="torchscript")
    ops = traced_ops(cls(), shape, _onnx_front_end)
    problems = judged(onnx, ops)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(cls().eval(), (torch.rand(shape),), io.BytesIO(), dynamo=False, opset_version=opset)
        fails = False
    except Exception:  # noqa: BLE001 - any exporter failure is the oracle's "fails"
        fails = True
    assert bool(problems) == fails, (ops, problems)
    if case == "sdpa":
        assert fails == (opset < 14)  # the exporter's own symbolic starts at opset 14


@pytest.mark.skipif(importlib.util.find_spec("coremltools") is None, reason="needs coremltools (the exporters extra)")
@pytest.mark.parametrize("case", ["diff", "histc", "chunk", "conv_transpose2d"])
def test_coremltools_agrees(engine, registries, case):
    import coremltools as ct

    cls, shape = CASES[case]
    coreml = target(engine, registries, "coreml")
    ops = traced_ops(cls(), shape, _coreml_front_end)
    problems = judged(coreml, ops)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traced = torch.jit.trace(cls().eval(), torch.rand(shape))
        try:
            ct.convert(traced, inputs=[ct.TensorType(shape=shape)], convert_to="mlprogram", skip_model_load=True)
            fails = False
        except Exception:  # noqa: BLE001 - any conversion failure is the oracle's "fails"
            fails = True
    assert bool(problems) == fails, (ops, problems)


@pytest.mark.parametrize(
    ("op", "known"),
    [
        ("aten::chunk", {"self": UNKNOWN, "chunks": 2, "dim": 1}),
        (
            "aten::conv_transpose2d.input",
            {"input": UNKNOWN, "weight": UNKNOWN, "bias": UNKNOWN, "stride": [2, 2], "padding": [0, 0]},
        ),
    ],
)
def test_source_calls_are_judged_as_the_trace_records_them(engine, registries, op, known):
    # Both convert with coremltools (test_coremltools_agrees): a call read from source or
    # the scripted graph must not be a Core ML error either.
    coreml = target(engine, registries, "coreml")
    assert coreml.problems({"op": op, "calls": None}, ("eval",))  # the call itself has no translation
    assert coreml.problems(decomposed(op, known, "jit"), ("eval",)) == []


class NewGELU(nn.Module):
    """minGPT's GELU."""

    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


@pytest.mark.skipif(importlib.util.find_spec("executorch") is None, reason="needs executorch (the exporters extra)")
def test_executorch_portable_runtime_agrees_on_pow(engine, registries):
    from executorch.exir import to_edge
    from executorch.extension.pybindings.portable_lib import _load_for_executorch_from_buffer

    executorch = target(engine, registries, "executorch")
    exported = torch.export.export(NewGELU().eval(), (torch.rand(2, 8),)).run_decompositions()
    ops = {str(node.target.name()) for node in exported.graph.nodes if node.op == "call_function"}
    assert any(op.startswith("aten::pow") for op in ops)
    assert judged(executorch, ["aten::" + op.removeprefix("aten::") for op in ops]) == []  # no ET001, no ET002
    # The real portable runtime runs it.
    program = to_edge(torch.export.export(NewGELU().eval(), (torch.rand(2, 8),))).to_executorch()
    x = torch.rand(2, 8)
    [y] = _load_for_executorch_from_buffer(program.buffer).forward((x,))
    torch.testing.assert_close(y, NewGELU()(x))
