"""The shipped data files parse, name their source, version and generator, and reproduce
known facts."""

from __future__ import annotations

import json
import os

import pytest

import atenlint.targets as targets_package
from atenlint.targets import mps_history
from atenlint.targets.device_backend import xla_lowerings
from atenlint.targets.mps import MpsTarget, forced_fallbacks
from atenlint.targets.tensorrt import release_for
from atenlint.versions import release as release_numbers

DATA = os.path.join(os.path.dirname(targets_package.__file__), "data")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize(
    "name", ["mps_forced_fallbacks.json", "mps_history.json", "tensorrt_converters.json", "xla_native_functions.json"]
)
def test_data_file_names_source_version_and_generator(name):
    with open(os.path.join(DATA, name), encoding="utf-8") as handle:
        data = json.load(handle)
    assert data["source"] and data["about"]
    script = data["generated_by"].split()[0]
    assert os.path.exists(os.path.join(REPO, script)), script
    assert data.get("versions") or data.get("ref")


def test_history_reproduces_known_facts():
    assert mps_history.has_kernel("aten::isin.Tensor_Tensor", "2.0") is False
    assert mps_history.has_kernel("aten::isin.Tensor_Tensor", "2.13") is True
    assert mps_history.has_kernel("aten::hardsigmoid.out", "2.0") is False
    assert mps_history.has_kernel("aten::hardsigmoid.out", "2.13") is True
    # SVD: no MPS kernel up to 2.13 (and linalg_svd forced to the CPU there), native from 2.14.
    assert mps_history.has_kernel("aten::_linalg_svd.U", "2.13") is False
    assert mps_history.supported_from("aten::_linalg_svd.U", "2.13.0") == "2.14"
    assert mps_history.supported_from("aten::take", "2.13.0") == "2.15"
    assert mps_history.supported_from("aten::_adaptive_avg_pool3d", "2.13.0") is None
    assert mps_history.has_kernel("aten::add.Tensor", "1.9") is None  # not in the table


def test_history_agrees_with_the_installed_torch(engine):
    """The history's row for the installed minor release says what the installed wheel's own
    table says (every overload, directly or through its out= delegate), and a "supported on
    MPS from torch X" note only ever names a newer release: checked on each torch the suite
    runs on, the newest supported included."""
    table = engine.native
    release = ".".join(table.torch_version.split(".")[:2])
    row = mps_history.load()["versions"].get(release)
    assert row is not None, f"data/mps_history.json has no torch {release}: run scripts/gen_mps_history.py"
    assert mps_history.built_from().startswith("torch ") and row["release"] in mps_history.built_from()
    for op in table.entries:
        since = mps_history.supported_from(op, table.torch_version)
        assert since is None or release_numbers(since) > release_numbers(release), (op, since)
    if row["release"] != table.torch_version:
        pytest.skip(f"the history read torch {row['release']}, this is {table.torch_version}")
    assert row["yaml_sha256"] == table.yaml_sha
    disagree = []
    for op, entry in table.entries.items():
        direct = "MPS" in entry.kernels or (entry.delegate is not None and table.has_kernel(entry.delegate, "MPS"))
        if mps_history.has_kernel(op, release) != direct:
            disagree.append(op)
    assert disagree == []


def test_forced_fallbacks_pick_the_installed_release(engine):
    """The forced-fallback entry is the installed minor release's when the data lists it, else
    the nearest older one, and then `atenlint targets` and an MPS002 message name the release
    it was read from instead of the installed one (checked on each torch the suite runs on)."""
    table = engine.native
    with open(os.path.join(DATA, "mps_forced_fallbacks.json"), encoding="utf-8") as handle:
        versions = json.load(handle)["versions"]
    release = ".".join(table.torch_version.split(".")[:2])
    older = [v for v in versions if (release_numbers(v) or ()) <= (release_numbers(release) or ())]
    expected = release if release in versions else max(older, key=lambda v: release_numbers(v) or ())
    ops, chosen, exact = forced_fallbacks(table.torch_version)
    assert (chosen, exact) == (expected, release in versions)
    assert ops == frozenset(versions[expected]["ops"]) and ops
    # torch cannot both register an op to the CPU fallback and give it an MPS kernel: a forced op
    # with a kernel in this wheel would mean the (nearest) entry is wrong for this torch.
    assert [op for op in ops if table.get(op) is not None and "MPS" in table.get(op).kernels] == []
    target = MpsTarget(table)
    assert target.status()["data"]["forced fallbacks"] == (
        f"MPSFallback.mm for torch {expected}" + ("" if exact else " (nearest known version)")
    )
    forced = min(ops)
    message = target.verdict(target.problems({"op": forced, "calls": None}, ("eval",))).message
    read_from = f"torch {table.torch_version}" if exact else f"torch {expected} (the nearest release"
    assert f"`{forced}`, which {read_from}" in message, message


def test_tensorrt_release_pairs_with_torch():
    release, exact = release_for("2.13.0")
    assert release["release"] == "2.13.0" and exact
    assert any("torch" in r and "2.13" in r for r in release["requires"])
    assert release["ops"]["aten::add.Tensor"]["validator"] is False
    assert sum(1 for o in release["ops"].values() if o["validator"]) > 20
    older, exact = release_for("2.20.0")
    with open(os.path.join(DATA, "tensorrt_converters.json"), encoding="utf-8") as handle:
        versions = json.load(handle)["versions"]
    assert not exact and older["release"] == max(versions, key=lambda v: release_numbers(v) or ())


def test_xla_lowerings_parse():
    lowered, data = xla_lowerings()
    assert "aten::add.Tensor" in lowered and "aten::_adaptive_avg_pool3d" in lowered
    assert "pytorch/xla" in data["source"]


def test_forced_fallback_generator_parses_mpsfallback(tmp_path):
    import subprocess
    import sys

    source = tmp_path / "MPSFallback.mm"
    source.write_text(
        "TORCH_LIBRARY_IMPL(aten, MPS, m) {\n"
        '  m.impl("embedding_renorm_", torch::CppFunction::makeFromBoxedFunction<&mps_fallback>());\n'
        '  // m.impl("commented", torch::CppFunction::makeFromBoxedFunction<&mps_fallback>());\n'
        '  m.impl("_slow_conv2d_forward", slow_conv2d_forward_mps);\n'
        '  m.impl("linalg_svd.U", torch::CppFunction::makeFromBoxedFunction<&mps_fallback>());\n'
        "}\n"
    )
    out = tmp_path / "forced.json"
    out.write_text(json.dumps({"versions": {"2.13": {"ops": []}}}))
    subprocess.run(
        [
            sys.executable,
            os.path.join(REPO, "scripts", "gen_mps_forced_fallbacks.py"),
            str(source),
            "--torch",
            "2.9",
            "--ref",
            "v2.9.0",
            "--out",
            str(out),
        ],
        check=True,
        capture_output=True,
    )
    data = json.loads(out.read_text())
    assert data["versions"]["2.9"]["ops"] == ["aten::embedding_renorm_", "aten::linalg_svd.U"]
    assert list(data["versions"]) == ["2.9", "2.13"]


def test_tensorrt_generator_reads_decorators():
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "gen_trt", os.path.join(REPO, "scripts", "gen_tensorrt_converters.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    found = module.converters_in(
        "@dynamo_tensorrt_converter(torch.ops.aten.add.Tensor, supports_dynamic_shapes=True)\n"
        "@dynamo_tensorrt_converter(torch.ops.aten.batch_norm)\n"
        "def f(): pass\n"
        "if trt_ok():\n"
        "    @dynamo_tensorrt_converter(torch.ops.aten.nonzero.default, capability_validator=v)\n"
        "    def g(): pass\n",
        "x.py",
    )
    assert [(f["op"], f["packet"], f["validator"], f["conditional"]) for f in found] == [
        ("aten::add.Tensor", False, False, False),
        ("aten::batch_norm", True, False, False),
        ("aten::nonzero", False, True, True),
    ]
