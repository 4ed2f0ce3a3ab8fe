"""Quick fixes never edit what they should not (issue 21): a fix's other file comes from an
analysis of untrusted code (or from data the client echoes), so the editor is offered an
edit only of files inside the workspace folders, reached without a link that leaves them,
and regular; fix-all edits only its own document. Pure functions: no analysis."""

from __future__ import annotations

import os

from atenlint.findings import Finding
from atenlint.lsp import convert
from atenlint.sourcetext import Position, Range, SourceText

TEXT = "import torch\n\n\nclass Net(nn.Module):\n    def forward(self, x, i):\n        return torch.take(x, i)\n"
HERE = Range(Position(5, 15), Position(5, 25))


def _finding(module, other):
    """A take() finding whose preferred fix also edits `other` (as a helper's fix does)."""
    fix = {
        "title": "Use gather",
        "kind": "rewrite",
        "exact": True,
        "edits": [{"range": HERE.as_json(), "newText": "torch.gather"}],
    }
    if other is not None:
        fix["edits"].append(
            {"range": Range(Position(0, 0), Position(0, 0)).as_json(), "newText": "#\n", "path": str(other)}
        )
    return Finding(
        "m.py",
        HERE,
        "warning",
        "MPS001",
        "take falls back",
        target="mps",
        abs_path=str(module),
        ops=["aten::take"],
        fixes=[fix],
    )


def _titles(module, other, roots, only=("quickfix",)):
    finding = _finding(module, other)
    diagnostic = convert.diagnostic(finding, SourceText(TEXT), convert.Encoding())
    actions = convert.code_actions(
        module.as_uri(), TEXT, [diagnostic], list(only), convert.Encoding(), [diagnostic.data], HERE, [], roots
    )
    return [a.title for a in actions]


def _workspace(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    module = workspace / "m.py"
    module.write_text(TEXT)
    return workspace, module


def test_a_fix_that_edits_a_file_inside_the_workspace_is_offered(tmp_path):
    workspace, module = _workspace(tmp_path)
    helper = workspace / "helper.py"
    helper.write_text("x = 1\n")
    assert "Use gather" in _titles(module, helper, [str(workspace)])


def test_a_fix_that_edits_a_file_outside_the_workspace_is_not(tmp_path):
    workspace, module = _workspace(tmp_path)
    outside = tmp_path / "elsewhere.py"
    outside.write_text("x = 1\n")
    titles = _titles(module, outside, [str(workspace)])
    assert "Use gather" not in titles
    assert "Ignore aten::take on this line" in titles  # the document's own edits stay offered


def test_nor_one_through_a_link_that_leaves_the_workspace(tmp_path):
    workspace, module = _workspace(tmp_path)
    outside = tmp_path / "secret.py"
    outside.write_text("x = 1\n")
    link = workspace / "helper.py"
    os.symlink(outside, link)
    assert "Use gather" not in _titles(module, link, [str(workspace)])


def test_nor_one_of_a_file_that_is_not_a_regular_file(tmp_path):
    workspace, module = _workspace(tmp_path)
    fifo = workspace / "helper.py"
    os.mkfifo(fifo)
    assert "Use gather" not in _titles(module, fifo, [str(workspace)])
    assert "Use gather" not in _titles(module, workspace / "missing.py", [str(workspace)])


def test_without_workspace_folders_the_documents_project_bounds_its_fixes(tmp_path):
    workspace, module = _workspace(tmp_path)
    (workspace / "pyproject.toml").write_text('[project]\nname = "m"\n')
    inside = workspace / "helper.py"
    inside.write_text("x = 1\n")
    outside = tmp_path / "elsewhere.py"
    outside.write_text("x = 1\n")
    assert "Use gather" in _titles(module, inside, [])
    assert "Use gather" not in _titles(module, outside, [])


def test_fix_all_edits_only_its_own_document(tmp_path):
    """A fix that also edits another file is never folded into this document's fix-all
    (its other file's ranges would land in this text)."""
    workspace, module = _workspace(tmp_path)
    helper = workspace / "helper.py"
    helper.write_text("x = 1\n")
    assert "atenlint: apply every exact fix" not in _titles(module, helper, [str(workspace)], ("source.fixAll",))
    assert "atenlint: apply every exact fix" in _titles(module, None, [str(workspace)], ("source.fixAll",))
