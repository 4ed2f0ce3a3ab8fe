"""Workers: isolated, replaced on timeout, crash and memory blow-up, never polluted by pygls."""

from __future__ import annotations

import os
import time

import pytest

from atenlint.worker.pool import WorkerFailure, WorkerPool, WorkerSettings
from support import process_running


def analyse(pool, path, module, timeout=30):
    return pool.request("analyse", {"path": str(path), "module": module, "roots": [str(path.parent)]}, timeout)


@pytest.fixture(scope="module")
def own_pool():
    """One pool with a low memory limit for the tests that kill its worker: each failure must
    leave it usable for the next test (the replacement starts on the next request)."""
    pool = WorkerPool(1, WorkerSettings(memory_limit_mb=1500))
    pool.warm()
    yield pool
    pool.close()


def test_timeout_kills_the_analysis_and_the_warm_worker_answers_next(own_pool, tmp_path):
    (tmp_path / "spin.py").write_text("while True:\n    pass\n")
    (tmp_path / "fine.py").write_text("x = 1\n")
    assert analyse(own_pool, tmp_path / "fine.py", "fine")["classes"] == []  # a live worker
    first_pid, restarts = own_pool._all[0].hello["pid"], own_pool.restarts
    with pytest.raises(WorkerFailure) as failure:
        analyse(own_pool, tmp_path / "spin.py", "spin", timeout=3)
    assert failure.value.kind == "timeout"
    assert "more than 3 s of processor time" in failure.value.message
    started = time.monotonic()
    assert analyse(own_pool, tmp_path / "fine.py", "fine")["classes"] == []
    # Only the file's own process was killed: no restart (and no torch import) before the next.
    assert own_pool.restarts == restarts and own_pool._all[0].hello["pid"] == first_pid
    assert time.monotonic() - started < 30


def test_memory_blow_up_is_stopped(own_pool, tmp_path):
    # The hog grows in steps (a single allocation over the kernel's data cap fails at once,
    # below), then blocks forever: only the memory check can end it (a timeout far beyond
    # any slow machine is there to fail the test, not to race it).
    (tmp_path / "hog.py").write_text(
        "import threading\nblob = [bytearray(64 * 1024 ** 2) for _ in range(48)]\nthreading.Event().wait()\n"
    )
    with pytest.raises(WorkerFailure) as failure:
        analyse(own_pool, tmp_path / "hog.py", "hog", timeout=240)
    assert failure.value.kind == "memory"
    (tmp_path / "fine.py").write_text("x = 1\n")
    assert analyse(own_pool, tmp_path / "fine.py", "fine")["classes"] == []  # and it was replaced


def test_one_allocation_over_the_data_cap_is_a_memory_failure(own_pool, tmp_path):
    """The kernel's backstop (RLIMIT_DATA: twice the pool's limit over the worker's size)
    refuses an allocation the parent's polling could not catch in time; the file is
    reported as over its memory, and the warm worker answers the next file."""
    (tmp_path / "greedy.py").write_text(
        "import threading\nblob = bytearray(64 * 1024 ** 3)\nthreading.Event().wait()\n"
    )
    pid = own_pool._all[0].process.pid
    with pytest.raises(WorkerFailure) as failure:
        analyse(own_pool, tmp_path / "greedy.py", "greedy")
    assert failure.value.kind == "memory" and "1500 MB" in failure.value.message
    (tmp_path / "fine.py").write_text("x = 1\n")
    assert analyse(own_pool, tmp_path / "fine.py", "fine")["classes"] == []
    assert own_pool._all[0].process.pid == pid


def test_user_output_and_input_cannot_break_the_protocol(own_pool, tmp_path):
    (tmp_path / "chatty.py").write_text(
        "print('hello from import')\nimport sys\nsys.stdout.write('{not json\\n')\nx = input()\n"
    )
    answer = analyse(own_pool, tmp_path / "chatty.py", "chatty")
    assert answer["import_error"]["type"] == "EOFError"
    # stderr is read on its own thread, which a loaded machine may run after the reply came:
    # wait for it (bounded only to turn a loss into a failure).
    worker = own_pool._all[0]
    for _ in range(600):
        if "hello from import" in worker.stderr_tail():
            break
        time.sleep(0.05)
    assert "hello from import" in worker.stderr_tail()


def test_the_worker_never_imports_pygls_or_yaml(tmp_path):
    """A worker of its own: the session's may have analysed for executorch, whose own
    import reads its tables with YAML; what is asked here is that atenlint's worker brings
    in none of these for a plain analysis."""
    (tmp_path / "m.py").write_text(
        "import torch.nn as nn\nclass Net(nn.Module):\n    def forward(self, x):\n        return x.relu()\n"
    )
    pool = WorkerPool(1)
    try:
        analyse(pool, tmp_path / "m.py", "m")
        loaded = set(pool.request("loaded_packages", {}, 30))
    finally:
        pool.close()
    assert "torch" in loaded and "atenlint" in loaded
    assert not loaded & {"pygls", "lsprotocol", "yaml", "cattrs", "attrs"}


def test_a_missing_interpreter_is_a_start_failure():
    with pytest.raises(WorkerFailure) as failure:
        WorkerPool(1, WorkerSettings(python="/nonexistent/python3")).warm()
    assert failure.value.kind == "start"


def test_worker_output_is_read_in_bounded_frames():
    """A line with no end (1.5 GB of stderr once took the CLI to 3.1 GB) is read a bounded
    piece at a time: a protocol message over the limit is skipped, a stderr line is cut."""
    import io

    from atenlint.worker.pool import _frames

    stream = io.BytesIO(b"x" * 100_000 + b"\n" + b'{"id": 1}\n' + b"y" * 50)
    assert list(_frames(stream, 1000)) == [None, b'{"id": 1}\n', b"y" * 50]
    cut = list(_frames(io.BytesIO(b"z" * 100_000 + b"\nok\n"), 10, keep_head=True))
    assert cut == [b"z" * 10 + " … (cut)\n".encode(), b"ok\n"]
    assert list(_frames(io.BytesIO(b"a" * 10 + b"\n"), 10)) == [b"a" * 10 + b"\n"]  # exactly the limit


def test_endless_stderr_keeps_the_parent_small(own_pool, tmp_path):
    (tmp_path / "floods.py").write_text(
        "import sys\nchunk = 'x' * (1 << 20)\nfor _ in range(200):\n    sys.stderr.write(chunk)\nsys.stderr.flush()\n"
    )
    answer = analyse(own_pool, tmp_path / "floods.py", "floods", timeout=120)
    assert "import_error" not in answer
    deadline = time.monotonic() + 60  # stderr is read on its own thread
    while "(cut)" not in own_pool._all[0].stderr_tail(200) and time.monotonic() < deadline:
        time.sleep(0.1)
    tail = own_pool._all[0].stderr_tail(200)
    assert len(tail) < 200 * 5000 and "(cut)" in tail


def test_a_slowed_down_analysis_keeps_its_full_result(own_pool, tmp_path):
    """The time limit counts the analysis's processor time, which load does not inflate:
    a child stopped for longer than the limit (as a loaded machine would starve it), on a
    file that also sleeps past the limit at import, still gives its whole answer."""
    import os
    import signal
    import threading

    from atenlint.worker.pool import _children

    (tmp_path / "slow.py").write_text(
        "import time\nimport torch.nn as nn\ntime.sleep(1.5)\n\n\n"
        "class Net(nn.Module):\n    def forward(self, x):\n        return x.relu()\n"
    )
    (tmp_path / "fine.py").write_text("x = 1\n")
    analyse(own_pool, tmp_path / "fine.py", "fine")  # a live warm worker, whose child to stop
    zygote = own_pool._all[0].process.pid
    earlier = set(_children(zygote))  # fine.py's child, until the worker has reaped it
    stopped: list[int] = []
    done = threading.Event()

    def stop_the_child() -> None:
        while not done.is_set():
            children = [child for child in _children(zygote) if child not in earlier]
            if children:
                os.kill(children[0], signal.SIGSTOP)
                stopped.append(children[0])
                done.wait(3)  # what a starved process goes through, longer than the limit
                os.kill(children[0], signal.SIGCONT)
                return
            done.wait(0.005)

    watcher = threading.Thread(target=stop_the_child)
    watcher.start()
    try:
        answer = analyse(own_pool, tmp_path / "slow.py", "slow", timeout=1)
    finally:
        done.set()
        watcher.join()
    assert stopped, "the analysis child was never seen"
    assert [cls["qualname"] for cls in answer["classes"]] == ["Net"], answer
    assert "import_error" not in answer


def test_code_that_waits_without_computing_meets_the_wall_clock_backstop(own_pool, tmp_path):
    from atenlint.worker.pool import WALL_BACKSTOP

    (tmp_path / "waits.py").write_text("import threading\nthreading.Event().wait()\n")
    with pytest.raises(WorkerFailure) as failure:
        analyse(own_pool, tmp_path / "waits.py", "waits", timeout=0.5)
    assert failure.value.kind == "timeout"
    assert f"within {0.5 * WALL_BACKSTOP:g} s of wall-clock time" in failure.value.message
    assert "waiting, not computing" in failure.value.message
    (tmp_path / "fine.py").write_text("x = 1\n")
    assert analyse(own_pool, tmp_path / "fine.py", "fine")["classes"] == []


def test_the_time_limit_counts_only_the_process_of_its_own_request():
    """A child killed for its limit stays listed, with all its processor time, until the
    worker reaps it: the next request's limit must not start with that time spent."""
    import os
    import subprocess
    import sys

    from atenlint.worker.pool import _AnalysisClock

    burn = [sys.executable, "-c", "import time\nend = time.process_time() + 0.5\nwhile time.process_time() < end: pass"]
    earlier = subprocess.Popen(burn)
    try:
        os.waitid(os.P_PID, earlier.pid, os.WEXITED | os.WNOWAIT)  # ended, not reaped
        clock = _AnalysisClock(os.getpid(), 0.4)
        assert clock.exceeded() == ""
        later = subprocess.Popen(burn)  # this request's own process
        os.waitid(os.P_PID, later.pid, os.WEXITED | os.WNOWAIT)
        assert clock.exceeded() == "used more than 0.4 s of processor time without answering"
        later.wait()
    finally:
        earlier.wait()


def _wait_for_child(zygote: int, earlier: set[int]) -> int:
    """The analysis child the warm worker forked for the request in flight (a wait for an
    event, bounded only to turn a hang into a failure)."""
    from atenlint.worker.pool import _children

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        children = [child for child in _children(zygote) if child not in earlier]
        if children:
            return children[0]
        time.sleep(0.01)
    raise AssertionError("the analysis child was never seen")


def test_a_cancelled_analysis_ends_only_its_child_and_the_warm_worker_answers_next(own_pool, tmp_path):
    """Closing a document stops its check in flight (issue 21: after 500 open/close pairs a
    new file waited 91 s behind checks nobody wanted). The limit is far beyond any test, so
    only the cancel can end the endless import; the next file is answered by the same warm
    worker, which could not take it while the loop ran."""
    import threading

    from atenlint.worker.pool import Cancelled, _children, cancelled_by

    (tmp_path / "spin.py").write_text("while True:\n    pass\n")
    (tmp_path / "fine.py").write_text("x = 1\n")
    assert analyse(own_pool, tmp_path / "fine.py", "fine")["classes"] == []  # a live warm worker
    worker = own_pool._all[0]
    zygote, restarts = worker.process.pid, own_pool.restarts
    earlier = set(_children(zygote))
    cancel = threading.Event()
    outcome: list[str] = []

    def check() -> None:
        with cancelled_by(cancel):
            try:
                analyse(own_pool, tmp_path / "spin.py", "spin", timeout=86_400)
                outcome.append("answered")
            except Cancelled:
                outcome.append("cancelled")

    thread = threading.Thread(target=check)
    thread.start()
    child = _wait_for_child(zygote, earlier)
    cancel.set()
    thread.join(timeout=120)
    assert not thread.is_alive() and outcome == ["cancelled"]
    assert analyse(own_pool, tmp_path / "fine.py", "fine", timeout=86_400)["classes"] == []
    assert not process_running(child)
    assert own_pool.restarts == restarts and worker.process.pid == zygote  # the zygote lives on


def test_children_that_answered_are_ended_and_collected_without_being_waited_for(own_pool, tmp_path):
    """The zygote takes the next file as soon as a file's child has answered, without waiting
    for the kernel to tear the child's copy of it down; each such child is still ended and
    collected: after many files at most the last two are listed (the one before may still be
    ending as the last is forked), and none outlives its answer."""
    from atenlint.worker.pool import _children

    (tmp_path / "fine.py").write_text("x = 1\n")
    assert analyse(own_pool, tmp_path / "fine.py", "fine")["classes"] == []
    zygote = own_pool._all[0].process.pid
    for _ in range(6):
        assert analyse(own_pool, tmp_path / "fine.py", "fine")["classes"] == []
    left = _children(zygote)
    assert len(left) <= 2
    deadline = time.monotonic() + 120  # a bound for a broken zygote, not a measure
    while any(process_running(child) for child in left) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(process_running(child) for child in left)


def test_a_cancelled_request_is_never_sent_nor_queued_for_a_worker(own_pool, tmp_path):
    import threading

    from atenlint.worker.pool import Cancelled, cancelled_by

    (tmp_path / "fine.py").write_text("x = 1\n")
    cancel = threading.Event()
    cancel.set()
    with cancelled_by(cancel), pytest.raises(Cancelled):
        analyse(own_pool, tmp_path / "fine.py", "fine")
    # Every worker busy: a cancelled check stops waiting for one.
    taken = own_pool._idle.get()
    try:
        waiting = threading.Event()
        raised: list[BaseException] = []

        def check() -> None:
            with cancelled_by(waiting):
                try:
                    analyse(own_pool, tmp_path / "fine.py", "fine")
                except BaseException as error:  # noqa: BLE001 - what stopped it is the test's point
                    raised.append(error)

        thread = threading.Thread(target=check)
        thread.start()
        waiting.set()
        thread.join(timeout=60)
        assert not thread.is_alive() and [type(e) for e in raised] == [Cancelled]
    finally:
        own_pool._idle.put(taken)
    with cancelled_by(threading.Event()):  # a scope whose event is not set changes nothing
        assert analyse(own_pool, tmp_path / "fine.py", "fine")["classes"] == []
    assert analyse(own_pool, tmp_path / "fine.py", "fine")["classes"] == []  # nor does its end


class _RunningProcess:
    """Stands in for a started worker's process: alive until killed."""

    pid = 0

    def poll(self) -> int | None:
        return None


def test_starts_begun_in_the_background_are_waited_for_not_begun_again(monkeypatch):
    """`start_in_background` (the CLI, before its own imports) starts every worker once; the
    engine's `warm()` then waits for those starts and returns the first hello."""
    begun: list[int] = []

    def start(worker):
        begun.append(id(worker))
        worker.process = _RunningProcess()
        worker.hello = {"torch": "2.x"}
        return worker.hello

    monkeypatch.setattr("atenlint.worker.pool.Worker.start", start)
    pool = WorkerPool(2, WorkerSettings())
    pool.start_in_background()
    pool.start_in_background()  # a second call adds nothing
    assert pool.warm(wait_for_all=True) == {"torch": "2.x"}
    assert len(begun) == 2 and len(set(begun)) == 2
    assert pool.warm() == {"torch": "2.x"}  # every worker alive: nothing starts again
    assert len(begun) == 2


def test_a_worker_that_cannot_start_in_the_background_fails_the_warm_that_waits(monkeypatch):
    def start(worker):
        raise WorkerFailure("start", "no interpreter")

    monkeypatch.setattr("atenlint.worker.pool.Worker.start", start)
    pool = WorkerPool(1, WorkerSettings())
    pool.start_in_background()
    with pytest.raises(WorkerFailure, match="no interpreter"):
        pool.warm()


def test_a_pool_that_does_not_wait_on_close_leaves_its_workers_to_end_on_their_own(own_pool):
    """The CLI's pool (`wait_on_close=False`) does not wait for the workers' exit: each reads
    the shutdown request and ends by itself (status 0, not killed), its run folder removed.
    The next request of this pool starts a fresh worker."""
    own_pool.warm()
    worker = own_pool._all[0]
    process, run_dir = worker.process, worker.run_dir
    own_pool.wait_on_close = False
    try:
        own_pool.close()
    finally:
        own_pool.wait_on_close = True
    assert run_dir is not None and not os.path.exists(run_dir)
    assert process is not None and process.wait(timeout=120) == 0


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads Linux's /proc")
def test_the_memory_of_an_exited_child_is_read_as_none_without_starting_a_process(monkeypatch):
    """A file's child that replied is a zombie until its worker reaps it: /proc lists it
    without a resident set. The parent's memory check looks at it four times a second per
    busy worker and must not start `ps` for it each time; a live process reads from /proc."""
    import subprocess
    import sys

    from atenlint.worker import pool

    started = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        os.waitid(os.P_PID, started.pid, os.WEXITED | os.WNOWAIT)  # ended, not reaped
        monkeypatch.setattr(pool.subprocess, "run", lambda *a, **k: pytest.fail(f"started a process: {a}"))
        assert pool._rss_mb(started.pid) is None
        assert (pool._rss_mb(os.getpid()) or 0) > 1  # a live process: read from /proc
    finally:
        started.wait()
