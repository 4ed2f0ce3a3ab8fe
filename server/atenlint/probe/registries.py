"""The support data of the exporters installed next to the user's torch, read from the
packages themselves for their exact versions (worker side: standard library, torch, and
the optional packages, each imported only here and only when asked).

`versions()` is cheap (package metadata, nothing imported) and keys the parent's disk
cache; `tables()` imports the registries and answers everything the targets judge with.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import inspect
import logging
import os
import time
from collections.abc import Iterator
from typing import Any

PACKAGES = ("torch", "onnx", "onnxscript", "coremltools", "executorch", "torchvision")
# Libraries whose ops the exporters' registries cover once the library has registered them
# (onnxscript's torchlib implements torchvision::nms, roi_align, ...): imported first.
OP_LIBRARIES = ("torchvision",)
FORMAT = 9  # 9: executorch `delegates` (which partitioners load here) and the portable library path


def versions() -> dict[str, Any]:
    out: dict[str, Any] = {"format": FORMAT}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def tables() -> dict[str, Any]:
    started = time.perf_counter()
    # The registries log about optional companions (torchvision) they do not find.
    logging.getLogger("torch.onnx").setLevel(logging.ERROR)
    out: dict[str, Any] = {"versions": versions()}
    for library in OP_LIBRARIES:
        if out["versions"].get(library):
            with contextlib.suppress(Exception):  # a broken install: its ops stay unknown
                importlib.import_module(library)
    for name, probe in (
        ("core_aten", core_aten),
        ("onnx_torchscript", onnx_torchscript),
        ("onnx_dynamo", onnx_dynamo),
        ("executorch", executorch),
        ("coreml", coreml),
    ):
        try:
            out[name] = probe()
        except Exception as error:  # noqa: BLE001 - one broken package must not hide the others
            from .. import torchcompat

            # A capability this torch lacks is a fact about it; any other error is a failed
            # read of an installed package, which the parent retries and then reports as
            # atenlint's own failure, never as verdicts (`failed`).
            out[name] = {
                "available": False,
                "reason": f"{type(error).__name__}: {error}"[:500],
                **({} if isinstance(error, torchcompat.Unavailable) else {"failed": True}),
            }
    out["seconds"] = time.perf_counter() - started
    return out


def _name(op: Any) -> str:
    from .. import torchcompat

    return torchcompat.op_name(op)


def _aten_overloads() -> Iterator[Any]:
    import torch

    from .. import torchcompat

    for qualified in torchcompat.all_op_names():
        namespace, _, rest = qualified.partition("::")
        if namespace != "aten":
            continue
        name, _, overload = rest.partition(".")
        try:
            yield getattr(getattr(torch.ops.aten, name), overload or "default")
        except (AttributeError, RuntimeError):
            continue


def core_aten() -> dict[str, Any]:
    """Overloads tagged core (and view_copy, which ExecuTorch's verifier also admits)."""
    import torch

    core, view_copy = [], []
    for op in _aten_overloads():
        if torch.Tag.core in op.tags:
            core.append(_name(op))
        if torch.Tag.view_copy in op.tags:
            view_copy.append(_name(op))
    return {"available": True, "core": sorted(core), "view_copy": sorted(view_copy)}


def onnx_torchscript() -> dict[str, Any]:
    """The TorchScript-based exporter (dynamo=False): per op, the opsets that register a symbolic."""
    import torch
    import torch.onnx

    from .. import torchcompat

    ops = torchcompat.onnx_torchscript_symbolics()  # per op, the opsets that register a symbolic
    opsets = torchcompat.onnx_opsets()
    signature = inspect.signature(torch.onnx.export)
    dynamo_default = signature.parameters.get("dynamo")
    return {
        "available": True,
        "min_opset": opsets.minimum,
        "max_opset": opsets.maximum,
        "default_opset": opsets.default,
        "default_exporter": "dynamo" if dynamo_default is not None and dynamo_default.default else "torchscript",
        "ops": ops,
    }


def onnx_dynamo() -> dict[str, Any]:
    """The dynamo exporter (dynamo=True, needs onnxscript): per overload, the first opset at
    which torchlib implements it, from the registry torch.onnx.export itself builds."""
    try:
        onnxscript_version = importlib.metadata.version("onnxscript")
    except importlib.metadata.PackageNotFoundError:
        return {"available": False, "reason": "onnxscript is not installed (torch.onnx.export(dynamo=True) needs it)"}
    from .. import torchcompat

    # Built at each opset torchlib serves, to learn where each op starts.
    default_opset, ops = torchcompat.onnx_dynamo_first_opsets()
    return {
        "available": True,
        "onnxscript": onnxscript_version,
        "default_opset": default_opset,
        "ops": dict(sorted(ops.items())),
    }


def executorch() -> dict[str, Any]:
    """ExecuTorch's ATen-dialect verifier exceptions (what to_edge admits beyond core ATen) and
    the core ops whose out= variant has no portable kernel."""
    try:
        version = importlib.metadata.version("executorch")
    except importlib.metadata.PackageNotFoundError:
        return {"available": False, "reason": "executorch is not installed"}
    import torch

    from .. import torchcompat

    # The optional exporters have no type information: imported by name, used as Any.
    verifier = importlib.import_module("executorch.exir.verification.verifier").EXIRATenDialectVerifier()
    exceptions = sorted(
        {
            _name(op)
            for op in verifier._get_core_aten_ops_exception_list()
            if torchcompat.is_op_overload(op) and op.namespace == "aten"
        }
    )
    portable = _portable_kernels()
    missing_portable = []
    if portable is not None:
        to_out_variant = importlib.import_module("executorch.exir.operator.convert").to_out_variant
        is_sym_op = _executorch_sym_op_test()

        for op in _aten_overloads():
            if torch.Tag.core not in op.tags or op.is_view:
                continue  # to_edge turns views into their *_copy ops, which have kernels
            if is_sym_op(op):
                continue  # `sym_size.int`, `_local_scalar_dense`: the runtime's own prim ops run them
            try:
                out_op, _ = to_out_variant(op)
            except Exception:  # noqa: BLE001 - its lookup failed: match the schemas ourselves
                out_op = _out_variant(op)
            if out_op is None or _name(out_op).removeprefix("aten::") not in portable:
                missing_portable.append(_name(op))
    return {
        "available": True,
        "version": version,
        "exceptions": exceptions,
        "portable_kernels": len(portable or ()),
        "no_portable_kernel": sorted(missing_portable),
        "decompositions": _executorch_decompositions(),
        "kernel_library": "kernels/portable/functions.yaml" if portable is not None else None,
        "delegates": _executorch_delegates(),
    }


def _executorch_delegates() -> dict[str, Any]:
    """Per delegate target, whether the installed wheel's partitioner loads here (the MLX
    one, for one, needs generated files a wheel may lack): a delegate that does not is
    reported as unavailable, with its own error, never judged."""
    from ..capture.delegate_view import PARTITIONERS, DelegateUnavailable, partitioner

    out: dict[str, Any] = {}
    for name, (module, cls) in PARTITIONERS.items():
        try:
            partitioner(name)
        except DelegateUnavailable as error:
            out[name] = {"available": False, "reason": str(error)}
        else:
            out[name] = {"available": True, "partitioner": f"{module}.{cls}"}
    return out


def _executorch_sym_op_test() -> Any:
    """ExecuTorch's own test for the ops its runtime runs as prim ops (no kernel library)."""

    def never(op: Any) -> bool:
        return False

    try:
        module = importlib.import_module("executorch.exir.passes.executorch_prim_ops_registry")
    except ImportError:
        return never
    return getattr(module, "is_sym_op", never)


def _out_variant(op: Any) -> Any | None:
    """The out= overload of a functional op, by torch's own schemas: the overload with out
    arguments whose other arguments are the functional's, name and type. ExecuTorch's
    `to_out_variant` fails for some ops that have one (for `pow` it asserts on
    TorchScript's `pow.int_to_int` builtin), and its portable library has `pow.*_out`: such
    an error is not a missing kernel."""
    import torch

    from .. import torchcompat

    schema = torchcompat.op_schema(op)
    wanted = [(argument.name, str(argument.type)) for argument in schema.arguments]
    packet = getattr(torch.ops.aten, schema.name.partition("::")[2], None)
    for overload in packet.overloads() if packet is not None else ():
        candidate = getattr(packet, overload)
        arguments = torchcompat.op_schema(candidate).arguments
        if not any(argument.is_out for argument in arguments):
            continue
        if [(a.name, str(a.type)) for a in arguments if not a.is_out] == wanted:
            return candidate
    return None


def _executorch_decompositions() -> dict[str, Any]:
    """How `to_edge`'s decomposition table differs from torch.export's default one."""
    from .. import torchcompat

    try:
        theirs = set(importlib.import_module("executorch.exir.tracer")._default_decomposition_table())
    except (ImportError, AttributeError):
        return {}
    default = set(torchcompat.export_default_decompositions())

    def names(ops: set[Any]) -> list[str]:
        return sorted(_name(op) for op in ops if torchcompat.is_op_overload(op))

    return {"extra": names(theirs - default), "removed": names(default - theirs)}


def _portable_kernels() -> set[str] | None:
    spec = importlib.util.find_spec("executorch")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(next(iter(spec.submodule_search_locations)), "kernels", "portable", "functions.yaml")
    if not os.path.exists(path):
        return None
    names = set()
    with open(path, encoding="utf-8") as handle:
        for line in handle:  # `- op: add.out` entries; no YAML parser in the worker
            stripped = line.strip()
            if stripped.startswith("- op:"):
                names.add(stripped.split(":", 1)[1].strip())
    return names


def coreml() -> dict[str, Any]:
    """coremltools' PyTorch frontend registry, asked through its own lookup (`get_func`, which
    normalises names: namespace, overload, in-place suffix) for every aten op name."""
    try:
        version = importlib.metadata.version("coremltools")
    except importlib.metadata.PackageNotFoundError:
        return {"available": False, "reason": "coremltools is not installed"}
    registry = importlib.import_module("coremltools.converters.mil.frontend.torch.torch_op_registry")
    ops_registry = registry._TORCH_OPS_REGISTRY

    def same_kind(kind: str) -> str:
        return kind

    try:  # the frontend looks a node up by its sanitised kind (`aten::__and__` -> `and`)
        sanitize_op_kind = importlib.import_module("coremltools.converters.mil.frontend.torch.utils").sanitize_op_kind
    except (ImportError, AttributeError):
        sanitize_op_kind = same_kind

    from .. import torchcompat

    # Every name a traced graph can hold: dispatcher ops and TorchScript's own builtins
    # (`aten::Int`, `aten::__getitem__`, `aten::len`), asked exactly as the frontend asks.
    names = {_name(op).split(".")[0] for op in _aten_overloads()}
    names |= {schema.name for schema in torchcompat.all_schemas() if schema.name.startswith("aten::")}
    supported = [name for name in sorted(names) if ops_registry.get_func(sanitize_op_kind(name)) is not None]
    # Library ops it translates under their own namespace (`torchvision::nms`).
    library = sorted(k for k in ops_registry.name_to_func_mapping if "::" in k and not k.startswith("aten::"))
    return {
        "available": True,
        "version": version,
        "registered": len(ops_registry.name_to_func_mapping),
        "ops": supported,
        "library_ops": library,
    }


def tables_in_subprocess(timeout: float = 280.0) -> dict[str, Any]:
    """`tables()` in a child process: the exporters pull in large packages (coremltools,
    executorch, their YAML parsers) that must not stay loaded in a long-lived worker."""
    import json
    import subprocess
    import sys

    package_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (package_parent, os.environ.get("PYTHONPATH")) if p))
    out = subprocess.run(
        [sys.executable, "-m", "atenlint.probe.registries"],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(
            f"reading the exporter registries failed (exit status {out.returncode}): {out.stderr.strip()[-800:]}"
        )
    lines = out.stdout.strip().splitlines()
    try:
        answer: dict[str, Any] = json.loads(lines[-1])
    except (IndexError, ValueError):
        raise RuntimeError(f"reading the exporter registries gave no answer: {out.stderr.strip()[-800:]}") from None
    return answer


if __name__ == "__main__":
    import json
    import sys
    import warnings

    warnings.filterwarnings("ignore")
    real_stdout = sys.stdout
    sys.stdout = sys.stderr  # package chatter must not corrupt the answer
    result = tables()
    real_stdout.write(json.dumps(result) + "\n")
