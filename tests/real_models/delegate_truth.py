"""What ExecuTorch's real delegate lowering does with one real-model file.

    python tests/real_models/delegate_truth.py OUT.json MODEL.py [DELEGATE ...]

For each delegate (default: xnnpack), on real CPU tensors in eval mode under `no_grad`:
`torch.export.export`, then `to_edge_transform_and_lower` with the delegate's partitioner
(its defaults), then:

- `left`: every op node the lowered program keeps outside its delegate calls (what runs on
  the portable CPU kernels), counted per overload, with the user frames of each node's
  recorded stack;
- the load verdict: `to_executorch()`, then the program's `forward` in the wheel's own
  portable runtime (its pybindings), as the corpus ground truth does it
  (`tests/corpus/ground_truth.py`): `loads`, and `missing_kernels`, the program's operators
  that runtime has no kernel for. The wheel's runtime registers only some backends
  (`_get_registered_backend_names`: XNNPACK, not Core ML nor Vulkan); a program delegated
  to another cannot run there at all, so for it `loads` is the kernel check alone: the
  program is made (`to_executorch()`) and every operator it keeps outside its delegate calls
  has a kernel in that runtime (`load_check: "kernels"`, against `"ran"`).

A failure at any step is recorded with its message; the runner never judges an op itself.
Where the lowering itself fails in the Core ML backend's conversion (coremltools converts
the delegated partitions node by node and stops at the first it cannot), `failed_op` and
`failed_frames` name the node coremltools was converting: its kind and the user frames of
its recorded stack, read off the exception's own traceback.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import os
import sys
import traceback
import warnings
from collections import Counter

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, REPO)

from tests.corpus.ground_truth import _loads_in_portable_runtime, _short, load

# The partitioner each delegate target runs, as executorch documents them.
PARTITIONERS = {
    "xnnpack": ("executorch.backends.xnnpack.partition.xnnpack_partitioner", "XnnpackPartitioner"),
    "vulkan": ("executorch.backends.vulkan.partitioner.vulkan_partitioner", "VulkanPartitioner"),
    "coreml": ("executorch.backends.apple.coreml.partition", "CoreMLPartitioner"),
}


def _name(op: torch._ops.OpOverload) -> str:
    schema = op._schema
    return f"{schema.name}.{schema.overload_name}" if schema.overload_name else schema.name


def _user_frames(node, model_path: str) -> list[str]:
    """`path:line` of the frames of the node's stack in the model file (an FX node's, or a
    coremltools node's, which keeps the FX node's `meta`)."""
    out = []
    for line in (node.meta.get("stack_trace") or "").splitlines():
        line = line.strip()
        if line.startswith("File ") and os.path.abspath(model_path) in line:
            path = line.split('"')[1]
            number = line.split(", line ")[1].split(",")[0]
            out.append(f"{os.path.abspath(path)}:{number}")
    return out


def lower(exported, args, delegate: str, model_path: str) -> dict:
    exir = importlib.import_module("executorch.exir")
    module_name, class_name = PARTITIONERS[delegate]
    chosen = getattr(importlib.import_module(module_name), class_name)()
    try:
        lowered = exir.to_edge_transform_and_lower(exported, partitioner=[chosen])
    except Exception as error:  # noqa: BLE001 - the lowering itself fails
        return {"lowered": False, "error": _short(error), **_failed_node(error, model_path)}
    left: Counter[str] = Counter()
    frames: dict[str, set[str]] = {}
    delegated = 0
    for node in lowered.exported_program().graph.nodes:
        if node.op != "call_function":
            continue
        if "executorch_call_delegate" in str(node.target):
            delegated += 1
            continue
        # An edge op keeps its aten overload as `_op`; passes also leave plain aten ops
        # (`scalar_tensor` from ScalarToTensorPass), whose own `_op` is a C++ builtin.
        target = node.target if isinstance(node.target, torch._ops.OpOverload) else getattr(node.target, "_op", None)
        if isinstance(target, torch._ops.OpOverload):
            name = _name(target)
            left[name] += 1
            frames.setdefault(name, set()).update(_user_frames(node, model_path))
    out: dict = {
        "lowered": True,
        "delegate_calls": delegated,
        "left": dict(sorted(left.items())),
        "frames": {op: sorted(lines) for op, lines in sorted(frames.items())},
    }
    if _backends(lowered) <= _registered_backends():
        out.update(_loads_in_portable_runtime(lowered, args), load_check="ran")
    else:
        out.update(_kernels_present(lowered), load_check="kernels")
    return out


def _failed_node(error: BaseException, model_path: str) -> dict:
    """The node coremltools' `convert_nodes` was converting when the error was raised (the
    innermost frame of that loop in the traceback), with its user frames; nothing when the
    failure is elsewhere."""
    node = None
    traceback_entry = error.__traceback__
    while traceback_entry is not None:
        frame = traceback_entry.tb_frame
        if frame.f_code.co_name == "convert_nodes" and "coremltools" in frame.f_code.co_filename:
            node = frame.f_locals.get("node", node)
        traceback_entry = traceback_entry.tb_next
    if node is None:
        return {}
    return {"failed_op": str(node.kind), "failed_frames": sorted(set(_user_frames(node, model_path)))}


def _registered_backends() -> set[str]:
    from executorch.extension.pybindings import portable_lib

    return set(portable_lib._get_registered_backend_names())


def _backends(lowered) -> set[str]:
    """The backend ids of the program's delegate calls."""
    graph_module = lowered.exported_program().graph_module
    return {module.backend_id for _, module in graph_module.named_children() if hasattr(module, "backend_id")}


def _kernels_present(lowered) -> dict:
    """The load verdict where the runtime lacks the delegate's backend: the program is made
    and the runtime has a kernel for every operator outside the delegate calls."""
    from executorch.extension.pybindings import portable_lib

    try:
        program = lowered.to_executorch()
    except Exception as error:  # noqa: BLE001 - to_executorch itself fails: the program is not made
        return {"loads": False, "error": _short(error)}
    registered = set(portable_lib._get_operator_names())
    used = set()
    for node in program.exported_program().graph.nodes:
        schema = getattr(getattr(node, "target", None), "_schema", None)
        if node.op == "call_function" and schema is not None:
            used.add(f"{schema.name}.{schema.overload_name}" if schema.overload_name else schema.name)
    missing = sorted(op for op in used if op not in registered)
    return {"loads": not missing, "missing_kernels": [m.split(".")[0] for m in missing]}


def run(path: str, delegates: list[str]) -> dict:
    module = load(path)
    model = module.Model().eval()
    args = tuple(module.example_inputs())
    with torch.no_grad():
        try:
            exported = torch.export.export(model, args)
        except Exception as error:  # noqa: BLE001 - no program to lower
            return {"export_error": _short(error), "complete": True}
        result: dict = {"delegates": {}}
        for delegate in delegates:
            try:
                result["delegates"][delegate] = lower(exported, args, delegate, path)
            except Exception:  # noqa: BLE001 - recorded, the test reports it
                result["delegates"][delegate] = {"crashed": traceback.format_exc()[-2000:]}
    result["complete"] = True
    return result


def main() -> int:
    out_path, path, *delegates = sys.argv[1:]
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    with contextlib.redirect_stdout(sys.stderr):
        try:
            result = run(path, delegates or ["xnnpack"])
        except Exception:  # noqa: BLE001 - recorded, the test reports it
            result = {"crashed": traceback.format_exc()[-2000:]}
    with open(out_path, "w", encoding="utf-8") as handle:
        json.dump(result, handle, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
