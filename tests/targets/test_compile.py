"""The compile target end to end (the real worker, `atenlint check --target compile`) against
torch._dynamo.explain run here on the same classes, and its wording and fullgraph severities."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys

import pytest
import torch

from atenlint.targets.compile import BREAK, FALLBACK, NOT_RUN, RECOMPILE, SOURCE_BREAK, CompileTarget, user_words
from support import TESTS, check_json

CASES = os.path.join(TESTS, "data", "compile", "compile_cases.py")
TRACED = ("Branch", "Print", "Disabled", "Clean")


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("compile_ws")
    shutil.copy(CASES, root / "compile_cases.py")
    modules = "\n".join(
        f'[tool.atenlint.modules."compile_cases.{name}"]\ninputs = "torch.ones(2, 3)"' for name in TRACED
    )
    (root / "pyproject.toml").write_text(f'[tool.atenlint]\ntargets = ["compile"]\ninfer-inputs = false\n{modules}\n')
    return root


def _explain_lines(name):
    spec = importlib.util.spec_from_file_location("compile_cases_here", CASES)
    module = importlib.util.module_from_spec(spec)
    sys.modules["compile_cases_here"] = module
    try:
        spec.loader.exec_module(module)
        out = torch._dynamo.explain(getattr(module, name)().eval())(torch.ones(2, 3))
    finally:
        sys.modules.pop("compile_cases_here", None)
    return sorted(r.user_stack[-1].lineno for r in out.break_reasons)


def test_check_reports_dynamos_breaks_at_the_users_lines(engine, workspace):
    found = [f for f in check_json(engine, str(workspace)) if f["target"] == "compile"]
    by_class = {}
    for finding in found:
        by_class.setdefault(finding["module"].rsplit(".", 1)[-1], []).append(finding)
    for name in TRACED:
        mine = by_class.get(name, [])
        assert all(f["code"] == BREAK and f["severity"] == "warning" for f in mine), mine
        assert sorted(f["range"]["start"]["line"] + 1 for f in mine) == _explain_lines(name), name
    # Classes without inputs are read from source: only certain breaks, never an error.
    for name in ("Item", "ToList", "Helper"):
        assert by_class[name] and all(
            f["code"] == SOURCE_BREAK and f["severity"] == "warning" for f in by_class[name]
        ), name
    assert "Logging" not in by_class and "ThirdParty" not in by_class  # not certain from source


def _view(**extra):
    site = {"file": "/p/m.py", "line": 7, "col": -1}
    item = {"reason": "Unsupported Tensor.item() call with capture_scalar_outputs=False", "details": "", "site": site}
    return {
        "name": "M",
        "qualname": "M",
        "module": "m.M",
        "status": "ok",
        "ops": [],
        "compile": {"breaks": [item], **extra},
    }


def test_fullgraph_severity_follows_dynamos_own_fullgraph_run():
    plain, strict = CompileTarget("2.13.0"), CompileTarget("2.13.0", fullgraph=True)
    (result,) = plain.class_results(_view())
    assert result.severity == "warning" and "`.item()`" in result.message and "Tensor.item()" in result.message
    (result,) = strict.class_results(_view(fullgraph=False, fullgraph_error={"message": "x", "site": None}))
    assert result.severity == "error" and "fullgraph=True) raises" in result.message
    (result,) = strict.class_results(_view(fullgraph=True))  # one graph keeps `.item()` symbolic
    assert result.severity == "information"


def test_source_breaks_are_never_errors_and_failures_are_notes():
    strict = CompileTarget("2.13.0", fullgraph=True)
    (result,) = strict.class_results(_view(source=True))
    assert result.code == SOURCE_BREAK and result.severity == "warning" and "source" in result.message
    results = strict.class_results(_view(error={"message": "ValueError: no", "site": None}))
    assert [r.code for r in results] == [BREAK, NOT_RUN] and results[1].severity == "information"


def test_user_words_name_the_kind_from_dynamos_reason():
    assert "tensor's value" in user_words("generic_jump TensorVariable()")
    assert "`print`" in user_words("Failed to trace builtin operator\nDynamo does not know how to trace `print`")
    assert "skip" in user_words("Skip calling `torch.compiler.disable()`d function")


def test_compile_is_a_listed_target(engine):
    from atenlint.config import Settings
    from atenlint.targets import build_target, names

    built = build_target("compile", Settings(targets=("compile",)), engine.native, engine.hello, None)
    assert "compile" in names.TARGETS and isinstance(built, CompileTarget) and built.tree_view == "compile"
    status = built.status()
    assert status["available"] and status["data"]["compiler"] == f"Dynamo of torch {engine.torch_version}"
    assert built.support("aten::add.Tensor")["verdict"] == "supported"


INDUCTOR_CASE = """\
import torch
import torch.nn as nn


class Ranked(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, scale=1.0):
        y = self.lin(x) * scale
        d = torch.cdist(y, y)
        print(d.shape)
        return torch.cumsum(d, dim=1)
"""


def test_check_reports_inductor_fallbacks_recompiles_and_the_print_fix(engine, tmp_path):
    (tmp_path / "ranked.py").write_text(INDUCTOR_CASE)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.atenlint]\ntargets = ["compile"]\ninfer-inputs = false\n'
        '[tool.atenlint.modules."ranked.Ranked"]\ninputs = "(torch.randn(3, 4), 0.5)"\n'
    )
    found = [f for f in check_json(engine, str(tmp_path)) if f["target"] == "compile"]
    by_line = {}
    for finding in found:
        by_line.setdefault(finding["range"]["start"]["line"] + 1, []).append(finding)
    (cdist,) = [f for f in by_line[12] if f["code"] == FALLBACK]
    (cumsum,) = [f for f in by_line[14] if f["code"] == FALLBACK]
    assert cdist["severity"] == cumsum["severity"] == "information"
    assert "no cpu and cuda lowering for `aten._cdist_forward" in cdist["message"]
    assert "no cpu lowering for `aten.cumsum" in cumsum["message"] and "SCAN" in cumsum["message"]
    (scale,) = [f for f in by_line[11] if f["code"] == RECOMPILE]
    assert "`scale` (0.5 in this run)" in scale["message"]
    (printed,) = [f for f in by_line[13] if f["code"] == BREAK]
    assert [fix["id"] for fix in printed["fixes"]] == ["print-when-not-compiling"]


def test_an_op_only_the_cpu_has_a_kernel_for_is_no_cuda_fallback(engine):
    """The fallbacks come from a CPU run: scaled_dot_product_attention picks a CPU-only op
    there, which native_functions.yaml gives no CUDA kernel, so no CUDA graph has it."""
    target = CompileTarget(engine.torch_version, native=engine.native)
    site = {"file": "/p/m.py", "line": 3, "col": -1}

    def verdicts(op):
        fallback = {"op": op, "called": op, "devices": ["cpu", "cuda"], "why": "registered fallback", "site": site}
        cls = {
            "name": "M",
            "qualname": "M",
            "module": "m.M",
            "status": "ok",
            "ops": [],
            "compile": {"breaks": [], "fallbacks": [fallback]},
        }
        return [r.message for r in target.class_results(cls) if r.code == FALLBACK]

    (cpu_only,) = verdicts("aten._scaled_dot_product_flash_attention_for_cpu.default")
    assert "no cpu lowering" in cpu_only
    (both,) = verdicts("aten._cdist_forward.default")
    assert "no cpu and cuda lowering" in both


def test_breaks_of_one_line_are_named_before_dynamos_explanations():
    """Two breaks of one line are one finding; machine formats keep a message's first 1000
    characters, so each break's headline and Dynamo's reason come before the explanations."""
    from atenlint.formats.redact import MESSAGE_CHARS
    from atenlint.targets.compile import ALSO_HERE

    site = {"file": "/p/m.py", "line": 9, "col": -1, "span_lines": 1, "end_col": None}
    view = {
        "breaks": [
            {"reason": "Data-dependent branching", "details": "Explanation: " + "x" * 600, "site": site},
            {"reason": "generic_jump TensorVariable()", "details": "", "site": site},
        ],
        "graphs": 2,
        "fullgraph": False,
    }
    (result,) = CompileTarget("2.13.0", fullgraph=True).class_results({"name": "Model", "compile": view})
    kept = result.message[:MESSAGE_CHARS]
    first, second = kept.split(ALSO_HERE)
    assert first.endswith("Dynamo (torch 2.13.0): Data-dependent branching")
    assert "Dynamo (torch 2.13.0): generic_jump TensorVariable() — Explanation: " in second
    assert result.severity == "error" and result.code == BREAK
