"""The analysis core end to end: editor buffers, huge files, coverage of helper classes."""

from __future__ import annotations

import os
import textwrap

from atenlint.config import SettingsResolver

MODEL = textwrap.dedent("""
    import torch
    import torch.nn as nn


    class Net(nn.Module):
        def forward(self, x):
            return torch.take(x, torch.tensor([0]))
""").lstrip()


def findings_for(engine, path, text=None):
    engine.resolver = SettingsResolver()
    capture = engine.capture(str(path), text=text)
    return engine.findings([capture])


def test_the_buffer_text_is_analysed_not_the_disk(engine, tmp_path):
    path = tmp_path / "model.py"
    path.write_text(MODEL)
    assert [f.code for f in findings_for(engine, path)] == ["MPS001"]
    unsaved = MODEL.replace("torch.take(x, torch.tensor([0]))", "x.relu()")
    assert findings_for(engine, path, text=unsaved) == []
    assert [f.code for f in findings_for(engine, path)] == ["MPS001"]  # the disk still has the old text


def test_a_ten_thousand_line_file(engine, tmp_path):
    filler = "".join(f"CONSTANT_{i} = {i}\n" for i in range(10_000 - 8))
    path = tmp_path / "huge.py"
    path.write_text(filler + MODEL)
    (finding,) = findings_for(engine, path)
    assert finding.range.start.line == 10_000 - 8 + 6


def test_helper_classes_used_by_a_built_model_are_not_reported_as_unbuildable(engine, tmp_path):
    path = tmp_path / "layers.py"
    path.write_text(textwrap.dedent("""
        import torch
        import torch.nn as nn


        class Block(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.lin = nn.Linear(width, width)

            def forward(self, x):
                return torch.special.ndtri(self.lin(x))


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.block = Block(8)

            def forward(self, x):
                return self.block(x)
    """).lstrip())
    assert [f.code for f in findings_for(engine, path)] == ["MPS001"]


def test_findings_in_files_outside_the_checked_one_are_located_there(engine, tmp_path):
    (tmp_path / "helpers.py").write_text("import torch\n\n\ndef gate(x):\n    return torch.heaviside(x, x)\n")
    (tmp_path / "model.py").write_text("import torch.nn as nn\nfrom helpers import gate\n\n\n"
                                       "class Net(nn.Module):\n    def forward(self, x):\n        return gate(x)\n")
    (finding,) = findings_for(engine, tmp_path / "model.py")
    assert os.path.basename(finding.abs_path) == "helpers.py" and finding.range.start.line == 4


def test_a_syntax_error_in_an_imported_file_is_placed_at_the_import(engine, tmp_path):
    (tmp_path / "broken_helper.py").write_text("x = 1\n\n\n\n\n\n\n\n\ndef f(:\n    pass\n")
    path = tmp_path / "uses_broken.py"
    path.write_text("import torch.nn as nn\nimport broken_helper\n\n\nclass Net(nn.Module):\n"
                    "    def forward(self, x):\n        return x\n")
    (finding,) = [f for f in findings_for(engine, path) if f.code == "ATL002"]
    assert finding.range.start.line == 1  # `import broken_helper`, not line 10 of the other file
