"""Code actions and encodings are pure functions of the diagnostic's data: no analysis."""

from __future__ import annotations

from lsprotocol import types

from atenlint.lsp import convert
from atenlint.sourcetext import Position, Range, SourceText

TEXT = "import torch\n\n\nclass Net(nn.Module):\n    def forward(self, x, i):\n        return torch.take(x, i)\n"


def test_ignore_comment_is_appended_or_merged():
    source = SourceText(TEXT)
    rng, text = convert.ignore_comment_edit(source, 5, ["aten::take"])
    assert (rng.start.character, rng.end.character, text) == (31, 31, "  # atenlint: ignore[aten::take]")
    merged_source = SourceText(TEXT.replace("(x, i)\n", "(x, i)  # atenlint: ignore[aten::mode]\n"))
    rng, text = convert.ignore_comment_edit(merged_source, 5, ["aten::take"])
    assert text == "# atenlint: ignore[aten::mode, aten::take]"


def test_project_ignore_edits_the_nearest_pyproject(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    path, rng, text = convert.ignore_in_project_edit(str(pkg / "m.py"), "mps", ["aten::take"])
    assert path == str(tmp_path / "pyproject.toml") and rng["start"]["line"] == 2
    assert text == '\n[tool.atenlint.ignore]\nmps = ["aten::take"]\n'
    (tmp_path / "pyproject.toml").write_text('[tool.atenlint.ignore]\nmps = ["aten::mode"]\n[other]\nx = 1\n')
    _, rng, text = convert.ignore_in_project_edit(str(pkg / "m.py"), "mps", ["aten::take"])
    assert rng["start"]["line"] == 1 and text == 'mps = ["aten::mode", "aten::take"]'


def test_project_ignore_never_edits_a_pyproject_above_the_workspace(tmp_path):
    from atenlint.findings import Finding

    (tmp_path / "pyproject.toml").write_text('[tool.atenlint]\ntargets = ["onnx"]\n')  # a parent project
    workspace = tmp_path / "ws"
    workspace.mkdir()
    module = workspace / "m.py"
    module.write_text(TEXT)
    finding = Finding(
        "m.py",
        Range(Position(5, 15), Position(5, 25)),
        "warning",
        "MPS001",
        "take falls back",
        target="mps",
        abs_path=str(module),
        ops=["aten::take"],
    )
    known = [(convert.diagnostic(finding, None, convert.Encoding()), convert.diagnostic_data(finding))]

    def titles(roots):
        actions = convert.code_actions(
            module.as_uri(), TEXT, [], ["quickfix"], convert.Encoding(), [], known[0][0].range, known, roots
        )
        return [a.title for a in actions if a.title.startswith("Ignore")]

    assert "Ignore aten::take for target mps in this project" in titles(())
    assert titles([str(workspace)]) == ["Ignore aten::take on this line"]


def test_factory_stub_goes_above_the_class_and_its_decorators():
    text = "import torch.nn as nn\n\n\n@register\nclass Net(nn.Module):\n    def __init__(self, dim, depth):\n"
    rng, stub = convert.factory_stub_edit(
        SourceText(text),
        {"range": Range(Position(4, 6), Position(4, 9)).as_json(), "class": "Net", "missing": ["dim", "depth"]},
    )
    assert rng.start.line == 3 and stub == "# atenlint: init=Net(dim=..., depth=...)\n"


def test_positions_convert_to_the_negotiated_encoding():
    source = SourceText('x = "𝛑"; torch.take(x, i)\n')
    rng = Range(Position(0, 10), Position(0, 26))  # UTF-16: 𝛑 is two units
    assert convert.Encoding("utf-16").to_client(rng, source).start.character == 10
    assert convert.Encoding("utf-8").to_client(rng, source).start.character == 12  # four bytes
    assert convert.Encoding("utf-32").to_client(rng, source).start.character == 9  # one code point
    assert convert.Encoding("utf-8").from_client(types.Position(0, 12), source).character == 10


def test_fix_all_takes_exact_rewrites_only_and_never_overlaps():
    source = SourceText(TEXT)
    edit = {"range": Range(Position(5, 15), Position(5, 31)).as_json(), "newText": "x.reshape(-1)[i]"}
    data = [
        {
            "fixes": [
                {"kind": "rewrite", "exact": True, "edits": [edit]},
                {"kind": "rewrite", "exact": True, "edits": [edit]},
            ]
        },
        {"fixes": [{"kind": "rewrite", "exact": False, "edits": [dict(edit, newText="approx")]}]},
    ]
    action = convert.fix_all_action("file:///m.py", source, data, convert.Encoding())
    (text_edit,) = action.edit.changes["file:///m.py"]
    assert text_edit.new_text == "x.reshape(-1)[i]" and action.kind == convert.FIX_ALL_KIND


def test_diagnostic_data_carries_what_code_actions_read_and_nothing_unset():
    from atenlint.findings import Finding

    finding = Finding(
        "m.py",
        Range(Position(4, 6), Position(4, 9)),
        "information",
        "ATL003",
        "not built",
        module="m.Net",
        abs_path="/w/m.py",
        data={"class": "Net", "key": "m.Net", "missing": ["dim"]},
    )
    data = convert.diagnostic_data(finding)
    assert (data["class"], data["key"], data["missing"], data["path"]) == ("Net", "m.Net", ["dim"], "/w/m.py")
    assert "config" not in data  # nothing sets it: no key a reader would wait for in vain
    [action] = [
        a
        for a in convert.code_actions(
            "file:///w/m.py",
            "class Net:\n" * 6,
            [],
            ["quickfix"],
            convert.Encoding(),
            [],
            types.Range(types.Position(4, 7), types.Position(4, 7)),
            [(convert.diagnostic(finding, None, convert.Encoding()), data)],
        )
        if a.title.startswith("Add a factory")
    ]
    [edit] = action.edit.changes["file:///w/m.py"]
    assert edit.new_text == "# atenlint: init=Net(dim=...)\n"


def test_one_uri_builder_for_protocol_and_session():
    from atenlint.lsp import session
    from atenlint.uris import path_uri

    assert path_uri("/w/My Model.py") == "file:///w/My%20Model.py"
    assert session.path_uri is path_uri
    assert convert.path_uri is path_uri


def test_encoding_names_from_the_client_are_read_once():
    assert convert.Encoding(types.PositionEncodingKind.Utf8).name == "utf-8"
    assert convert.Encoding("UTF-32").name == "utf-32"
    assert convert.Encoding("utf-7").name == "utf-16"  # not negotiable: LSP's default


def _fixable(path: str):
    from atenlint.findings import Finding

    rewrite = {
        "title": "Use gather",
        "kind": "rewrite",
        "exact": True,
        "edits": [{"range": Range(Position(5, 15), Position(5, 25)).as_json(), "newText": "torch.gather"}],
    }
    return Finding(
        "m.py",
        Range(Position(5, 15), Position(5, 25)),
        "warning",
        "MPS001",
        "take falls back",
        target="mps",
        abs_path=path,
        ops=["aten::take"],
        fixes=[rewrite],
    )


def test_quick_fix_edits_carry_the_version_they_were_computed_for(tmp_path):
    """A client that applies `documentChanges` rejects an edit whose version is not the
    buffer's: a fix computed before an unsaved edit never lands at stale positions."""
    module = tmp_path / "m.py"
    finding = _fixable(str(module))
    echoed = convert.diagnostic(finding, SourceText(TEXT), convert.Encoding(), version=3)
    assert echoed.data["version"] == 3

    def actions(versioned):
        return convert.code_actions(
            module.as_uri(), TEXT, [echoed], ["quickfix"], convert.Encoding(), [], echoed.range, [], (), versioned
        )

    for action in actions(True):
        assert action.edit.changes is None
        (change,) = [c for c in action.edit.document_changes if c.text_document.uri == module.as_uri()]
        assert change.text_document.version == 3  # the version of the text the finding was computed on
    fix = next(a for a in actions(True) if a.title == "Use gather")
    assert [e.new_text for e in fix.edit.document_changes[0].edits] == ["torch.gather"]
    # A client without `documentChanges` gets plain `changes`, as before.
    assert all(a.edit.document_changes is None and a.edit.changes for a in actions(False))


def test_edits_of_data_without_a_version_stay_plain_changes(tmp_path):
    module = tmp_path / "m.py"
    diagnostic = convert.diagnostic(_fixable(str(module)), SourceText(TEXT), convert.Encoding())
    assert diagnostic.data["version"] is None
    actions = convert.code_actions(
        module.as_uri(), TEXT, [diagnostic], ["quickfix"], convert.Encoding(), [], diagnostic.range, [], (), True
    )
    assert actions and all(a.edit.changes and a.edit.document_changes is None for a in actions)
