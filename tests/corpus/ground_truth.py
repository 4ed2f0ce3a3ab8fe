"""Run the real exporters on corpus modules and record what each one rejects.

    python tests/corpus/ground_truth.py OUT.json MODULE.py [MODULE.py ...]

Each module file defines `Model` (default constructor) and `example_inputs()`. Every
exporter runs on CPU in eval mode; where an exporter can list every op it rejects (its
own checks, not atenlint's), the list is recorded, otherwise the op named in its error.
Optional packages that are missing are recorded as such.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import logging
import os
import re
import sys
import traceback
import warnings

import torch

TS_OPSETS = (9, 13, 17)
DYNAMO_OPSET = 18


def _name(op) -> str:
    schema = op._schema
    return f"{schema.name}.{schema.overload_name}" if schema.overload_name else schema.name


def _short(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"[:600]


def load(path: str):
    spec = importlib.util.spec_from_file_location(f"corpus_{os.path.basename(path)[:-3]}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def torchscript(model) -> dict:
    try:
        torch.jit.script(model)
        return {"ok": True}
    except Exception as error:  # noqa: BLE001
        return {"ok": False, "error": _short(error)}


def onnx_torchscript(model, args, opset: int) -> dict:
    from torch.onnx._internal.torchscript_exporter.utils import unconvertible_ops

    out: dict = {}
    try:
        _, ops = unconvertible_ops(model, args, opset_version=opset)
        out["unsupported"] = sorted(set(ops))
    except Exception as error:  # noqa: BLE001
        out["unsupported"] = None
        out["check_error"] = _short(error)
    try:
        torch.onnx.export(model, args, io.BytesIO(), opset_version=opset, dynamo=False)
        out["ok"] = True
    except Exception as error:  # noqa: BLE001
        out["ok"] = False
        out["error"] = _short(error)
        named = re.search(r"operator '([\w:.]+)'", str(error))
        if named:
            out["named"] = named.group(1)
    return out


def onnx_dynamo(exported, opset: int) -> dict:
    out: dict = {}
    try:
        from torch.onnx._internal.exporter import _fx_passes, _registration

        registry = _registration.ONNXRegistry.from_torchlib(opset)
        decomposed = _fx_passes.decompose_with_registry(exported, registry)
        missing = set()
        for node in decomposed.graph.nodes:
            if node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload):  # noqa: SIM102
                if not registry.is_registered(node.target):
                    missing.add(_name(node.target))
        out["unsupported"] = sorted(missing)
    except Exception as error:  # noqa: BLE001
        out["unsupported"] = None
        out["check_error"] = _short(error)
    try:
        torch.onnx.export(exported, opset_version=opset, dynamo=True, verbose=False)
        out["ok"] = True
    except Exception as error:  # noqa: BLE001
        out["ok"] = False
        out["error"] = _short(error)
    return out


def executorch(exported, args) -> dict:
    out: dict = {}
    decomposed = exported.run_decompositions()
    not_core = set()
    try:
        from executorch.exir.verification.verifier import EXIRATenDialectVerifier

        verifier = EXIRATenDialectVerifier()
        check = verifier.check_valid_op
        out["verifier"] = "executorch"
    except ImportError:
        out["verifier"] = "torch.Tag.core"

        def check(op):
            if op.namespace == "aten" and torch.Tag.core not in op.tags and torch.Tag.view_copy not in op.tags:
                raise ValueError(op)
    for node in decomposed.graph.nodes:
        if node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload):
            try:
                check(node.target)
            except Exception:  # noqa: BLE001 - SpecViolationError
                not_core.add(_name(node.target))
    out["not_core"] = sorted(not_core)
    if out["verifier"] == "executorch":
        from executorch.exir import to_edge

        try:
            edge = to_edge(exported)
            out["ok"] = True
        except Exception as error:  # noqa: BLE001
            out["ok"] = False
            out["error"] = _short(error)
        else:
            out.update(_loads_in_portable_runtime(edge, args))
            out["ok"] = out.get("loads", True)
    else:
        out["ok"] = not not_core
    return out


def _loads_in_portable_runtime(edge, args) -> dict:
    """Whether the program passing to_edge also loads in ExecuTorch's own runtime with the
    portable kernels the wheel links (its pybindings): a kernel the runtime lacks fails the
    load with "Missing operator" on the device. `missing_kernels`: the program's operators
    the runtime has no kernel for (the runtime names only the first it meets)."""
    try:
        from executorch.extension.pybindings import portable_lib
    except ImportError:
        return {}
    try:
        program = edge.to_executorch()
    except Exception as error:  # noqa: BLE001 - to_executorch itself fails: the program is not made
        return {"loads": False, "error": _short(error)}
    registered = set(portable_lib._get_operator_names())
    used = set()
    for node in program.exported_program().graph.nodes:
        target = getattr(node, "target", None)
        schema = getattr(target, "_schema", None)
        if node.op == "call_function" and schema is not None:
            overload = f".{schema.overload_name}" if schema.overload_name else ""
            used.add(f"{schema.name}{overload}")
    missing = sorted(op for op in used if op not in registered)
    try:
        # The runtime loads a method's operators when it first runs it: run it on the inputs.
        portable_lib._load_for_executorch_from_buffer(program.buffer).forward(tuple(args))
        loads = True
    except Exception as error:  # noqa: BLE001 - the runtime refuses the program (Missing operator)
        loads = False
        if not missing:
            return {"loads": False, "error": _short(error)}
    return {"loads": loads, "missing_kernels": [m.split(".")[0] for m in missing]}


def coreml(model, args) -> dict:
    try:
        import coremltools as ct
        import numpy as np
    except ImportError:
        return {"available": False}
    try:
        traced = torch.jit.trace(model, args)
    except Exception as error:  # noqa: BLE001
        return {"available": True, "ok": False, "error": "trace: " + _short(error), "trace_failed": True}
    inputs = [ct.TensorType(name=f"input_{i}", shape=tuple(a.shape),
                            dtype=np.int32 if not a.is_floating_point() else np.float32) for i, a in enumerate(args)]
    try:
        ct.convert(traced, inputs=inputs, convert_to="mlprogram", skip_model_load=True)
        return {"available": True, "ok": True}
    except Exception as error:  # noqa: BLE001
        out = {"available": True, "ok": False, "error": _short(error)}
        named = re.search(r"convert function for op '([\w:.]+)' not implemented", str(error))
        if named:
            out["missing"] = named.group(1)
        return out


def run(path: str) -> dict:
    module = load(path)
    model = module.Model().eval()
    args = tuple(module.example_inputs())
    result: dict = {"torchscript": torchscript(module.Model().eval())}
    with torch.no_grad():
        result["onnx_torchscript"] = {str(o): onnx_torchscript(model, args, o) for o in TS_OPSETS}
        try:
            exported = torch.export.export(model, args)
        except Exception as error:  # noqa: BLE001
            result["export_error"] = _short(error)
            exported = None
        if exported is not None:
            result["onnx_dynamo"] = {str(DYNAMO_OPSET): onnx_dynamo(exported, DYNAMO_OPSET)}
            result["executorch"] = executorch(exported, args)
        result["coreml"] = coreml(model, args)
    return result


def main() -> int:
    out_path, paths = sys.argv[1], sys.argv[2:]
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    results = {}
    for path in paths:
        with contextlib.redirect_stdout(sys.stderr):
            try:
                results[os.path.basename(path)] = run(path)
            except Exception:  # noqa: BLE001 - recorded, the test reports it
                results[os.path.basename(path)] = {"crashed": traceback.format_exc()[-2000:]}
    with open(out_path, "w", encoding="utf-8") as handle:
        json.dump(results, handle, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
