"""The static pass reads the source, never imports it, and replays each torch call
through TorchScript to see what it reaches."""

from __future__ import annotations

import os
import textwrap

from atenlint.capture.static import static_capture


def capture(tmp_path, source, files=None, module="model"):
    for name, text in (files or {}).items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    path = tmp_path / f"{module.replace('.', '/')}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source).lstrip())
    return static_capture({"path": str(path), "module": module, "roots": [str(tmp_path)], "devices": ["mps"]})


def ops_by_line(answer):
    out = {}
    for cls in answer["classes"]:
        for op in cls["ops"]:
            out.setdefault(op["sites"][0]["line"], set()).add(op["op"])
    return out


def test_aliases_literals_methods_and_submodules(tmp_path):
    answer = capture(
        tmp_path,
        """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        from torch import linalg

        class Net(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.pool = nn.AdaptiveAvgPool3d((2, 2, 2))
                self.global_pool = nn.AdaptiveAvgPool3d(1)
                self.lin = nn.Linear(width, width)

            def forward(self, x, v, i):
                a = linalg.svdvals(self.lin(x))
                b = F.interpolate(v, scale_factor=2.0, mode="trilinear")
                c = x.take(i)
                return a, b, c, self.pool(v), self.global_pool(v)
    """,
    )
    found = ops_by_line(answer)
    assert "aten::linalg_svdvals" in found[14]
    assert "aten::upsample_trilinear3d.vec" in found[15]
    assert not any("bicubic" in op or "bilinear" in op for op in found[15])
    assert "aten::take" in found[16]
    assert "aten::adaptive_avg_pool3d" in found[17]


def test_the_file_is_never_imported(tmp_path):
    canary = tmp_path / "canary.txt"
    answer = capture(
        tmp_path,
        f"""
        import torch
        import torch.nn as nn
        open({str(canary)!r}, "w").write("imported")

        class Net(nn.Module):
            def forward(self, x):
                return torch.heaviside(x, x)
    """,
    )
    assert not canary.exists()
    assert "aten::heaviside" in ops_by_line(answer)[7]


def test_calls_are_followed_into_other_project_files(tmp_path):
    answer = capture(
        tmp_path,
        """
        import torch.nn as nn
        from ..ops import gate
        from . import blocks

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.block = blocks.Residual()

            def forward(self, x):
                return gate(self.block(x))
    """,
        files={
            "pkg/__init__.py": "",
            "pkg/models/__init__.py": "",
            "pkg/ops.py": "import torch\n\ndef gate(x):\n    return torch.heaviside(x, x)\n",
            "pkg/models/blocks.py": "import torch\nimport torch.nn as nn\n\nclass Residual(nn.Module):\n"
            "    def forward(self, x):\n        return x + torch.frexp(x).mantissa\n",
        },
        module="pkg.models.net",
    )
    files = {(os.path.basename(op["sites"][0]["file"]), op["op"]) for cls in answer["classes"] for op in cls["ops"]}
    assert ("ops.py", "aten::heaviside") in files and ("blocks.py", "aten::frexp.Tensor") in files
