"""atenlint's delegate targets (`executorch:xnnpack`, `executorch:vulkan`, `executorch:coreml`:
every delegate whose partitioner runs on a Linux CPU machine) on real public models agree
with ExecuTorch's real `to_edge_transform_and_lower(..., partitioner=[...])`, run on CPU with
real tensors (`delegate_truth.py`), per model and delegate:

- the ops left outside the delegate: the overloads of atenlint's ET010/ET002 findings are
  exactly the overloads of the op nodes the lowered program keeps outside its delegate
  calls;
- the load verdict: the lowered program passes `to_executorch()` and runs in the wheel's own
  portable runtime (for a backend that runtime does not register, Core ML and Vulkan: has a
  kernel there for every op outside its delegate calls) exactly when atenlint has no ET002
  error;
- the lowering itself: it raises in the backend's conversion (Core ML's `preprocess`)
  exactly when atenlint has an ET013 error, and then one of them is at a line of the node
  coremltools failed on, for that op, in coremltools' own words.

Needs torchvision, timm, transformers and executorch beside torch, so it is skipped where
they are missing (the main CI); `tests/real_models/test_real_models.py` says how to make the
environment. The real lowering's results are cached (by package versions and sources) in
the user cache; the atenlint side runs in full every time. Every disagreement is listed in
KNOWN with its cause, kept exact both ways.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import importlib.util
import json
import os

import pytest

for _package in ("torchvision", "timm", "transformers", "executorch"):
    if importlib.util.find_spec(_package) is None:
        pytest.skip(f"the real-model delegate suite needs {_package}", allow_module_level=True)


from .agreement import MODELS, REPO, cached_truth, run_atenlint, versions

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(HERE, "delegate_truth.py")
RUNNER_HELPERS = os.path.join(REPO, "tests", "corpus", "ground_truth.py")  # the portable-runtime load check
# Every delegate whose partitioner runs here (Core ML's only converts, which coremltools does
# on Linux; Vulkan's only partitions and serialises, with no GPU).
DELEGATES = ("xnnpack", "vulkan", "coreml")
TARGETS = {delegate: f"executorch:{delegate}" for delegate in DELEGATES}
# A convolutional network each from torchvision and timm, a mobile one (hardswish, squeeze-
# excitation), a transformer each from torchvision and transformers (attention, LayerNorm).
CHOSEN = (
    "tv_resnet18.py",
    "tv_mobilenet_v3_small.py",
    "tv_vit.py",
    "timm_convnext_atto.py",
    "hf_distilbert.py",
    # Sorting (`torch.sort`, `torch.topk`): ops to_edge keeps that some delegates leave to the
    # CPU, one of them with no portable kernel: ET002, the program does not load. In
    # models/delegates/: the export suite's ground truth stops at to_edge, before the load.
    "delegates/case_sort_topk.py",
    # Ops Core ML's partitioner takes that its backend's coremltools conversion refuses for the
    # default deployment target: the lowering itself fails (ET013).
    "delegates/case_space_to_depth.py",
    "delegates/case_topk_unsorted.py",
)
TRUTH_TIMEOUT_S = 1800

# (model file, delegate) -> why atenlint's undelegated ops or load verdict differ from the
# real lowering.
KNOWN: dict[tuple[str, str], str] = {}

pytestmark = pytest.mark.timeout(5400)


def _digest(path: str) -> str:
    digest = hashlib.sha256(json.dumps(versions(), sort_keys=True).encode())
    for source in (RUNNER, RUNNER_HELPERS, path):
        with open(source, "rb") as handle:
            digest.update(handle.read())
    return digest.hexdigest()[:16]


def real_lowering(path: str) -> dict:
    """What the real lowering did with one model file, computed once per package versions,
    runner source and model source."""
    name = f"{os.path.basename(path)[:-3]}-{_digest(path)}"
    command = [RUNNER, path, *DELEGATES]
    return cached_truth("real-models-delegate-truth", name, command, TRUTH_TIMEOUT_S, "delegate")


@pytest.fixture(scope="module")
def truth() -> dict[str, dict]:
    paths = [os.path.join(MODELS, name) for name in CHOSEN]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        return dict(zip(CHOSEN, pool.map(real_lowering, paths)))


@pytest.fixture(scope="module")
def ours() -> dict[str, list[dict]]:
    report = run_atenlint([os.path.join(MODELS, name) for name in CHOSEN], ",".join(TARGETS.values()), "torchscript")
    out: dict[str, list[dict]] = {name: [] for name in CHOSEN}
    for diagnostic in report.get("diagnostics", []):
        path = diagnostic.get("path")
        name = os.path.relpath(path, MODELS) if path else ""
        if name in out:
            out[name].append(diagnostic)
    return out


def compare(real: dict, findings: list[dict], delegate: str) -> dict:
    """One model and delegate: the undelegated overloads and the load verdict on both sides."""
    mine = [f for f in findings if f.get("target") == TARGETS[delegate]]
    lost = sorted({f"{f['code']}: {f.get('message', '')[:200]}" for f in findings if f.get("code") == "ATL020"})
    ours_left = sorted({op for f in mine if f.get("code") in ("ET010", "ET002") for op in f.get("ops") or ()})
    ours_loads = not any(f.get("code") == "ET002" for f in mine)
    lowered = (real.get("delegates") or {}).get(delegate) or {}
    not_converted = [f for f in mine if f.get("code") == "ET013"]
    return {
        "real_left": sorted(lowered.get("left") or {}),
        "ours_left": ours_left,
        "real_loads": lowered.get("loads"),
        "ours_loads": ours_loads,
        "real_fails": lowered.get("lowered") is False,
        "ours_fails": bool(not_converted),
        "failure_agrees": _failure_agrees(lowered, not_converted),
        "load_check": lowered.get("load_check"),
        "missing_kernels": lowered.get("missing_kernels"),
        "real_error": lowered.get("error") or lowered.get("crashed") or real.get("export_error") or real.get("crashed"),
        "atenlint_notes": lost,
    }


def _failure_agrees(lowered: dict, not_converted: list[dict]) -> bool:
    """A failed real lowering names the node coremltools stopped at: one of atenlint's ET013
    findings is for that op (coremltools' kind is the op's base name), at a line of that
    node's stack, and its message holds the real error's own words."""
    if lowered.get("lowered") is not False:
        return not not_converted
    lines = {int(frame.rsplit(":", 1)[1]) for frame in lowered.get("failed_frames") or ()}
    error = str(lowered.get("error") or "")
    return any(
        lowered.get("failed_op") in {op.split("::")[-1].split(".")[0] for op in f.get("ops") or ()}
        and f["range"]["start"]["line"] + 1 in lines
        and error.splitlines()[0][:150] in f.get("message", "")
        for f in not_converted
    )


def _disagrees(row: dict) -> bool:
    if row["real_fails"] or row["ours_fails"]:
        return not row["failure_agrees"]  # a lowering that raises leaves no program to compare
    return row["real_left"] != row["ours_left"] or row["real_loads"] != row["ours_loads"]


@pytest.mark.parametrize("delegate", DELEGATES)
def test_the_real_lowering_ran_on_every_model(truth: dict[str, dict], delegate: str) -> None:
    broken = {}
    for name, result in truth.items():
        lowered = (result.get("delegates") or {}).get(delegate) or {}
        if lowered.get("failed_op"):
            continue  # the lowering raised in the backend's conversion, at a node it names: an outcome
        if not lowered.get("lowered") or "loads" not in lowered:
            broken[name] = str(
                lowered.get("error") or lowered.get("crashed") or result.get("export_error") or result.get("crashed")
            )[-300:]
    assert not broken


@pytest.mark.parametrize("delegate", DELEGATES)
def test_undelegated_ops_and_load_verdict_agree(
    truth: dict[str, dict], ours: dict[str, list[dict]], delegate: str
) -> None:
    rows = {name: compare(truth[name], ours[name], delegate) for name in CHOSEN}
    print(f"\n{delegate}: " + json.dumps(rows, indent=1))  # the per-model table, for the run's log
    disagree = {name: row for name, row in rows.items() if _disagrees(row)}
    known = {name for name, known_delegate in KNOWN if known_delegate == delegate}
    assert not set(disagree) - known, f"new disagreements with the real {delegate} lowering: {disagree}"
    assert not known - set(disagree), f"documented disagreements that no longer happen: {known - set(disagree)}"
    # The suite covers both outcomes: a model the delegate takes whole and one it leaves ops of.
    assert any(not row["real_left"] and not row["real_fails"] for row in rows.values())
    assert any(row["real_left"] for row in rows.values())


def test_a_program_that_does_not_load_is_in_the_suite(truth: dict[str, dict]) -> None:
    """ET002 is exercised: some lowering keeps an op with no kernel in the portable runtime."""
    assert any(
        lowered.get("loads") is False and lowered.get("missing_kernels")
        for result in truth.values()
        for lowered in (result.get("delegates") or {}).values()
    )


def test_lowerings_the_core_ml_backend_cannot_convert_are_in_the_suite(truth: dict[str, dict]) -> None:
    """ET013 is exercised: Core ML's real lowering raises in its conversion, at a node it names,
    for each op the suite has for it (`pixel_unshuffle`, an unsorted `topk`)."""
    failed = {
        (result.get("delegates") or {}).get("coreml", {}).get("failed_op")
        for name, result in truth.items()
        if name in ("delegates/case_space_to_depth.py", "delegates/case_topk_unsorted.py")
    }
    assert failed == {"pixel_unshuffle", "topk"}
