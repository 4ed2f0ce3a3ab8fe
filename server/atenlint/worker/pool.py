"""The parent's side of the workers: start them in the user's interpreter, send requests,
enforce time and memory limits, and replace a worker that hangs, crashes or blows up.

Nothing here imports torch or user code.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import atenlint

from . import protocol

PartialHandler = Callable[[protocol.FileAnswer], None]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(atenlint.__file__))
_HELLO_TIMEOUT = 180.0
# Started with `python -I -u -c` (no PYTHON* variables, no user site, neither the working
# folder nor a script folder on sys.path) from the worker's own temporary folder; atenlint
# is loaded from this installation's files without putting their folder on sys.path, so
# sys.path holds only the interpreter's standard library and site-packages (torch) until
# an analysis appends the project's roots after them.
_BOOTSTRAP = """\
import sys, importlib.util
spec = importlib.util.spec_from_file_location("atenlint", sys.argv[1], submodule_search_locations=[sys.argv[2]])
module = importlib.util.module_from_spec(spec)
sys.modules["atenlint"] = module
spec.loader.exec_module(module)
from atenlint.worker.main import main
sys.exit(main(sys.argv[3:]))
"""
# Caches that libraries write on their own go to the run folder, where writes are allowed.
_CACHE_VARIABLES = {
    "TMPDIR": "",
    "TEMP": "",
    "TMP": "",
    "MPLCONFIGDIR": "matplotlib",
    "TORCHINDUCTOR_CACHE_DIR": "inductor",
    "TRITON_CACHE_DIR": "triton",
    "CUDA_CACHE_PATH": "cuda",
}


def sandbox_default() -> bool:
    """The sandbox is on unless ATENLINT_SANDBOX is 0/off/false/no (or --no-sandbox)."""
    return os.environ.get("ATENLINT_SANDBOX", "on").strip().lower() not in ("0", "off", "false", "no")


class WorkerFailure(Exception):
    """The worker could not answer: it timed out, died, or ran out of memory."""

    def __init__(self, kind: str, message: str, stderr_tail: str = ""):
        super().__init__(message)
        self.kind = kind  # "timeout" | "crash" | "memory" | "start"
        self.message = message
        self.stderr_tail = stderr_tail


class Cancelled(BaseException):
    """The caller no longer wants the answer (the editor closed the document, or a newer
    version of it superseded this check): the request was stopped, or never sent. A
    BaseException, like asyncio's CancelledError, so the pipeline's handlers of its own
    failures (`except Exception`: a diagnostic, go on) never turn it into a finding (an
    ATL005/ATL006 of a check nobody asked for): it reaches the code that asked."""


# The event that stops the requests the current thread sends (`cancelled_by`): per thread,
# so the pipeline between the session and the pool needs no parameter for it.
_cancellation = threading.local()


@contextlib.contextmanager
def cancelled_by(event: threading.Event | None) -> Iterator[None]:
    """Within the block, a request this thread sends stops as soon as `event` is set: one
    not yet sent (or waiting for a free worker) is never sent; a file's analysis in flight
    is ended by killing its forked child only (the warm worker answers the next request at
    once). `Cancelled` is raised in both cases."""
    previous = getattr(_cancellation, "event", None)
    _cancellation.event = event
    try:
        yield
    finally:
        _cancellation.event = previous


def _cancel_event() -> threading.Event | None:
    event = getattr(_cancellation, "event", None)
    return event if isinstance(event, threading.Event) else None


class RequestError(Exception):
    """The worker answered with an error (a bug in the capture code, not in the user's)."""

    def __init__(self, error: protocol.WorkerError):
        super().__init__(error.get("message", "worker error"))
        self.error = error


@dataclass
class WorkerSettings:
    python: str = sys.executable
    memory_limit_mb: int = 0  # 0: a share of physical memory
    extra_env: dict[str, str] | None = None
    sandbox: bool = field(default_factory=sandbox_default)  # off: analysed code may spawn, connect, write
    # A worker whose memory grew this much over its size after the first analysis is
    # replaced once it answers (what no state reset frees: allocator arenas, C++ caches).
    recycle_growth: float = 0.5


def _default_memory_limit_mb(workers: int) -> int:
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1024 * 1024)
    except (ValueError, OSError, AttributeError):
        return 8192
    return max(1024, int(total * 0.6 / max(workers, 1)))


# Linux's process table: where it exists, a process's memory is read there, never asked of `ps`.
_HAS_PROC = os.path.isdir("/proc/self")


def _rss_mb(pid: int) -> float | None:
    """The resident set of `pid` in MB; None for a process that holds none (gone, or a
    zombie: an analysis child that replied and is waiting to be reaped)."""
    if _HAS_PROC:
        # Never `ps` where /proc exists: a status without VmRSS is a process that has
        # exited (each file's child, until its worker reaps it), and starting `ps` for it
        # on every look (four a second per busy worker) took processor time from the
        # workers themselves (30 to 50 starts in a 40-file scan).
        try:
            with open(f"/proc/{pid}/status", encoding="ascii") as status:
                for line in status:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) / 1024
        except (OSError, ValueError):
            pass
        return None
    try:  # macOS and other systems without /proc
        out = subprocess.run(
            ["ps", "-o", "rss=", "-p", str(pid)], check=False, capture_output=True, text=True, timeout=2
        )
        return int(out.stdout.strip()) / 1024 if out.stdout.strip() else None
    except (OSError, ValueError, subprocess.SubprocessError):
        return None


# The most the parent holds of one message from the worker: an answer's call trees for a
# large model are a few MB; anything beyond is refused, never accumulated (a line with no
# end would otherwise grow the parent without bound).
MAX_MESSAGE_BYTES = 64 << 20
# Of the user code's output (the worker's stderr), each line is kept up to this many bytes.
MAX_STDERR_LINE_BYTES = 4096
_CHUNK = 1 << 16
_OVERSIZED = "\x00oversized"  # a message over MAX_MESSAGE_BYTES was skipped
# The requests that analyse a user's file, each in a child the warm worker forks (Linux, macOS).
_PER_FILE = frozenset({"analyse", "static"})


def _frames(stream: Any, limit: int, keep_head: bool = False) -> Any:
    """The lines of `stream`, each read in bounded pieces: a line over `limit` bytes is
    skipped to its end and yields None (or, with `keep_head`, its first `limit` bytes
    and a mark). The parent's memory never depends on what the worker writes."""
    while True:
        line = stream.readline(limit + 1)
        if not line:
            return
        if len(line) <= limit or line.endswith(b"\n") and len(line) == limit + 1:
            yield line
            continue
        if keep_head:  # at once: the rest may never end
            yield line[:limit] + " … (cut)\n".encode()
        while line and not line.endswith(b"\n"):  # drop the rest, a bounded piece at a time
            line = stream.readline(_CHUNK)
        if not keep_head:
            yield None


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as children:
            return [int(child) for child in children.read().split()]
    except (OSError, ValueError):
        return []


try:
    _CLOCK_TICKS = float(os.sysconf("SC_CLK_TCK"))
except (ValueError, OSError, AttributeError):  # no sysconf: no /proc either
    _CLOCK_TICKS = 0.0
# A file's time limit counts processor time, which load does not inflate; this many times
# the limit in wall-clock time stops code that waits without computing (a sleep, a
# blocking read). Generous: 2 cores shared by 9 busy processes give one under a quarter.
WALL_BACKSTOP = 10.0


def _main_thread_cpu_seconds(pid: int) -> float | None:
    """The processor time (user + system) of a process's main thread, from /proc; None
    where it cannot be read. The main thread, not the process: it runs the analysis, and
    its time is what the file costs on an idle machine, whereas intra-op threads add their
    time on top (and spin longer the more the machine is loaded)."""
    if not _CLOCK_TICKS:
        return None
    try:
        with open(f"/proc/{pid}/task/{pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
        return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS  # utime, stime: fields 14 and 15
    except (OSError, ValueError, IndexError):
        return None


class _AnalysisClock:
    """One request's time limit: `limit` seconds of processor time of the process that
    answers it (the warm worker's own time since the request, such as a warm-up, plus its
    forked analysis child's), and WALL_BACKSTOP times that in wall-clock time. Where /proc
    cannot be read (macOS), `limit` seconds of wall-clock time, as before."""

    def __init__(self, pid: int, limit: float, by_cpu: bool = True):
        self.pid, self.limit = pid, limit
        self.started = time.monotonic()
        self.base = _main_thread_cpu_seconds(pid) if by_cpu else None
        self.children: dict[int, float] = {}  # a child's last reading: it may exit between reads
        # Children already there belong to an earlier request: one just killed for its own
        # limit stays listed, with all its time, until the worker has reaped it.
        self.earlier = frozenset(_children(pid)) if self.base is not None else frozenset()
        self.wall_limit = limit if self.base is None else limit * WALL_BACKSTOP

    def cpu_seconds(self) -> float | None:
        if self.base is None:
            return None
        own = _main_thread_cpu_seconds(self.pid)
        for child in _children(self.pid):
            if child in self.earlier:
                continue
            seconds = _main_thread_cpu_seconds(child)
            if seconds is not None:
                self.children[child] = max(seconds, self.children.get(child, 0.0))
        return max(0.0, (own if own is not None else self.base) - self.base) + sum(self.children.values())

    def exceeded(self) -> str:
        """'' while within the limits, else what was exceeded, in words."""
        waited = time.monotonic() - self.started
        cpu = self.cpu_seconds()
        if cpu is not None and cpu > self.limit:
            return f"used more than {self.limit:g} s of processor time without answering"
        if waited >= self.wall_limit:
            if cpu is None:
                return f"gave no answer within {self.limit:g} s"
            return (
                f"gave no answer within {self.wall_limit:g} s of wall-clock time, having used only "
                f"{cpu:.1f} s of processor time (waiting, not computing: a sleep or a blocking read?)"
            )
        return ""

    def wait(self) -> float:
        """How long to wait for a message before looking again."""
        return max(0.0, min(0.25, self.wall_limit - (time.monotonic() - self.started)))


def _analysis_rss_mb(pid: int) -> float | None:
    """The memory of the process analysing a file: the warm worker's forked child while
    it runs (its resident set includes the pages it shares with the worker, as the
    worker's own did when it analysed in place), else the worker itself."""
    sizes = [size for size in (_rss_mb(child) for child in _children(pid)) if size is not None]
    return max(sizes) if sizes else _rss_mb(pid)


class Worker:
    """One worker process. Not thread-safe: the pool hands it to one caller at a time."""

    def __init__(self, settings: WorkerSettings, log: Callable[[str], None], memory_limit_mb: int):
        self.settings = settings
        self.log = log
        self.memory_limit_mb = memory_limit_mb
        self.process: subprocess.Popen[bytes] | None = None
        self.hello = cast(protocol.Hello, {})  # empty until the worker has said hello
        self.peak_rss_mb = 0.0
        self._replies: queue.Queue[str | None] = queue.Queue()
        self._stderr: collections.deque[str] = collections.deque(maxlen=200)
        self._ids = itertools.count(1)
        self.run_dir: str | None = None
        self.recycle_reason: str | None = None
        self.base_rss_mb: float | None = None

    # -- lifecycle -------------------------------------------------------
    def command(self, run_dir: str) -> list[str]:
        return [
            self.settings.python,
            "-I",
            "-u",
            "-c",
            _BOOTSTRAP,
            os.path.join(_PACKAGE_DIR, "__init__.py"),
            _PACKAGE_DIR,
            run_dir,
            "sandbox" if self.settings.sandbox else "no-sandbox",
            str(self.memory_limit_mb),
        ]

    def start(self) -> protocol.Hello:
        self._remove_run_dir()
        self.run_dir = os.path.realpath(tempfile.mkdtemp(prefix="atenlint-worker-"))
        env = dict(os.environ)
        for name in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONSAFEPATH"):
            env.pop(name, None)  # -I ignores them; a foreign interpreter might not
        for name, sub in _CACHE_VARIABLES.items():
            env[name] = os.path.join(self.run_dir, sub) if sub else self.run_dir
        env.update(self.settings.extra_env or {})
        self.recycle_reason = None
        self.base_rss_mb = None
        started = time.perf_counter()
        try:
            self.process = subprocess.Popen(
                self.command(self.run_dir),
                cwd=self.run_dir,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                start_new_session=True,
                # bytes, read in bounded frames (`_frames`); requests are flushed as sent
            )
        except OSError as error:
            self._remove_run_dir()
            raise WorkerFailure("start", f"cannot start {self.settings.python}: {error}") from None
        # Fresh channels per process, so a dead predecessor's end-of-file is never read as ours.
        self._replies = queue.Queue()
        self._stderr = collections.deque(maxlen=200)
        threading.Thread(target=self._read_stdout, args=(self.process, self._replies), daemon=True).start()
        threading.Thread(target=self._read_stderr, args=(self.process, self._stderr), daemon=True).start()
        try:
            self.hello = protocol.check_hello(self.request("hello", protocol.NoParams(), _HELLO_TIMEOUT))
        except WorkerFailure as failure:
            raise WorkerFailure("start", f"the worker did not start: {failure.message}", failure.stderr_tail) from None
        except (protocol.ProtocolError, RequestError) as error:
            # Another atenlint's worker code (a different installation in that interpreter's
            # path never happens: the bootstrap loads ours) or a broken one: one clear message.
            tail = self.stderr_tail()
            self.kill()
            raise WorkerFailure("start", f"the worker cannot be used: {error}", tail) from None
        self.log(
            f"worker {self.process.pid} ready in {time.perf_counter() - started:.1f}s "
            f"(python {self.hello.get('python')}, torch {self.hello.get('torch_full')}, {self.settings.python})"
        )
        return self.hello

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError, OSError):
                self.process.kill()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        self._remove_run_dir()

    def _end_analysis(self) -> None:
        """Stop the request in flight: only the analysis child when the worker forked one
        (the warm worker lives on and answers its death, which nobody waits for: its id
        is past), else the whole worker."""
        children = _children(self.process.pid) if self.process is not None and self.alive else []
        if not children:
            self.kill()
            return
        for child in children:
            try:
                os.kill(child, signal.SIGKILL)
            except OSError:
                pass

    def _end_cancelled(self, clock: _AnalysisClock) -> bool:
        """Kill the analysis child of a cancelled request; False while it has none yet (the
        warm worker may still be warming a view before it forks: its answer, or the child,
        comes next) or where children cannot be listed (no /proc): the request then runs
        to its answer, which is discarded. The warm worker is never killed for a cancel:
        starting another costs more than any check."""
        if self.process is None or not self.alive:
            return True
        children = [child for child in _children(self.process.pid) if child not in clock.earlier]
        for child in children:
            try:
                os.kill(child, signal.SIGKILL)
            except OSError:
                pass
        return bool(children)

    def _remove_run_dir(self) -> None:
        if self.run_dir and os.path.isdir(self.run_dir):
            shutil.rmtree(self.run_dir, ignore_errors=True)
        self.run_dir = None

    def close(self, wait: bool = True) -> None:
        """Ask the worker to end; `wait` false: return at once, without waiting for its exit
        (the kernel's teardown of torch's address space, a tenth of a second) nor killing it:
        it ends on its own at the shutdown request, or at the end of its request pipe when
        this process exits (a child of its in flight is killed by it and dies with it)."""
        if self.alive and self.process is not None and self.process.stdin is not None:
            try:
                self.process.stdin.write(json.dumps({"method": "shutdown"}).encode("utf-8") + b"\n")
                self.process.stdin.flush()
                if not wait:
                    self.process.stdin.close()
                    self._remove_run_dir()
                    return
                self.process.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired, ValueError):
                pass
        self.kill()

    # -- requests --------------------------------------------------------
    def request(
        self, method: str, params: protocol.RequestParams, timeout: float, on_partial: PartialHandler | None = None
    ) -> Any:
        """Send one request and wait for its reply. `on_partial` is called (on this thread)
        with each partial answer of the same request before the reply; the time and memory
        limits hold throughout, and a worker that dies after a partial is still a crash."""
        cancel = _cancel_event()
        if cancel is not None and cancel.is_set():
            raise Cancelled(method)
        if not self.alive or self.process is None or self.process.stdin is None:
            raise WorkerFailure("crash", "the worker is not running", self.stderr_tail())
        request_id = next(self._ids)
        sent: Mapping[str, object] = dict(params, partial=True) if on_partial is not None else params
        # A file's analysis is limited in processor time (load cannot change its result);
        # the worker's other requests (registry reads, warm-up) in wall-clock time. Started
        # before the request is sent: the child it forks must not be taken for an earlier one.
        clock = _AnalysisClock(self.process.pid, timeout, by_cpu=method in _PER_FILE)
        try:
            self.process.stdin.write(json.dumps(protocol.request(request_id, method, sent)).encode("utf-8") + b"\n")
            self.process.stdin.flush()
        except (OSError, ValueError):
            raise self._death() from None
        # Only a file's analysis is stopped when no longer wanted: it runs in a child that
        # can be killed alone. The worker's own requests (a registry read, a warm-up) are
        # short, and what they build serves the next check.
        stoppable = cancel if method in _PER_FILE else None
        while True:
            if stoppable is not None and stoppable.is_set() and self._end_cancelled(clock):
                raise Cancelled(method)
            exceeded = clock.exceeded()
            if exceeded:
                self._end_analysis()
                raise WorkerFailure("timeout", exceeded, self.stderr_tail())
            try:
                line = self._replies.get(timeout=clock.wait())
            except queue.Empty:
                self._check_memory()
                continue
            if line is None:
                raise self._death()
            if line is _OVERSIZED:
                raise RequestError(
                    {
                        "type": "ProtocolError",
                        "message": f"the worker wrote a message over {MAX_MESSAGE_BYTES >> 20} MB",
                    }
                )
            try:
                raw = json.loads(line)
            except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser goes
                continue  # not ours: the protocol channel carries only JSON lines
            if not isinstance(raw, dict) or raw.get("id") != request_id:
                continue
            try:
                message = protocol.check_message(raw)
            except protocol.ProtocolError as error:
                raise RequestError(
                    {"type": "ProtocolError", "message": f"the worker's answer is malformed: {error}"}
                ) from None
            if "partial" in message:
                self._partial(message, on_partial)
                continue
            reply = message
            if "error" in reply:
                if reply["error"].get("type") == "WorkerCrash":
                    # The analysis process died without answering (the warm worker lives on).
                    raise WorkerFailure("crash", str(reply["error"].get("message")), self.stderr_tail())
                if reply["error"].get("type") == "WorkerMemory":  # an allocation over the kernel's cap
                    raise WorkerFailure("memory", str(reply["error"].get("message")), self.stderr_tail())
                raise RequestError(reply["error"])
            if reply.get("recycle"):
                self.recycle_reason = str(reply["recycle"])
            elif method in _PER_FILE:
                self._check_growth()
            return reply.get("result")

    def _partial(self, message: protocol.Message, on_partial: PartialHandler | None) -> None:
        if on_partial is None:
            return  # not asked for: the reply follows
        try:
            answer = protocol.check_file_answer(cast(protocol.Partial, message)["partial"], "partial")
        except protocol.ProtocolError as error:
            self.log(f"ignoring a malformed partial answer: {error}")
            return
        try:
            on_partial(answer)
        except Exception as error:  # noqa: BLE001 - the full answer still comes; a bug of the caller's is logged
            self.log(f"the partial answer's handler failed: {type(error).__name__}: {error}")

    def _check_growth(self) -> None:
        rss = _rss_mb(self.process.pid) if self.process else None
        if rss is None:
            return
        if self.base_rss_mb is None:
            self.base_rss_mb = rss
        elif rss > self.base_rss_mb * (1 + self.settings.recycle_growth):
            self.recycle_reason = f"its memory grew from {self.base_rss_mb:.0f} MB to {rss:.0f} MB"

    def _check_memory(self) -> None:
        rss = _analysis_rss_mb(self.process.pid) if self.process else None
        if rss is None:
            return
        self.peak_rss_mb = max(self.peak_rss_mb, rss)
        if rss > self.memory_limit_mb:
            self._end_analysis()
            raise WorkerFailure(
                "memory", f"the worker used {rss:.0f} MB, over the {self.memory_limit_mb} MB limit", self.stderr_tail()
            )

    def _death(self) -> WorkerFailure:
        code = self.process.wait(timeout=10) if self.process else None
        if code is not None and code < 0:
            try:
                how = f"was killed by {signal.Signals(-code).name}"
            except ValueError:
                how = f"was killed by signal {-code}"
        else:
            how = f"exited with code {code}"
        return WorkerFailure("crash", f"the worker process {how}", self.stderr_tail())

    def stderr_tail(self, lines: int = 20) -> str:
        return "".join(list(self._stderr)[-lines:])

    @staticmethod
    def _read_stdout(process: subprocess.Popen[bytes], replies: queue.Queue[str | None]) -> None:
        if process.stdout is not None:
            for frame in _frames(process.stdout, MAX_MESSAGE_BYTES):
                replies.put(_OVERSIZED if frame is None else frame.decode("utf-8", "replace"))
        replies.put(None)

    @staticmethod
    def _read_stderr(process: subprocess.Popen[bytes], sink: collections.deque[str]) -> None:
        if process.stderr is not None:
            for frame in _frames(process.stderr, MAX_STDERR_LINE_BYTES, keep_head=True):
                sink.append((frame or b"").decode("utf-8", "replace"))


class WorkerPool:
    """A fixed number of warm workers; a failed one is replaced on next use."""

    def __init__(
        self,
        size: int = 1,
        settings: WorkerSettings | None = None,
        log: Callable[[str], None] = lambda message: None,
        wait_on_close: bool = True,
    ):
        self.size = max(1, size)
        # False (a command that exits next): `close` does not wait for the workers' exit.
        self.wait_on_close = wait_on_close
        self.settings = settings or WorkerSettings()
        self.log = log
        limit = self.settings.memory_limit_mb or _default_memory_limit_mb(self.size)
        self._limit = limit
        self._idle: queue.Queue[Worker] = queue.Queue()
        self._all: list[Worker] = []
        self._lock = threading.Lock()
        self.hello = cast(protocol.Hello, {})  # empty until a worker has said hello
        self.restarts = 0
        self.recycled = 0
        self._starts: _Starts | None = None  # begun by start_in_background, not yet waited for
        self._starts_lock = threading.Lock()
        for _ in range(self.size):
            self._idle.put(Worker(self.settings, log, limit))

    def start_in_background(self) -> None:
        """Begin starting every worker now and return at once: the next `warm()` waits for
        these starts instead of beginning its own. The CLI calls it as soon as it knows how
        many workers it needs, so their torch import overlaps its own imports and setup."""
        with self._starts_lock:
            if self._starts is None:
                self._starts = _Starts(self, [self._idle.get() for _ in range(self.size)])

    def warm(self, wait_for_all: bool = False) -> protocol.Hello:
        """Start every worker now, in parallel, and return the first hello as soon as one
        worker is up: each joins the pool when ready, so the first file does not wait for
        the last worker's torch import (`wait_for_all`: return when every one is up). The
        starts `start_in_background` began are waited for, not begun again.
        Raises the first failure when no worker could start."""
        with self._starts_lock:
            starts, self._starts = self._starts, None
        if starts is None:
            starts = _Starts(self, [self._idle.get() for _ in range(self.size)])
        starts.wait(wait_for_all)
        return self.hello

    def _ensure_started(self, worker: Worker) -> None:
        if worker.alive:
            return
        if worker.process is not None:
            self.restarts += 1
            worker.kill()
            self.log("restarting a worker")
        worker.process = None
        with self._lock:  # listed before it starts: closing the pool meanwhile ends it too
            if worker not in self._all:
                self._all.append(worker)
        hello = worker.start()
        with self._lock:
            if not self.hello:
                self.hello = hello

    def request(
        self, method: str, params: protocol.RequestParams, timeout: float, on_partial: PartialHandler | None = None
    ) -> Any:
        worker = self._take()
        try:
            self._ensure_started(worker)
            return worker.request(method, params, timeout, on_partial)
        finally:
            if worker.recycle_reason:
                # State the last file left behind that could not be reset: a fresh worker
                # for the next file (started on its first request).
                self.log(f"recycling worker {worker.process.pid if worker.process else '?'}: {worker.recycle_reason}")
                self.recycled += 1
                worker.recycle_reason = None
                worker.kill()
                worker.process = None
            self._idle.put(worker)

    def _take(self) -> Worker:
        """A free worker; `Cancelled` when the thread's check is cancelled while it waits
        (a closed document's check never queues for a worker)."""
        cancel = _cancel_event()
        while True:
            if cancel is not None and cancel.is_set():
                raise Cancelled("waiting for a worker")
            try:
                return self._idle.get(timeout=None if cancel is None else 0.25)
            except queue.Empty:
                continue

    @property
    def peak_rss_mb(self) -> float:
        return max((w.peak_rss_mb for w in self._all), default=0.0)

    def close(self) -> None:
        for worker in list(self._all):
            worker.close(self.wait_on_close)


class _Starts:
    """Every worker of a pool being started at once, each on a thread of its own; a worker
    rejoins the pool's idle ones as soon as it is up (or failed: it restarts on its next
    request)."""

    def __init__(self, pool: WorkerPool, workers: list[Worker]):
        self._pool = pool
        self._count = len(workers)
        self._ready = threading.Condition()
        self._started: list[Worker] = []
        self._errors: list[WorkerFailure] = []
        for worker in workers:
            threading.Thread(target=self._start, args=(worker,), daemon=True, name="atenlint-warm").start()

    def _start(self, worker: Worker) -> None:
        failure: WorkerFailure | None = None
        try:
            self._pool._ensure_started(worker)
        except WorkerFailure as error:
            failure = error
        except Exception as error:  # noqa: BLE001 - the waiting caller must hear of it, never hang
            failure = WorkerFailure("start", f"{type(error).__name__}: {error}")
        finally:
            self._pool._idle.put(worker)  # usable now (a failed one restarts on its next request)
        with self._ready:
            if failure is None:
                self._started.append(worker)
            else:
                self._errors.append(failure)
            self._ready.notify_all()

    def wait(self, wait_for_all: bool) -> None:
        """Until one worker is up (`wait_for_all`: every one has started or failed); the
        first failure when none could start."""
        with self._ready:
            self._ready.wait_for(
                lambda: (
                    (bool(self._started) and not wait_for_all) or len(self._started) + len(self._errors) == self._count
                )
            )
            if not self._started:
                raise self._errors[0]
