"""`# atenlint: inputs=...` read off forward's signature: type hints, tensor defaults,
documented shapes and the first layer's sizes; nothing for a signature that says nothing."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from atenlint.discover import outline
from atenlint.inputs_suggest import apply_suggestions, code_action_edit, suggest_inputs
from atenlint.sourcetext import SourceText

SOURCE = textwrap.dedent('''
    import torch
    from torch import nn, Tensor
    from jaxtyping import Float


    class Stem(nn.Module):
        def __init__(self, in_chans=3, width=16):
            super().__init__()
            self.conv = nn.Conv2d(in_chans, width, 3)

        def forward(self, images: Tensor) -> Tensor:
            return self.conv(images)


    class TokenHead(nn.Module):
        def __init__(self, vocab_size=1000):
            super().__init__()
            self.wte = nn.Embedding(vocab_size, 32)

        def forward(self, idx: torch.LongTensor, mask: Tensor = torch.ones(1, 8), scale: float = 1.0):
            return self.wte(idx)


    @torch.no_grad()
    class Patches(nn.Module):
        def forward(self, x: Float[Tensor, "batch 196 768"], step: int):
            return x


    class Documented(nn.Module):
        def forward(self, feats: torch.Tensor):
            """
            Args:
                feats: (B, N, 256) region features
            """
            return feats


    class Untyped(nn.Module):
        def forward(self, x, cache=None):
            return x
''')


def by_name():
    return {s.qualname: s for s in suggest_inputs(SOURCE)}


def test_inputs_come_from_hints_layers_defaults_and_docs():
    found = by_name()
    assert found["Stem"].expression == "torch.randn(1, 3, 32, 32)"  # Conv2d(in_chans=3): 4-D, 3 channels
    assert found["TokenHead"].expression == "torch.randint(0, 1000, (1, 16)), torch.ones(1, 8)"
    assert found["Patches"].expression == "torch.randn(1, 196, 768), 1"
    assert found["Documented"].expression == "torch.randn(1, 16, 256)"
    assert "Untyped" not in found  # nothing says what x is: no guess


def test_comments_go_above_decorators_and_parse_as_directives():
    rewritten = apply_suggestions(SOURCE, suggest_inputs(SOURCE))
    directives = {c.qualname: c.directives for c in outline(SourceText(rewritten, "m.py")).classes}
    assert directives["Stem"]["inputs"] == "torch.randn(1, 3, 32, 32)"
    assert directives["Patches"]["inputs"].startswith("torch.randn(1, 196, 768)")
    assert "@torch.no_grad()" in rewritten.split("# atenlint: inputs=torch.randn(1, 196, 768), 1\n")[1].split("\n")[0]
    stem_line = next(i for i, text in enumerate(rewritten.splitlines()) if text.startswith("class Stem"))
    assert code_action_edit(rewritten, stem_line) is None  # it has inputs now: no second comment


def test_code_action_on_the_class_or_forward_line():
    lines = SOURCE.splitlines()
    class_line = next(i for i, text in enumerate(lines) if text.startswith("class Stem"))
    forward_line = next(i for i, text in enumerate(lines) if "def forward(self, images" in text)
    title, line, text = code_action_edit(SOURCE, class_line)
    assert "Stem" in title and line == class_line and text == "# atenlint: inputs=torch.randn(1, 3, 32, 32)\n"
    assert code_action_edit(SOURCE, forward_line)[1] == class_line
    assert code_action_edit(SOURCE, class_line + 2) is None  # inside __init__: no lightbulb
    untyped_line = next(i for i, text in enumerate(lines) if text.startswith("class Untyped"))
    assert code_action_edit(SOURCE, untyped_line) is None


def test_add_inputs_writes_the_comments(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.atenlint.modules."m.Documented"]\ninputs = "torch.randn(2, 3, 256)"\n'
    )
    (tmp_path / "m.py").write_text(SOURCE)
    script = (
        "from atenlint.inputs_suggest import add_inputs_to_paths; from atenlint.config import SettingsResolver; "
        "print('\\n'.join(add_inputs_to_paths(['m.py'], SettingsResolver())))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, check=False, capture_output=True, text=True, timeout=60
    )
    written = (tmp_path / "m.py").read_text()
    assert "# atenlint: inputs=torch.randn(1, 3, 32, 32)\nclass Stem" in written
    assert "class Documented" in written and "inputs=torch.randn(1, 16, 256)" not in written  # configured already
    assert result.stdout.count("added `# atenlint: inputs=") == 3
