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
    reason="needs the exporters extra (onnxscript, executorch)",
)

COMMON_LAYERS = """
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
"""

FAILING = """
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
"""


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
    assert not any(
        op in ("aten::_safe_softmax", "aten::bitwise_and", "aten::_unsafe_view") for *_, ops in found for op in ops
    )


@needs_exporters
def test_a_device_backend_keeps_the_dispatcher_view(engine, tmp_path):
    source = """
        import torch
        import torch.nn as nn


        # atenlint: inputs=torch.randn(2, 3, 4, 8, 8)
        class Pool(nn.Module):
            def __init__(self):
                super().__init__()
                self.pool = nn.AdaptiveAvgPool3d((2, 2, 2))

            def forward(self, x):
                return self.pool(x)
    """
    found = _check(engine, tmp_path, source, ("mps", "onnx:17", "coreml"))
    by_target = {f.target: f for f in found}
    assert by_target["mps"].ops == ["aten::_adaptive_avg_pool3d"]  # what the dispatcher runs
    assert by_target["mps"].call == "self.pool"
    for target in ("onnx:17", "coreml"):  # what the trace records, if anything is rejected
        if target in by_target:
            assert by_target[target].ops == ["aten::adaptive_avg_pool3d"]


@needs_exporters
def test_executorch_sees_exports_own_decomposition(engine, tmp_path):
    source = """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F


        # atenlint: inputs=torch.randn(1, 3, 8, 8)
        class Resize(nn.Module):
            def forward(self, x):
                keep = F.interpolate(x, scale_factor=2.0, mode="bilinear")
                attn = F.scaled_dot_product_attention(x, x, x, dropout_p=0.0)
                return keep, attn
    """
    found = _check(engine, tmp_path, source, ("executorch",))
    # upsample_bilinear2d.vec is core ATen and kept; SDPA in eval never reaches bernoulli_.
    assert found == [], [f.message for f in found]


@needs_exporters
def test_a_library_op_is_judged_from_its_own_registrations(engine, tmp_path):
    source = """
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
    """
    found = _check(engine, tmp_path, source, ("onnx:17", "executorch"), name="custom_op_case.py")
    by_target = {f.target: f for f in found}
    assert by_target["onnx:17"].code == "ONNX001" and by_target["onnx:17"].ops == ["atenlint_probe::scale"]
    assert by_target["executorch"].code == "ET003" and by_target["executorch"].severity == "warning"
    assert by_target["executorch"].ops == ["atenlint_probe::scale"]


@needs_exporters
def test_a_traced_class_still_gets_a_torchscript_verdict(engine, tmp_path):
    source = """
        import torch
        import torch.nn as nn


        # atenlint: inputs=torch.randn(2, 4)
        class Dynamic(nn.Module):
            def forward(self, x):
                parts = {name: x * i for i, name in enumerate(["a", "b"])}
                return sum(parts.values())
    """
    found = _check(engine, tmp_path, source, ("torchscript", "onnx:17"))
    assert [f.code for f in found if f.target == "torchscript"] == ["TS001"]
    assert not [f for f in found if f.target == "onnx:17"]


@needs_exporters
def test_a_training_only_failure_keeps_the_eval_capture(engine, tmp_path):
    source = """
        import torch
        import torch.nn as nn


        # atenlint: inputs=torch.randn(1, 4)
        class OneSample(nn.Module):
            def __init__(self):
                super().__init__()
                self.bn = nn.BatchNorm1d(4)

            def forward(self, x):
                return torch.diff(self.bn(x), dim=-1)
    """
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


def test_a_data_dependent_guard_is_marked_as_the_exporters_own_failure(tmp_path):
    """torch.export traces with fake tensors whatever it is given, so a guard on a tensor's
    value fails for the real export exactly as for ours: the failure says so (and where);
    a graph that export can capture is not marked."""
    import torch

    from atenlint.capture.graphs import GraphFailure, export_graph_ops

    path = tmp_path / "guards_case.py"
    path.write_text(
        textwrap.dedent("""
        import torch


        class Guard(torch.nn.Module):
            def forward(self, x):
                if x.sum() > 0:
                    return x * 2
                return x


        class Fine(torch.nn.Module):
            def forward(self, x):
                return x.nonzero()
    """).lstrip()
    )
    spec = importlib.util.spec_from_file_location("guards_case", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(GraphFailure) as failed:
        export_graph_ops(module.Guard(), (torch.randn(4),), {}, ("export",))
    assert failed.value.toolchain_fails
    assert failed.value.as_json()["site"]["line"] == 6
    assert failed.value.as_json()["toolchain_fails"] is True
    ops = export_graph_ops(module.Fine(), (torch.randn(4),), {}, ("export",))
    assert "aten::nonzero" in {op.op for op in ops}


def test_a_plain_tensor_attribute_does_not_stop_the_export(tmp_path):
    """A tensor kept as a plain attribute, not a buffer (vit-pytorch's SimpleViT:
    `self.pos_embedding = posemb_sincos_2d(...)`), is a constant torch.export lifts as it
    finds it; the real export succeeds, so ours must too (a fake one of atenlint's own mode
    made it fail with "fake mode ... doesn't match mode"). The module keeps its meta tensor."""
    import torch

    from atenlint.capture.graphs import export_graph_ops
    from atenlint.capture.loader import build
    from support import load_module

    module = load_module(
        tmp_path,
        """
        import torch
        from torch import nn


        def posemb_sincos_2d(h, w, dim, temperature=10000):
            y, x = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
            omega = 1.0 / (temperature ** (torch.arange(dim // 4) / (dim // 4 - 1)))
            y = y.flatten()[:, None] * omega[None, :]
            x = x.flatten()[:, None] * omega[None, :]
            return torch.cat((x.sin(), x.cos(), y.sin(), y.cos()), dim=1).float()


        class SimpleViT(nn.Module):
            def __init__(self, dim=32):
                super().__init__()
                self.to_patch = nn.Conv2d(3, dim, 8, 8)
                self.pos_embedding = posemb_sincos_2d(4, 4, dim)
                self.head = nn.Linear(dim, 10)

            def forward(self, img):
                x = self.to_patch(img).flatten(2).transpose(1, 2)
                x = x + self.pos_embedding.to(x.device, dtype=x.dtype)
                return self.head(x.mean(dim=1))
        """,
        "plain_attribute_case",
    )
    model = build(module.SimpleViT, module, None)
    assert model.pos_embedding.device.type == "meta"
    ops = export_graph_ops(model, (torch.empty(2, 3, 32, 32, device="meta"),), {}, ("export", "executorch-export"))
    assert {"aten::convolution", "aten::add.Tensor", "aten::addmm"} <= {op.op for op in ops}
    assert {op.view for op in ops} == {"export", "executorch-export"}
    assert model.pos_embedding.device.type == "meta"  # restored


def test_export_views_of_a_scripted_class_never_take_the_attention_fast_path(tmp_path):
    """Without inputs the scripted graph holds both branches of MultiheadAttention; the
    native fast path is a branch torch.export never takes, so only the jit and dispatch
    views keep it."""
    from atenlint.capture.file_capture import capture_file

    path = tmp_path / "fast_path_case.py"
    path.write_text(
        textwrap.dedent("""
        import torch.nn as nn


        class Attention(nn.Module):
            def __init__(self):
                super().__init__()
                self.attn = nn.MultiheadAttention(16, 4, batch_first=True)

            def forward(self, x):
                return self.attn(x, x, x, need_weights=False)[0]
    """).lstrip()
    )
    answer = capture_file(
        {
            "path": str(path),
            "module": "fast_path_case",
            "roots": [str(tmp_path)],
            "overlays": {},
            "classes": {"Attention": {}},
            "infer_inputs": False,  # the scripted graph is what this is about
            "devices": ["cpu"],
            "views": ["dispatch", "jit", "export", "executorch-export", "onnx-export"],
        }
    )
    (cls,) = answer["classes"]
    fast = [e for e in cls["ops"] if e["op"] == "aten::_native_multi_head_attention"]
    assert fast, [e["op"] for e in cls["ops"]]
    for entry in fast:
        assert set(entry["trees"]) == {"dispatch", "jit"}
    assert any("executorch-export" in e["trees"] for e in cls["ops"])


def test_each_jit_view_is_its_converters_own_trace_and_chunk_is_canonicalised(monkeypatch):
    """coremltools converts `torch.jit.trace`'s graph, the TorchScript ONNX exporter its own
    trace: one trace each. Both run the fuser canonicalisation that the exporter's
    `_optimize_graph` runs before its ONNX passes, so an unpacked `chunk` is
    `prim::ConstantChunk` (exported at opset 9)."""
    import torch

    from atenlint.capture.graphs import jit_graph_ops

    class Gate(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(8, 8)

        def forward(self, x):
            a, b = self.lin(x).chunk(2, -1)
            return a * b.sigmoid()

    traces = []
    original_exporter, original_trace = torch.jit._get_trace_graph, torch.jit.trace

    def exporter_trace(*args, **kwargs):
        traces.append("onnx-jit")
        return original_exporter(*args, **kwargs)

    def jit_trace(*args, **kwargs):
        traces.append("jit")
        return original_trace(*args, **kwargs)

    monkeypatch.setattr(torch.jit, "_get_trace_graph", exporter_trace)
    monkeypatch.setattr(torch.jit, "trace", jit_trace)
    found = jit_graph_ops(Gate(), (torch.randn(2, 8),), {}, ("jit", "onnx-jit"))
    assert sorted(traces) == ["jit", "onnx-jit"]
    for view in ("jit", "onnx-jit"):
        ops = {op.op for op in found if op.view == view}
        assert {"aten::linear", "aten::sigmoid", "aten::mul"} <= ops, (view, ops)
        assert "aten::chunk" not in ops, (view, ops)


def _kernels_loaded() -> bool:
    return True  # constant, as torchvision's `_has_ops()` once its extension is loaded


def _checked_double(x):
    # torchvision's `nms` pattern: a scripted check whose failing branch never runs.
    if not _kernels_loaded():
        raise RuntimeError("kernels missing")
    return x * 2


def test_a_scripted_functions_constant_branch_is_folded_as_each_converter_folds_it():
    """A `@torch.jit._script_if_tracing` function (torchvision's `batched_nms` -> `nms` ->
    `_assert_has_ops()`) is recorded as a call whose body holds `if not _has_ops(): raise`.
    coremltools inlines the function's optimised graph (constants propagated: no
    `aten::__not__` left, which it has no translation for); the TorchScript ONNX exporter
    substitutes the compiled body, then its `_optimize_graph` propagates constants. Neither
    converter sees the dead branch, so neither view holds it."""
    import torch

    from atenlint.capture.graphs import jit_graph_ops

    checked = torch.jit._script_if_tracing(_checked_double)

    class Doubler(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x):
            return checked(self.lin(x)).relu()

    found = jit_graph_ops(Doubler(), (torch.randn(2, 4),), {}, ("jit", "onnx-jit"))
    for view in ("jit", "onnx-jit"):
        ops = {op.op for op in found if op.view == view}
        assert {"aten::linear", "aten::mul", "aten::relu"} <= ops, (view, ops)
        assert not {"aten::__not__", "prim::RaiseException"} & ops, (view, ops)


def test_the_coreml_view_matches_the_graph_coremltools_converts():
    """The jit view is what coremltools' own `_expand_and_optimize_ir` leaves of
    `torch.jit.trace`'s graph, op for op, on the scripted-function pattern."""
    pytest.importorskip("coremltools")
    import torch
    from coremltools.converters.mil.frontend.torch.torchscript_utils import _expand_and_optimize_ir

    from atenlint.capture.graphs import jit_graph_ops

    checked = torch.jit._script_if_tracing(_checked_double)

    class Doubler(torch.nn.Module):
        def forward(self, x):
            return checked(x).sigmoid()

    x = torch.randn(2, 4)
    graph, _, _ = _expand_and_optimize_ir(torch.jit.trace(Doubler(), (x,)))
    theirs = set()
    pending = list(graph.nodes())
    while pending:
        node = pending.pop()
        theirs.add(node.kind())
        pending += [inner for block in node.blocks() for inner in block.nodes()]
    ours = {op.op for op in jit_graph_ops(Doubler(), (x,), {}, ("jit",))}
    assert ours == {kind for kind in theirs if kind.startswith("aten::")}
    assert "aten::mul" in ours and "aten::__not__" not in ours


def test_both_jit_views_failing_at_one_user_line_run_the_untraced_forward_once(tmp_path):
    """Whisper's pattern: a size the trace records as a tensor passed where a bool is
    required fails torch.jit.trace itself, for coremltools and the ONNX exporter alike.
    Both views say the toolchain fails at the user's line; whether the untraced forward
    runs (what makes it the toolchain's failure) is asked once, not once per view."""
    import torch

    from atenlint.capture.graphs import GraphFailures, jit_graph_ops

    path = tmp_path / "causal_case.py"
    path.write_text(
        textwrap.dedent("""
        import torch


        class Causal(torch.nn.Module):
            calls = 0

            def forward(self, x):
                type(self).calls += 1
                return torch.nn.functional.scaled_dot_product_attention(x, x, x, is_causal=x.shape[1] > 1)
    """).lstrip()
    )
    spec = importlib.util.spec_from_file_location("causal_case", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = module.Causal()
    x = torch.randn(1, 4, 8)
    model(x)  # the forward itself runs
    module.Causal.calls = 0
    with pytest.raises(GraphFailures) as failed:
        jit_graph_ops(model, (x,), {}, ("jit", "onnx-jit"))
    records = [f.as_json() for f in failed.value.failures]
    assert sorted(r["view"] for r in records) == ["jit", "onnx-jit"]
    assert all(r["toolchain_fails"] and r["site"]["line"] == 9 for r in records)
    # Two traces (one per view), each calling forward once, and one untraced forward.
    assert module.Causal.calls == 3
