"""The "ignore in this project" edit: tomlkit, format-preserving, and only in the file the
settings resolver reads for that source file (or the project root's pyproject.toml, where it
starts the table on purpose). Every case applies the edit and reads the settings back."""

from __future__ import annotations

import textwrap

import pytest
import tomllib

from atenlint.config import SettingsResolver
from atenlint.lsp import convert
from atenlint.pyproject_edit import ignore_ops_edit
from atenlint.sourcetext import Range


def applied(text: str, rng: Range, new_text: str) -> str:
    """The text with the edit applied, positions read as LSP reads them (UTF-16 columns)."""
    lines = text.split("\n")

    def offset(line: int, character: int) -> int:
        head = sum(len(part) + 1 for part in lines[:line])
        units = lines[line].encode("utf-16-le")[: character * 2] if line < len(lines) else b""
        return head + len(units.decode("utf-16-le"))

    return (
        text[: offset(rng.start.line, rng.start.character)] + new_text + text[offset(rng.end.line, rng.end.character) :]
    )


def write(root, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), newline="")


def edit_and_apply(source, target="mps", ops=("aten::take",), roots=()):
    """(the edited pyproject's path, its new text, the settings for `source` before and after)."""
    before = SettingsResolver(workspace_roots=list(roots)).for_file(str(source))
    edit = ignore_ops_edit(str(source), target, list(ops), roots)
    assert edit is not None
    with open(edit.path, encoding="utf-8", newline="") as handle:
        old = handle.read()
    new = applied(old, edit.range, edit.new_text)
    with open(edit.path, "w", encoding="utf-8", newline="") as handle:
        handle.write(new)
    after = SettingsResolver(workspace_roots=list(roots)).for_file(str(source))
    return edit, new, before, after


def assert_only_ignore_changed(before, after, target, ops):
    assert after.targets == before.targets and after.timeout == before.timeout
    assert after.modules.keys() == before.modules.keys() and after.severity == before.severity
    assert after.config_path is not None
    assert set(ops) <= after.ignore[target]
    assert all(before.ignore.get(k, frozenset()) <= v for k, v in after.ignore.items())


@pytest.mark.parametrize(
    "text, expected",
    [
        # An inline table gains a key and stays one valid line; the comment after it stays.
        (
            '[tool.atenlint]\ntargets = ["mps"]\nignore = {onnx = ["aten::mode"]}  # why\n',
            'ignore = {onnx = ["aten::mode"], mps = ["aten::take"]}  # why',
        ),
        # A list inside an inline table grows in place, spacing kept.
        ('[tool.atenlint]\nignore = { mps = ["aten::mode"] }\n', 'ignore = { mps = ["aten::mode", "aten::take"] }'),
        # Dotted keys stay dotted.
        ('[tool.atenlint]\nignore.mps = ["aten::mode"] # c\n', 'ignore.mps = ["aten::mode", "aten::take"] # c'),
        # The whole atenlint table inline.
        (
            '[tool]\natenlint = {targets = ["mps"]}  # c\n',
            'atenlint = {targets = ["mps"], ignore = {mps = ["aten::take"]}}  # c',
        ),
        # An existing [tool.atenlint.ignore] table, with comments and a following table.
        (
            '[tool.atenlint]\ntargets = ["mps"]\n\n[tool.atenlint.ignore]\n# keep this\nonnx = ["x"]\n\n[other]\nx = 1\n',
            '# keep this\nonnx = ["x"]\nmps = ["aten::take"]\n\n[other]',
        ),
        # A multi-line list with a trailing comma and comments.
        ('[tool.atenlint.ignore]\nmps = [\n    "aten::mode",  # slow\n]\n', '"aten::mode",  # slow'),
        # The whole table written as a dotted key at top level.
        ('tool.atenlint.targets = ["mps"]\n', 'tool.atenlint.targets = ["mps"]\n'),
        # A sub-table already there (modules) and no ignore: a new table after it.
        (
            '[tool.atenlint]\ntargets = ["mps"]\n\n[tool.atenlint.modules."m.Net"]\ninit = "Net()"\n',
            '[tool.atenlint.modules."m.Net"]\ninit = "Net()"',
        ),
    ],
)
def test_every_toml_shape_stays_valid_and_keeps_what_the_user_wrote(tmp_path, text, expected):
    write(tmp_path, {"pyproject.toml": text, "m.py": ""})
    edit, new, before, after = edit_and_apply(tmp_path / "m.py")
    assert edit.path == str(tmp_path / "pyproject.toml") and not edit.creates_table
    assert expected in new
    tomllib.loads(new)  # valid TOML: no ATL010 for every file after the fix
    assert_only_ignore_changed(before, after, "mps", ["aten::take"])
    for line in text.splitlines():
        if "#" in line:
            assert line.split("#", 1)[1] in new  # comments kept


def test_ops_already_ignored_give_no_edit_and_new_ones_are_appended_once(tmp_path):
    write(tmp_path, {"pyproject.toml": '[tool.atenlint]\nignore = {mps = ["aten::take"]}\n', "m.py": ""})
    assert ignore_ops_edit(str(tmp_path / "m.py"), "mps", ["aten::take"]) is None
    _, new, _, after = edit_and_apply(tmp_path / "m.py", ops=("aten::take", "aten::mode", "aten::mode"))
    assert new.count("aten::mode") == 1 and after.ignore["mps"] == {"aten::take", "aten::mode"}


def test_monorepo_edits_the_table_the_files_settings_come_from(tmp_path):
    # The repository's [tool.atenlint] applies to packages without their own pyproject.toml;
    # a package with its own pyproject.toml is its own project (issue 12), with defaults.
    write(
        tmp_path,
        {
            ".git/HEAD": "ref: refs/heads/main\n",
            "pyproject.toml": '[project]\nname = "mono"\n\n[tool.atenlint]\ntargets = ["onnx"]\n',
            "packages/a/src/a/m.py": "",
            "packages/b/pyproject.toml": '[project]\nname = "b"\n',
            "packages/b/m.py": "",
        },
    )
    edit, new, before, after = edit_and_apply(tmp_path / "packages/a/src/a/m.py", target="onnx")
    assert edit.path == str(tmp_path / "pyproject.toml") and not edit.creates_table
    assert new.endswith('targets = ["onnx"]\n\n[tool.atenlint.ignore]\nonnx = ["aten::take"]\n')
    assert before.targets == after.targets == ("onnx",)
    assert (tmp_path / "packages/b/pyproject.toml").read_text() == '[project]\nname = "b"\n'
    assert_only_ignore_changed(before, after, "onnx", ["aten::take"])
    # Package b: its own pyproject.toml is its project's, so the table is started there, on purpose.
    edit, _, before, after = edit_and_apply(tmp_path / "packages/b/m.py")
    assert edit.path == str(tmp_path / "packages/b/pyproject.toml") and edit.creates_table
    assert before.targets == after.targets == ("mps",)
    assert 'targets = ["onnx"]' in (tmp_path / "pyproject.toml").read_text()


def test_no_edit_outside_the_project_or_the_workspace_folder(tmp_path):
    # A project marked by setup.py has no pyproject.toml to edit: the parent's is not its settings.
    write(tmp_path, {"pyproject.toml": '[tool.atenlint]\ntargets = ["onnx"]\n', "tool/setup.py": "", "tool/m.py": ""})
    assert ignore_ops_edit(str(tmp_path / "tool" / "m.py"), "onnx", ["aten::take"]) is None
    # A workspace folder without markers is the root: a pyproject.toml above it is never edited.
    write(tmp_path, {"ws/sub/m.py": ""})
    source = str(tmp_path / "ws" / "sub" / "m.py")
    assert ignore_ops_edit(source, "onnx", ["aten::take"], [str(tmp_path / "ws")]) is None
    assert ignore_ops_edit(source, "onnx", ["aten::take"]).path == str(tmp_path / "pyproject.toml")


def test_a_file_that_cannot_be_edited_safely_gets_no_edit(tmp_path):
    cases = {
        "broken": "[tool.atenlint\n",  # invalid TOML: the user's ATL010 says so
        "ignore-not-a-table": '[tool.atenlint]\nignore = ["aten::take"]\n',
        "list-of-numbers": "[tool.atenlint.ignore]\nmps = [1]\n",
    }
    for name, text in cases.items():
        write(tmp_path / name, {"pyproject.toml": text, "m.py": ""})
        assert ignore_ops_edit(str(tmp_path / name / "m.py"), "mps", ["aten::take"]) is None, name
    assert ignore_ops_edit(None, "mps", ["aten::take"]) is None
    assert ignore_ops_edit(str(tmp_path / "broken" / "m.py"), "mps", []) is None


def test_columns_are_utf16_and_line_endings_are_kept(tmp_path):
    write(tmp_path, {"pyproject.toml": '[tool.atenlint]\r\nignore = {mps = ["𝛑"]}  # π\r\n', "m.py": ""})
    edit, new, _, after = edit_and_apply(tmp_path / "m.py")
    assert new == '[tool.atenlint]\r\nignore = {mps = ["𝛑", "aten::take"]}  # π\r\n'
    # The changed line, up to (not into) its CRLF; 𝛑 is two UTF-16 code units.
    assert (edit.range.start.line, edit.range.start.character, edit.range.end.line) == (1, 0, 1)
    assert edit.range.end.character == len('ignore = {mps = ["𝛑"]}  # π') + 1 and "\r" not in edit.new_text
    assert after.ignore["mps"] == {"𝛑", "aten::take"}


def test_the_server_quick_fix_goes_through_the_same_edit(tmp_path):
    write(tmp_path, {"pyproject.toml": '[tool.atenlint]\ntargets = ["mps"]\nignore = {onnx = ["x"]}\n', "m.py": ""})
    path, rng, text = convert.ignore_in_project_edit(str(tmp_path / "m.py"), "mps", ["aten::take"])
    assert path == str(tmp_path / "pyproject.toml")
    assert rng == {"start": {"line": 2, "character": 0}, "end": {"line": 2, "character": 23}}
    assert text == 'ignore = {onnx = ["x"], mps = ["aten::take"]}'
