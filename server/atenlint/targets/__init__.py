"""Targets: op -> verdict, one module per backend, each judged from its own package data.

`data/` holds the few facts no installable package ships, each naming its source and the
script that regenerates it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import names
from .base import Target
from .mps import MpsOptions, MpsTarget
from .native_table import NativeTable

if TYPE_CHECKING:
    from ..config import Settings
    from ..worker.pool import WorkerPool
    from ..worker.protocol import Hello

Registries = dict[str, Any]  # probe/registries.py's tables, by section ("onnx_dynamo", "coreml", ...)

# Targets whose tables come from packages only the worker may import.
_NEEDS_REGISTRIES = ("onnx", "executorch", "core-aten", "coreml")


# The tables each family is judged with: one that failed to read makes building it raise.
_TABLES = {
    "onnx": ("onnx_torchscript", "onnx_dynamo"),
    "executorch": ("core_aten", "executorch"),
    "core-aten": ("core_aten",),
    "coreml": ("coreml",),
}


def _no_log(message: str) -> None:
    pass


def build_targets(
    settings: Settings,
    native: NativeTable,
    hello: Hello,
    pool: WorkerPool | None = None,
    log: Callable[[str], None] = _no_log,
) -> list[Target]:
    """The targets a project asks for, ready to judge call trees."""
    registries: Registries | None = None
    wanted = [_family(name) for name in settings.targets]
    if pool is not None and any(family in _NEEDS_REGISTRIES for family in wanted):
        from .registry_data import load

        # A read that fails twice raises RegistryUnavailable: the caller reports atenlint's
        # own failure rather than judging against a table it does not have.
        registries = load(pool, log)
    return [build_target(name, settings, native, hello, registries) for name in settings.targets]


def _family(name: str) -> str:
    if name.startswith("executorch:"):
        return "executorch"  # a delegate judges with the executorch tables
    return "onnx" if names.ONNX_OPSET.fullmatch(name) else name


def build_target(
    name: str, settings: Settings, native: NativeTable, hello: Hello, registries: Registries | None
) -> Target:
    from .registry_data import require, section

    require(registries, name, _TABLES.get(_family(name), ()))
    kernels: dict[str, list[str]] = hello.get("registered_kernels", {})
    version = native.torch_version
    if name == "mps":
        return MpsTarget(native, kernels.get("MPS", ()), MpsOptions(fallback_enabled=settings.mps_fallback))
    if name == "cuda":
        from .device_backend import CudaTarget

        return CudaTarget(native, kernels.get("CUDA", ()))
    if name == "xla":
        from .device_backend import XlaTarget

        return XlaTarget(native)
    if name == "tensorrt":
        from .tensorrt import TensorRTTarget

        return TensorRTTarget(version)
    if name == "compile":
        from .compile import CompileTarget

        return CompileTarget(version, fullgraph=bool(getattr(settings, "fullgraph", False)), native=native)
    if name == "torchscript":
        from .torchscript import TorchScriptTarget

        return TorchScriptTarget(version)
    if name in ("executorch", "core-aten"):
        from .executorch import CoreAtenTarget
        from .registry_data import RegistryUnavailable

        core = section(registries, "core_aten")
        if not core.get("available"):
            # torch's own core-ATen list: without it every op would be judged not core.
            raise RegistryUnavailable(name, str(core.get("reason")))
        return CoreAtenTarget(
            name,
            core,
            section(registries, "executorch") if name == "executorch" else None,
            version,
        )
    if name.startswith("executorch:"):
        from .executorch_delegates import DelegateTarget

        return DelegateTarget(name, section(registries, "executorch"), version)
    if name == "coreml":
        from .coreml import CoreMLTarget

        return CoreMLTarget(section(registries, "coreml"), version, settings.coreml_frontend)
    match = names.ONNX_OPSET.fullmatch(name)
    if name == "onnx" or match:
        from .onnx import OnnxTarget

        torchscript, dynamo = section(registries, "onnx_torchscript"), section(registries, "onnx_dynamo")
        exporter = settings.onnx_exporter
        chosen_by = "onnx-exporter setting"
        if exporter is None:
            exporter = torchscript.get("default_exporter", "dynamo")
            chosen_by = f"torch.onnx.export's default in torch {version}"
            if exporter == "dynamo" and not dynamo.get("available"):
                exporter, chosen_by = (
                    "torchscript",
                    f"the default dynamo exporter needs onnxscript ({dynamo.get('reason')})",
                )
        return OnnxTarget(
            name, int(match["opset"]) if match else None, exporter, torchscript, dynamo, version, chosen_by
        )
    raise ValueError(f"unknown target {name!r}")
