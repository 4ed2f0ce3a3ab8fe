"""Inductor fallbacks in the compile view agree with what the installed Inductor really does:
the same modules compiled with `torch.compile(backend="inductor")` on the CPU here, with
every eager-kernel fallback Inductor creates recorded at `ir.FallbackKernel.create`."""

from __future__ import annotations

import contextlib
import io
import warnings

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from atenlint.capture.dynamo_view import dynamo_breaks
from atenlint.capture.inductor_fallbacks import IMPLICIT, REGISTERED, judge, leaves
from atenlint.targets.compile import FALLBACK, CompileTarget


class Fallbacks(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        y = self.lin(x).relu()
        pooled = F.adaptive_avg_pool3d(y.reshape(1, 1, 2, 2, 4), (1, 1, 3))
        distances = torch.cdist(y, y)
        running = torch.cumsum(y, dim=1)
        ordered = torch.sort(y, dim=1).values + torch.topk(y, 2).values.sum()
        return torch.cat([pooled.flatten(), distances.flatten(), running.flatten(), ordered.flatten()])


class Clean(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.norm = nn.LayerNorm(4)

    def forward(self, x):
        return torch.softmax(F.gelu(self.norm(self.lin(x))), -1) + x.mean()


class Resized(nn.Module):
    """Bilinear resizing (torchvision's detection transforms): `upsample_bilinear2d` has no
    lowering, but a Python Autograd kernel that AOTAutograd's tracer runs, so Inductor never
    sees it."""

    def forward(self, x):
        return F.interpolate(x.reshape(1, 1, 4, 4), size=(8, 8), mode="bilinear", align_corners=False)


def _base(op: str) -> str:
    return op.split(".")[1]  # "aten.sort.stable" -> "sort"


def _atenlint_cpu(cls: type) -> dict[str, dict]:
    torch.manual_seed(0)
    answer = dynamo_breaks(cls().eval(), (torch.randn(4, 4),), {})
    return {_base(f["op"]): f for f in answer.get("fallbacks", []) if "cpu" in f["devices"]}


def _inductor_cpu(cls: type) -> set[str]:
    """The eager kernels Inductor's CPU lowering really falls back to."""
    from torch._inductor import config, ir

    created: list[str] = []
    original = ir.FallbackKernel.create.__func__

    def spy(klass, kernel, *args, **kwargs):
        created.append(str(kernel))
        return original(klass, kernel, *args, **kwargs)

    torch.manual_seed(0)
    model = cls().eval()
    torch._dynamo.reset()
    with (
        config.patch(compile_threads=1, fx_graph_cache=False),
        warnings.catch_warnings(),
        contextlib.redirect_stderr(io.StringIO()),
    ):
        warnings.simplefilter("ignore")
        ir.FallbackKernel.create = classmethod(spy)
        try:
            torch.compile(model, backend="inductor")(torch.randn(4, 4))
        finally:
            ir.FallbackKernel.create = classmethod(original)
            torch._dynamo.reset()
    return {_base(op) for op in created}


@pytest.mark.timeout(600)
def test_fallbacks_agree_with_inductor_on_the_cpu():
    mine = _atenlint_cpu(Fallbacks)
    assert set(mine) == _inductor_cpu(Fallbacks) == {"_adaptive_avg_pool3d", "_cdist_forward", "cumsum", "sort", "topk"}
    assert _atenlint_cpu(Clean) == {} and _inductor_cpu(Clean) == set()
    # Per device: cdist has no lowering anywhere; cumsum and sort only lack the cpu
    # code generator's SCAN / SORT, which Triton (cuda) has.
    assert mine["_cdist_forward"]["devices"] == ["cpu", "cuda"] and mine["_cdist_forward"]["why"] == REGISTERED
    assert mine["cumsum"]["devices"] == ["cpu"] and "SCAN" in mine["cumsum"]["why"]
    assert mine["sort"]["devices"] == ["cpu"] and "SORT" in mine["sort"]["why"]
    # Each at the user's line, as the graph node records it.
    lines = {name: found["site"]["line"] for name, found in mine.items()}
    source = Fallbacks.forward.__code__.co_firstlineno
    assert lines == {
        "_adaptive_avg_pool3d": source + 2,
        "_cdist_forward": source + 3,
        "cumsum": source + 4,
        "sort": source + 5,
        "topk": source + 5,
    }


def test_an_op_inductor_decomposes_is_judged_by_what_it_decomposes_to():
    tables = judge().tables
    addmm = torch.ops.aten.addmm.default
    found = leaves(addmm, (torch.randn(4), torch.randn(3, 4), torch.randn(4, 4)), {})
    assert found and all(not judge().verdict(op)[0] for op in found)
    # In-place ops are judged as functionalisation hands them to Inductor.
    assert leaves(torch.ops.aten.relu_.default, (torch.randn(3),), {}) == (torch.ops.aten.relu.default,)
    # The three kinds of verdict, each from Inductor's own tables.
    assert judge().verdict(torch.ops.aten._cdist_forward.default) == (("cpu", "cuda"), REGISTERED)
    unlowered = next(
        op
        for op in (torch.ops.aten._fft_c2c.default, torch.ops.aten.polar.default)
        if op not in tables.lowerings and op not in tables.decompositions
    )
    assert judge().verdict(unlowered) == (("cpu", "cuda"), IMPLICIT)


def test_the_target_reports_fallbacks_as_information_naming_the_devices():
    site = {"file": "/p/m.py", "line": 9, "col": -1}
    view = {
        "breaks": [],
        "fallbacks": [
            {
                "op": "aten.sort.stable",
                "called": "aten.sort.default",
                "devices": ["cpu"],
                "why": "the cpu code generator lacks SORT",
                "site": site,
            }
        ],
    }
    cls = {"name": "M", "qualname": "M", "module": "m.M", "status": "ok", "ops": [], "compile": view}
    for target in (CompileTarget("2.13.0"), CompileTarget("2.13.0", fullgraph=True)):
        (result,) = target.class_results(cls)
        assert result.code == FALLBACK and result.severity == "information" and result.site == site
        assert "no cpu lowering for `aten.sort.stable`" in result.message and "lacks SORT" in result.message
        assert "`aten.sort.default` decomposes to it" in result.message


TWO_FALLBACKS_ON_ONE_LINE = """import torch
from torch import nn


class TwoOnOneLine(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        y = self.lin(x)
        return torch.cumsum(torch.cdist(y, y), dim=1)
"""


@pytest.mark.timeout(600)
def test_two_fallbacks_on_one_line_are_both_reported(engine, tmp_path):
    """A line whose call runs two ops Inductor leaves to eager kernels (a library model called
    on one line holds many): the report keeps one diagnostic per line and code, so the one
    finding there names both, as the real Inductor creates both."""
    from support import check_json

    (tmp_path / "two_fallbacks.py").write_text(TWO_FALLBACKS_ON_ONE_LINE)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.atenlint]\ntargets = ["compile"]\ninfer-inputs = false\n'
        '[tool.atenlint.modules."two_fallbacks.TwoOnOneLine"]\ninputs = "torch.randn(4, 4)"\n'
    )
    found = [f for f in check_json(engine, str(tmp_path)) if f["target"] == "compile" and f["code"] == FALLBACK]
    namespace: dict = {}
    exec(compile(TWO_FALLBACKS_ON_ONE_LINE, str(tmp_path / "two_fallbacks.py"), "exec"), namespace)  # noqa: S102
    real = _inductor_cpu(namespace["TwoOnOneLine"])
    assert real == {"_cdist_forward", "cumsum"}
    (finding,) = found
    assert finding["range"]["start"]["line"] + 1 == 12
    assert "no cpu and cuda lowering for `aten._cdist_forward" in finding["message"]
    assert "no cpu lowering for `aten.cumsum" in finding["message"] and "SCAN" in finding["message"]


@pytest.mark.timeout(600)
def test_an_op_decomposed_by_its_python_autograd_kernel_is_no_fallback():
    assert _atenlint_cpu(Resized) == {} and _inductor_cpu(Resized) == set()
