"""atenlint's verdicts on the corpus agree with the real exporters, run on CPU here: the
TorchScript ONNX exporter at opsets 9/13/17, the dynamo ONNX exporter at 18,
torch.export + run_decompositions() + ExecuTorch's verifier and to_edge, coremltools.convert
and torch.jit.script. Every disagreement is listed below with its reason; a new one (or
one that goes away) fails the test, so the list stays true."""

from __future__ import annotations

import importlib.util

import pytest

from atenlint.cache import cache_dir

# Judging against the real exporters needs them: `pip install -e ".[test,exporters]"`.
pytest.importorskip("onnx")
pytest.importorskip("onnxscript")

from .agreement import atenlint_verdicts, compare, ground_truth, module_files, table

# The real exporters' ground truth (computed once, then cached by their versions) and two
# full runs over the corpus take minutes on two loaded cores: not a hang.
pytestmark = pytest.mark.timeout(1500)

# Without configured inputs (atenlint infers them where it can: the MultiheadAttention fast
# path, F.interpolate's rank-dependent kernels and embedding_bag are then judged on the
# toolchains' own graphs and agree).
KNOWN = {
    (
        "onnx torchscript opset 9",
        "cumsum_position.py",
    ): "the opset-9 symbolic of cumsum is registered but raises 'try opset 11' (a stub, not a missing symbolic)",
    (
        "onnx torchscript opset 9",
        "embedding_bag.py",
    ): "the opset-9 symbolic of embedding_bag is registered but raises unsupported for these arguments",
    (
        "coreml",
        "causal_mask_attention.py",
    ): "coremltools fails on an argument (a non-scalar constant), not a missing op",
    ("coreml", "causal_sdpa.py"): "coremltools fails on an argument (a non-scalar constant), not a missing op",
    ("coreml", "rotary.py"): "coremltools fails on an argument (a non-scalar constant), not a missing op",
    ("coreml", "spatial_transformer.py"): "coremltools fails on an argument (a non-scalar constant), not a missing op",
}


@pytest.fixture(scope="module")
def rows(engine):
    truth = ground_truth(cache_dir())
    return compare(truth, atenlint_verdicts(engine))


def test_corpus_is_large_enough():
    assert len(module_files()) >= 30


def test_every_exporter_ran(rows):
    exporters = {row["exporter"] for row in rows}
    assert {
        "torchscript",
        "onnx torchscript opset 9",
        "onnx torchscript opset 13",
        "onnx torchscript opset 17",
        "onnx dynamo opset 18",
    } <= exporters
    for optional, name in (("executorch", "executorch"), ("coremltools", "coreml")):
        if importlib.util.find_spec(optional) is not None:
            assert name in exporters


def test_agreement_with_real_exporters(rows):
    print("\n" + table(rows))
    disagreements = {(row["exporter"], row["module"]) for row in rows if not row["agree"]}
    relevant = {key for key in KNOWN if key[0] in {row["exporter"] for row in rows}}
    unexpected = sorted(disagreements - relevant)
    resolved = sorted(relevant - disagreements)
    assert not unexpected, f"new disagreements with the real exporters: {unexpected}"
    assert not resolved, f"documented disagreements that no longer happen (update KNOWN): {resolved}"


def test_torchscript_agrees_everywhere(rows):
    assert all(row["agree"] for row in rows if row["exporter"] == "torchscript")
    assert sum(not row["real_ok"] for row in rows if row["exporter"] == "torchscript") == 2


# With example inputs every export target is judged on its own toolchain's graph
# (capture/graphs.py), and only failures no op registry can see remain.
KNOWN_WITH_INPUTS = {
    ("onnx torchscript opset 9", "cumsum_position.py"): KNOWN[("onnx torchscript opset 9", "cumsum_position.py")],
    ("onnx torchscript opset 9", "embedding_bag.py"): KNOWN[("onnx torchscript opset 9", "embedding_bag.py")],
    ("coreml", "causal_mask_attention.py"): KNOWN[("coreml", "causal_mask_attention.py")],
    ("coreml", "causal_sdpa.py"): KNOWN[("coreml", "causal_sdpa.py")],
    ("coreml", "rotary.py"): KNOWN[("coreml", "rotary.py")],
    ("coreml", "spatial_transformer.py"): KNOWN[("coreml", "spatial_transformer.py")],
}


@pytest.fixture(scope="module")
def rows_with_inputs(engine):
    truth = ground_truth(cache_dir())
    return compare(truth, atenlint_verdicts(engine, with_inputs=True))


def test_agreement_with_example_inputs(rows_with_inputs):
    print("\n" + table(rows_with_inputs))
    disagreements = {(row["exporter"], row["module"]) for row in rows_with_inputs if not row["agree"]}
    relevant = {key for key in KNOWN_WITH_INPUTS if key[0] in {row["exporter"] for row in rows_with_inputs}}
    assert not sorted(disagreements - relevant), f"new disagreements: {sorted(disagreements - relevant)}"
    assert not sorted(relevant - disagreements), (
        f"no longer disagree (update KNOWN_WITH_INPUTS): {sorted(relevant - disagreements)}"
    )
