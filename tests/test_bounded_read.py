"""The one reader: regular files only, checked on the open descriptor, never more than the
limit + 1 bytes read, whatever the path is (FIFO, device, folder, socket, growing file)."""

from __future__ import annotations

import os
import socket
import threading

import pytest

from atenlint import bounded_read
from atenlint.bounded_read import NotRegularFile, read_regular_file, read_regular_file_with_stat
from atenlint.config import ConfigError, read_pyproject
from atenlint.notebook import NotebookError, read_notebook
from atenlint.sourcetext import DecodeError, read_source


def test_a_regular_file_within_the_limit_is_read_whole(tmp_path):
    path = tmp_path / "a.py"
    path.write_bytes(b"x = 1\n" * 10)
    assert read_regular_file(str(path), 60) == b"x = 1\n" * 10
    data, info = read_regular_file_with_stat(str(path), 60)
    assert data == b"x = 1\n" * 10 and info.st_size == 60 and info.st_nlink == 1


@pytest.mark.parametrize(
    ("make", "kind"),
    [
        (lambda p: os.mkfifo(p), "a FIFO"),
        (lambda p: os.symlink("/dev/zero", p), "a character device"),
        (lambda p: os.mkdir(p), "a folder"),
    ],
)
def test_what_is_not_a_regular_file_is_refused_at_once(tmp_path, make, kind):
    path = str(tmp_path / "odd.py")
    make(path)
    done = threading.Event()

    def read() -> None:
        with pytest.raises(NotRegularFile, match=kind):
            read_regular_file(path, 1024)
        done.set()

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    thread.join(5)
    assert done.is_set(), "the read blocked"


def test_a_unix_socket_is_refused(tmp_path):
    path = str(tmp_path / "s.py")
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(path)
        with pytest.raises(OSError):  # opening a socket fails (ENXIO); never read
            read_regular_file(path, 1024)
    finally:
        server.close()


def test_the_size_is_checked_before_reading(tmp_path, monkeypatch):
    path = tmp_path / "big.py"
    path.write_bytes(b"#" * 5000)
    reads: list[int] = []
    real_read = os.read
    monkeypatch.setattr(bounded_read.os, "read", lambda fd, n: reads.append(n) or real_read(fd, n))
    with pytest.raises(NotRegularFile) as error:
        read_regular_file(str(path), 100)
    assert error.value.too_large and error.value.size == 5000 and reads == []


def test_a_file_that_grows_after_the_check_is_cut_at_the_limit_plus_one(tmp_path, monkeypatch):
    path = tmp_path / "grows.py"
    path.write_bytes(b"")  # fstat says 0 bytes ...
    reads: list[int] = []
    # ... but the descriptor yields without end, as a file being appended to would.
    monkeypatch.setattr(bounded_read.os, "read", lambda fd, n: reads.append(n) or b"x" * n)
    with pytest.raises(NotRegularFile, match="grew") as error:
        read_regular_file(str(path), 3 << 20)
    assert error.value.too_large and sum(reads) == (3 << 20) + 1


@pytest.mark.parametrize("limit", [None, 10**18])
def test_no_limit_or_a_huge_one_still_means_the_ceiling(tmp_path, monkeypatch, limit):
    path = tmp_path / "a.py"
    path.write_bytes(b"")
    monkeypatch.setattr(bounded_read, "DEFAULT_LIMIT", 10)
    reads: list[int] = []
    monkeypatch.setattr(bounded_read.os, "read", lambda fd, n: reads.append(n) or b"x" * n)
    with pytest.raises(NotRegularFile):
        read_regular_file(str(path), limit)
    assert sum(reads) == 11


def test_links_are_refused_only_when_asked(tmp_path):
    target = tmp_path / "real.py"
    target.write_bytes(b"x = 1\n")
    os.symlink(target, tmp_path / "link.py")
    assert read_regular_file(str(tmp_path / "link.py"), 100) == b"x = 1\n"
    with pytest.raises(NotRegularFile, match="symbolic link"):
        read_regular_file_with_stat(str(tmp_path / "link.py"), 100, follow_links=False)


def test_sources_notebooks_and_configs_all_go_through_it(tmp_path):
    os.mkfifo(tmp_path / "fifo.py")
    os.mkfifo(tmp_path / "fifo.ipynb")
    os.mkfifo(tmp_path / "pyproject.toml")
    with pytest.raises(NotRegularFile, match="a FIFO"):
        read_source(str(tmp_path / "fifo.py"), 1000)
    with pytest.raises(NotebookError, match="a FIFO"):
        read_notebook(str(tmp_path / "fifo.ipynb"), 1000)
    with pytest.raises(ConfigError, match="a FIFO"):
        read_pyproject(str(tmp_path / "pyproject.toml"))
    (tmp_path / "latin.py").write_bytes(b"# -*- coding: latin-1 -*-\ns = '\xe9'\n")
    assert read_source(str(tmp_path / "latin.py"), 1000).endswith("s = 'é'\n")
    (tmp_path / "bad.py").write_bytes(b"x = 1\ny = 2\ns = '\xff'\n")
    with pytest.raises(DecodeError, match="not valid UTF-8"):
        read_source(str(tmp_path / "bad.py"), 1000)
