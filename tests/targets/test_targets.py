"""Verdicts of the non-MPS targets for real torch 2.13 ops, from the installed packages' data."""

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


def test_registries_name_their_versions(engine, registries):
    assert registries["versions"]["torch"].split("+")[0] == engine.torch_version.split("+")[0]
    assert registries["core_aten"]["available"] and len(registries["core_aten"]["core"]) > 150
    assert registries["onnx_torchscript"]["ops"]["aten::grid_sampler"][0] == 16


def test_onnx_torchscript_opset(engine, registries):
    onnx13 = target(engine, registries, "onnx:13", onnx_exporter="torchscript")
    problems = onnx13.problems(leaf("aten::grid_sampler"), ("eval",))
    assert [(p.op, p.kind) for p in problems] == [("aten::grid_sampler", "opset")]
    verdict = onnx13.verdict(problems)
    assert verdict.code == "ONNX002" and "opset 16" in verdict.message and "you export at opset 13" in verdict.message
    assert verdict.required_opset == 16  # the fix reads this, not the message
    onnx17 = target(engine, registries, "onnx:17", onnx_exporter="torchscript")
    assert onnx17.problems(leaf("aten::grid_sampler"), ("eval",)) == []
    assert onnx17.problems(leaf("aten::relu_"), ("eval",)) == []  # in-place: converted as its functional op
    assert onnx17.problems(leaf("aten::take"), ("train",)) == []  # exported models run in eval mode
    assert onnx17.verdict(onnx17.problems(leaf("aten::linalg_svdvals"), ("eval",))).code == "ONNX001"


@pytest.mark.skipif(importlib.util.find_spec("onnxscript") is None, reason="needs onnxscript (the exporters extra)")
def test_onnx_dynamo_judges_decomposed_tree(engine, registries):
    onnx = target(engine, registries, "onnx", onnx_exporter="dynamo")
    assert onnx.tree_view == "onnx-export" and onnx.opset == registries["onnx_torchscript"]["default_opset"]
    tree = {"op": "aten::var.correction", "calls": [leaf("aten::sub.Tensor"), leaf("aten::mean.dim")], "via": "extra"}
    assert onnx.problems(tree, ("eval",)) == []
    assert [p.op for p in onnx.problems(leaf("aten::_linalg_svd"), ("eval",))] == ["aten::_linalg_svd"]


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
    bicubic_aa = leaf("aten::_upsample_bilinear2d_aa")
    assert et.problems(bicubic_aa, ("eval",)) == []  # ExecuTorch's verifier exception list
    assert [p.op for p in core.problems(bicubic_aa, ("eval",))] == ["aten::_upsample_bilinear2d_aa"]
    problems = et.problems(leaf("aten::_linalg_svd"), ("eval",))
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
    breaks = trt.problems(leaf("aten::_linalg_svd"), ("eval",))
    assert trt.verdict(breaks).severity == "warning" and "graph break" in trt.verdict(breaks).message
    validated = next(op for op, e in trt.release["ops"].items() if e["validator"] and not e["packet"])
    # A validator's doubt alone is not reported (tests/targets/test_tensorrt_validators.py).
    assert trt.problems(leaf(validated), ("eval",)) == []


def test_cuda_and_xla(engine, registries):
    cuda = target(engine, registries, "cuda")
    assert cuda.problems(leaf("aten::add.Tensor"), ("train",)) == []
    histogram = cuda.problems(leaf("aten::histogram.bin_ct"), ("eval",))
    assert histogram and cuda.verdict(histogram).severity == "error"
    xla = target(engine, registries, "xla")
    assert xla.problems(leaf("aten::add.Tensor"), ("eval",)) == []
    missing = xla.problems(leaf("aten::_cdist_backward"), ("eval",))
    assert missing and xla.verdict(missing).code == "XLA001"


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
