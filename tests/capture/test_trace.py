"""Trace capture: exact expressions, dtypes, data-dependent shapes, no memory."""

from __future__ import annotations

import pytest
import torch

from atenlint.capture.trace import TraceFailure, build_inputs, trace_ops
from support import load_module


def load(tmp_path, source, name="traced_case"):
    return load_module(tmp_path, source, name)


def trace(module, inputs, cls="Net"):
    with torch.device("meta"):
        instance = getattr(module, cls)()
    return trace_ops(instance, build_inputs(inputs, module))[0]


def user_site(op):
    return next(s for s in reversed(op.sites) if "traced_case" in s.file)


def test_exact_positions_including_a_call_over_several_lines(tmp_path):
    module = load(
        tmp_path,
        """
        import torch
        import torch.nn as nn

        class Net(nn.Module):
            def forward(self, x):
                y = torch.take(
                    x,
                    torch.tensor([0, 1]),
                )
                return y + x.sum()
    """,
    )
    take = next(op for op in trace(module, "torch.randn(3, 4)") if op.op == "aten::take")
    site = user_site(take)
    assert (site.line, site.col, site.span_lines, site.end_col, site.exact) == (6, 12, 4, 9, True)


def test_only_the_taken_path_is_recorded(tmp_path):
    module = load(
        tmp_path,
        """
        import torch.nn as nn
        import torch.nn.functional as F

        class Net(nn.Module):
            def forward(self, x):
                return F.interpolate(x, size=(2, 2), mode="area")
    """,
    )
    names = {op.op for op in trace(module, "torch.randn(1, 3, 8, 8)")}
    assert "aten::_adaptive_avg_pool2d" in names
    assert not {n for n in names if "3d" in n or "1d" in n}


def test_data_dependent_ops_do_not_stop_the_trace(tmp_path):
    module = load(
        tmp_path,
        """
        import torch
        import torch.nn as nn

        class Net(nn.Module):
            def forward(self, x):
                kept = x[x > 0]
                n = int((x > 0).sum())
                return torch.nonzero(x).sum() + kept.sum() + torch.mode(x[:n]).values.sum()
    """,
    )
    names = [op.op for op in trace(module, "torch.randn(5, 3)")]
    assert "aten::nonzero" in names and "aten::mode" in names


def test_float64_origins_and_first_uses(tmp_path):
    module = load(
        tmp_path,
        """
        import torch
        import torch.nn as nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(4, 4).double()

            def forward(self, x):
                y = self.lin(x.double())
                return (y * 2).sum()
    """,
    )
    ops = [op for op in trace(module, "torch.randn(2, 4)") if not op.training]
    origins = [(op.op, user_site(op).col) for op in ops if op.float64_origin]
    first_uses = [op.op for op in ops if op.float64_first_use]
    assert origins == [("aten::_to_copy", 21)]
    assert first_uses and first_uses[0] in ("aten::t", "aten::addmm")
    assert not any(op.float64_origin or op.float64_first_use for op in ops if op.op == "aten::mul.Tensor")


def test_a_failing_forward_names_the_users_line(tmp_path):
    module = load(
        tmp_path,
        """
        import torch.nn as nn

        class Net(nn.Module):
            def forward(self, x):
                return x.view(7, 7)
    """,
    )
    with pytest.raises(TraceFailure) as failure:
        trace(module, "torch.randn(2, 3)")
    assert failure.value.site.line == 5 and "RuntimeError" in failure.value.message


def test_weights_never_materialise(tmp_path):
    module = load(
        tmp_path,
        """
        import torch.nn as nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.big = nn.Linear(60_000, 60_000)  # 3.6 B parameters, 14 GB in float32

            def forward(self, x):
                return self.big(x)
    """,
    )
    ops = trace(module, "torch.randn(2, 60_000)")
    assert any(op.op == "aten::addmm" for op in ops)
