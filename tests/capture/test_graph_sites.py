"""Every node of an export graph keeps the user's line (capture/graphs.py `_fx_frames`).

`run_decompositions` inlines a higher-order op's body by running the code FX generated for
it, and the nodes it makes record a frame of that code (`<eval_with_key>.N`) instead of
the user's: a forward decorated with `@torch.no_grad()` (Segment Anything's
`SamOnnxModel`) is captured as `wrap_with_set_grad_enabled`, so without the way back to
the exported node every finding of it had no user frame and was dropped."""

from __future__ import annotations

from support import load_module


def test_a_no_grad_forward_keeps_the_users_line_in_every_export_view(tmp_path):
    import torch

    from atenlint.capture.graphs import export_graph_ops

    module = load_module(
        tmp_path,
        """
        import torch
        from torch import nn


        class SamLike(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(8, 8)

            @torch.no_grad()
            def forward(self, x):
                y = self.proj(x)
                return y / torch.max(y)
        """,
        "no_grad_forward_case",
    )
    path = str(tmp_path / "no_grad_forward_case.py")
    ops = export_graph_ops(module.SamLike(), (torch.randn(2, 8),), {}, ("export", "coreml-export"))
    by_op = {(op.view, op.op): op for op in ops}
    for view in ("export", "coreml-export"):
        user = [s for s in by_op[(view, "aten::max")].sites if s.file == path]
        assert [s.line for s in user] == [13], by_op[(view, "aten::max")].sites
        # A call inside a library keeps the user's line that led there, and the library's.
        linear = next(op for op in ops if op.view == view and op.op in ("aten::addmm", "aten::linear"))
        assert [s.line for s in linear.sites if s.file == path] == [12]
        assert linear.sites[-1].file.endswith("linear.py")
    assert not any(s.file.startswith("<") for op in ops for s in op.sites)
