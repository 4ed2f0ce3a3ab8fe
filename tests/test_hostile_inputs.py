"""Hostile inputs to the pure parts (issue 12): files that are not regular files, sizes
checked before reading, encodings that do not decode, expressions nested too deeply,
wrongly typed settings, configuration from outside the project, and the interpreter an
untrusted session may run. No worker is started here."""

from __future__ import annotations

import os
import threading

import pytest

from atenlint.config import ConfigError, SettingsResolver, settings_from_table
from atenlint.discover import NotRegularFile, iter_python_files, read_regular_file
from atenlint.sourcetext import DecodeError, SourceText, decode_source


def test_read_regular_file_never_opens_a_fifo_or_device_for_reading(tmp_path):
    os.mkfifo(tmp_path / "fifo.py")
    os.symlink("/dev/zero", tmp_path / "zero.py")
    for name, kind in (("fifo.py", "a FIFO"), ("zero.py", "a character device")):
        with pytest.raises(NotRegularFile, match=kind):
            read_regular_file(str(tmp_path / name), 1024)  # returns at once: non-blocking open, fstat
    (tmp_path / "big.py").write_bytes(b"x = 1\n" * 1000)
    with pytest.raises(NotRegularFile) as error:
        read_regular_file(str(tmp_path / "big.py"), 100)
    assert error.value.too_large and error.value.size == 6000
    assert read_regular_file(str(tmp_path / "big.py"), 6000) == b"x = 1\n" * 1000


def test_folder_scans_skip_non_regular_files_and_links_that_leave_the_folder(tmp_path):
    root, outside = tmp_path / "ws", tmp_path / "outside"
    (root / "pkg").mkdir(parents=True)
    outside.mkdir()
    (outside / "evil.py").write_text("x = 1\n")
    (root / "good.py").write_text("x = 1\n")
    (root / "pkg" / "inner.py").write_text("x = 1\n")
    (root / "new\nline.py").write_text("x = 1\n")
    os.mkfifo(root / "fifo.py")
    os.symlink("/dev/zero", root / "zero.py")
    os.symlink(outside / "evil.py", root / "out.py")
    os.symlink(outside, root / "out_folder")
    os.symlink(root / "pkg", root / "pkg_again")  # stays inside: followed, no duplicates
    os.symlink(root / "missing.py", root / "broken.py")
    files, notes = iter_python_files([str(root)])
    assert sorted(os.path.relpath(f, root) for f in files) == [
        "good.py",
        "new\nline.py",
        os.path.join("pkg", "inner.py"),
    ]
    why = {os.path.basename(path): message for path, message in notes}
    assert "FIFO" in why["fifo.py"] and "/dev/zero" in why["zero.py"] and "not followed" in why["out.py"]
    assert "not followed" in why["out_folder"] and "cannot read" in why["broken.py"]
    # A file named on the command line is the user's choice and followed, unless not regular.
    files, notes = iter_python_files([str(root / "out.py"), str(root / "fifo.py")])
    assert files == [str(root / "out.py")] and "FIFO" in notes[0][1]


def test_a_fifo_argument_does_not_hang_discovery(tmp_path):
    os.mkfifo(tmp_path / "pipe.py")
    done = threading.Event()
    thread = threading.Thread(target=lambda: (iter_python_files([str(tmp_path)]), done.set()), daemon=True)
    thread.start()
    thread.join(30)
    assert done.is_set()


@pytest.mark.parametrize("declaration", ["rot13", "base64", "uu_codec", "zlib", "hex"])
def test_codecs_that_do_not_make_text_are_a_decode_error(declaration):
    with pytest.raises(DecodeError, match=declaration):
        decode_source(f"# coding: {declaration}\nvzcbeg gbepu\n".encode())


def test_an_unknown_declared_encoding_is_a_decode_error():
    with pytest.raises(DecodeError, match="invalid encoding declaration"):
        decode_source(b"# -*- coding: no-such-codec -*-\nx = 1\n")


@pytest.mark.parametrize(
    "text",
    [
        "x = " + "-" * 200_000 + "1\n",
        "x = " + "+".join(["1"] * 200_000) + "\n",
        "x = " + "(" * 300 + "1" + ")" * 300 + "\n",
    ],
)
def test_expressions_nested_too_deeply_do_not_parse_and_do_not_raise(text):
    source = SourceText(text, "deep.py")
    assert source.tree is None
    assert source.parse_problem is not None


@pytest.mark.parametrize(
    "table, message",
    [
        ({"ignore": {"mps": "aten::take"}}, "a list even for one name"),
        ({"ignore": {"mps": [1]}}, "ignore must be a table of lists"),
        ({"ignore": "aten::take"}, "ignore must be a table of lists"),
        ({"exclude": "tests/*"}, "exclude must be a list"),
        ({"timeout": True}, "timeout must be a positive number"),
        ({"timeout": "5"}, "timeout must be a positive number"),
        ({"workers": 1.5}, "workers must be a whole number"),
        ({"max-file-size": True}, "max-file-size must be a number"),
        ({"severity": {"mps": ["error"]}}, "severity must map targets"),
        ({"modules": {"a.B": {"skip": "yes"}}}, "skip must be true or false"),
    ],
)
def test_wrongly_typed_values_are_config_errors(table, message):
    with pytest.raises(ConfigError, match=message):
        settings_from_table(table, "pyproject.toml")


@pytest.mark.parametrize(
    "text, message",
    [
        ('tool = "atenlint"\n', "`tool` must be a table"),
        ("[tool]\natenlint = 3\n", "`tool.atenlint` must be a table"),
        ("[tool.atenlint]\ntimeout = 5\n\xff\n", "not UTF-8"),
    ],
)
def test_malformed_pyproject_files_are_config_errors(tmp_path, text, message):
    (tmp_path / "pyproject.toml").write_bytes(text.encode("latin-1"))
    with pytest.raises(ConfigError, match=message):
        SettingsResolver().for_file(str(tmp_path / "m.py"))


def test_a_pyproject_that_is_not_a_regular_file_is_not_read(tmp_path):
    os.symlink("/dev/zero", tmp_path / "pyproject.toml")
    settings = SettingsResolver().for_file(str(tmp_path / "m.py"))
    assert settings.config_path is None


def test_configuration_stops_at_the_project_root(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.atenlint]\nignore = {mps = ["aten::take"]}\n')
    project = tmp_path / "project"
    (project / "pkg").mkdir(parents=True)
    (project / ".git").mkdir()
    settings = SettingsResolver().for_file(str(project / "pkg" / "m.py"))
    assert settings.ignore == {} and settings.project_root == str(project)


def test_configuration_never_comes_from_above_the_workspace_folder(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.atenlint]\ntimeout = 3\n")
    workspace = tmp_path / "ws"
    (workspace / "sub").mkdir(parents=True)
    bounded = SettingsResolver(workspace_roots=[str(workspace)]).for_file(str(workspace / "sub" / "m.py"))
    assert bounded.timeout == 60.0 and bounded.project_root == str(workspace)
    # Without a workspace folder (the CLI) the nearest marker is the project root.
    assert SettingsResolver().for_file(str(workspace / "sub" / "m.py")).timeout == 3.0


class _Callbacks:
    def __init__(self):
        self.shown = []

    def show(self, message, level="info"):
        self.shown.append(message)

    def log(self, message, level="info"):
        pass


def test_an_untrusted_session_never_runs_an_interpreter_inside_the_workspace(tmp_path):
    import sys

    from atenlint.lsp.session import Session
    from atenlint.lsp.settings import editor_settings

    inside = tmp_path / ".venv" / "bin" / "python"
    inside.parent.mkdir(parents=True)
    inside.symlink_to(sys.executable)
    callbacks = _Callbacks()
    untrusted = editor_settings({"trusted": False, "python": str(inside)})
    session = Session(callbacks, untrusted, folders=[str(tmp_path)])
    assert session._interpreter() == sys.executable and "is not run" in callbacks.shown[0]
    trusted = editor_settings({"trusted": True, "python": str(inside)})
    assert Session(callbacks, trusted, folders=[str(tmp_path)])._interpreter() == str(inside)
    outside = editor_settings({"trusted": False, "python": sys.executable})
    assert Session(callbacks, outside, folders=[str(tmp_path)])._interpreter() == sys.executable
