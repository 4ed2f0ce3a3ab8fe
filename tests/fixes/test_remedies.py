"""Remedies that are not rewrites: the warning filter, the fallback explanation, the ONNX opset."""

from __future__ import annotations

import warnings

import pytest
from fixes_support import apply_text, finding_for_call

from atenlint.config import Settings
from atenlint.findings import Finding
from atenlint.fixes.attach import fixes_for
from atenlint.fixes.callsite import FileContext
from atenlint.fixes.remedies import FALLBACK_WARNING, fallback_warning_filter
from atenlint.sourcetext import Range, SourceText

SOURCE = "import torch\n\n\ndef f(x, i):\n    return torch.take(x, i)\n"


def torch_fallback_message(op: str) -> str:
    # The text of mps_fallback() in aten/src/ATen/mps/MPSFallback.mm.
    return (
        f"The operator '{op}' is not currently supported on the MPS backend and will fall back to run on "
        f"the CPU. This may have performance implications."
    )


def remedies(finding, source=SOURCE, settings=None) -> dict:
    file = FileContext.build(SourceText(source, finding.abs_path))
    return {fix["id"]: fix for fix in fixes_for(finding, file, settings)}


@pytest.mark.parametrize(
    "op, other",
    [
        ("aten::take", "aten::take_along_dim"),
        ("aten::_linalg_svd.U", "aten::_linalg_svdxU"),
        ("aten::embedding_renorm_", "aten::embedding"),
    ],
)
def test_the_filter_silences_exactly_that_op(op, other):
    namespace: dict = {"warnings": warnings}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec(fallback_warning_filter(op), namespace)  # noqa: S102 - runs the statement the fix writes
        warnings.warn(torch_fallback_message(op), UserWarning)
        warnings.warn(torch_fallback_message(other), UserWarning)
        warnings.warn(torch_fallback_message(op), DeprecationWarning)
    assert [str(w.message) for w in caught] == [torch_fallback_message(other), torch_fallback_message(op)]
    assert FALLBACK_WARNING.format(op=op) in torch_fallback_message(op)


def test_the_filter_goes_after_the_imports_with_its_import():
    finding = finding_for_call(SOURCE, "torch.take(x, i)", "take-flat-index")
    fix = remedies(finding)["silence-mps-fallback-warning"]
    assert (fix["kind"], fix["exact"]) == ("suppress", True)
    assert apply_text(SOURCE, fix) == (
        'import torch\nimport warnings\nwarnings.filterwarnings("ignore", message=r"The operator \'aten::take\' is '
        'not currently supported on the MPS backend", category=UserWarning)\n\n\ndef f(x, i):\n'
        "    return torch.take(x, i)\n"
    )


def test_the_filter_is_not_offered_twice_nor_without_a_fallback():
    finding = finding_for_call(SOURCE, "torch.take(x, i)", "take-flat-index")
    silenced = apply_text(SOURCE, remedies(finding)["silence-mps-fallback-warning"])
    again = finding_for_call(silenced, "torch.take(x, i)", "take-flat-index")
    assert "silence-mps-fallback-warning" not in remedies(again, silenced)
    # mps-fallback = false: the op raises instead of warning; nothing to silence.
    assert "silence-mps-fallback-warning" not in remedies(finding, settings=Settings(mps_fallback=False))
    forced = finding_for_call(SOURCE, "torch.take(x, i)", "take-flat-index", code="MPS002")
    assert "silence-mps-fallback-warning" in remedies(forced, settings=Settings(mps_fallback=False))


def test_the_fallback_variable_is_explained_for_hard_errors():
    finding = finding_for_call(SOURCE, "torch.take(x, i)", "take-flat-index")
    fix = remedies(finding)["enable-mps-fallback"]
    assert (fix["kind"], fix["edits"]) == ("explain", [])
    assert "PYTORCH_ENABLE_MPS_FALLBACK=1" in fix["title"]
    assert "before" in fix["description"] and "import torch" in fix["description"]
    declared = remedies(finding, settings=Settings(mps_fallback=False))["enable-mps-fallback"]
    assert "mps-fallback = false" in declared["description"]
    forced = finding_for_call(SOURCE, "torch.take(x, i)", "take-flat-index", code="MPS002")
    assert "enable-mps-fallback" not in remedies(forced)


def test_onnx_opset_remedy_edits_the_project_targets(tmp_path):
    config = tmp_path / "pyproject.toml"
    config.write_text(
        '[project]\nname = "x"\n\n[tool.atenlint]\ntargets = ["mps", "onnx:13"]  # deploy\n', encoding="utf-8"
    )
    finding = Finding(
        "case.py",
        Range.from_json({"start": {"line": 4, "character": 11}, "end": {"line": 4, "character": 27}}),
        "error",
        "ONNX002",
        "`F.grid_sample` reaches `aten::grid_sampler`, which the TorchScript-based "
        "ONNX exporter supports from opset 16; you export at opset 13: raise opset_version to 16 or "
        "more",
        target="onnx:13",
        ops=["aten::grid_sampler"],
        abs_path=str(tmp_path / "case.py"),
        data={"torch": "2.13.0", "required_opset": 16},
    )
    fix = remedies(finding, settings=Settings(config_path=str(config)))["raise-onnx-opset"]
    assert fix["kind"] == "config" and "opset_version=16" in fix["title"]
    assert fix["edits"] == [
        {
            "path": str(config),
            "range": {"start": {"line": 4, "character": 19}, "end": {"line": 4, "character": 26}},
            "newText": "onnx:16",
        }
    ]
    without_config = remedies(finding, settings=Settings())["raise-onnx-opset"]
    assert without_config["edits"] == [] and "--target onnx:16" in without_config["description"]
    # The opset comes from the verdict's data, never from the message's words.
    reworded = Finding(
        **{
            **finding.__dict__,
            "message": "raise opset_version to 99",
            "data": {"torch": "2.13.0", "required_opset": 17},
        }
    )
    assert "opset_version=17" in remedies(reworded, settings=Settings())["raise-onnx-opset"]["title"]
    unparameterised = Finding(**{**finding.__dict__, "data": {"torch": "2.13.0"}})
    assert "raise-onnx-opset" not in remedies(unparameterised, settings=Settings())
