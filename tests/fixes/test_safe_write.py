"""`--fix` writes touch only what they should: files inside the given paths, never through a
link, never a hard-linked or read-only file, atomically, and never over a save that landed
since the analysis. Notebooks keep every byte but the edited cell's source. No worker here:
findings are built by hand with the fingerprint the engine would give them."""

from __future__ import annotations

import json
import os
import pathlib
import stat

import pytest

from atenlint.findings import Finding
from atenlint.fixes.apply import apply_to_files
from atenlint.fixes.edits import text_fingerprint
from atenlint.fixes.safe_write import WriteRefused, editor_refusal, read_for_fix, replace_if_unchanged
from atenlint.notebook import FilePositions, build_module, fix_cells, parse_notebook
from atenlint.sourcetext import Position, Range

SOURCE = "import torch\n\n\ndef f(x, ids):\n    return torch.take(x, ids)\n"
CALL = Range(Position(4, 11), Position(4, 29))
FIXED = SOURCE.replace("torch.take(x, ids)", "x.reshape(-1)[ids]")


def take_finding(path: str, text: str, rng: Range = CALL, cell: int | None = None) -> tuple[Finding, dict]:
    edit: dict = {"range": rng.as_json(), "newText": "x.reshape(-1)[ids]"}
    if cell is not None:
        edit["cell"] = cell
    fix = {"id": "take-flat-index", "title": "t", "kind": "rewrite", "exact": True, "edits": [edit]}
    finding = Finding(
        os.path.basename(path),
        rng,
        "warning",
        "MPS001",
        "m",
        target="mps",
        call="torch.take(x, ids)",
        abs_path=path,
        fixes=[fix],
        data={"text_sha256": text_fingerprint(text)},
    )
    return finding, fix


def text_of(path) -> str:
    return pathlib.Path(path).read_text(encoding="utf-8")


def write(path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_a_file_inside_the_given_paths_is_fixed_and_keeps_its_mode(tmp_path):
    path = write(tmp_path / "a.py", SOURCE)
    os.chmod(path, 0o640)
    outcome = apply_to_files([take_finding(path, SOURCE)], allowed_roots=[str(tmp_path)])
    assert [a.fix_id for a in outcome.applied] == ["take-flat-index"] and outcome.skipped == []
    assert text_of(path) == FIXED
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    assert [n for n in os.listdir(tmp_path) if n.startswith(".atenlint-")] == []  # no temporary left


def test_a_file_outside_the_given_paths_is_never_written(tmp_path):
    given, elsewhere = tmp_path / "given", tmp_path / "elsewhere"
    given.mkdir()
    elsewhere.mkdir()
    path = write(elsewhere / "helper.py", SOURCE)
    outcome = apply_to_files([take_finding(path, SOURCE)], allowed_roots=[str(given)])
    assert outcome.applied == []
    assert [reason for _, reason in outcome.skipped] == ["outside the paths given to atenlint; never edited"]
    assert text_of(path) == SOURCE


def test_a_link_into_the_given_folder_does_not_make_its_target_editable(tmp_path):
    given, elsewhere = tmp_path / "given", tmp_path / "elsewhere"
    given.mkdir()
    elsewhere.mkdir()
    target = write(elsewhere / "real.py", SOURCE)
    os.symlink(target, given / "link.py")
    outcome = apply_to_files([take_finding(str(given / "link.py"), SOURCE)], allowed_roots=[str(given)])
    assert outcome.applied == [] and "outside the paths given" in outcome.skipped[0][1]
    assert text_of(target) == SOURCE


def test_a_symlink_argument_is_refused_and_neither_it_nor_its_target_changes(tmp_path):
    target = write(tmp_path / "real.py", SOURCE)
    link = tmp_path / "link.py"
    os.symlink(target, link)
    outcome = apply_to_files([take_finding(str(link), SOURCE)], allowed_roots=[str(link), str(tmp_path)])
    assert outcome.applied == [] and "symbolic link" in outcome.skipped[0][1]
    assert os.path.islink(link) and os.readlink(link) == target
    assert text_of(target) == SOURCE


def test_hard_linked_and_read_only_files_are_refused_and_reported(tmp_path):
    linked = write(tmp_path / "linked.py", SOURCE)
    os.link(linked, tmp_path / "other_name.py")
    read_only = write(tmp_path / "read_only.py", SOURCE)
    os.chmod(read_only, 0o444)
    outcome = apply_to_files(
        [take_finding(linked, SOURCE), take_finding(read_only, SOURCE)], allowed_roots=[str(tmp_path)]
    )
    assert outcome.applied == []
    reasons = {os.path.basename(f.abs_path): reason for f, reason in outcome.skipped}
    assert "2 hard links" in reasons["linked.py"] and "read-only" in reasons["read_only.py"]
    assert text_of(linked) == SOURCE == text_of(read_only)
    assert os.stat(linked).st_nlink == 2


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_what_is_not_a_regular_file_is_refused_without_blocking(tmp_path, kind):
    path = tmp_path / "odd.py"
    os.mkfifo(path) if kind == "fifo" else path.mkdir()
    with pytest.raises(WriteRefused, match="not a regular file"):
        read_for_fix(str(path), [str(tmp_path)])


def test_a_save_that_lands_between_read_and_write_is_kept(tmp_path):
    path = write(tmp_path / "a.py", SOURCE)
    read = read_for_fix(path, [str(tmp_path)])
    saved = SOURCE + "# saved by the editor meanwhile\n"
    write(tmp_path / "a.py", saved)
    with pytest.raises(WriteRefused, match="changed since it was analysed"):
        replace_if_unchanged(read, FIXED.encode())
    assert text_of(path) == saved
    assert [n for n in os.listdir(tmp_path) if n.startswith(".atenlint-")] == []


def test_a_file_replaced_by_another_with_the_same_bytes_is_left_alone(tmp_path):
    path = write(tmp_path / "a.py", SOURCE)
    read = read_for_fix(path, [str(tmp_path)])
    # An editor's atomic save: a new file (another inode) renamed over the name.
    os.replace(write(tmp_path / "saved.tmp", SOURCE), path)
    with pytest.raises(WriteRefused):
        replace_if_unchanged(read, FIXED.encode())


def test_extended_attributes_survive_the_rewrite(tmp_path):
    path = write(tmp_path / "a.py", SOURCE)
    try:
        os.setxattr(path, "user.atenlint-test", b"kept")
    except OSError:
        pytest.skip("this file system has no user extended attributes")
    apply_to_files([take_finding(path, SOURCE)], allowed_roots=[str(tmp_path)])
    assert text_of(path) == FIXED
    assert os.getxattr(path, "user.atenlint-test") == b"kept"


# -- notebooks: only the edited cell's source changes --------------------------------------

CELL = ["import torch\n", "\n", "\n", "def f(x, ids):\n", "    return torch.take(x, ids)\n"]
# Jupyter's layout, plus what `json` would not write back: 1e400 (Infinity), a lone
# surrogate, escaped non-ASCII, and a key order json.dumps keeps only by luck.
NOTEBOOK = (
    "{\n"
    ' "cells": [\n'
    "  {\n"
    '   "cell_type": "markdown",\n'
    '   "metadata": {},\n'
    '   "source": ["caf\\u00e9 \\ud83d alone"]\n'
    "  },\n"
    "  {\n"
    '   "cell_type": "code",\n'
    '   "execution_count": 1,\n'
    '   "metadata": {"scale": 1e400, "small": 1.50},\n'
    '   "outputs": [],\n'
    '   "source": [\n' + ",\n".join(f"    {json.dumps(line)}" for line in CELL) + "\n   ]\n"
    "  }\n"
    " ],\n"
    ' "metadata": {"kernelspec": {"language": "python", "name": "python3", "display_name": "Python 3"}},\n'
    ' "nbformat": 4,\n'
    ' "nbformat_minor": 5\n'
    "}\n"
)


def notebook_fix(raw: bytes, cell: int = 1):
    module = build_module(parse_notebook(raw))
    finding, fix = take_finding("nb.ipynb", module.text, CALL, cell=cell)
    return fix_cells(raw, [(finding, fix)], text_fingerprint)


def test_a_notebook_fix_changes_only_the_edited_cell_source():
    raw = NOTEBOOK.encode("utf-8")
    new, applied, skipped = notebook_fix(raw)
    assert skipped == [] and len(applied) == 1 and new is not None
    expected = NOTEBOOK.replace('"    return torch.take(x, ids)\\n"', '"    return x.reshape(-1)[ids]\\n"')
    assert new.decode("utf-8") == expected  # 1e400, 1.50, \u00e9, \ud83d and the layout all kept
    assert json.loads(new)["cells"][1]["source"][4] == "    return x.reshape(-1)[ids]\n"


def test_a_lone_surrogate_in_the_edited_cell_is_written_back_as_its_escape():
    text = NOTEBOOK.replace('"    return torch.take(x, ids)\\n"', '"    return torch.take(x, ids)  # \\ud83d\\n"')
    new, applied, _ = notebook_fix(text.encode("utf-8"))
    assert applied and new is not None
    assert '"    return x.reshape(-1)[ids]  # \\ud83d\\n"' in new.decode("utf-8")


def test_a_string_source_stays_a_string_and_a_bom_and_crlf_stay():
    document = json.loads(NOTEBOOK)
    document["cells"][1]["source"] = "".join(CELL)
    text = json.dumps(document, indent=2).replace("\n", "\r\n")
    raw = b"\xef\xbb\xbf" + text.encode("utf-8")
    new, applied, _ = notebook_fix(raw)
    assert applied and new is not None and new.startswith(b"\xef\xbb\xbf")
    assert new.decode("utf-8-sig") == text.replace("torch.take(x, ids)", "x.reshape(-1)[ids]")


def test_a_lone_surrogate_does_not_stop_reading_the_notebook():
    cells = parse_notebook(NOTEBOOK.encode("utf-8"))
    assert cells[0].source == "café \ufffd alone"  # one code point, as the escape was
    build_module(cells).text.encode("utf-8")  # encodable: it can be hashed, written and sent
    assert FilePositions(NOTEBOOK).source_spans.keys() == {0, 1}


def test_a_notebook_changed_since_the_analysis_is_not_fixed():
    raw = NOTEBOOK.encode("utf-8")
    module = build_module(parse_notebook(raw))
    finding, fix = take_finding("nb.ipynb", module.text + "# other\n", CALL, cell=1)
    new, applied, skipped = fix_cells(raw, [(finding, fix)], text_fingerprint)
    assert new is None and applied == [] and skipped[0][1] == "the notebook changed since it was analysed"


def test_a_notebook_is_written_through_the_same_safe_path(tmp_path):
    path = tmp_path / "nb.ipynb"
    path.write_bytes(NOTEBOOK.encode("utf-8"))
    module = build_module(parse_notebook(NOTEBOOK.encode("utf-8")))
    finding, fix = take_finding(str(path), module.text, CALL, cell=1)
    outside = apply_to_files([(finding, fix)], allowed_roots=[str(tmp_path / "elsewhere")])
    assert outside.applied == [] and path.read_bytes() == NOTEBOOK.encode("utf-8")
    inside = apply_to_files([(finding, fix)], allowed_roots=[str(tmp_path)])
    assert len(inside.applied) == 1 and b"x.reshape(-1)[ids]" in path.read_bytes()


def test_the_editor_may_edit_regular_files_inside_the_workspace_only(tmp_path):
    """What quick fixes check (`editor_refusal`): as `--fix`, but an open document may be
    an unsaved buffer, and without workspace folders only that document is editable."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    inside = workspace / "m.py"
    inside.write_text(SOURCE)
    outside = tmp_path / "o.py"
    outside.write_text(SOURCE)
    (workspace / "link.py").symlink_to(outside)
    os.mkfifo(workspace / "fifo.py")
    roots = [str(workspace)]
    assert editor_refusal(str(inside), roots) is None
    assert editor_refusal(str(outside), roots) == "outside the workspace folders"
    assert editor_refusal(str(workspace / "link.py"), roots) == "outside the workspace folders"
    assert editor_refusal(str(workspace / "fifo.py"), roots) == "not a regular file"
    assert editor_refusal(str(workspace / "new.py"), roots) == "not a file on disk"
    assert editor_refusal(str(workspace / "new.py"), roots, open_document=True) is None  # an unsaved buffer
    assert editor_refusal(str(outside), [], open_document=True) is None
    assert editor_refusal(str(outside), []) is not None
