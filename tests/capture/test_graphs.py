"""Each export target judged on the graph its own toolchain consumes (capture/graphs.py):
the TorchScript ONNX exporter and coremltools on the jit trace, ExecuTorch and the dynamo
ONNX exporter on torch.export after their own decomposition; device backends keep the
dispatcher view. Checked end to end through the engine, with example inputs."""

from __future__ import annotations

import importlib.util
import textwrap

import pytest

from atenlint.config import SettingsResolver

needs_exporters = pytest.mark.skipif(
    importlib.util.find_spec("onnxscript") is None or importlib.util.find_spec("executorch") is None,
    reason="needs the exporters extra (onnxscript, executorch)")

COMMON_LAYERS = '''
    import torch
    import torch.nn as nn
    import torch.nn.functional as F


    # atenlint: inputs=torch.randn(2, 8, 16)
    class Common(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin1 = nn.Linear(16, 16)
            self.bn1 = nn.BatchNorm1d(8)
            self.gn = nn.GroupNorm(2, 8)

        def forward(self, x):
            h = self.lin1(x)
            a = h.softmax(-1)
            b = self.bn1(a) + self.gn(a)
            c = (b @ b.transpose(1, 2)).reshape(2, -1).float()
            d = F.normalize(c, dim=-1)
            e = F.scaled_dot_product_attention(h, h, h, dropout_p=0.0)
            first, second = e.chunk(2, -1)
            up = F.interpolate(first.unsqueeze(1), scale_factor=2.0, mode="bilinear")
            return d, second, up
'''

FAILING = '''
    import torch
    import torch.nn as nn
    import torch.nn.functional as F


    # atenlint: inputs=torch.randn(2, 8, 16)
    class Failing(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = nn.MultiheadAttention(16, 4, batch_first=True)

        def forward(self, x):
            d = torch.diff(x, dim=-1)
            z = self.attn(x, x, x, need_weights=False)[0]
            s = F.scaled_dot_product_attention(z, z, z)
            mask = (s > 0) & (z > 0)
            return d, mask
'''


def _check(engine, tmp_path, source, targets, exporter="torchscript", name="case.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(source).lstrip())
    engine.resolver = SettingsResolver(overrides={"targets": targets, "onnx_exporter": exporter})
    report = engine.check_paths([str(path)], jobs=1)
    return [f for f in report.findings if f.target is not None and f.severity in ("error", "warning")]


def _by(findings):
    return {(f.target, f.range.start.line + 1, f.call, tuple(f.ops)) for f in findings}


@needs_exporters
def test_layers_every_exporter_accepts_raise_nothing(engine, tmp_path):
    found = _check(engine, tmp_path, COMMON_LAYERS, ("onnx:17", "executorch", "coreml"))
    assert found == [], [f.message for f in found]


@needs_exporters
def test_real_failures_are_named_as_the_toolchain_names_them(engine, tmp_path):
    found = _by(_check(engine, tmp_path, FAILING, ("onnx:13", "onnx:17")))
    # The traced graph keeps the call itself: aten::diff has no symbolic at any opset,
    # SDPA needs opset 14 (not _safe_softmax), and MultiheadAttention takes its CPU fast
    # path under no_grad; `&` is aten::__and__, which the exporter looks up as its
    # registered `__and_` (the dispatcher's bitwise_and is not what it converts).
    assert ("onnx:13", 13, "torch.diff", ("aten::diff",)) in found
    assert ("onnx:17", 13, "torch.diff", ("aten::diff",)) in found
    assert ("onnx:13", 14, "self.attn", ("aten::_native_multi_head_attention",)) in found
    assert ("onnx:13", 15, "F.scaled_dot_product_attention", ("aten::scaled_dot_product_attention",)) in found
    assert not any(t == "onnx:17" and call == "F.scaled_dot_product_attention" for t, _, call, _ in found)
    assert not any(call == "operator &" for _, _, call, _ in found)
    assert not any(op in ("aten::_safe_softmax", "aten::bitwise_and", "aten::_unsafe_view")
                   for *_, ops in found for op in ops)


@needs_exporters
def test_a_device_backend_keeps_the_dispatcher_view(engine, tmp_path):
    source = '''
        import torch
        import torch.nn as nn


        # atenlint: inputs=torch.randn(2, 3, 4, 8, 8)
        class Pool(nn.Module):
            def __init__(self):
                super().__init__()
                self.pool = nn.AdaptiveAvgPool3d((2, 2, 2))

            def forward(self, x):
                return self.pool(x)
    '''
    found = _check(engine, tmp_path, source, ("mps", "onnx:17", "coreml"))
    by_target = {f.target: f for f in found}
    assert by_target["mps"].ops == ["aten::_adaptive_avg_pool3d"]  # what the dispatcher runs
    assert by_target["mps"].call == "self.pool"
    for target in ("onnx:17", "coreml"):  # what the trace records, if anything is rejected
        if target in by_target:
            assert by_target[target].ops == ["aten::adaptive_avg_pool3d"]


@needs_exporters
def test_executorch_sees_exports_own_decomposition(engine, tmp_path):
    source = '''
        import torch
        import torch.nn as nn
        import torch.nn.functional as F


        # atenlint: inputs=torch.randn(1, 3, 8, 8)
        class Resize(nn.Module):
            def forward(self, x):
                keep = F.interpolate(x, scale_factor=2.0, mode="bilinear")
                attn = F.scaled_dot_product_attention(x, x, x, dropout_p=0.0)
                return keep, attn
    '''
    found = _check(engine, tmp_path, source, ("executorch",))
    # upsample_bilinear2d.vec is core ATen and kept; SDPA in eval never reaches bernoulli_.
    assert found == [], [f.message for f in found]


@needs_exporters
def test_a_library_op_is_judged_from_its_own_registrations(engine, tmp_path):
    source = '''
        import torch
        import torch.nn as nn

        lib = torch.library.Library("atenlint_probe", "DEF")
        lib.define("scale(Tensor x) -> Tensor")
        lib.impl("scale", lambda x: x * 2, "CPU")
        lib.impl("scale", lambda x: torch.empty_like(x), "Meta")


        # atenlint: inputs=torch.randn(2, 4)
        class Custom(nn.Module):
            def forward(self, x):
                return torch.ops.atenlint_probe.scale(x) + 1
    '''
    found = _check(engine, tmp_path, source, ("onnx:17", "executorch"), name="custom_op_case.py")
    by_target = {f.target: f for f in found}
    assert by_target["onnx:17"].code == "ONNX001" and by_target["onnx:17"].ops == ["atenlint_probe::scale"]
    assert by_target["executorch"].code == "ET003" and by_target["executorch"].severity == "warning"
    assert by_target["executorch"].ops == ["atenlint_probe::scale"]


@needs_exporters
def test_a_traced_class_still_gets_a_torchscript_verdict(engine, tmp_path):
    source = '''
        import torch
        import torch.nn as nn


        # atenlint: inputs=torch.randn(2, 4)
        class Dynamic(nn.Module):
            def forward(self, x):
                parts = {name: x * i for i, name in enumerate(["a", "b"])}
                return sum(parts.values())
    '''
    found = _check(engine, tmp_path, source, ("torchscript", "onnx:17"))
    assert [f.code for f in found if f.target == "torchscript"] == ["TS001"]
    assert not [f for f in found if f.target == "onnx:17"]


@needs_exporters
def test_a_training_only_failure_keeps_the_eval_capture(engine, tmp_path):
    source = '''
        import torch
        import torch.nn as nn


        # atenlint: inputs=torch.randn(1, 4)
        class OneSample(nn.Module):
            def __init__(self):
                super().__init__()
                self.bn = nn.BatchNorm1d(4)

            def forward(self, x):
                return torch.diff(self.bn(x), dim=-1)
    '''
    found = _check(engine, tmp_path, source, ("onnx:17",))
    assert [(f.call, f.ops) for f in found] == [("torch.diff", ["aten::diff"])]


def test_the_jit_views_refuse_real_tensors_past_the_limit():
    import torch

    from atenlint.capture.graphs import GraphFailure, jit_graph_ops

    with torch.device("meta"):
        huge = torch.nn.Linear(20_000, 20_000)  # 1.6 GB of float32 weights, free on meta
    with pytest.raises(GraphFailure) as raised:
        jit_graph_ops(huge, (torch.empty(1, 20_000, device="meta"),), {}, ("onnx-jit",))
    assert raised.value.view == "onnx-jit" and "GiB" in raised.value.message
    assert huge.weight.device.type == "meta"  # nothing was materialised


def test_the_module_gets_its_meta_tensors_back_after_a_jit_capture():
    import torch

    from atenlint.capture.graphs import jit_graph_ops

    with torch.device("meta"):
        model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4))
    ops = jit_graph_ops(model, (torch.empty(1, 3, 8, 8, device="meta"),), {}, ("jit", "onnx-jit"))
    assert {"aten::_convolution", "aten::batch_norm"} <= {op.op for op in ops}
    assert all(t.device.type == "meta" for t in list(model.parameters()) + list(model.buffers()))
