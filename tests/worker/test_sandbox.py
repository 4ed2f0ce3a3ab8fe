"""The worker's sandbox and per-file state reset (issue 12), with canary files.

Every escape is attempted by an analysed file; a canary file (or a listening socket, or
a signal handler) in this test process would record it if it got through. The refusal
must raise inside the file's code (its try/except keeps working), be reported with the
line that attempted it, and leave the classes analysed.
"""

from __future__ import annotations

import os
import signal
import socket
import textwrap

import pytest

from atenlint.worker.pool import WorkerPool, WorkerSettings

NET = "import torch.nn as nn\n\n\nclass Net(nn.Module):\n    def forward(self, x):\n        return x.relu()\n"


def analyse(pool, path, module=None, timeout=60, **extra):
    module = module or path.stem
    params = {"path": str(path), "module": module, "roots": [str(path.parent)], **extra}
    return pool.request("analyse", params, timeout)


def write(folder, name, text, tail=""):
    path = folder / name
    path.write_text(textwrap.dedent(text).lstrip("\n") + tail)
    return path


def line_of(path, marker):
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if marker in line)


def test_process_creation_is_refused_in_the_users_code(pool, tmp_path):
    canary = tmp_path / "canaries"
    canary.mkdir()
    path = write(
        tmp_path,
        "spawns.py",
        f"""
        import multiprocessing, os, pty, subprocess
        CANARY = {str(canary)!r}
        caught = []
        def attempt(name, action):
            try:
                action()
            except PermissionError as error:
                caught.append(name)
        attempt("system", lambda: os.system("pip install -U ultralytics"))  # marker:system
        attempt("popen", lambda: subprocess.run(["touch", CANARY + "/popen"]))  # marker:popen
        attempt("os.popen", lambda: os.popen("touch " + CANARY + "/ospopen").read())  # marker:ospopen
        attempt("execv", lambda: os.execv("/bin/touch", ["touch", CANARY + "/exec"]))  # marker:exec
        attempt("spawn", lambda: os.posix_spawn("/bin/touch", ["touch", CANARY + "/spawn"], {{}}))  # marker:spawn
        attempt("fork", lambda: os.fork() or None)  # marker:fork
        attempt("pty", lambda: pty.spawn(["touch", CANARY + "/pty"]))  # marker:pty
        def child():
            open(CANARY + "/multiprocessing", "w").close()
        attempt("mp", lambda: multiprocessing.get_context("spawn").Process(target=child).start())  # marker:mp
        assert len(caught) == 8, caught
    """,
        NET,
    )
    answer = analyse(pool, path)
    assert "import_error" not in answer, answer["import_error"]
    assert [c["status"] for c in answer["classes"]] == ["ok"]  # the analysis went on
    assert os.listdir(canary) == []
    refused = {r["analysed_line"]: r for r in answer["refusals"]}
    for marker in ("system", "popen", "ospopen", "exec", "spawn", "fork", "pty", "mp"):
        line = line_of(path, f"marker:{marker}")
        assert refused[line]["kind"] == "process" and refused[line]["phase"] == "import", (marker, refused)
    assert refused[line_of(path, "marker:system")]["action"] == "run `pip install -U ultralytics`"


def test_ctypes_spawning_and_audit_hooks_of_the_code_are_refused(pool, tmp_path):
    canary = tmp_path / "ctypes_canary"
    path = write(
        tmp_path,
        "low_level.py",
        f"""
        import ctypes, sys
        seen = []
        sys.addaudithook(lambda event, args: seen.append(event))  # silently not added
        try:
            ctypes.CDLL(None).system(b"touch {canary}")
        except PermissionError:
            pass
        assert seen == [], seen[:5]
    """,
        NET,
    )
    answer = analyse(pool, path)
    assert "import_error" not in answer, answer.get("import_error")
    assert not canary.exists()
    assert [r["action"] for r in answer["refusals"]] == ["call the C function `system` through ctypes"]


def test_network_is_refused(pool, tmp_path):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(5)
    listener.setblocking(False)
    port = listener.getsockname()[1]
    path = write(
        tmp_path,
        "calls_home.py",
        f"""
        import socket, urllib.request
        for action in (lambda: socket.create_connection(("127.0.0.1", {port}), timeout=2),
                       lambda: urllib.request.urlopen("http://127.0.0.1:{port}/weights.pt", timeout=2),
                       lambda: socket.getaddrinfo("example.com", 443),
                       lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("127.0.0.1", {port}))):
            try:
                action()
            except PermissionError:
                pass
            else:
                raise AssertionError("the network was reachable")
    """,
        NET,
    )
    try:
        answer = analyse(pool, path)
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody connected
    finally:
        listener.close()
    assert "import_error" not in answer, answer.get("import_error")
    kinds = [r["kind"] for r in answer["refusals"]]
    assert kinds and set(kinds) == {"network"}
    assert any("download `http://127.0.0.1" in r["action"] for r in answer["refusals"])


def test_writes_outside_the_run_folder_are_refused_and_reads_stay_free(pool, tmp_path):
    keep = tmp_path / "keep.txt"
    keep.write_text("original")
    (tmp_path / "folder").mkdir()
    path = write(
        tmp_path,
        "writes.py",
        f"""
        import os, pathlib, shutil, sqlite3, tempfile
        HERE = {str(tmp_path)!r}
        refused = 0
        attempts = [
            lambda: open(HERE + "/canary_open", "w"),
            lambda: pathlib.Path(HERE, "canary_path").write_text("x"),
            lambda: os.open(HERE + "/canary_os", os.O_CREAT | os.O_WRONLY),
            lambda: open(HERE + "/keep.txt", "a"),
            lambda: os.mkdir(HERE + "/canary_dir"),
            lambda: os.rename(HERE + "/keep.txt", HERE + "/moved.txt"),
            lambda: os.remove(HERE + "/keep.txt"),
            lambda: shutil.rmtree(HERE + "/folder"),
            lambda: os.symlink("/etc/passwd", HERE + "/canary_link"),
            lambda: os.mkfifo(HERE + "/canary_fifo"),
            lambda: sqlite3.connect(HERE + "/canary.db").execute("create table t (x)"),
            lambda: os.chmod(HERE + "/keep.txt", 0o777),
            lambda: open("relative_canary", "w"),
        ]
        for attempt in attempts:
            try:
                attempt()
            except PermissionError:
                refused += 1
        assert refused == len(attempts), refused
        KEPT = open(HERE + "/keep.txt").read()  # reading stays free
        with tempfile.NamedTemporaryFile("w") as scratch:  # the run folder is writable
            scratch.write("fine")
    """,
        NET,
    )
    answer = analyse(pool, path)
    assert "import_error" not in answer, answer.get("import_error")
    assert sorted(os.listdir(tmp_path)) == ["folder", "keep.txt", "writes.py"]
    assert keep.read_text() == "original" and oct(keep.stat().st_mode & 0o777) != "0o777"
    assert {r["kind"] for r in answer["refusals"]} == {"write"} and len(answer["refusals"]) == 13


def test_a_signal_to_the_parent_is_refused(pool, tmp_path):
    received = []
    previous = signal.signal(signal.SIGURG, lambda number, frame: received.append(number))
    try:
        path = write(
            tmp_path,
            "signals.py",
            f"""
            import os, signal
            try:
                os.kill({os.getpid()}, signal.SIGURG)
            except PermissionError:
                pass
        """,
            NET,
        )
        answer = analyse(pool, path)
    finally:
        signal.signal(signal.SIGURG, previous)
    assert received == []
    assert [r["kind"] for r in answer["refusals"]] == ["signal"]


def test_an_uncaught_refusal_is_the_import_error_and_is_marked(pool, tmp_path):
    path = write(
        tmp_path,
        "installs.py",
        """
        import os
        os.system("pip install -U ultralytics")  # not caught: the import stops here
    """,
        NET,
    )
    answer = analyse(pool, path)
    assert answer["import_error"]["refused"] and answer["import_error"]["line"] == 2
    assert [(r["analysed_line"], r["action"]) for r in answer["refusals"]] == [(2, "run `pip install -U ultralytics`")]


def test_a_refusal_in_an_imported_helper_names_both_lines(pool, tmp_path):
    write(
        tmp_path,
        "helper_spawns.py",
        'import subprocess\n\ntry:\n    subprocess.call(["true"])\nexcept OSError:\n    pass\n',
    )
    path = write(tmp_path, "uses_helper.py", "import helper_spawns\n" + NET)
    (refusal,) = analyse(pool, path)["refusals"]
    assert refusal["analysed_line"] == 1 and refusal["line"] == 4
    assert refusal["file"] == os.path.realpath(tmp_path / "helper_spawns.py")


def test_a_fifo_or_device_module_never_hangs_the_import(pool, tmp_path):
    os.mkfifo(tmp_path / "pipe.py")
    os.symlink("/dev/zero", tmp_path / "zero.py")
    path = write(
        tmp_path,
        "imports_pipe.py",
        """
        for name in ("pipe", "zero"):
            try:
                __import__(name)  # the import system only loads regular files
            except ImportError:
                pass
            else:
                raise AssertionError(name)
        try:
            source = open(__file__.replace("imports_pipe", "pipe")).read()  # would block for a writer
        except PermissionError:
            pass
    """,
        NET,
    )
    answer = analyse(pool, path, timeout=30)
    assert "import_error" not in answer, answer.get("import_error")
    assert [c["status"] for c in answer["classes"]] == ["ok"]
    assert [r["kind"] for r in answer["refusals"]] == ["file"]


def test_global_state_is_reset_after_each_file(pool, tmp_path):
    write(
        tmp_path,
        "poisons.py",
        """
        import json, logging, os, signal, sys, warnings
        import torch
        import torch.nn.functional as F
        torch.set_default_dtype(torch.float64)
        torch.set_default_device("meta")
        torch.set_grad_enabled(False)
        torch.use_deterministic_algorithms(True)
        torch.set_float32_matmul_precision("medium")
        torch.nn.Module.poisoned = True
        F.relu = lambda x, inplace=False: x
        torch.Tensor.relu = lambda self: self
        warnings.simplefilter("error")
        logging.basicConfig(level=logging.DEBUG)
        sys.modules["json"] = "not json"
        sys.path.insert(0, "/nonexistent")
        os.environ["ATENLINT_POISON"] = "1"
        os.chdir("/")
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.alarm(30)
        torch.device("meta").__enter__()
    """,
        NET,
    )
    poisoned = analyse(pool, tmp_path / "poisons.py")
    assert "import_error" not in poisoned, poisoned.get("import_error")
    path = write(
        tmp_path,
        "checks.py",
        """
        import json, logging, os, signal, sys, warnings
        import torch
        import torch.nn.functional as F
        assert torch.get_default_dtype() == torch.float32
        assert torch.get_default_device() == torch.device("cpu") and torch.empty(1).device.type == "cpu"
        assert torch.is_grad_enabled() and not torch.are_deterministic_algorithms_enabled()
        assert torch.get_float32_matmul_precision() == "highest"
        assert not hasattr(torch.nn.Module, "poisoned")
        assert F.relu(torch.tensor([-1.0])).item() == 0.0 and torch.tensor([-1.0]).relu().item() == 0.0
        assert not any(action == "error" for action, *_ in warnings.filters)
        assert logging.getLogger().level == logging.WARNING or not logging.getLogger().handlers
        assert hasattr(json, "dumps") and "/nonexistent" not in sys.path
        assert "ATENLINT_POISON" not in os.environ and os.getcwd() != "/"
        assert signal.alarm(0) == 0
    """,
        NET,
    )
    answer = analyse(pool, path)
    assert "import_error" not in answer, answer.get("import_error")
    assert [c["status"] for c in answer["classes"]] == ["ok"]


def test_workspace_files_never_shadow_the_standard_library_or_torch(pool, tmp_path):
    canaries = tmp_path / "canaries"
    canaries.mkdir()
    for name in ("json", "random", "types", "typing", "torch", "collections", "numpy", "sympy"):
        write(
            tmp_path,
            f"{name}.py",
            f'open({str(canaries)!r} + "/{name}", "w").close()\n'
            f'raise RuntimeError("the workspace {name}.py was imported")\n',
        )
    path = write(
        tmp_path,
        "model.py",
        """
        import json, random, types, typing
        import torch
        import torch.nn as nn
        assert json.dumps([1]) == "[1]" and hasattr(random, "random") and hasattr(typing, "Optional")


        class Net(nn.Module):
            def forward(self, x):
                return torch.take(x, torch.tensor([0]))
    """,
    )
    first = analyse(pool, path)
    assert "import_error" not in first, first.get("import_error")
    assert first["classes"][0]["ops"]
    # Analysing the shadowing files themselves runs them, under their own name, for that
    # file only: a later file still sees the real modules.
    for name in ("json", "torch"):
        assert "import_error" in analyse(pool, tmp_path / f"{name}.py")
    again = analyse(pool, path)
    assert "import_error" not in again, again.get("import_error")
    assert [op["op"] for op in again["classes"][0]["ops"]] == [op["op"] for op in first["classes"][0]["ops"]]
    assert sorted(os.listdir(canaries)) == []  # refused: the sandbox stops their writes too


@pytest.fixture(scope="module")
def unsandboxed_pool(tmp_path_factory):
    """A pool started from a hostile working folder (a json.py that writes a canary), with
    the sandbox switched off (the setting users have)."""
    hostile = tmp_path_factory.mktemp("hostile_cwd")
    (hostile / "json.py").write_text(f"open({str(hostile / 'json_canary')!r}, 'w').close()\n")
    (hostile / "typing.py").write_text("raise RuntimeError('typing shadowed')\n")
    previous = os.getcwd()
    os.chdir(hostile)
    try:
        pool = WorkerPool(1, WorkerSettings(sandbox=False))
        pool.warm()
    finally:
        os.chdir(previous)
    pool.hostile = hostile
    yield pool
    pool.close()


def test_the_worker_starts_isolated_from_the_working_folder(unsandboxed_pool, tmp_path):
    hello = unsandboxed_pool.hello
    assert hello["isolated"] and hello["run_dir"] and not hello["sandbox"]
    assert hello["containment"]["kernel"] is False and hello["containment"]["missing"]  # said, once
    assert not (unsandboxed_pool.hostile / "json_canary").exists()
    path = write(
        tmp_path,
        "where.py",
        f"""
        import os, sys
        assert os.getcwd() != {str(unsandboxed_pool.hostile)!r}
        assert "" not in sys.path and {str(unsandboxed_pool.hostile)!r} not in sys.path
        assert sys.path.index({str(tmp_path)!r}) > max(i for i, p in enumerate(sys.path) if "site-packages" in p)
    """,
        NET,
    )
    answer = analyse(unsandboxed_pool, path)
    assert "import_error" not in answer, answer.get("import_error")


def test_without_the_sandbox_the_code_may_spawn(unsandboxed_pool, tmp_path):
    canary = tmp_path / "spawned"
    path = write(tmp_path, "spawns_freely.py", f'import subprocess\nsubprocess.run(["touch", {str(canary)!r}])\n' + NET)
    answer = analyse(unsandboxed_pool, path)
    assert canary.exists() and answer["refusals"] == []


def test_a_leftover_thread_ends_with_its_files_process(unsandboxed_pool, tmp_path):
    """Each file runs in a process forked from the warm worker, which exits after it: a
    thread the file left running never reaches the next file, and nothing is recycled."""
    path = write(
        tmp_path,
        "spins.py",
        """
        import _thread, threading
        def spin():
            while True:
                pass
        threading.Thread(target=spin, daemon=True, name="spinner").start()
        _thread.start_new_thread(spin, ())
    """,
        NET,
    )
    pid = unsandboxed_pool._all[0].process.pid
    answer = analyse(unsandboxed_pool, path)
    assert [c["status"] for c in answer["classes"]] == ["ok"]  # the answer still counts
    later = write(
        tmp_path,
        "later.py",
        f"""
        import sys, threading
        assert "spinner" not in [t.name for t in threading.enumerate()]
        assert not [f for f in sys._current_frames().values() if f.f_code.co_filename == {str(path)!r}]
    """,
        NET,
    )
    answer = analyse(unsandboxed_pool, later)
    assert "import_error" not in answer, answer.get("import_error")
    assert unsandboxed_pool.recycled == 0 and unsandboxed_pool._all[0].process.pid == pid
