"""The TorchScript walk: call sites, specialisation, what library code really runs."""

from __future__ import annotations

import pytest
import torch

from atenlint.capture.script import ScriptFailure, script, script_ops
from support import load_module


def load(tmp_path, source, name="scripted_case"):
    return load_module(tmp_path, source, name)


def capture(module, cls="Net", devices=("mps",)):
    with torch.device("meta"):
        instance = getattr(module, cls)()
    return script_ops(script(instance), devices)


def user_ops(captured, phase=None):
    out = set()
    for op in captured.ops:
        if phase is not None and op.training != (phase == "train"):
            continue
        out.add((op.op, op.sites[0].line))
    return out


def test_untaken_interpolate_branches_vanish(tmp_path):
    module = load(
        tmp_path,
        """
        import torch.nn as nn
        import torch.nn.functional as F

        class Net(nn.Module):
            def forward(self, x):
                return F.interpolate(x, scale_factor=2.0, mode="bilinear")
    """,
    )
    names = {op.op for op in capture(module).ops}
    assert "aten::upsample_bilinear2d.vec" in names
    assert not {n for n in names if "bicubic" in n or "trilinear" in n or "nearest" in n or "adaptive" in n}


def test_training_branches_are_tagged(tmp_path):
    module = load(
        tmp_path,
        """
        import torch
        import torch.nn as nn

        class Net(nn.Module):
            def forward(self, x):
                if self.training:
                    x = torch.poisson(x)
                return x
    """,
    )
    captured = capture(module)
    assert ("aten::poisson", 7) in user_ops(captured, "train")
    assert ("aten::poisson", 7) not in user_ops(captured, "eval")


def test_device_checks_are_decided_for_the_target_device(tmp_path):
    module = load(
        tmp_path,
        """
        import torch
        import torch.nn as nn

        class Net(nn.Module):
            def forward(self, x):
                if x.is_cuda:
                    return torch.poisson(x)
                if x.device.type == "mps":
                    return torch.mode(x).values
                return x
    """,
    )
    mps = {op.op for op in capture(module, devices=("mps",)).ops}
    cuda = {op.op for op in capture(module, devices=("cuda",)).ops}
    assert "aten::mode" in mps and "aten::poisson" not in mps
    assert "aten::poisson" in cuda and "aten::mode" not in cuda


def test_embedding_renorm_dropped_by_the_compiler_is_recovered(tmp_path):
    module = load(
        tmp_path,
        """
        import torch.nn as nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.a = nn.Embedding(10, 4, max_norm=1.0)
                self.b = nn.Embedding(10, 4)

            def forward(self, i):
                return self.a(i) + self.b(i)
    """,
    )
    renorms = [op for op in capture(module).ops if op.op == "aten::embedding_renorm_"]
    assert renorms and {op.sites[0].line for op in renorms} == {10}
    assert {op.sites[0].col for op in renorms} == {15}


def test_library_branches_decided_at_run_time_are_conditional(tmp_path):
    module = load(
        tmp_path,
        """
        import torch.nn as nn
        import torch.nn.functional as F

        class Net(nn.Module):
            def forward(self, x):
                return F.interpolate(x, size=(3, 3), mode="area")
    """,
    )
    pools = {op.op: op.conditional for op in capture(module).ops if "adaptive_avg_pool" in op.op}
    assert pools == {
        "aten::adaptive_avg_pool1d": True,
        "aten::adaptive_avg_pool2d": True,
        "aten::adaptive_avg_pool3d": True,
    }


def test_script_failures_keep_message_and_caret(tmp_path):
    module = load(
        tmp_path,
        """
        import torch.nn as nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.act = lambda t: t * 2

            def forward(self, x):
                return self.act(x)
    """,
    )
    with torch.device("meta"):
        instance = module.Net()
    with pytest.raises(ScriptFailure) as failure:
        script(instance)
    site = failure.value.site
    assert site is not None and site.line == 9 and site.file.endswith("scripted_case.py")
    assert failure.value.message


def test_script_failure_text_is_the_same_every_run(tmp_path):
    """TorchScript quotes a function it cannot read by its repr, address included (the real
    models' transformers configs: `<function BertConfig.__init__ at 0x7f47cbe76e80>`); the
    finding must not differ between two runs of the same file."""
    module = load(
        tmp_path,
        """
        import torch.nn as nn

        generated = {"__name__": "generated"}
        exec("def helper(x):\\n    return x + 1\\n", generated)
        helper = generated["helper"]

        class Net(nn.Module):
            def forward(self, x):
                return helper(x)
    """,
    )
    with torch.device("meta"):
        instance = module.Net()
    with pytest.raises(ScriptFailure) as failure:
        script(instance)
    assert "<function helper>" in failure.value.message
    assert " at 0x" not in failure.value.message and " at 0x" not in failure.value.full_text


def test_script_failure_is_located_at_the_users_caret_not_the_last_frame(tmp_path):
    # The error is in the user's `_conv_forward`; the last frame of TorchScript's message is
    # torch's own `Conv2d.forward`, which called it.
    module = load(
        tmp_path,
        """
        import torch.nn as nn

        class MyConv(nn.Conv2d):
            def _conv_forward(self, input, weight, bias):
                return input.no_such_method(weight)

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = MyConv(3, 3, 3)

            def forward(self, x):
                return self.conv(x)
    """,
    )
    with torch.device("meta"):
        instance = module.Net()
    with pytest.raises(ScriptFailure) as failure:
        script(instance)
    site = failure.value.site
    assert "conv.py" in failure.value.full_text  # torch's frame is in the message ...
    assert site is not None and site.file.endswith("scripted_case.py") and site.line == 5  # ... not the site
    assert "no_such_method" in failure.value.message


def test_a_failure_with_no_frame_in_the_users_files_is_placed_at_the_users_class(tmp_path):
    # Every frame of TorchScript's message is torch's conv.py (`Conv2d.forward` compiled for
    # the user's subclass, whose float strides conv2d refuses): the site is the user's class
    # that was being compiled, for the model holding it too, never a line of torch.
    module = load(
        tmp_path,
        """
        import torch.nn as nn

        class MyConv(nn.Conv2d):
            def __init__(self):
                super().__init__(3, 4, 3)
                self.stride = [1.0, 1.0]

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = MyConv()

            def forward(self, x):
                return self.conv(x)
    """,
    )
    for name in ("MyConv", "Net"):
        with torch.device("meta"):
            instance = getattr(module, name)()
        with pytest.raises(ScriptFailure) as failure:
            script(instance)
        site = failure.value.site
        assert "conv.py" in failure.value.full_text and "scripted_case.py" not in failure.value.full_text
        assert site is not None and site.file.endswith("scripted_case.py"), name
        assert (site.line, site.col, site.end_col) == (3, 0, len("class MyConv")), name


def test_a_quantized_tensor_branch_is_not_taken_by_a_float_model(tmp_path):
    module = load(
        tmp_path,
        """
        import torch
        import torch.nn as nn

        def boxes_of(x: torch.Tensor) -> torch.Tensor:
            if x.is_quantized:
                return x.int_repr()
            return x.relu()

        class Net(nn.Module):
            def forward(self, x):
                return boxes_of(x)
    """,
    )
    found = {op.op for op in capture(module, devices=("cpu",)).ops}
    assert "aten::relu" in found and not any("int_repr" in op for op in found)
