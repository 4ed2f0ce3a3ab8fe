"""Containment the kernel enforces (issue 21): each file is analysed in a child of the warm
worker that confines itself (Landlock, seccomp, resource limits, death with its parent)
before it imports the file. The analysed files here first switch the audit-hook sandbox
off, as an attacker would, so every refusal below is the kernel's; canaries in this test
process (files, a signal handler, a listening socket, the worker's pid) record anything
that gets through.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import pytest

from atenlint.worker import confine

pytestmark = pytest.mark.skipif(
    not (sys.platform.startswith("linux") and confine.probe().kernel),
    reason="kernel containment needs Linux with Landlock and seccomp",
)

NET = "\n\nimport torch.nn as nn\n\n\nclass Net(nn.Module):\n    def forward(self, x):\n        return x.relu()\n"

SANDBOX_OFF = """
import atenlint.worker.sandbox as _sandbox
_sandbox.SANDBOX.enabled = False  # the audit hook is gone: only the kernel stands
"""


def analyse(pool, path, timeout=120):
    return pool.request("analyse", {"path": str(path), "module": path.stem, "roots": [str(path.parent)]}, timeout)


def write(folder, name, text, sandbox_off=False):
    path = folder / name
    prefix = SANDBOX_OFF.lstrip("\n") if sandbox_off else ""
    path.write_text(prefix + textwrap.dedent(text).lstrip("\n") + NET)
    return path


def test_the_hello_answer_says_what_contains_the_code(pool):
    containment = pool.hello["containment"]
    assert containment["fork"] is True and containment["kernel"] is True
    assert containment["landlock_abi"] >= 1 and containment["seccomp"] is True and containment["missing"] == []


def test_every_escape_is_refused_by_the_kernel_and_a_later_file_is_still_analysed(pool, tmp_path):
    canaries = tmp_path / "canaries"
    canaries.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    victim.chmod(0o644)
    before = victim.stat()
    received: list[int] = []
    previous = signal.signal(signal.SIGUSR1, lambda number, frame: received.append(number))
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(5)
    listener.setblocking(False)
    port = listener.getsockname()[1]
    worker_pid, restarts = pool._all[0].process.pid, pool.restarts
    path = write(
        tmp_path,
        "escapes.py",
        f"""
        import ctypes, importlib.util, os, posix, signal, socket, subprocess, torch
        OUT, VICTIM, TEST_PID, PORT = {str(canaries)!r}, {str(victim)!r}, {os.getpid()}, {port}


        class Sneaky(str):
            def __str__(self):
                return "/dev/null"  # what a hook would read; the kernel opens the real text


        def fresh_posixsubprocess_run():
            spec = importlib.util.find_spec("_posixsubprocess")
            fresh = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(fresh)
            subprocess._posixsubprocess = fresh
            if hasattr(subprocess, "_fork_exec"):
                subprocess._fork_exec = fresh.fork_exec
            subprocess.run(["/usr/bin/touch", OUT + "/posixsubprocess"])


        def fchmod_outside():
            fd = os.open(VICTIM, os.O_RDONLY)
            try:
                os.fchmod(fd, 0o777)
            finally:
                os.close(fd)


        def utime_outside():
            fd = os.open(VICTIM, os.O_RDONLY)
            try:
                os.utime(fd, (0, 0))
            finally:
                os.close(fd)


        def ctypes_system():
            if ctypes.CDLL(None).system(("touch " + OUT + "/system").encode()) != 0:
                raise OSError("system() failed")


        attempts = {{
            "str subclass": lambda: open(Sneaky(OUT + "/sneaky"), "w").write("x"),
            "torch.save": lambda: torch.save(torch.zeros(1), OUT + "/saved.pt"),
            "posix.mkfifo": lambda: posix.mkfifo(OUT + "/fifo"),
            "fchmod": fchmod_outside,
            "utime": utime_outside,
            "pidfd": lambda: signal.pidfd_send_signal(os.pidfd_open(TEST_PID), signal.SIGUSR1),
            "kill": lambda: os.kill(TEST_PID, signal.SIGUSR1),
            "kill worker": lambda: os.kill(os.getppid(), signal.SIGKILL),
            "kill group": lambda: os.kill(0, signal.SIGKILL),
            "ctypes system": ctypes_system,
            "fresh _posixsubprocess": fresh_posixsubprocess_run,
            "fork": lambda: os.fork() or os._exit(0),
            "execv": lambda: os.execv("/usr/bin/touch", ["touch", OUT + "/exec"]),
            "connect": lambda: socket.create_connection(("127.0.0.1", PORT), timeout=2),
            "udp": lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("127.0.0.1", PORT)),
        }}
        escaped = []
        for name, attempt in attempts.items():
            try:
                attempt()
            except Exception:
                continue
            escaped.append(name)
        assert not escaped, escaped
        open(os.devnull, "w").write("writing /dev/null stays allowed")
        """,
        sandbox_off=True,
    )
    try:
        answer = analyse(pool, path)
        time.sleep(0.2)  # a signal that got through has arrived by now
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody connected
    finally:
        listener.close()
        signal.signal(signal.SIGUSR1, previous)
    assert "import_error" not in answer, answer["import_error"]
    assert [c["status"] for c in answer["classes"]] == ["ok"]
    assert os.listdir(canaries) == []
    after = victim.stat()
    assert (after.st_mode, after.st_mtime_ns) == (before.st_mode, before.st_mtime_ns)
    assert received == []
    assert pool.restarts == restarts and pool._all[0].process.pid == worker_pid  # the worker lived

    clean = write(tmp_path, "clean.py", "import torch\n")
    answer = analyse(pool, clean)
    assert "import_error" not in answer and [c["status"] for c in answer["classes"]] == ["ok"]
    assert any("relu" in op["op"] for op in answer["classes"][0]["ops"])


def test_writes_inside_the_run_folder_stay_allowed(pool, tmp_path):
    path = write(
        tmp_path,
        "caches.py",
        """
        import os, tempfile, torch
        folder = tempfile.mkdtemp()  # TMPDIR is the run folder
        torch.save(torch.zeros(2), os.path.join(folder, "cache.pt"))
        assert torch.load(os.path.join(folder, "cache.pt")).shape == (2,)
        """,
        sandbox_off=True,
    )
    answer = analyse(pool, path)
    assert "import_error" not in answer, answer["import_error"]


def test_a_crash_of_the_analysis_costs_one_answer_not_the_worker(pool, tmp_path):
    path = write(tmp_path, "segfaults.py", "import ctypes\nctypes.string_at(0)\n")
    worker_pid = pool._all[0].process.pid
    with pytest.raises(Exception) as failure:
        analyse(pool, path)
    assert getattr(failure.value, "kind", None) == "crash" and "SIGSEGV" in failure.value.message
    assert pool._all[0].process.pid == worker_pid
    clean = write(tmp_path, "after_crash.py", "")
    assert [c["status"] for c in analyse(pool, clean)["classes"]] == ["ok"]


_ORPHAN_SCRIPT = """
import sys
from atenlint.worker.pool import WorkerPool
pool = WorkerPool(1)
pool.warm()
print(pool._all[0].process.pid, flush=True)
pool.request("analyse", {"path": sys.argv[1], "module": "loops", "roots": [sys.argv[2]]}, 600)
"""


def _children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as children:
            return [int(child) for child in children.read().split()]
    except OSError:
        return []


def _running(pid):
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended
    except OSError:
        return False


def _state(pid):
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat, open(f"/proc/{pid}/wchan", encoding="ascii") as wchan:
            return stat.read()[:80], wchan.read(), os.listdir(f"/proc/{pid}/task")
    except OSError as error:
        return str(error)


def test_killing_the_parent_leaves_no_worker_behind(tmp_path):
    loops = tmp_path / "loops.py"
    loops.write_text("while True:\n    pass\n")
    cli = subprocess.Popen(
        [sys.executable, "-c", _ORPHAN_SCRIPT, str(loops), str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        worker = int(cli.stdout.readline())
        deadline = time.monotonic() + 120
        while not _children(worker) and time.monotonic() < deadline:
            time.sleep(0.1)
        (analysis,) = _children(worker)
        time.sleep(0.5)  # the file is looping now
        cli.kill()
        cli.wait()
        gone_by = time.monotonic() + 2
        while (_running(worker) or _running(analysis)) and time.monotonic() < gone_by:
            time.sleep(0.05)
        assert not _running(worker) and not _running(analysis), _state(worker)
    finally:
        cli.kill()
        cli.wait()
        if cli.stdout is not None:
            cli.stdout.close()


def test_the_filter_checks_the_architecture_first():
    arch = confine._ARCHES["x86_64"]
    program = confine.build_filter(arch, 1234)
    assert program[0] == (0x20, 0, 0, 4) and program[1][3] == arch.audit
    assert program[2] == (0x06, 0, 0, 0x80000000)  # another ABI: the process is killed
    assert program[-1] == (0x06, 0, 0, 0x7FFF0000)  # whatever is not listed is allowed
    assert len(program) < 256  # every jump offset fits the 8-bit field


def test_nothing_one_file_changes_reaches_the_next(pool, tmp_path):
    """Monkeypatches of atenlint's capture code, threads, sys.modules, the environment and
    the sandbox switch: the next file's process is a fresh fork of the warm worker."""
    poisons = write(
        tmp_path,
        "poisons.py",
        """
        import _thread, os, sys, types
        import atenlint.capture.file_capture as file_capture
        import atenlint.worker.sandbox as sandbox
        file_capture.capture_file = lambda request, on_partial=None: {"classes": []}  # hides findings
        sandbox.SANDBOX.enabled = False
        sys.modules["atenlint_poison"] = types.ModuleType("atenlint_poison")
        os.environ["ATENLINT_POISON"] = "1"
        def spin():
            while True:
                pass
        _thread.start_new_thread(spin, ())
        """,
    )
    analyse(pool, poisons)
    later = write(
        tmp_path,
        "later.py",
        f"""
        import os, sys, subprocess
        import atenlint.worker.sandbox as sandbox
        assert "atenlint_poison" not in sys.modules and "ATENLINT_POISON" not in os.environ
        assert sandbox.SANDBOX.enabled
        assert not [f for f in sys._current_frames().values() if f.f_code.co_filename == {str(poisons)!r}]
        try:
            subprocess.run(["true"])  # marker:refused
        except PermissionError:
            pass
        """,
    )
    answer = analyse(pool, later)
    assert "import_error" not in answer, answer["import_error"]
    assert [c["status"] for c in answer["classes"]] == ["ok"] and answer["classes"][0]["ops"]  # not hidden
    assert [r["kind"] for r in answer["refusals"]] == ["process"]  # the audit hook is back on


def test_analysed_code_sees_no_descriptor_but_its_answer_and_stdio(pool, tmp_path):
    """Of what the worker holds (the request pipe above all) the analysed code gets nothing:
    only stdio, /dev/null as stdin, and the two pipe ends its answer goes out on."""
    requests = os.readlink(f"/proc/self/fd/{pool._all[0].process.stdin.fileno()}")  # pipe:[n]: the request pipe
    path = write(
        tmp_path,
        "descriptors.py",
        """
        import json, os
        seen = {}
        for name in os.listdir("/proc/self/fd"):
            try:
                seen[int(name)] = os.readlink("/proc/self/fd/" + name)
            except OSError:
                pass  # the listing's own descriptor, closed by now
        raise RuntimeError(json.dumps(seen))
        """,
    )
    answer = analyse(pool, path)
    seen = {int(fd): target for fd, target in json.loads(answer["import_error"]["message"]).items()}
    assert {0, 1, 2} <= set(seen) and len(seen) <= 6, seen
    assert requests not in seen.values(), seen
    assert all(target == os.devnull or target.startswith("pipe:") for target in seen.values()), seen


def test_a_worker_closes_what_its_parent_leaked(pool, tmp_path):
    """A parent that starts the worker without closing its descriptors (here: a file and a
    listening socket passed on purpose) leaks nothing to it: the worker closes them first."""
    leaked_file = open(tmp_path / "secret.txt", "w")  # noqa: SIM115 - closed below
    listener = socket.socket()
    try:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        leaked = (leaked_file.fileno(), listener.fileno())
        run_dir = tmp_path / "run"
        run_dir.mkdir()
        worker = subprocess.Popen(
            pool._all[0].command(str(run_dir)),
            cwd=run_dir,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            pass_fds=leaked,
        )
        try:
            # A cheap request (no torch import): answered only after the worker's start.
            worker.stdin.write(b'{"id": 1, "method": "loaded_packages", "params": {}}\n')
            worker.stdin.flush()
            assert json.loads(worker.stdout.readline())["id"] == 1
            targets = [os.readlink(f"/proc/{worker.pid}/fd/{fd}") for fd in os.listdir(f"/proc/{worker.pid}/fd")]
        finally:
            worker.kill()
            worker.wait()
            worker.stdin.close()
            worker.stdout.close()
    finally:
        leaked_file.close()
        listener.close()
    assert str(tmp_path / "secret.txt") not in targets and not [t for t in targets if t.startswith("socket:")]


def _is_open(fd):
    try:
        os.fstat(fd)
    except OSError:
        return False  # the listing's own descriptor, closed once listed
    return True


def test_close_inherited_keeps_only_what_it_is_told():
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - reports through its exit code
        try:
            extra = [os.open(os.devnull, os.O_RDONLY) for _ in range(3)]
            confine.close_inherited([write_end])
            remaining = {int(fd) for fd in os.listdir("/proc/self/fd") if _is_open(int(fd))} - {0, 1, 2}
            ok = remaining == {write_end} and not set(extra) & remaining and not os.get_inheritable(write_end)
            os.write(write_end, b"ok" if ok else repr(remaining).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as answer:
        said = answer.read()
    os.waitpid(child, 0)
    assert said == b"ok"
