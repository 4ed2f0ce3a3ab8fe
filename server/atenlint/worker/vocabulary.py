"""The words both sides of the worker boundary use for the same things, defined once:
call-tree views, capture kinds, class statuses and severities.

At the protocol's level: the worker writes these values into its answers
(`worker/protocol.py`), the parent compares against them, so neither side may spell them
on its own. Standard library only and imports nothing of atenlint: the worker imports it
before torch, the parent without loading anything of the worker.
"""

from __future__ import annotations

from typing import Final, Literal

# -- call-tree views -------------------------------------------------------------------------
# A captured call carries one call tree per view: the graph a target's own toolchain
# consumes (a target's `tree_view`, docs/targets.md).

VIEW_DISPATCH: Final = "dispatch"  # the dispatcher's kernels (mps, cuda, xla): judged first
VIEW_SCRIPT: Final = "script"  # not a tree: whether torch.jit.script compiles (the torchscript target)
VIEW_JIT: Final = "jit"  # torch.jit.trace, as coremltools prepares it
VIEW_ONNX_JIT: Final = "onnx-jit"  # torch.jit.trace, as the TorchScript ONNX exporter prepares it
VIEW_EXPORT: Final = "export"  # torch.export after the core-ATen decomposition (tensorrt)
VIEW_ONNX_EXPORT: Final = "onnx-export"  # ... after the dynamo ONNX exporter's table
VIEW_EXECUTORCH: Final = "executorch-export"  # ... after ExecuTorch's to_edge table
VIEW_COREML_EXPORT: Final = "coreml-export"  # ... as coremltools' torch.export frontend reads it
VIEW_COMPILE: Final = "compile"  # not a tree: torch.compile's own record (ClassAnswer.compile)

# The view the worker captures first and can answer early (a partial answer).
FAST_VIEW: Final = VIEW_DISPATCH
# The views whose toolchain converts a torch.jit.trace graph.
JIT_VIEWS: Final = (VIEW_JIT, VIEW_ONNX_JIT)
# The ExecuTorch delegates judged on their own (their partitioners: capture/delegate_view.py),
# each a view named as its target: the to_edge program as that partitioner splits it.
DELEGATES: Final = ("xnnpack", "coreml", "vulkan")
DELEGATE_VIEW_PREFIX: Final = "executorch:"
DELEGATE_VIEWS: Final = tuple(DELEGATE_VIEW_PREFIX + name for name in DELEGATES)
# The views torch.export produces (the delegates split its to_edge program).
EXPORT_VIEWS: Final = (VIEW_EXPORT, VIEW_ONNX_EXPORT, VIEW_EXECUTORCH, VIEW_COREML_EXPORT) + DELEGATE_VIEWS
# The views read off a toolchain's own graph (with example inputs).
GRAPH_VIEWS: Final = JIT_VIEWS + EXPORT_VIEWS

# -- how a class was captured (`ClassAnswer.capture`, a finding's `capture`) ------------------

CAPTURE_TRACE: Final = "trace"  # with example inputs: the dispatcher and the toolchains' graphs
CAPTURE_SCRIPT: Final = "script"  # torch.jit.script and atenlint's walker
CAPTURE_STATIC: Final = "static"  # from source, never executed
Capture = Literal["trace", "script", "static"]
CAPTURES: Final = (CAPTURE_TRACE, CAPTURE_SCRIPT, CAPTURE_STATIC)

# -- what became of a class (`ClassAnswer.status`) ----------------------------------------------

STATUS_OK: Final = "ok"
STATUS_BUILD_FAILED: Final = "build_failed"
STATUS_SCRIPT_FAILED: Final = "script_failed"
STATUS_STATIC: Final = "static"  # read from source (no import was needed or possible)
STATUS_IMPORT_FAILED: Final = "import_failed"
Status = Literal["ok", "build_failed", "script_failed", "static", "import_failed"]
STATUSES: Final = (STATUS_OK, STATUS_BUILD_FAILED, STATUS_SCRIPT_FAILED, STATUS_STATIC, STATUS_IMPORT_FAILED)

# -- severities, most severe first (a finding's, a target's) -----------------------------------

ERROR: Final = "error"
WARNING: Final = "warning"
INFORMATION: Final = "information"
HINT: Final = "hint"
Severity = Literal["error", "warning", "information", "hint"]
SEVERITIES: Final = (ERROR, WARNING, INFORMATION, HINT)
