"""Workers: isolated, replaced on timeout, crash and memory blow-up, never polluted by pygls."""

from __future__ import annotations

import pytest

from atenlint.worker.pool import WorkerFailure, WorkerPool, WorkerSettings


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


def test_timeout_kills_and_replaces_the_worker(own_pool, tmp_path):
    (tmp_path / "spin.py").write_text("while True:\n    pass\n")
    (tmp_path / "fine.py").write_text("x = 1\n")
    assert analyse(own_pool, tmp_path / "fine.py", "fine")["classes"] == []  # a live worker
    first_pid, restarts = own_pool._all[0].hello["pid"], own_pool.restarts
    with pytest.raises(WorkerFailure) as failure:
        analyse(own_pool, tmp_path / "spin.py", "spin", timeout=3)
    assert failure.value.kind == "timeout"
    assert analyse(own_pool, tmp_path / "fine.py", "fine")["classes"] == []
    assert own_pool.restarts == restarts + 1 and own_pool._all[0].hello["pid"] != first_pid


def test_memory_blow_up_is_stopped(own_pool, tmp_path):
    # The hog then blocks forever: only the memory check can end it (a timeout far beyond
    # any slow machine is there to fail the test, not to race it).
    (tmp_path / "hog.py").write_text("import threading\nblob = bytearray(3 * 1024 ** 3)\nthreading.Event().wait()\n")
    with pytest.raises(WorkerFailure) as failure:
        analyse(own_pool, tmp_path / "hog.py", "hog", timeout=240)
    assert failure.value.kind == "memory"
    (tmp_path / "fine.py").write_text("x = 1\n")
    assert analyse(own_pool, tmp_path / "fine.py", "fine")["classes"] == []  # and it was replaced


def test_user_output_and_input_cannot_break_the_protocol(own_pool, tmp_path):
    (tmp_path / "chatty.py").write_text(
        "print('hello from import')\nimport sys\nsys.stdout.write('{not json\\n')\nx = input()\n"
    )
    answer = analyse(own_pool, tmp_path / "chatty.py", "chatty")
    assert answer["import_error"]["type"] == "EOFError"
    assert "hello from import" in own_pool._all[0].stderr_tail()


def test_the_worker_never_imports_pygls_or_yaml(pool, tmp_path):
    (tmp_path / "m.py").write_text(
        "import torch.nn as nn\nclass Net(nn.Module):\n    def forward(self, x):\n        return x.relu()\n"
    )
    analyse(pool, tmp_path / "m.py", "m")
    loaded = set(pool.request("loaded_packages", {}, 30))
    assert "torch" in loaded and "atenlint" in loaded
    assert not loaded & {"pygls", "lsprotocol", "yaml", "cattrs", "attrs"}


def test_a_missing_interpreter_is_a_start_failure():
    with pytest.raises(WorkerFailure) as failure:
        WorkerPool(1, WorkerSettings(python="/nonexistent/python3")).warm()
    assert failure.value.kind == "start"
