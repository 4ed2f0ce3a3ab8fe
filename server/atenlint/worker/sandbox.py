"""The worker's sandbox: an audit hook that refuses what analysed code has no business doing.

While the worker imports, builds and captures the user's code, `sys.addaudithook` sees
every audited action of the interpreter. This module refuses

- starting processes: `subprocess`, `os.system`, `os.exec*`, `os.posix_spawn`, `os.spawn*`,
  `os.fork`/`forkpty`, `pty.spawn`, `multiprocessing` (through `_posixsubprocess`);
- the network: connecting, binding, sending, name look-ups, `urllib` requests;
- changing files outside the worker's own temporary folder: opening for writing,
  creating, deleting, renaming, linking, truncating, changing modes or owners;
- signals to other processes (`os.kill` of the parent, say);
- opening a `.py` file that is not a regular file (a FIFO would hang the import, a
  character device such as `/dev/zero` would read without end);

while reading stays free. A refusal raises `SandboxRefusal` (a `PermissionError`) *inside
the user's code*, so `try/except` around an optional `pip install` keeps working, and is
recorded with the user's line that attempted it, for one diagnostic (ATL012).

Audit hooks are not a security boundary: code that loads a C extension, uses `ctypes`,
or goes looking for this module's objects can do anything the worker's user can. See
docs/security.md for precisely what this does and does not protect against.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import stat
import sys
import threading
import types
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from typing import Any

from ..bounded_read import file_kind

# No Python source is this large; reading one would only exhaust the worker's memory.
MAX_SOURCE_BYTES = 64 * 1024 * 1024
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
_SOURCE_SUFFIXES = (".py", ".pyc", ".pyw", ".pth")


class SandboxRefusal(PermissionError):
    """An action atenlint does not let analysed code perform."""


@dataclass
class Refusal:
    """One refused action, as the parent reports it (ATL012)."""

    kind: str  # "process" | "network" | "write" | "signal" | "file"
    action: str  # what the code tried, for the message: "run `pip install x`"
    phase: str  # "import" | "build" | "analyse"
    file: str | None  # the innermost user file on the stack (None: library code only)
    line: int | None  # 1-based line in `file`
    analysed_line: int | None  # 1-based line in the analysed file that led to it
    count: int = 1

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def _text(value: Any) -> str:
    if isinstance(value, (bytes, bytearray)):
        return os.fsdecode(bytes(value))
    if isinstance(value, (list, tuple)):
        try:
            return shlex.join(_text(v) for v in value)
        except TypeError:
            return " ".join(map(str, value))
    try:
        return os.fspath(value) if isinstance(value, os.PathLike) else str(value)
    except TypeError:
        return repr(value)


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Sandbox:
    """One per worker process. `install()` once; enforcement is on from then on, except
    inside `permitted()` (atenlint's own subprocess for the exporters' tables)."""

    def __init__(self) -> None:
        self.enabled = True
        self.installed = False
        self.run_dir = ""
        self._allowed_dirs: tuple[str, ...] = ()
        self._user_roots: tuple[str, ...] = ()
        self._analysed_file: str | None = None
        self._refusals: dict[tuple[Any, ...], Refusal] = {}
        self._permitted = threading.local()
        self._lock = threading.Lock()
        self._handlers: dict[str, Callable[[tuple[Any, ...]], tuple[str, str] | None]] = {
            "subprocess.Popen": lambda a: ("process", f"run `{_short(_text(a[1]))}`"),
            "os.system": lambda a: ("process", f"run `{_short(_text(a[0]))}`"),
            "os.exec": lambda a: ("process", f"replace itself with `{_short(_text(a[1]) or _text(a[0]))}`"),
            "os.posix_spawn": lambda a: ("process", f"run `{_short(_text(a[1]) or _text(a[0]))}`"),
            "os.spawn": lambda a: ("process", f"run `{_short(_text(a[2]) or _text(a[1]))}`"),
            "os.fork": lambda a: ("process", "fork the process"),
            "os.forkpty": lambda a: ("process", "fork the process"),
            "pty.spawn": lambda a: ("process", f"run `{_short(_text(a[0]))}` in a terminal"),
            "os.startfile": lambda a: ("process", f"open `{_short(_text(a[0]))}`"),
            "webbrowser.open": lambda a: ("process", f"open a browser at `{_short(_text(a[0]))}`"),
            "_posixsubprocess.fork_exec": lambda a: ("process", f"run `{_short(_text(a[0]))}`"),
            "socket.connect": self._network("connect to", 1),
            "socket.sendto": self._network("send data to", 1),
            "socket.sendmsg": self._network("send data to", 1),
            "socket.bind": self._network("listen on", 1),
            "socket.getaddrinfo": self._lookup,
            "socket.gethostbyname": self._lookup,
            "socket.gethostbyname_ex": self._lookup,
            "socket.gethostbyaddr": self._lookup,
            "socket.getnameinfo": lambda a: ("network", f"look up `{_short(_text(a[0]))}`"),
            "urllib.Request": lambda a: ("network", f"download `{_short(_text(a[0]))}`"),
            "open": self._open,
            "os.mkdir": self._path_change("create the folder", 0, 2),
            "os.rmdir": self._path_change("delete the folder", 0, 1),
            "os.remove": self._path_change("delete", 0, 1),
            "os.rename": self._rename,
            "os.link": self._rename,
            "os.symlink": self._symlink,
            "os.truncate": self._truncate,
            "os.chmod": self._path_change("change the mode of", 0, 2),
            "os.chown": self._path_change("change the owner of", 0, 3),
            "os.utime": self._path_change("change the times of", 0, 3),
            "os.setxattr": self._path_change("change attributes of", 0, None),
            "os.removexattr": self._path_change("change attributes of", 0, None),
            "os.chflags": self._path_change("change flags of", 0, None),
            "os.lchflags": self._path_change("change flags of", 0, None),
            "os.mkfifo": self._path_change("create the FIFO", 0, 1),
            "os.mknod": self._path_change("create the device", 0, 1),
            "shutil.rmtree": self._path_change("delete the folder", 0, 1),
            "sqlite3.connect": self._sqlite,
            "os.kill": self._signal,
            "os.killpg": self._signal,
            "signal.pthread_kill": lambda a: None,  # threads of this process only
            "ctypes.dlsym": self._ctypes_symbol,
        }

    # -- setup -----------------------------------------------------------
    def install(self, run_dir: str, enabled: bool = True) -> None:
        """Start enforcing (for the rest of the process: an audit hook cannot be removed).
        `run_dir` is the only folder analysed code may write to."""
        self.enabled = enabled
        self.run_dir = os.path.realpath(run_dir)
        self._allowed_dirs = (self.run_dir + os.sep,)
        if not enabled or self.installed:
            return
        self.installed = True
        self._wrap_unaudited()
        sys.addaudithook(self._hook)

    def _wrap_unaudited(self) -> None:
        """Process creation and file creation that Python does not audit."""
        import _posixsubprocess
        import subprocess

        original_fork_exec = _posixsubprocess.fork_exec

        def fork_exec(*args: Any, **kwargs: Any) -> Any:
            sys.audit("_posixsubprocess.fork_exec", args[0] if args else None)
            return original_fork_exec(*args, **kwargs)

        _posixsubprocess.fork_exec = fork_exec
        if getattr(subprocess, "_fork_exec", None) is original_fork_exec:
            setattr(subprocess, "_fork_exec", fork_exec)  # noqa: B010 - private, absent from typeshed
        for name in ("mkfifo", "mknod"):
            original = getattr(os, name, None)
            if original is None:
                continue

            def wrapper(
                path: Any,
                *args: Any,
                _original: Callable[..., Any] = original,
                _event: str = f"os.{name}",
                **kwargs: Any,
            ) -> Any:
                sys.audit(_event, path, kwargs.get("dir_fd"))
                return _original(path, *args, **kwargs)

            setattr(os, name, wrapper)

    @contextlib.contextmanager
    def analysing(self, analysed_file: str, user_roots: list[str]) -> Iterator[list[Any]]:
        """One analysis: refusals are attributed to the user's files under `user_roots`
        (and the analysed file); yields the list the refusals are appended to at the end."""
        collected: list[Any] = []
        with self._lock:
            self._refusals = {}
            self._analysed_file = os.path.realpath(analysed_file)
            roots = {os.path.realpath(r) for r in user_roots if r}
            roots.add(os.path.dirname(self._analysed_file))
            self._user_roots = tuple(r.rstrip(os.sep) + os.sep for r in sorted(roots))
        try:
            yield collected
        finally:
            with self._lock:
                collected.extend(r.as_json() for r in self._refusals.values())
                self._refusals = {}
                self._analysed_file = None

    @contextlib.contextmanager
    def permitted(self) -> Iterator[None]:
        """atenlint's own actions (never the user's code) that the sandbox would refuse."""
        previous = getattr(self._permitted, "on", False)
        self._permitted.on = True
        try:
            yield
        finally:
            self._permitted.on = previous

    # -- the hook --------------------------------------------------------
    def _hook(self, event: str, args: tuple[Any, ...]) -> None:
        handler = self._handlers.get(event)
        if handler is None:
            if event == "sys.addaudithook" and self.enabled and not getattr(self._permitted, "on", False):
                # A hook of the analysed code could not be removed after its file (it would
                # see or break every later analysis): CPython silently skips adding a hook
                # when an existing one raises RuntimeError.
                raise RuntimeError("atenlint's worker does not take audit hooks from analysed code")
            return
        if not self.enabled or getattr(self._permitted, "on", False):
            return
        verdict = handler(args)
        if verdict is None:
            return
        kind, action = verdict
        self._record(kind, action)
        raise SandboxRefusal(
            f"atenlint's sandbox refused to {action}: analysed code may not {_REASONS[kind]} (see docs/security.md)"
        )

    def _record(self, kind: str, action: str) -> None:
        phase, file, line, analysed_line = self._where()
        key = (kind, action, file, line)
        with self._lock:
            existing = self._refusals.get(key)
            if existing is not None:
                existing.count += 1
            elif len(self._refusals) < 50:  # a loop of refused calls is one story, not thousands
                self._refusals[key] = Refusal(kind, action, phase, file, line, analysed_line)

    def _where(self) -> tuple[str, str | None, int | None, int | None]:
        """The phase, the innermost user frame, and the innermost frame in the analysed file."""
        frame: types.FrameType | None = sys._getframe(2)
        phase = "analyse"
        file = line = analysed_line = None
        roots, analysed = self._user_roots, self._analysed_file
        while frame is not None:
            code = frame.f_code
            filename = code.co_filename
            if filename.endswith(("loader.py", "file_capture.py")) and "atenlint" in filename and phase == "analyse":
                if code.co_name in ("import_file", "_exec_shadowing"):
                    phase = "import"
                elif code.co_name == "build":
                    phase = "build"
            elif file is None or analysed_line is None:
                real = os.path.realpath(filename) if filename and not filename.startswith("<") else ""
                if real and real.startswith(roots) and not _is_library(real):
                    if file is None:
                        file, line = real, frame.f_lineno
                    if analysed_line is None and real == analysed:
                        analysed_line = frame.f_lineno
            frame = frame.f_back
        return phase, file, line, analysed_line

    # -- verdicts --------------------------------------------------------
    @staticmethod
    def _network(verb: str, index: int) -> Callable[[tuple[Any, ...]], tuple[str, str]]:
        def verdict(args: tuple[Any, ...]) -> tuple[str, str]:
            address = args[index] if len(args) > index else ""
            if isinstance(address, tuple) and len(address) >= 2:
                address = f"{address[0]}:{address[1]}"
            return "network", f"{verb} `{_short(_text(address))}`"

        return verdict

    @staticmethod
    def _lookup(args: tuple[Any, ...]) -> tuple[str, str] | None:
        host = args[0] if args else None
        if host in (None, "", b"", "localhost", b"localhost", "127.0.0.1", "::1"):
            return None  # no packet leaves the machine
        return "network", f"look up `{_short(_text(host))}`"

    def _outside(self, path: Any) -> str | None:
        """The path, when it is not inside the run folder (None: allowed)."""
        if isinstance(path, int) or path is None:
            return None  # an open descriptor: how it was opened was checked then
        text = _text(path)
        if text == os.devnull:
            return None
        if not os.path.isabs(text):
            # Relative to the working folder or to a dir_fd the event does not show: refuse.
            return text
        real = os.path.realpath(text)
        return None if (real + os.sep).startswith(self._allowed_dirs) else text

    def _path_change(self, verb: str, index: int, dir_fd_index: int | None) -> Callable[..., Any]:
        def verdict(args: tuple[Any, ...]) -> tuple[str, str] | None:
            path = args[index] if len(args) > index else None
            dir_fd = args[dir_fd_index] if dir_fd_index is not None and len(args) > dir_fd_index else None
            if isinstance(path, int):
                return None
            outside = self._outside(path) if dir_fd in (None, -1) else _text(path)
            return None if outside is None else ("write", f"{verb} `{_short(outside)}`")

        return verdict

    def _rename(self, args: tuple[Any, ...]) -> tuple[str, str] | None:
        source, target = args[0], args[1]
        dir_fds = [fd for fd in args[2:4] if fd not in (None, -1)]
        if dir_fds or self._outside(source) is not None or self._outside(target) is not None:
            return "write", f"move `{_short(_text(source))}` to `{_short(_text(target))}`"
        return None

    def _symlink(self, args: tuple[Any, ...]) -> tuple[str, str] | None:
        target = args[1]
        dir_fd = args[2] if len(args) > 2 else None
        if dir_fd not in (None, -1) or self._outside(target) is not None:
            return "write", f"create the link `{_short(_text(target))}`"
        return None

    def _truncate(self, args: tuple[Any, ...]) -> tuple[str, str] | None:
        outside = self._outside(args[0])
        return None if outside is None else ("write", f"truncate `{_short(outside)}`")

    def _open(self, args: tuple[Any, ...]) -> tuple[str, str] | None:
        path = args[0] if args else None
        mode = args[1] if len(args) > 1 else None
        flags = args[2] if len(args) > 2 else 0
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            isinstance(flags, int) and flags & _WRITE_FLAGS
        )
        if writing:
            outside = self._outside(path)
            return None if outside is None else ("write", f"write `{_short(outside)}`")
        if isinstance(path, int) or path is None:
            return None
        text = _text(path)
        if text.endswith(_SOURCE_SUFFIXES):
            try:
                mode_bits = os.stat(text).st_mode
            except OSError:
                return None  # the open itself reports it
            if not stat.S_ISREG(mode_bits):
                return "file", f"read `{_short(text)}`, which is not a regular file ({file_kind(mode_bits)})"
            size = os.stat(text).st_size
            if size > MAX_SOURCE_BYTES:
                return "file", f"read `{_short(text)}`, a {size / 1e6:.0f} MB source file"
        return None

    def _sqlite(self, args: tuple[Any, ...]) -> tuple[str, str] | None:
        database = _text(args[0]) if args else ""
        if database in ("", ":memory:") or database.startswith("file::memory:"):
            return None
        outside = self._outside(database)
        return None if outside is None else ("write", f"open the database `{_short(outside)}`")

    @staticmethod
    def _ctypes_symbol(args: tuple[Any, ...]) -> tuple[str, str] | None:
        """The C functions that would start a process or open a connection behind the
        audit events' back (ctypes offers other ways: this is a speed bump, not a wall)."""
        name = args[1] if len(args) > 1 else None
        if isinstance(name, bytes):
            name = name.decode("ascii", "replace")
        if isinstance(name, str) and name in _C_SPAWNING:
            return "process", f"call the C function `{name}` through ctypes"
        return None

    @staticmethod
    def _signal(args: tuple[Any, ...]) -> tuple[str, str] | None:
        pid = args[0] if args else None
        if pid in (0, os.getpid()):
            return None  # itself (its own process group: the worker runs in its own session)
        return "signal", f"send signal {args[1] if len(args) > 1 else '?'} to process {pid}"


_C_SPAWNING = frozenset(
    {
        "system",
        "popen",
        "fork",
        "vfork",
        "execv",
        "execve",
        "execvp",
        "execvpe",
        "execl",
        "execle",
        "execlp",
        "fexecve",
        "posix_spawn",
        "posix_spawnp",
        "clone",
        "clone3",
        "connect",
        "kill",
        "ptrace",
    }
)

_REASONS = {
    "process": "start processes",
    "network": "use the network",
    "write": "write files outside atenlint's temporary folder",
    "signal": "signal other processes",
    "file": "read files that are not regular files",
}


def _is_library(path: str) -> bool:
    from ..capture.paths import is_library_file

    return is_library_file(path)


SANDBOX = Sandbox()
