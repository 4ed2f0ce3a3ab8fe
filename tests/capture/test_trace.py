"""Trace capture: exact expressions, dtypes, data-dependent shapes, no memory."""

from __future__ import annotations

import pytest
import torch

from atenlint.capture.trace import TraceFailure, build_inputs, trace_ops
from support import load_module


def load(tmp_path, source, name="traced_case"):
    return load_module(tmp_path, source, name)


def built(module, cls="Net"):
    """The class built as the worker builds it for a trace: on meta."""
    with torch.device("meta"):
        return getattr(module, cls)()


def trace(module, inputs, cls="Net"):
    return trace_ops(built(module, cls), build_inputs(inputs, module))[0]


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


def _metadata(value):
    if isinstance(value, torch.Tensor):
        return (tuple(value.shape), value.dtype, value.stride(), value.device.type, value.requires_grad, value.layout)
    if isinstance(value, tuple):
        return tuple(_metadata(v) for v in value)
    return value


@pytest.mark.parametrize(
    "expression",
    [
        "torch.randn(1, 16, 16, 16)",
        "torch.randn((2, 3))",
        "torch.randn(())",
        "torch.randn(2, 3, dtype=torch.float16)",
        "torch.rand([4, 5], dtype=torch.float64)",
        "torch.randint(0, 1000, (1, 16))",
        "torch.randint(5, [3], dtype=torch.int32)",
        "torch.zeros(2, 3, dtype=torch.bool)",
        "(torch.randn(2, 8), torch.ones(2, 8, dtype=torch.long))",
    ],
)
def test_literal_factory_inputs_are_the_tensors_the_expression_makes_on_meta(tmp_path, expression):
    """Inputs that are only calls of torch's plain factories with literal sizes are made
    without running torch's meta kernels (whose `torch._check` imports sympy): the same
    shapes, dtypes, strides and flags as the expression evaluated on meta."""
    from atenlint.capture.loader import literal_meta_inputs

    module = load(tmp_path, "import torch\n")
    assert literal_meta_inputs(expression, vars(module)) is not None
    with torch.device("meta"):
        evaluated = eval(expression, {"torch": torch})
    assert _metadata(build_inputs(expression, module)) == _metadata(evaluated)


@pytest.mark.parametrize(
    "expression",
    [
        "torch.randn(N, 3)",  # a name: evaluated as written
        "torch.randn(2, dtype=torch.long)",  # torch refuses it: the same error
        "torch.randint(5, 5, (2,))",
        "torch.full((2,), 1)",
        "[torch.randn(2)]",
        "torch.randn(2, requires_grad=True)",
    ],
)
def test_any_other_inputs_expression_is_evaluated_as_written(tmp_path, expression):
    from atenlint.capture.loader import literal_meta_inputs

    module = load(tmp_path, "import torch\nN = 4\n")
    assert literal_meta_inputs(expression, vars(module)) is None
    with torch.device("meta"):
        try:
            evaluated = eval(expression, vars(module))
        except RuntimeError:
            with pytest.raises(RuntimeError):
                build_inputs(expression, module)
            return
    made = build_inputs(expression, module)
    assert _metadata(tuple(made) if isinstance(made, list) else made) == _metadata(
        tuple(evaluated) if isinstance(evaluated, list) else evaluated
    )


def test_a_factory_the_users_code_replaced_is_called_as_replaced(tmp_path, monkeypatch):
    from atenlint.capture.loader import literal_meta_inputs

    module = load(tmp_path, "import torch\n")
    monkeypatch.setattr(torch, "randn", lambda *size, **options: torch.zeros(7, device="meta"))
    assert literal_meta_inputs("torch.randn(2, 3)", vars(module)) is None
    assert tuple(build_inputs("torch.randn(2, 3)", module).shape) == (7,)


def _phase(module, inputs, fake, training=False):
    from atenlint.capture.trace import _recorded_run

    instance = built(module)
    run, _ = _recorded_run(instance, (build_inputs(inputs, module),), {}, training, fake=fake)
    return run, [
        (op.op, op.sites, op.dtypes_in, op.dtypes_out, op.max_dim, op.float64_origin, op.dispatch) for op in run.found
    ]


_MIXED = """
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.norm = nn.BatchNorm2d(8)
            self.drop = nn.Dropout(0.1)

        def forward(self, x):
            y = self.drop(F.gelu(self.norm(self.conv(x))))
            y = F.interpolate(y, scale_factor=2.0, mode="bilinear")
            y = F.max_pool2d(y, 2) + torch.tensor(0.5, dtype=torch.float64).float()
            if y.mean() > 0:  # a value read from a tensor: guessed, and marked
                y = torch.special.ndtri(y.sigmoid())
            return torch.heaviside(y, y).sum(dim=(2, 3))
"""


@pytest.mark.parametrize("training", [True, False])
def test_a_forward_on_meta_tensors_records_what_fake_tensors_record(tmp_path, training):
    """The dispatcher view runs forwards on meta tensors first (no fake-tensor bookkeeping,
    no torch._dynamo): same kernels, so the same ops, sites, dtypes, call trees and guesses
    as on fake tensors, in both modes."""
    module = load(tmp_path, _MIXED)
    meta_run, on_meta = _phase(module, "torch.randn(2, 3, 16, 16)", fake=False, training=training)
    fake_run, on_fake = _phase(module, "torch.randn(2, 3, 16, 16)", fake=True, training=training)
    assert meta_run.failure is None and fake_run.failure is None
    assert on_meta == on_fake
    assert meta_run.guessed and fake_run.guessed
    assert "aten::special_ndtri" in {op[0] for op in on_meta}


def test_a_forward_meta_tensors_cannot_run_is_recorded_whole_on_fake_tensors(tmp_path):
    """A boolean mask (an output shape that depends on values) raises on meta tensors; the
    phase is then recorded again, whole, on fake tensors: what the fake-only trace records."""
    module = load(
        tmp_path,
        """
        import torch
        import torch.nn as nn

        class Net(nn.Module):
            def forward(self, x):
                y = torch.special.ndtri(x.sigmoid())
                return y[y > 0].sum() + torch.heaviside(x, x).sum()
    """,
    )
    meta_run, _ = _phase(module, "torch.randn(4, 5)", fake=False)
    assert meta_run.failure is not None  # why the fallback exists
    from atenlint.capture.trace import _record_phase

    instance = built(module)
    run = _record_phase(instance, (build_inputs("torch.randn(4, 5)", module),), {}, False)
    _, on_fake = _phase(module, "torch.randn(4, 5)", fake=True)
    assert run.failure is None
    assert [(op.op, op.sites, op.dispatch) for op in run.found] == [(o[0], o[1], o[6]) for o in on_fake]
    assert {"aten::index.Tensor", "aten::heaviside"} <= {op.op for op in run.found}


def test_a_forward_that_fails_on_its_own_is_not_run_again_on_fake_tensors(tmp_path, monkeypatch):
    """A shape that does not fit fails the same on fake tensors (the same meta kernels, the
    same Python): the meta run's failure is the phase's, and no fake tensors are made (they
    import torch._dynamo, seconds in a child that would otherwise never need it)."""
    from atenlint.capture import trace as trace_module

    module = load(
        tmp_path,
        """
        import torch.nn as nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(8, 4)

            def forward(self, x):
                return self.lin(x)
    """,
    )

    def no_fake_tensors():
        raise AssertionError("fake tensors made for a failure of the forward's own")

    monkeypatch.setattr(trace_module, "_fake_mode", no_fake_tensors)
    instance = built(module)
    run = trace_module._record_phase(instance, (build_inputs("torch.randn(2, 5)", module),), {}, False)
    assert run.failure is not None and "reduction dim" in run.failure.message
