"""What keeps a code action cheap (issue 22: an editor asks at every cursor move) without
changing its answer: the server's own diagnostics are converted once per served result, and
the example-inputs action parses the buffer only on the lines it can answer on."""

from __future__ import annotations

import asyncio
import os

import pytest
from fake_engine import FakeEngine
from pull_client import ENCODER, FIXED, write
from session_support import make_session, settle

from atenlint.inputs_suggest import code_action_edit
from atenlint.lsp import convert
from atenlint.lsp import server as lsp_server
from atenlint.lsp.settings import EditorSettings
from atenlint.uris import path_uri

# Classes in the shapes a header can take: decorated (one- and multi-line decorators),
# nested, a multi-line `class` statement, an async and a decorated `forward`.
SHAPES = """\
import functools

import torch
import torch.nn as nn


def tagged(cls):
    return cls


@tagged
class Plain(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x)


class Outer:
    @functools.lru_cache(
        maxsize=None,
    )
    def helper(self):
        return 1

    class Inner(
        nn.Module,
    ):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3)

        @torch.no_grad()
        def forward(self, images, scale=2.0):
            return self.conv(images) * scale


class Streaming(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(16)

    async def forward(self, tokens):
        return self.norm(tokens)
"""


def test_the_inputs_action_is_offered_only_on_lines_the_cheap_test_lets_through():
    """Every line `code_action_edit` answers on passes the pre-test; the pre-test is not
    vacuous (the file does have such lines, and most lines are skipped without a parse)."""
    lines = SHAPES.split("\n")
    answered = [n for n in range(len(lines)) if code_action_edit(SHAPES, n) is not None]
    passed = [n for n, text in enumerate(lines) if lsp_server._INPUTS_ACTION_LINE.match(text)]
    assert answered, "the sample must have lines with an inputs action"
    assert set(answered) <= set(passed)
    assert len(passed) < len(lines) // 3


def test_known_diagnostics_are_converted_once_per_served_result(tmp_path):
    path = str(tmp_path / "a.py")
    write(path, ENCODER)
    uri = path_uri(path)

    async def scenario():
        session, _ = make_session(FakeEngine(), EditorSettings(), [str(tmp_path)])
        ls = lsp_server.AtenlintServer()
        ls._session = session
        try:
            session.open(uri, path, 1, ENCODER)
            await settle(session)
            first = lsp_server._known_diagnostics(ls, path, uri, ENCODER)
            again = lsp_server._known_diagnostics(ls, path, uri, ENCODER)
            unsaved = lsp_server._known_diagnostics(ls, path, uri, "# an unsaved edit\n" + ENCODER)
            write(path, FIXED)
            session.change(uri, 2, FIXED)
            session.save(uri)
            await settle(session)
            fixed = lsp_server._known_diagnostics(ls, path, uri, FIXED)
            return first, again, unsaved, fixed
        finally:
            session.shutdown()

    first, again, unsaved, fixed = asyncio.run(scenario())
    assert [d.code for d, _ in first] == ["MPS001"]
    assert first == again and all(a[0] is b[0] for a, b in zip(first, again, strict=True))  # not converted again
    assert unsaved == []  # positions of another text are stale: only echoed diagnostics carry fixes
    assert fixed == []  # a new served result is converted anew


@pytest.mark.parametrize("line_text", ["class A(nn.Module):", "    @decorator", "  async  def  forward(self, x):"])
def test_the_pre_test_lets_header_lines_through(line_text):
    assert lsp_server._INPUTS_ACTION_LINE.match(line_text)


@pytest.mark.parametrize("line_text", ["x = 1  # class", "    def forwarder(self):", "    return forward(x)"])
def test_the_pre_test_stops_other_lines(line_text):
    assert not lsp_server._INPUTS_ACTION_LINE.match(line_text)


def test_a_closed_file_leaves_no_converted_diagnostics_behind(tmp_path):
    path = os.path.join(str(tmp_path), "a.py")
    ls = lsp_server.AtenlintServer()
    ls.known[path] = (("result id", "utf-16", "text"), [])
    ls.known["/elsewhere/b.py"] = (("result id", "utf-16", "text"), [])
    lsp_server._forget_known(ls, path_uri(path))
    assert list(ls.known) == ["/elsewhere/b.py"]


def test_the_ignore_in_project_edit_is_kept_until_a_file_it_was_read_from_changes(tmp_path):
    """Kept between requests (it parses and rewrites the TOML), recomputed when the
    pyproject.toml changes or a nearer project root appears."""
    root = str(tmp_path)
    write(os.path.join(root, "pyproject.toml"), '[tool.atenlint]\ntargets = ["mps"]\n')
    package = os.path.join(root, "pkg")
    os.makedirs(package)
    source = os.path.join(package, "model.py")
    write(source, ENCODER)

    def edit():
        return convert.ignore_in_project_edit(source, "mps", ["aten::special_ndtri.out"], [root])

    first = edit()
    assert first is not None and first[0] == os.path.join(root, "pyproject.toml")
    assert edit() == first
    write(os.path.join(root, "pyproject.toml"), '# settings\n[tool.atenlint]\ntargets = ["mps"]\n')
    moved = edit()
    assert moved is not None and moved[1] != first[1]  # the new text's positions
    write(os.path.join(package, "pyproject.toml"), '[project]\nname = "pkg"\n')  # a nearer project root
    nearer = edit()
    assert nearer is not None and nearer[0] == os.path.join(package, "pyproject.toml")
