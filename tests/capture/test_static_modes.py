"""The source pass evaluates the model as a deployment toolchain sees it: `self.training`
passed on to a helper, an argument chosen by the mode, `torch.jit.is_scripting()` /
`is_tracing()` as each toolchain sees them, `is_quantized` false for float models; and the
trace toolchains' view of a call (what `torch.jit.trace` records, coremltools' and the ONNX
exporter's `chunk` canonicalisation)."""

from __future__ import annotations

import textwrap

from atenlint.capture.static import static_capture

VIEWS = ["dispatch", "executorch-export", "jit", "onnx-jit"]


def capture(tmp_path, source, module="model"):
    path = tmp_path / f"{module}.py"
    path.write_text(textwrap.dedent(source).lstrip())
    return static_capture(
        {"path": str(path), "module": module, "roots": [str(tmp_path)], "devices": ["cpu"], "views": VIEWS}
    )


def entries_at(answer, line):
    return [op for cls in answer["classes"] for op in cls["ops"] if op["sites"][0]["line"] == line]


def phases_of(entries, prefix):
    return {phase for op in entries if op["op"].startswith(prefix) for phase in op["phases"]}


def tree_ops(tree):
    yield tree["op"]
    for child in tree.get("calls") or ():
        yield from tree_ops(child)


def test_training_passed_to_a_helper_decides_its_branches(tmp_path):
    # timm's DropPath: the mode reaches the helper as an argument.
    answer = capture(
        tmp_path,
        """
        import torch
        from torch import nn

        def drop_path(x, drop_prob: float = 0.0, training: bool = False):
            if drop_prob == 0.0 or not training:
                return x
            keep = x.new_empty((x.shape[0], 1)).bernoulli_(1 - drop_prob)
            return x * keep

        class DropPath(nn.Module):
            def __init__(self, p):
                super().__init__()
                self.p = p

            def forward(self, x):
                return drop_path(x, self.p, self.training)
        """,
    )
    line = entries_at(answer, 7)
    assert phases_of(line, "aten::bernoulli") == {"train"}  # device targets still see it
    assert phases_of(line, "aten::new_empty") == {"train"}


def test_an_argument_chosen_by_the_mode_is_replayed_per_mode(tmp_path):
    # nanoGPT: dropout only while training; the eval call has dropout_p=0.
    answer = capture(
        tmp_path,
        """
        import torch.nn.functional as F
        from torch import nn

        class Attention(nn.Module):
            def __init__(self, dropout):
                super().__init__()
                self.dropout = dropout

            def forward(self, q, k, v):
                return F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout if self.training else 0)
        """,
    )
    entries = entries_at(answer, 10)
    evals = [op for op in entries if op["phases"] == ["eval"]]
    assert evals and all(op["op"] == "aten::scaled_dot_product_attention" for op in evals)
    exported = {name for op in evals for name in tree_ops(op["trees"]["executorch-export"])}
    assert not any("bernoulli" in name or "dropout" in name for name in exported), exported
    trained = [op for op in entries if "train" in op["phases"]]
    assert trained  # the training call (unknown dropout_p) is still captured for device targets


def test_scripting_tracing_and_quantized_tests(tmp_path):
    answer = capture(
        tmp_path,
        """
        import torch
        from torch import nn

        class Net(nn.Module):
            def forward(self, x: torch.Tensor):
                if torch.jit.is_scripting():
                    x = x.cumprod(0)
                if x.is_quantized:
                    x = x.int_repr()
                if torch.jit.is_tracing():
                    x = x.logcumsumexp(0)
                else:
                    x = x.cummax(0)[0]
                return x
        """,
    )
    assert entries_at(answer, 7) == []  # is_scripting(): no toolchain that judges ops compiles
    assert entries_at(answer, 9) == []  # a float model is never quantized
    [traced] = [op for op in entries_at(answer, 11) if op["op"].startswith("aten::logcumsumexp")]
    assert set(traced["trees"]) == {"jit", "onnx-jit"}
    eager = [op for op in entries_at(answer, 13) if op["op"].startswith("aten::cummax")]
    assert eager and all(set(op["trees"]) == {"dispatch", "executorch-export"} for op in eager)


def test_trace_views_see_what_the_trace_records(tmp_path):
    answer = capture(
        tmp_path,
        """
        import torch.nn.functional as F
        from torch import nn

        class Up(nn.Module):
            def forward(self, x, w):
                a, b = x.chunk(2, dim=1)
                return F.conv_transpose2d(a * b, w, stride=2)
        """,
    )
    [chunk] = [op for op in entries_at(answer, 6) if op["op"].startswith("aten::chunk")]
    # canonicalised to prim::ConstantChunk by coremltools and the ONNX exporter: nothing to judge
    assert chunk["trees"]["jit"] == {"op": chunk["op"], "calls": [], "via": "trace"}
    [conv] = [op for op in entries_at(answer, 7) if op["op"].startswith("aten::conv_transpose2d")]
    assert conv["trees"]["jit"]["via"] == "trace"
    assert [c["op"] for c in conv["trees"]["jit"]["calls"]] == ["aten::_convolution"]
    assert conv["trees"]["dispatch"]["op"].startswith("aten::conv_transpose2d")  # other views unchanged
