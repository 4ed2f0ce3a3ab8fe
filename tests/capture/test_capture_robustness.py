"""Classes that used to be lost to a crash: a TorchScript class held as an attribute
(torchvision's BoxCoder), and an explicit composite run on a tensor `forward` makes on
the CPU (RAFT's `.float()`), which segfaulted the worker."""

from __future__ import annotations

import textwrap

from atenlint.config import SettingsResolver
from torch_facts import with_mps_missing


def _check(engine, tmp_path, source, targets, name):
    """`source` may call `MISSING(x)`: an op with no MPS kernel in the installed torch
    (torch_facts), whose finding shows that the class was analysed."""
    path = tmp_path / name
    source = with_mps_missing(textwrap.dedent(source).lstrip())
    path.write_text(source)
    engine.resolver = SettingsResolver(overrides={"targets": targets})
    return engine.check_paths([str(path)], jobs=1)


def test_a_torchscript_class_attribute_is_not_walked_as_a_module(engine, tmp_path):
    report = _check(
        engine,
        tmp_path,
        """
        import torch
        import torch.nn as nn


        @torch.jit.script
        class Coder:
            def __init__(self, weight: float):
                self.weight = weight

            def encode(self, x: torch.Tensor) -> torch.Tensor:
                return x * self.weight


        class Boxes(nn.Module):
            def __init__(self):
                super().__init__()
                self.coder = Coder(2.0)

            def forward(self, x):
                return MISSING(self.coder.encode(x))
    """,
        ("mps",),
        "script_class_case.py",
    )
    codes = [f.code for f in report.findings]
    assert "ATL099" not in codes and "ATL006" not in codes, [f.message for f in report.findings]
    assert "MPS001" in codes  # the class was analysed: the op without an MPS kernel is still found


def test_a_cpu_tensor_made_in_forward_does_not_crash_the_worker(engine, tmp_path):
    report = _check(
        engine,
        tmp_path,
        """
        import torch
        import torch.nn as nn


        # atenlint: inputs=torch.randn(2, 3)
        class Grid(nn.Module):
            def forward(self, x):
                coords = torch.arange(3, device="cpu").float()
                return MISSING(x) + coords.sum()
    """,
        ("mps", "onnx:17"),
        "cpu_tensor_case.py",
    )
    codes = [f.code for f in report.findings]
    assert "ATL006" not in codes and "ATL099" not in codes, [f.message for f in report.findings]
    assert "MPS001" in codes
