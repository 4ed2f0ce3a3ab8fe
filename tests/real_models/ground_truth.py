"""Run the real exporters on one real-model file and record what each one rejects, and where.

    python tests/real_models/ground_truth.py OUT.json MODEL.py

`MODEL.py` defines `Model` (default constructor, random weights) and `example_inputs()`.
Every exporter runs on real CPU tensors in eval mode under `no_grad`, as a user deploying
the model would:

- `torch.jit.script` (the `torchscript` target: does scripting fail?);
- the TorchScript-based ONNX exporter (`dynamo=False`) at opsets 9, 13 and 17: the ops
  without a symbolic at that opset (`unconvertible_ops`, the exporter's own check, which
  sees the graph `torch.jit.trace` records), plus the op its real export names when a
  registered symbolic raises;
- `torch.export` + the dynamo ONNX exporter at opset 18: ops left after the exporter's own
  decomposition that onnxscript's torchlib does not register, and the real export's result;
- `torch.export` + `run_decompositions()` + ExecuTorch's verifier (every op it rejects)
  and `to_edge`;
- `coremltools.convert` of `torch.jit.trace`: the converter is run once with a placeholder
  translation put in for each op its registry lacks, so every op it would reject is named,
  not only the first.

For each rejected op the frames of the failing nodes' own recorded source stacks are kept
(those outside site-packages and the standard library), so a finding can be checked to sit
on the failing call's stack. The result file is rewritten after every exporter, so a crash
or a timeout keeps what finished.
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
import sysconfig
import traceback
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402

TS_OPSETS = (9, 13, 17)
DYNAMO_OPSET = 18
_LIBRARY_ROOTS = tuple({sysconfig.get_paths()[key] for key in ("purelib", "platlib", "stdlib")}
                       | {os.path.dirname(torch.__file__)})
_THIS_FILE = os.path.abspath(__file__)
_TRACE_FRAME = re.compile(r"^(?P<path>.+?)\((?P<line>\d+)\): ")
_EXPORT_FRAME = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+)')


def _short(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"[:800]


def _overload(op) -> str:
    schema = op._schema
    return f"{schema.name}.{schema.overload_name}" if schema.overload_name else schema.name


def base_name(op: str) -> str:
    """`aten::add.Tensor` -> `aten::add`; in-place `aten::add_` stays as the exporter names it."""
    namespace, _, rest = op.partition("::")
    return f"{namespace}::{rest.split('.', 1)[0]}" if rest else op


def _user_frames(paths_and_lines) -> list[str]:
    out = []
    for path, line in paths_and_lines:
        path = os.path.abspath(path)
        if path.startswith(_LIBRARY_ROOTS) or path.startswith("<") or path == _THIS_FILE:
            continue
        out.append(f"{path}:{line}")
    return out


def trace_node_frames(node) -> list[str]:
    """`torch._C.Node.sourceRange()` of a traced graph: `path(line): function` per frame."""
    frames = []
    for text in node.sourceRange().splitlines():
        match = _TRACE_FRAME.match(text.strip())
        if match:
            frames.append((match["path"], int(match["line"])))
    return _user_frames(frames)


def fx_node_frames(node) -> list[str]:
    trace = node.meta.get("stack_trace") or ""
    return _user_frames((m["path"], int(m["line"])) for m in _EXPORT_FRAME.finditer(trace))


def error_frames(text: str) -> list[str]:
    return _user_frames((m["path"], int(m["line"])) for m in _EXPORT_FRAME.finditer(text))


def load(path: str):
    spec = importlib.util.spec_from_file_location(f"real_model_{os.path.basename(path)[:-3]}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _add_stack(stacks: dict, op: str, frames: list[str]) -> None:
    bucket = stacks.setdefault(op, [])
    for frame in frames:
        if frame not in bucket:
            bucket.append(frame)


def torchscript(build) -> dict:
    try:
        torch.jit.script(build())
        return {"ok": True}
    except Exception as error:  # noqa: BLE001
        text = str(error)
        return {"ok": False, "error": _short(error), "frames": error_frames(text)}


def _ts_name(kind: str) -> str:
    """A traced node's kind as an op base name: in-place `aten::relu_` is `aten::relu`,
    dunder `aten::__and__` stays."""
    return base_name(kind if kind.endswith("__") else kind.rstrip("_"))


def _symbolic_name(kind: str) -> str:
    """The name the exporter looks its symbolic up by: one trailing `_` removed (in-place
    `aten::relu_` -> `aten::relu`; `aten::__and__` -> `aten::__and_`, which is how the
    opset-9 symbolic of `&` is registered). `unconvertible_ops` strips every trailing `_`
    instead and so lists `aten::__and__` although the export handles it."""
    return kind[:-1] if kind.endswith("_") else kind


def onnx_torchscript(model, args, opset: int) -> dict:
    from torch.onnx._internal.torchscript_exporter import registration
    from torch.onnx._internal.torchscript_exporter.utils import unconvertible_ops

    out: dict = {"stacks": {}}
    graph = None
    rejected: set[str] = set()
    try:
        # Its graph is the one the export converts (traced, inlined, in-place ops removed);
        # each node is judged here by the export's own lookup rule.
        graph, _ = unconvertible_ops(model, args, opset_version=opset)
        for node in graph.nodes():
            kind = node.kind()
            if kind.startswith(("onnx::", "prim::")):
                continue
            if registration.registry.get_function_group(_symbolic_name(kind)) is None or \
                    registration.registry.get_function_group(_symbolic_name(kind)).get(opset) is None:
                rejected.add(kind)
        out["unsupported"] = sorted(rejected)
    except Exception as error:  # noqa: BLE001
        out["unsupported"] = None
        out["check_error"] = _short(error)
    try:
        torch.onnx.export(model, args, io.BytesIO(), opset_version=opset, dynamo=False)
        out["ok"] = True
    except Exception as error:  # noqa: BLE001
        out["ok"] = False
        out["error"] = _short(error)
        named = re.search(r"[Oo]perator '([\w:.]+)'", str(error))
        if named and "::" in named.group(1):
            out["named"] = named.group(1)
            rejected.add(named.group(1))
    if out["ok"]:  # an export that succeeds rejected nothing
        rejected = set()
    out["rejected"] = sorted({_ts_name(op) for op in rejected})
    if graph is not None:
        for node in graph.nodes():
            kind = node.kind()
            if kind in rejected or _symbolic_name(kind) in rejected:
                _add_stack(out["stacks"], _ts_name(kind), trace_node_frames(node))
    return out


def onnx_dynamo(exported, opset: int) -> dict:
    out: dict = {"stacks": {}}
    try:
        from torch.onnx._internal.exporter import _fx_passes, _registration

        registry = _registration.ONNXRegistry.from_torchlib(opset)
        decomposed = _fx_passes.decompose_with_registry(exported, registry)
        missing = set()
        for node in decomposed.graph.nodes:
            if node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload):
                if not registry.is_registered(node.target):
                    name = _overload(node.target)
                    missing.add(name)
                    _add_stack(out["stacks"], base_name(name), fx_node_frames(node))
        out["unsupported"] = sorted(missing)
    except Exception as error:  # noqa: BLE001
        out["unsupported"] = None
        out["check_error"] = _short(error)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            torch.onnx.export(exported, opset_version=opset, dynamo=True, verbose=False, report=False)
        out["ok"] = True
    except Exception as error:  # noqa: BLE001
        out["ok"] = False
        out["error"] = _short(error)
    # The registry check is what the exporter itself consults; an export that succeeds
    # rejected nothing (an unregistered op can still be handled by a fallback decomposition).
    out["rejected"] = [] if out["ok"] else sorted({base_name(op) for op in out["unsupported"] or ()})
    return out


def executorch(exported) -> dict:
    out: dict = {"stacks": {}}
    try:
        decomposed = exported.run_decompositions()
    except Exception as error:  # noqa: BLE001
        return {"ok": False, "error": "run_decompositions: " + _short(error), "rejected": [], "stacks": {}}
    from executorch.exir.verification.verifier import EXIRATenDialectVerifier

    check = EXIRATenDialectVerifier().check_valid_op
    not_core = set()
    for node in decomposed.graph.nodes:
        if node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload):
            try:
                check(node.target)
            except Exception:  # noqa: BLE001 - SpecViolationError
                name = _overload(node.target)
                not_core.add(name)
                _add_stack(out["stacks"], base_name(name), fx_node_frames(node))
    out["not_core"] = sorted(not_core)
    out["rejected"] = sorted({base_name(op) for op in not_core})
    from executorch.exir import to_edge

    try:
        to_edge(exported)
        out["ok"] = True
    except Exception as error:  # noqa: BLE001
        out["ok"] = False
        out["error"] = _short(error)
    if out["ok"]:
        out["rejected"] = []
    return out


def _coreml_op(kind: str) -> str:
    return kind if "::" in kind else f"aten::{kind}"


def _numpy_compatible_cast(ct_ops, np):
    """coremltools 9.0 converts `int(x)` / `float(x)` of a constant with `int(array)`, which
    numpy 2.x rejects for a 1-element array that is not 0-d ("only 0-dimensional arrays can
    be converted to Python scalars"): a failure of the environment, not of the op registry.
    The same conversion made through a 0-d array lets the real converter go on."""
    original = ct_ops._cast

    def scalar_type(python_type):
        def new(cls, value):
            array = np.asarray(value)
            return python_type(array.reshape(()) if array.size == 1 else value)
        return type(f"{python_type.__name__}_from_array", (), {"__new__": new})

    def cast(context, node, dtype, dtype_name):
        return original(context, node, scalar_type(dtype), dtype_name)

    return original, cast


def coreml(model, args) -> dict:
    import coremltools as ct
    import numpy as np
    from coremltools.converters.mil.frontend.torch import ops as ct_ops
    from coremltools.converters.mil.frontend.torch.torch_op_registry import _TORCH_OPS_REGISTRY
    from coremltools.converters.mil.mil import Var

    try:
        traced = torch.jit.trace(model, args, check_trace=False)
    except Exception as error:  # noqa: BLE001
        return {"ok": False, "error": "trace: " + _short(error), "trace_failed": True, "rejected": [], "stacks": {}}
    missing: list[str] = []
    original = ct_ops.convert_single_node

    def convert_or_stand_in(context, node):
        if _TORCH_OPS_REGISTRY.get_func(node.kind) is not None:
            return original(context, node)
        # The real converter raises here; note the op and stand its first tensor input in
        # for its outputs, so the conversion goes on to name every other op it lacks.
        missing.append(node.kind)
        tensors = [v for v in ct_ops._get_bindings(context, node.inputs) if isinstance(v, Var)]
        if not tensors:
            raise NotImplementedError(f"PyTorch convert function for op '{node.kind}' not implemented.")
        for name in node.outputs:
            context.add(tensors[0], torch_name=name)

    inputs = [ct.TensorType(name=f"input_{i}", shape=tuple(a.shape),
                            dtype=np.float32 if a.is_floating_point() else np.int32) for i, a in enumerate(args)]
    out: dict = {"stacks": {}}
    ct_ops.convert_single_node = convert_or_stand_in
    original_cast, ct_ops._cast = _numpy_compatible_cast(ct_ops, np)
    try:
        ct.convert(traced, inputs=inputs, convert_to="mlprogram", skip_model_load=True)
        out["ok"] = not missing
    except Exception as error:  # noqa: BLE001
        out["ok"] = False
        out["error"] = _short(error)
        if missing:
            out["error_after_stand_in"] = True
    finally:
        ct_ops.convert_single_node = original
        ct_ops._cast = original_cast
    out["missing"] = sorted(set(missing))
    out["first_missing"] = missing[0] if missing else None
    out["rejected"] = sorted({_coreml_op(kind) for kind in missing})
    wanted = {_coreml_op(kind) for kind in missing}
    for node in traced.inlined_graph.nodes():
        kind = node.kind()
        if kind in wanted or kind.rstrip("_") in wanted:
            _add_stack(out["stacks"], kind.rstrip("_") if kind.rstrip("_") in wanted else kind,
                       trace_node_frames(node))
    return out


def run(path: str, out_path: str) -> dict:
    module = load(path)
    result: dict = {}

    def save():
        with open(out_path, "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=1, sort_keys=True)

    def build():
        torch.manual_seed(0)
        return module.Model().eval()

    def step(key, function, *args):
        try:
            result[key] = function(*args)
        except Exception:  # noqa: BLE001 - recorded; the comparison reports it
            result[key] = {"crashed": traceback.format_exc()[-1500:]}
        save()

    step("torchscript", torchscript, build)
    model = build()
    torch.manual_seed(0)
    args = tuple(module.example_inputs())
    with torch.no_grad():
        result["onnx_torchscript"] = {}
        for opset in TS_OPSETS:
            try:
                result["onnx_torchscript"][str(opset)] = onnx_torchscript(model, args, opset)
            except Exception:  # noqa: BLE001
                result["onnx_torchscript"][str(opset)] = {"crashed": traceback.format_exc()[-1500:]}
            save()
        try:
            exported = torch.export.export(model, args)
        except Exception as error:  # noqa: BLE001
            result["export_error"] = _short(error)
            exported = None
        save()
        if exported is not None:
            result["onnx_dynamo"] = {}
            try:
                result["onnx_dynamo"][str(DYNAMO_OPSET)] = onnx_dynamo(exported, DYNAMO_OPSET)
            except Exception:  # noqa: BLE001
                result["onnx_dynamo"][str(DYNAMO_OPSET)] = {"crashed": traceback.format_exc()[-1500:]}
            save()
            step("executorch", executorch, exported)
        step("coreml", coreml, model, args)
    result["complete"] = True
    save()
    return result


def main() -> int:
    out_path, path = sys.argv[1], sys.argv[2]
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    with contextlib.redirect_stdout(sys.stderr):
        try:
            run(path, out_path)
        except Exception:  # noqa: BLE001 - recorded, the comparison reports it
            with open(out_path, "w", encoding="utf-8") as handle:
                json.dump({"crashed": traceback.format_exc()[-2000:]}, handle)
    return 0


if __name__ == "__main__":
    sys.exit(main())
