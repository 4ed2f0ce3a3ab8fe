"""The compile view without inputs (capture/compile_static.py): only breaks the source shows
for certain, each at its own line, decided by the installed Dynamo's own config."""

from __future__ import annotations

import textwrap

import torch._dynamo.config as dynamo_config

from atenlint.capture.compile_static import file_breaks

SOURCE = textwrap.dedent(
    """
    import torch


    @torch.compiler.disable
    def island(x):
        return x


    class Model(torch.nn.Module):
        def helper(self, y):
            if not torch.compiler.is_compiling():
                print("never traced")
            return y.tolist()

        def unused(self, y):
            print("not called from forward")

        def forward(self, x):
            if x.shape[0] > 1:  # a size, not a value: no break
                x = x + 1
            if (x - 1).abs().max() > 0:
                x = x * 2
            n = x.sum().item()
            a = x.numpy()
            return island(x) + self.helper(x)[0] + n

        class Inner(torch.nn.Module):
            def forward(self, x):
                print(x)
                return x
    """
).lstrip()


def _lines(text):
    return next(number for number, line in enumerate(SOURCE.splitlines(), 1) if text in line)


def test_certain_breaks_at_their_lines_and_nothing_else():
    model, inner, missing = file_breaks("/p/model.py", SOURCE, ["Model", "Model.Inner", "Gone"])
    assert model["source"] is True
    found = sorted((b["site"]["line"], b["reason"].split(":")[0]) for b in model["breaks"])
    expected = [
        (_lines("(x - 1).abs().max()"), "branch"),
        (_lines("x.sum().item()"), "item"),
        (_lines("return island(x)"), "disabled"),
        (_lines("return y.tolist()"), "tolist"),
    ]
    if not dynamo_config.trace_numpy:  # the installed Dynamo decides whether .numpy() breaks
        expected.append((_lines("x.numpy()"), "numpy"))
    assert found == sorted(expected)
    assert [b["site"]["line"] for b in inner["breaks"]] == [_lines("print(x)")]
    assert missing == {"breaks": [], "source": True}


def test_exact_columns_for_the_editor():
    (model,) = file_breaks("/p/model.py", SOURCE, ["Model"])
    item = next(b for b in model["breaks"] if b["reason"].startswith("item"))
    line = SOURCE.splitlines()[item["site"]["line"] - 1]
    assert line[item["site"]["col"] : item["site"]["end_col"]] == "x.sum().item()"


def test_a_file_python_cannot_parse_gives_no_breaks():
    assert file_breaks("/p/bad.py", "class Model(:\n", ["Model"]) == [{"breaks": [], "source": True}]


FRAMES = textwrap.dedent(
    """
    import torch


    class Model(torch.nn.Module):
        def scale(self, h):
            return h / h.abs().max().item()

        def forward(self, x):
            if self.training:
                print("training only")
            else:
                x = x + 1
            if not self.training:
                print("eval: traced")
            try:
                n = x.sum().item()
            except RuntimeError:
                n = 0
            for _ in range(2):
                m = x.mean().item()
                print("in a loop")
                x = self.scale(x)
            return x * n * m
    """
).lstrip()


def test_eval_mode_branches_and_frames_dynamo_skips():
    """Read in eval mode, as the compile view runs the class: `if self.training:` is not
    taken. A `.item()` in a loop or `try` body makes Dynamo skip the frame (no break recorded,
    fullgraph=True captures the value): not reported; a print there still breaks, and a
    method called there is a frame of its own."""
    (model,) = file_breaks("/p/model.py", FRAMES, ["Model"])
    found = sorted((b["site"]["line"], b["reason"].split(":")[0]) for b in model["breaks"])
    assert found == sorted(
        [
            (_line_of(FRAMES, 'print("eval: traced")'), "print"),
            (_line_of(FRAMES, 'print("in a loop")'), "print"),
            (_line_of(FRAMES, "h.abs().max().item()"), "item"),
        ]
    )


def _line_of(source, text):
    return next(number for number, line in enumerate(source.splitlines(), 1) if text in line)
