"""The worker protocol (issue 15): versioned in hello, validated on both ends, partial
answers before the reply (issue 10). No worker process is started: the parent's side reads
from a stand-in process, the worker's side answers lines in this process."""

from __future__ import annotations

import io
import json
import os

import pytest

from atenlint.worker import main as worker_main
from atenlint.worker import protocol
from atenlint.worker.pool import RequestError, Worker, WorkerFailure, WorkerSettings

CLASS = {
    "qualname": "Net",
    "name": "Net",
    "module": "model.Net",
    "status": "ok",
    "ops": [
        {
            "op": "aten::take",
            "trees": {"dispatch": {"op": "aten::take", "calls": None}},
            "sites": [{"file": "/w/model.py", "line": 3, "col": 15}],
            "phases": ["eval"],
        }
    ],
}
ANSWER = {"path": "/w/model.py", "module": "model", "classes": [CLASS], "imported": [], "seconds": 0.1}


class StandInProcess:
    """What `Worker.request` touches of a Popen: stdin, poll, wait, pid."""

    def __init__(self, exit_code=None):
        self.stdin = io.BytesIO()  # the pool writes bytes (its pipes are binary)
        self.pid = os.getpid()
        self.exit_code = exit_code

    def poll(self):
        return None

    def wait(self, timeout=None):
        return self.exit_code


def _worker(*lines, exit_code=-9):
    worker = Worker(WorkerSettings(), lambda message: None, memory_limit_mb=10**6)
    worker.process = StandInProcess(exit_code)
    for line in lines:
        worker._replies.put(line if line is None or isinstance(line, str) else json.dumps(line))
    return worker


# -- the parent's side -------------------------------------------------------------------------


def test_partials_are_handed_over_before_the_reply():
    early = dict(ANSWER, partial=True)
    worker = _worker({"id": 1, "partial": early}, {"id": 1, "result": ANSWER})
    got = []
    assert worker.request("analyse", {"path": "/w/model.py"}, 10, on_partial=got.append) == ANSWER
    assert got == [early]
    sent = json.loads(worker.process.stdin.getvalue())
    assert sent["method"] == "analyse" and sent["params"]["partial"] is True  # asked for


def test_no_partial_is_asked_for_without_a_handler_and_a_stray_one_is_skipped():
    worker = _worker({"id": 1, "partial": ANSWER}, {"id": 1, "result": ANSWER})
    assert worker.request("analyse", {}, 10) == ANSWER
    assert "partial" not in json.loads(worker.process.stdin.getvalue())["params"]


def test_a_crash_after_a_partial_is_still_a_crash():
    worker = _worker({"id": 1, "partial": ANSWER}, None)
    got = []
    with pytest.raises(WorkerFailure) as failure:
        worker.request("analyse", {}, 10, on_partial=got.append)
    assert failure.value.kind == "crash" and "SIGKILL" in failure.value.message
    assert len(got) == 1


def test_a_malformed_partial_is_ignored_and_the_reply_still_counts():
    logged = []
    worker = _worker({"id": 1, "partial": {"classes": [{"qualname": 3}]}}, {"id": 1, "result": ANSWER})
    worker.log = logged.append
    got = []
    assert worker.request("analyse", {}, 10, on_partial=got.append) == ANSWER
    assert got == [] and "malformed partial" in logged[0] and "qualname" in logged[0]


def test_a_failing_partial_handler_does_not_lose_the_reply():
    worker = _worker({"id": 1, "partial": ANSWER}, {"id": 1, "result": ANSWER})

    def broken(answer):
        raise ValueError("a bug of the caller's")

    assert worker.request("analyse", {}, 10, on_partial=broken) == ANSWER


def test_replies_of_other_requests_and_noise_are_skipped():
    worker = _worker("not json", {"id": 7, "result": "old"}, [1, 2], {"id": 1, "result": 42})
    assert worker.request("loaded_packages", {}, 10) == 42


def test_a_reply_without_result_or_error_is_a_request_error():
    worker = _worker({"id": 1, "nothing": True})
    with pytest.raises(RequestError) as error:
        worker.request("loaded_packages", {}, 10)
    assert error.value.error["type"] == "ProtocolError"


def test_an_error_reply_is_a_request_error():
    worker = _worker({"id": 1, "error": {"type": "KeyError", "message": "x", "trace": ""}})
    with pytest.raises(RequestError) as error:
        worker.request("analyse", {}, 10)
    assert error.value.error["type"] == "KeyError"


def test_a_worker_of_another_protocol_version_is_one_clear_start_failure(monkeypatch):
    """An unversioned (older) worker answers hello without `protocol`: a start failure that
    says what to do, never a KeyError later on a field that moved."""

    class StartedProcess(StandInProcess):
        stdout = io.BytesIO(b"")
        stderr = io.BytesIO(b"")

        def __init__(self, *args, **kwargs):
            super().__init__(None)

    monkeypatch.setattr("subprocess.Popen", StartedProcess)
    monkeypatch.setattr(
        Worker,
        "request",
        lambda self, method, params, timeout, on_partial=None: {"torch": "2.13.0", "python": "3.11.7"},
    )
    monkeypatch.setattr(Worker, "kill", lambda self: self._remove_run_dir())
    worker = Worker(WorkerSettings(), lambda message: None, memory_limit_mb=10**6)
    with pytest.raises(WorkerFailure) as failure:
        worker.start()
    assert failure.value.kind == "start"
    assert "protocol version 1 (unversioned)" in failure.value.message
    assert f"speaks {protocol.PROTOCOL_VERSION}" in failure.value.message and "reinstall" in failure.value.message


# -- validation ----------------------------------------------------------------------------------


def test_check_hello_accepts_this_version_and_names_a_mismatch():
    hello = {"protocol": protocol.PROTOCOL_VERSION, "torch": "2.13.0", "python": "3.11.7"}
    assert protocol.check_hello(hello) == hello
    with pytest.raises(protocol.ProtocolError, match="protocol version 99"):
        protocol.check_hello(dict(hello, protocol=99))
    with pytest.raises(protocol.ProtocolError, match="hello.torch"):
        protocol.check_hello(dict(hello, torch=None))


@pytest.mark.parametrize(
    ("broken", "field"),
    [
        ({"classes": "none"}, "answer.classes"),
        ({"classes": [dict(CLASS, ops=None)]}, "answer.classes[0].ops"),
        ({"classes": [dict(CLASS, status=1)]}, "answer.classes[0].status"),
        ({"classes": [dict(CLASS, ops=[dict(CLASS["ops"][0], trees=[])])]}, "answer.classes[0].ops[0].trees"),
        (
            {"classes": [dict(CLASS, ops=[dict(CLASS["ops"][0], sites=[{"file": "/w/m.py", "line": "3"}])])]},
            "answer.classes[0].ops[0].sites[0].line",
        ),
        ({"classes": [], "imported": "model.py"}, "answer.imported"),
        ({"classes": [], "partial": "yes"}, "answer.partial"),
    ],
)
def test_check_file_answer_names_the_wrong_field(broken, field):
    with pytest.raises(protocol.ProtocolError, match=field.replace("[", r"\[").replace("]", r"\]")):
        protocol.check_file_answer(broken)


def test_check_file_answer_accepts_real_shapes_and_fills_in_no_classes():
    assert protocol.check_file_answer(ANSWER) is ANSWER
    assert protocol.check_file_answer({"path": "/w/x.py"})["classes"] == []


def test_check_request():
    assert protocol.check_request({"id": 3, "method": "analyse"}) == {"id": 3, "method": "analyse", "params": {}}
    for bad in (
        {"id": 1},
        {"id": 1, "method": "format_disk"},
        {"id": "1", "method": "hello"},
        {"id": 1, "method": "hello", "params": []},
        ["hello"],
    ):
        with pytest.raises(protocol.ProtocolError):
            protocol.check_request(bad)


# -- the worker's side ---------------------------------------------------------------------------


def _answered(line, monkeypatch=None):
    out = io.StringIO()
    keep_going = worker_main._answer(line, out)
    return keep_going, [json.loads(reply) for reply in out.getvalue().splitlines()]


def test_the_worker_writes_the_partial_then_the_reply_of_the_same_id(monkeypatch):
    def analyse(params, send_partial):
        send_partial(dict(ANSWER, partial=True))
        return ANSWER

    monkeypatch.setitem(worker_main._METHODS, "analyse", analyse)
    keep_going, messages = _answered(json.dumps({"id": 5, "method": "analyse", "params": {"partial": True}}))
    assert keep_going
    assert messages == [{"id": 5, "partial": dict(ANSWER, partial=True)}, {"id": 5, "result": ANSWER}]


def test_the_worker_answers_a_malformed_request_with_a_protocol_error():
    keep_going, messages = _answered(json.dumps({"id": 2, "method": "format_disk"}))
    assert keep_going and messages[0]["id"] == 2 and messages[0]["error"]["type"] == "ProtocolError"
    assert _answered("not json") == (True, [])
    assert _answered(json.dumps({"method": "shutdown"})) == (False, [])


def test_the_worker_turns_a_failure_into_an_error_reply(monkeypatch):
    def analyse(params, send_partial):
        raise KeyError("classes")

    monkeypatch.setitem(worker_main._METHODS, "analyse", analyse)
    _, (message,) = _answered(json.dumps({"id": 9, "method": "analyse", "params": {}}))
    assert message["id"] == 9 and message["error"]["type"] == "KeyError" and "Traceback" in message["error"]["trace"]
