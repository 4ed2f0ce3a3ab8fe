"""`atenlint targets`, `atenlint ops` and `atenlint report` end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from atenlint.targets import mps_history
from atenlint.targets.tensorrt import release_for
from torch_facts import applicable, torch_release

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(REPO, "tests", "corpus", "modules")


def atenlint(*args):
    return subprocess.run(
        [sys.executable, "-m", "atenlint", *args], capture_output=True, text=True, cwd=REPO, timeout=240, check=False
    )


def test_targets_lists_every_target_with_data_versions():
    out = atenlint("targets", "--format", "json")
    assert out.returncode == 0, out.stderr
    listing = json.loads(out.stdout)
    rows = {row["target"]: row for row in listing["targets"]}
    assert set(rows) >= {"mps", "cuda", "xla", "onnx", "executorch", "core-aten", "coreml", "tensorrt", "torchscript"}
    # The torch-tensorrt release paired with the installed torch (2.13.0 for torch 2.13, ...),
    # or, for a torch with no torch-tensorrt release in the data yet, the nearest one, said so.
    paired, exact = release_for(listing["torch"])
    converters = rows["tensorrt"]["data"]["converters"]
    assert converters.startswith(f"torch-tensorrt {paired['release']} ")
    assert exact or f"nearest release to torch {listing['torch']}" in converters
    # The MPS history says which wheels it was read from, the newest supported torch included.
    assert listing["mps_history"] == mps_history.built_from() and "2.15.0" in listing["mps_history"]
    # How the analysed code is contained here: the kernel layers, or why they are missing.
    containment = listing["containment"]
    assert containment["kernel"] or containment["missing"]
    if sys.platform.startswith("linux"):
        assert containment["fork"]


def test_ops_shows_verdict_reason_and_since():
    out = atenlint(
        "ops",
        "--target",
        "mps,onnx:13",
        "--onnx-exporter",
        "torchscript",
        "--op",
        "aten::grid_sampler",
        "--format",
        "json",
    )
    assert out.returncode == 0, out.stderr
    [row] = json.loads(out.stdout)["ops"]
    assert row["onnx:13"]["verdict"] == "unsupported" and row["onnx:13"]["since"] == "opset 16"
    # An op the installed torch lacks on MPS that a newer release has: `ops` names that release.
    later = [(m, since) for m in applicable("MPS") if (since := mps_history.supported_from(m.op, torch_release()))]
    for m, since in later[:1]:
        text = atenlint("ops", "--target", "mps", "--op", m.op)
        assert f"since {since}" in text.stdout
    assert atenlint("ops", "--target", "nope", "--op", "take").returncode == 2


def test_report_lists_ops_verdicts_and_suggestions():
    path = os.path.join(CORPUS, "spectral_norm_features.py")
    out = atenlint("report", path, "--target", "mps,executorch", "--format", "json")
    assert out.returncode == 1, out.stderr
    report = json.loads(out.stdout)
    [module] = [m for name, m in report["modules"].items() if name.endswith("Model")]
    # Scripted, the call is `linalg_svdvals`; traced (inputs inferred), the exported graph
    # holds the `_linalg_svd` it decomposes to: to_edge rejects either.
    [svdvals] = [
        verdicts["executorch"] for op, verdicts in module["ops"].items() if "svd" in op and "executorch" in verdicts
    ]
    assert (svdvals["status"], svdvals["severity"], svdvals["code"]) == ("problem", "error", "ET001")
    # `self.proj`: `linear` in the scripted graph, the `addmm` it dispatches to when traced.
    [linear] = [module["ops"][op]["mps"] for op in ("aten::linear", "aten::addmm") if op in module["ops"]]
    assert linear["status"] == "supported"
    assert module["suggestions"]
    text = atenlint("report", path, "--target", "mps,executorch")
    assert "Model structure" in text.stdout and "+ Unsupported op" in text.stdout and "+ Supported op" in text.stdout
    markdown = atenlint("report", path, "--target", "mps,executorch", "--format", "markdown")
    assert "| `aten::linalg_svdvals` |" in markdown.stdout or "| `aten::_linalg_svd` |" in markdown.stdout
