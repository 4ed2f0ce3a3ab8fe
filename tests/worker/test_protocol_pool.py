"""The pool's start-up (issue 10): `warm` returns when the first worker is up, and each
worker joins the pool as it comes up; a pool closed meanwhile ends a worker still starting.
Worker processes are stand-ins (no torch import)."""

from __future__ import annotations

import threading

import pytest

from atenlint.worker.pool import Worker, WorkerFailure, WorkerPool


class StandInWorkers:
    """Worker.start replaced: the first worker starts at once, the others when released."""

    def __init__(self, monkeypatch, fail=False):
        self.release = threading.Event()
        self.started: list = []
        self.fail = fail
        lock = threading.Lock()
        spy = self

        def start(worker):
            with lock:
                first = not spy.started
                spy.started.append(worker)
            if not first:
                assert spy.release.wait(30)
            if spy.fail:
                raise WorkerFailure("start", "no torch in that interpreter")
            worker.process = object()
            worker.hello = {"torch": "2.13.0", "python": "3.11.7", "first": first}
            return worker.hello

        monkeypatch.setattr(Worker, "start", start)
        monkeypatch.setattr(Worker, "alive", property(lambda worker: worker.process is not None))
        monkeypatch.setattr(Worker, "close", lambda worker, wait=True: setattr(worker, "closed", True))


def test_warm_returns_when_the_first_worker_is_up(monkeypatch):
    workers = StandInWorkers(monkeypatch)
    pool = WorkerPool(2)
    hello = pool.warm()  # the second worker is still starting
    assert hello["first"] is True
    assert pool._idle.qsize() == 1  # the ready one takes requests now
    workers.release.set()
    assert pool.warm(wait_for_all=True)["first"] is True  # both up: nothing restarts
    assert len(workers.started) == 2 and pool._idle.qsize() == 2


def test_a_pool_closed_while_a_worker_starts_ends_that_worker_too(monkeypatch):
    workers = StandInWorkers(monkeypatch)
    pool = WorkerPool(2)
    pool.warm()
    pool.close()
    assert all(getattr(w, "closed", False) for w in workers.started)  # listed before they started
    workers.release.set()


def test_warm_raises_when_no_worker_can_start(monkeypatch):
    workers = StandInWorkers(monkeypatch, fail=True)
    workers.release.set()
    with pytest.raises(WorkerFailure, match="no torch"):
        WorkerPool(2).warm()
