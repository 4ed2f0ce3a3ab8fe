"""Target names as users type them (no imports: config.py reads this without loading targets)."""

from __future__ import annotations

import re

TARGETS = {
    "mps": "Apple GPUs through PyTorch's MPS backend",
    "cuda": "NVIDIA GPUs through PyTorch's CUDA backend",
    "xla": "TPUs and other XLA devices through torch_xla",
    "onnx": "ONNX through torch.onnx.export (onnx:N for opset N)",
    "executorch": "ExecuTorch: core ATen after torch.export, as to_edge verifies it",
    "core-aten": "the core ATen opset after torch.export decomposition (torch.Tag.core)",
    "coreml": "Core ML through coremltools.convert",
    "tensorrt": "NVIDIA TensorRT through Torch-TensorRT (dynamo)",
    "torchscript": "torch.jit.script",
    "compile": "torch.compile: where Dynamo breaks the graph (graph breaks at your line)",
    "executorch:xnnpack": "ExecuTorch with XNNPACK: ops its partitioner leaves to the CPU",
    "executorch:coreml": "ExecuTorch with Core ML: ops its partitioner leaves to the CPU",
    "executorch:vulkan": "ExecuTorch with Vulkan: ops its partitioner leaves to the CPU",
}
ALIASES: dict[str, str] = {}
ONNX_OPSET = re.compile(r"onnx:(?P<opset>\d+)")
ONNX_EXPORTERS = ("dynamo", "torchscript")
# coremltools' PyTorch frontends: a torch.jit.trace graph (its documented default) or an
# ExportedProgram (`ct.convert(torch.export.export(...).run_decompositions({}))`).
COREML_FRONTENDS = ("torchscript", "export")


def known(name: str) -> bool:
    return name in TARGETS or ONNX_OPSET.fullmatch(name) is not None


def listing() -> tuple[str, ...]:
    return tuple(TARGETS) + ("onnx:N",)
