"""Verdicts of the non-MPS targets for ops of the installed torch, chosen from the installed packages' data."""

from __future__ import annotations

import importlib.util

import pytest

from atenlint.config import Settings
from atenlint.targets import build_target, build_targets, mps_history
from atenlint.targets.registry_data import load
from torch_facts import applicable


def leaf(op, **extra):
    return {"op": op, "calls": None, **extra}


@pytest.fixture(scope="module")
def registries(engine):
    return load(engine.pool)


def target(engine, registries, name, **settings):
    return build_target(name, Settings(targets=(name,), **settings), engine.native, engine.hello, registries)


def _kernel_op(engine, unwanted) -> str:
    """The first overload of the installed torch, with a kernel of its own (no composite, no
    out= delegate), for which `unwanted(name)` holds: ops chosen from the installed packages'
    data, never named."""
    return next(
        name
        for name, entry in sorted(engine.native.entries.items())
        if entry.kernels
        and entry.delegate is None
        and not any(k.startswith("Composite") for k in entry.kernels)
        and unwanted(name)
    )


def test_registries_name_their_versions(engine, registries):
    assert registries["versions"]["torch"].split("+")[0] == engine.torch_version.split("+")[0]
    assert registries["core_aten"]["available"] and len(registries["core_aten"]["core"]) > 150
    opsets = registries["onnx_torchscript"]["ops"]
    assert len(opsets) > 100 and all(isinstance(first, int) for ops in opsets.values() for first in ops)


def test_onnx_torchscript_opset(engine, registries):
    # An op the installed exporter converts only from an opset above 13 (its own registry).
    later, first = next(
        (op, min(ops))
        for op, ops in sorted(registries["onnx_torchscript"]["ops"].items())
        if ops and min(ops) > 13 and op in engine.native.entries
    )
    onnx13 = target(engine, registries, "onnx:13", onnx_exporter="torchscript")
    problems = onnx13.problems(leaf(later), ("eval",))
    assert [(p.op, p.kind) for p in problems] == [(later, "opset")]
    verdict = onnx13.verdict(problems)
    assert verdict.code == "ONNX002" and f"opset {first}" in verdict.message
    assert "you export at opset 13" in verdict.message
    assert verdict.required_opset == first  # the fix reads this, not the message
    at_first = target(engine, registries, f"onnx:{first}", onnx_exporter="torchscript")
    assert at_first.problems(leaf(later), ("eval",)) == []
    onnx17 = target(engine, registries, "onnx:17", onnx_exporter="torchscript")
    assert onnx17.problems(leaf("aten::relu_"), ("eval",)) == []  # in-place: converted as its functional op
    assert onnx17.problems(leaf("aten::take"), ("train",)) == []  # exported models run in eval mode
    never = _kernel_op(engine, lambda op: onnx17.first_opset(op) is None)
    assert onnx17.verdict(onnx17.problems(leaf(never), ("eval",))).code == "ONNX001"


@pytest.mark.skipif(importlib.util.find_spec("onnxscript") is None, reason="needs onnxscript (the exporters extra)")
def test_onnx_dynamo_judges_decomposed_tree(engine, registries):
    onnx = target(engine, registries, "onnx", onnx_exporter="dynamo")
    assert onnx.tree_view == "onnx-export" and onnx.opset == registries["onnx_torchscript"]["default_opset"]
    tree = {"op": "aten::var.correction", "calls": [leaf("aten::sub.Tensor"), leaf("aten::mean.dim")], "via": "extra"}
    assert onnx.problems(tree, ("eval",)) == []
    implemented = set(onnx.implemented_overloads())
    lacking = _kernel_op(engine, lambda op: op not in implemented)
    assert [p.op for p in onnx.problems(leaf(lacking), ("eval",))] == [lacking]


@pytest.mark.skipif(importlib.util.find_spec("onnxscript") is None, reason="needs onnxscript (the exporters extra)")
def test_default_exporter_follows_torch(engine, registries):
    onnx = target(engine, registries, "onnx")
    assert onnx.exporter == registries["onnx_torchscript"]["default_exporter"]


@pytest.mark.skipif(importlib.util.find_spec("executorch") is None, reason="needs executorch (the exporters extra)")
def test_executorch_and_core_aten(engine, registries):
    et = target(engine, registries, "executorch")
    core = target(engine, registries, "core-aten")
    decomposed = {"op": "aten::linear", "calls": [leaf("aten::permute"), leaf("aten::addmm")], "via": "default"}
    assert et.problems(decomposed, ("eval",)) == []
    # ExecuTorch's verifier exception list: allowed by to_edge although not core ATen.
    for excepted in sorted(op for op in et.allowed - core.allowed if op.startswith("aten::"))[:1]:
        assert et.problems(leaf(excepted), ("eval",)) == []
        assert [p.op for p in core.problems(leaf(excepted), ("eval",))] == [excepted]
    problems = et.problems(leaf(_kernel_op(engine, lambda op: op not in et.allowed)), ("eval",))
    assert et.verdict(problems).code == "ET001" and "to_edge" in et.verdict(problems).message
    # Shapes unknown, but export decomposes it: not judged by its name.
    assert et.problems(leaf("aten::grid_sampler", undecomposed=True, decomposable=True), ("eval",)) == []


@pytest.mark.skipif(importlib.util.find_spec("coremltools") is None, reason="needs coremltools (the exporters extra)")
def test_coreml_judges_the_traced_call(engine, registries):
    coreml = target(engine, registries, "coreml")
    tree = {"op": "aten::adaptive_avg_pool3d", "calls": [leaf("aten::mean.dim")]}
    assert [p.op for p in coreml.problems(tree, ("eval",))] == ["aten::adaptive_avg_pool3d"]
    assert coreml.problems(leaf("aten::conv2d"), ("eval",)) == []
    assert coreml.verdict(coreml.problems(tree, ("eval",))).severity == "error"


def test_coreml_missing_package_is_reported_per_class(engine):
    coreml = build_target(
        "coreml",
        Settings(targets=("coreml",)),
        engine.native,
        engine.hello,
        {"coreml": {"available": False, "reason": "coremltools is not installed"}},
    )
    assert coreml.problems(leaf("aten::take"), ("eval",)) == []
    [result] = coreml.class_results({"name": "Net"})
    assert result.code == "COREML000" and "pip install coremltools" in result.message


def test_tensorrt_graph_breaks_and_validators(engine, registries):
    trt = target(engine, registries, "tensorrt")
    assert trt.problems(leaf("aten::add.Tensor"), ("eval",)) == []
    breaks = trt.problems(leaf(_kernel_op(engine, lambda op: trt.converter(op) is None)), ("eval",))
    assert trt.verdict(breaks).severity == "warning" and "graph break" in trt.verdict(breaks).message
    validated = next(op for op, e in trt.release["ops"].items() if e["validator"] and not e["packet"])
    # A validator's doubt alone is not reported (tests/targets/test_tensorrt_validators.py).
    assert trt.problems(leaf(validated), ("eval",)) == []


def _without_kernel(engine, key: str, extra: frozenset[str] = frozenset()) -> str:
    """An overload of the installed torch with a CPU kernel of its own and none for `key`
    (nor in `extra`, the kernels registered from elsewhere): read from its table, never named."""
    return next(
        name
        for name, entry in sorted(engine.native.entries.items())
        if "CPU" in entry.kernels
        and key not in entry.kernels
        and name not in extra
        and entry.delegate is None
        and not any(k.startswith("Composite") for k in entry.kernels)
    )


def test_cuda_and_xla(engine, registries):
    cuda = target(engine, registries, "cuda")
    assert cuda.problems(leaf("aten::add.Tensor"), ("train",)) == []
    cpu_only = _without_kernel(engine, "CUDA", frozenset(engine.hello["registered_kernels"]["CUDA"]))
    missing = cuda.problems(leaf(cpu_only), ("eval",))
    assert [p.op for p in missing] == [cpu_only] and cuda.verdict(missing).severity == "error"
    xla = target(engine, registries, "xla")
    assert xla.problems(leaf("aten::add.Tensor"), ("eval",)) == []
    not_lowered = _without_kernel(engine, "XLA", xla.backend.extra_kernels)  # pytorch/xla's list (data file)
    missing = xla.problems(leaf(not_lowered), ("eval",))
    assert [p.op for p in missing] == [not_lowered] and xla.verdict(missing).code == "XLA001"


def test_mps_names_the_release_that_fixes_it(engine, registries):
    """An op the installed torch has no MPS kernel for: the message names the first newer
    release in the history that has one, and says nothing of the kind when none has."""
    mps = target(engine, registries, "mps")
    you_have = ".".join(engine.torch_version.split(".")[:2])
    missing = applicable("MPS")
    gained = [(m, mps_history.supported_from(m.op, engine.torch_version)) for m in missing]
    later = [(m, since) for m, since in gained if since is not None]
    never = [m for m, since in gained if since is None]
    assert missing, f"no candidate op lacks an MPS kernel in torch {engine.torch_version}"
    for m, since in later[:1]:
        message = mps.verdict(mps.problems(leaf(m.op), ("eval",))).message
        assert f"supported on MPS from torch {since} (you have {you_have})" in message
    for m in never[:1]:
        assert "supported on MPS from" not in mps.verdict(mps.problems(leaf(m.op), ("eval",))).message


def test_torchscript_condenses_failures(engine, registries):
    ts = target(engine, registries, "torchscript")
    [result] = ts.class_results(
        {
            "name": "Net",
            "status": "script_failed",
            "script_error": {
                "message": "Lambda aren't supported:",
                "details": "",
                "site": {"file": "/x.py", "line": 3, "col": 4},
            },
        }
    )
    assert result.severity == "error" and result.message.endswith("Lambda aren't supported")
    assert result.replaces == ("ATL004",)


def test_every_target_builds_and_reports_status(engine, registries):
    from atenlint.targets import names

    for name in list(names.TARGETS) + ["onnx:9"]:
        status = target(engine, registries, name).status()
        assert status["target"] == name and status["data"]


def test_build_targets_reads_registries_only_when_needed(engine):
    class NoPool:
        def request(self, *args, **kwargs):
            raise AssertionError("asked the worker")

    built = build_targets(Settings(targets=("mps", "cuda", "tensorrt", "xla")), engine.native, engine.hello, NoPool())
    assert [t.name for t in built] == ["mps", "cuda", "tensorrt", "xla"]
