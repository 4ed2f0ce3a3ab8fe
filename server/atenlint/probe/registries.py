"""The support data of the exporters installed next to the user's torch, read from the
packages themselves for their exact versions (worker side: standard library, torch, and
the optional packages, each imported only here and only when asked).

`versions()` is cheap (package metadata, nothing imported) and keys the parent's disk
cache; `tables()` imports the registries and answers everything the targets judge with.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import logging
import os
import pkgutil
import time
from typing import Any

PACKAGES = ("torch", "onnx", "onnxscript", "coremltools", "executorch", "torchvision")
# Libraries whose ops the exporters' registries cover once the library has registered them
# (onnxscript's torchlib implements torchvision::nms, roi_align, ...): imported first.
OP_LIBRARIES = ("torchvision",)
FORMAT = 7


def versions() -> dict:
    out: dict[str, Any] = {"format": FORMAT}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def tables() -> dict:
    started = time.perf_counter()
    # The registries log about optional companions (torchvision) they do not find.
    logging.getLogger("torch.onnx").setLevel(logging.ERROR)
    out = {"versions": versions()}
    for library in OP_LIBRARIES:
        if out["versions"].get(library):
            try:
                importlib.import_module(library)
            except Exception:  # noqa: BLE001 - a broken install: its ops stay unknown
                pass
    for name, probe in (("core_aten", core_aten), ("onnx_torchscript", onnx_torchscript),
                        ("onnx_dynamo", onnx_dynamo), ("executorch", executorch), ("coreml", coreml)):
        try:
            out[name] = probe()
        except Exception as error:  # noqa: BLE001 - one broken package must not hide the others
            out[name] = {"available": False, "reason": f"{type(error).__name__}: {error}"[:500]}
    out["seconds"] = time.perf_counter() - started
    return out


def _name(op: Any) -> str:
    schema = op._schema
    return f"{schema.name}.{schema.overload_name}" if schema.overload_name else schema.name


def _aten_overloads():
    import torch

    for qualified in torch._C._dispatch_get_all_op_names():
        namespace, _, rest = qualified.partition("::")
        if namespace != "aten":
            continue
        name, _, overload = rest.partition(".")
        try:
            yield getattr(getattr(torch.ops.aten, name), overload or "default")
        except (AttributeError, RuntimeError):
            continue


def core_aten() -> dict:
    """Overloads tagged core (and view_copy, which ExecuTorch's verifier also admits)."""
    import torch

    core, view_copy = [], []
    for op in _aten_overloads():
        if torch.Tag.core in op.tags:
            core.append(_name(op))
        if torch.Tag.view_copy in op.tags:
            view_copy.append(_name(op))
    return {"available": True, "core": sorted(core), "view_copy": sorted(view_copy)}


def onnx_torchscript() -> dict:
    """The TorchScript-based exporter (dynamo=False): per op, the opsets that register a symbolic."""
    import torch
    import torch.onnx
    from torch.onnx import _constants

    package = _torchscript_exporter_package()
    for module in pkgutil.iter_modules(package.__path__):
        if module.name.startswith("symbolic_opset"):
            importlib.import_module(f"{package.__name__}.{module.name}")
    registry = importlib.import_module(f"{package.__name__}.registration").registry
    ops = {}
    for name in sorted(registry.all_functions()):
        group = registry.get_function_group(name)
        if group is None:
            continue
        opsets = sorted(int(v) for v in group._functions)  # the opsets that register a symbolic
        if opsets:
            ops[name] = opsets
    signature = inspect.signature(torch.onnx.export)
    dynamo_default = signature.parameters.get("dynamo")
    return {"available": True, "min_opset": _constants.ONNX_MIN_OPSET, "max_opset": _constants.ONNX_MAX_OPSET,
            "default_opset": _constants.ONNX_DEFAULT_OPSET,
            "default_exporter": "dynamo" if dynamo_default is not None and dynamo_default.default else "torchscript",
            "ops": ops}


def _torchscript_exporter_package():
    for name in ("torch.onnx._internal.torchscript_exporter", "torch.onnx"):
        try:
            package = importlib.import_module(name)
            importlib.import_module(f"{name}.registration" if name != "torch.onnx" else "torch.onnx._internal.registration")
            return package
        except ImportError:
            continue
    raise ImportError("no TorchScript ONNX exporter registry in this torch")


def onnx_dynamo() -> dict:
    """The dynamo exporter (dynamo=True, needs onnxscript): per overload, the first opset at
    which torchlib implements it, from the registry torch.onnx.export itself builds."""
    try:
        onnxscript_version = importlib.metadata.version("onnxscript")
    except importlib.metadata.PackageNotFoundError:
        return {"available": False, "reason": "onnxscript is not installed (torch.onnx.export(dynamo=True) "
                                              "needs it)"}
    from torch.onnx._internal.exporter import _constants, _registration

    from torch.onnx import _constants as onnx_constants

    ops: dict[str, int] = {}
    # The registry keeps, per op, only implementations introduced at or below its opset:
    # build it at each opset torchlib serves to learn where each op starts.
    for opset in range(int(_constants.TORCHLIB_OPSET), int(onnx_constants.ONNX_MAX_OPSET) + 1):
        registry = _registration.ONNXRegistry.from_torchlib(opset)
        for target, decomps in registry.functions.items():
            if isinstance(target, str) and decomps and target not in ops:
                ops[target] = opset
    return {"available": True, "onnxscript": onnxscript_version, "default_opset": int(_constants.TORCHLIB_OPSET),
            "ops": dict(sorted(ops.items()))}


def executorch() -> dict:
    """ExecuTorch's ATen-dialect verifier exceptions (what to_edge admits beyond core ATen) and
    the core ops whose out= variant has no portable kernel."""
    try:
        version = importlib.metadata.version("executorch")
    except importlib.metadata.PackageNotFoundError:
        return {"available": False, "reason": "executorch is not installed"}
    import torch
    from executorch.exir.verification.verifier import EXIRATenDialectVerifier

    verifier = EXIRATenDialectVerifier()
    exceptions = sorted({_name(op) for op in verifier._get_core_aten_ops_exception_list()
                         if hasattr(op, "_schema") and op.namespace == "aten"})
    portable = _portable_kernels()
    missing_portable = []
    if portable is not None:
        from executorch.exir.operator.convert import to_out_variant

        for op in _aten_overloads():
            if torch.Tag.core not in op.tags or op.is_view:
                continue  # to_edge turns views into their *_copy ops, which have kernels
            try:
                out_op, _ = to_out_variant(op)
            except Exception:  # noqa: BLE001 - no out variant: nothing to run it with
                out_op = None
            if out_op is None or _name(out_op).removeprefix("aten::") not in portable:
                missing_portable.append(_name(op))
    return {"available": True, "version": version, "exceptions": exceptions,
            "portable_kernels": len(portable or ()), "no_portable_kernel": sorted(missing_portable),
            "decompositions": _executorch_decompositions()}


def _executorch_decompositions() -> dict:
    """How `to_edge`'s decomposition table differs from torch.export's default one."""
    import torch

    try:
        from executorch.exir.tracer import _default_decomposition_table
    except ImportError:
        return {}
    theirs = set(_default_decomposition_table())
    default = set(torch.export.default_decompositions().keys())
    names = (lambda ops: sorted(_name(op) for op in ops if hasattr(op, "_schema")))
    return {"extra": names(theirs - default), "removed": names(default - theirs)}


def _portable_kernels():
    spec = importlib.util.find_spec("executorch")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], "kernels", "portable", "functions.yaml")
    if not os.path.exists(path):
        return None
    names = set()
    with open(path, encoding="utf-8") as handle:
        for line in handle:  # `- op: add.out` entries; no YAML parser in the worker
            stripped = line.strip()
            if stripped.startswith("- op:"):
                names.add(stripped.split(":", 1)[1].strip())
    return names


def coreml() -> dict:
    """coremltools' PyTorch frontend registry, asked through its own lookup (`get_func`, which
    normalises names: namespace, overload, in-place suffix) for every aten op name."""
    try:
        version = importlib.metadata.version("coremltools")
    except importlib.metadata.PackageNotFoundError:
        return {"available": False, "reason": "coremltools is not installed"}
    from coremltools.converters.mil.frontend.torch.torch_op_registry import _TORCH_OPS_REGISTRY

    try:  # the frontend looks a node up by its sanitised kind (`aten::__and__` -> `and`)
        from coremltools.converters.mil.frontend.torch.utils import sanitize_op_kind
    except ImportError:
        def sanitize_op_kind(kind: str) -> str:
            return kind

    import torch

    # Every name a traced graph can hold: dispatcher ops and TorchScript's own builtins
    # (`aten::Int`, `aten::__getitem__`, `aten::len`), asked exactly as the frontend asks.
    names = {_name(op).split(".")[0] for op in _aten_overloads()}
    names |= {schema.name for schema in torch._C._jit_get_all_schemas() if schema.name.startswith("aten::")}
    names = sorted(names)
    supported = [name for name in names if _TORCH_OPS_REGISTRY.get_func(sanitize_op_kind(name)) is not None]
    # Library ops it translates under their own namespace (`torchvision::nms`).
    library = sorted(k for k in _TORCH_OPS_REGISTRY.name_to_func_mapping if "::" in k and not k.startswith("aten::"))
    return {"available": True, "version": version, "registered": len(_TORCH_OPS_REGISTRY.name_to_func_mapping),
            "ops": supported, "library_ops": library}


def tables_in_subprocess(timeout: float = 280.0) -> dict:
    """`tables()` in a child process: the exporters pull in large packages (coremltools,
    executorch, their YAML parsers) that must not stay loaded in a long-lived worker."""
    import json
    import subprocess
    import sys

    package_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (package_parent, os.environ.get("PYTHONPATH"))
                                                      if p))
    out = subprocess.run([sys.executable, "-m", "atenlint.probe.registries"], capture_output=True, text=True,
                         env=env, timeout=timeout, stdin=subprocess.DEVNULL)
    if out.returncode != 0:
        raise RuntimeError(f"reading the exporter registries failed: {out.stderr.strip()[-800:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    import json
    import sys
    import warnings

    warnings.filterwarnings("ignore")
    real_stdout = sys.stdout
    sys.stdout = sys.stderr  # package chatter must not corrupt the answer
    result = tables()
    real_stdout.write(json.dumps(result) + "\n")
