"""The stored `initialize` answer (lsp/handshake.py): sent before the server's imports, the
same answer pygls gives, never sent twice, corrected when it is stale, and the session that
follows is the one pygls would have started."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest

from atenlint.lsp import handshake

SERVER = [sys.executable, "-m", "atenlint", "serve"]
TIMEOUT_S = 120


def _frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _read(stream) -> dict | None:
    header = b""
    while not header.endswith(b"\r\n\r\n"):
        byte = stream.read(1)
        if not byte:
            return None
        header += byte
    length = next(
        int(line.split(b":")[1]) for line in header.split(b"\r\n") if line.lower().startswith(b"content-length")
    )
    return json.loads(stream.read(length))


def _initialize_params(root: str) -> dict:
    return {
        "processId": os.getpid(),
        "rootUri": "file://" + root,
        "workspaceFolders": [{"uri": "file://" + root, "name": "ws"}],
        "capabilities": {
            "textDocument": {"diagnostic": {}, "publishDiagnostics": {}},
            "workspace": {"diagnostics": {"refreshSupport": True}, "configuration": True},
        },
        "initializationOptions": {"trusted": False},
    }


def _session(cache: str, root: str, request_id: int = 1) -> tuple[dict, list[dict], str]:
    """One server start: its answer to `initialize`, every message it sent up to its answer
    to `shutdown`, and its stderr."""
    server = subprocess.Popen(
        SERVER,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(os.environ, ATENLINT_CACHE_DIR=cache),
    )
    try:
        assert server.stdin and server.stdout
        server.stdin.write(
            _frame({"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": _initialize_params(root)})
        )
        server.stdin.flush()
        answer = _read(server.stdout)
        assert answer is not None
        server.stdin.write(_frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        server.stdin.write(_frame({"jsonrpc": "2.0", "id": request_id + 1, "method": "shutdown"}))
        server.stdin.flush()
        messages = []
        while (message := _read(server.stdout)) is not None:
            messages.append(message)
            if message.get("id") == request_id + 1 and "method" not in message:
                break
        server.stdin.write(_frame({"jsonrpc": "2.0", "method": "exit"}))
        server.stdin.close()
        server.wait(TIMEOUT_S)
        return answer, messages, server.stderr.read().decode() if server.stderr else ""
    finally:
        server.kill()
        server.wait()


def _stored(cache: str) -> list[str]:
    folder = os.path.join(cache, "lsp-initialize")
    return sorted(os.path.join(folder, name) for name in os.listdir(folder)) if os.path.isdir(folder) else []


@pytest.mark.timeout(600)
def test_the_stored_answer_is_the_servers_own_and_is_sent_once(tmp_path) -> None:
    cache, root = str(tmp_path / "cache"), str(tmp_path / "ws")
    os.makedirs(root)
    first, first_messages, _ = _session(cache, root)
    assert "result" in first and first["result"]["capabilities"]
    (stored,) = _stored(cache)
    with open(stored, encoding="utf-8") as handle:
        assert json.load(handle) == first["result"]

    # Another workspace and process, the same client: answered from the store, identically.
    other_root = str(tmp_path / "other")
    os.makedirs(other_root)
    second, second_messages, stderr = _session(cache, other_root, request_id=7)
    assert second == {"jsonrpc": "2.0", "id": 7, "result": first["result"]}
    assert "differed" not in stderr
    # pygls handled that initialize too (the session started: it asks for the configuration),
    # and its own answer was not sent a second time.
    assert not [m for m in second_messages if m.get("id") == 7]
    assert [m.get("method") for m in second_messages if "method" in m] == [
        m.get("method") for m in first_messages if "method" in m
    ]
    assert _stored(cache) == [stored]


@pytest.mark.timeout(600)
def test_a_stale_stored_answer_is_replaced_for_the_next_start(tmp_path) -> None:
    cache, root = str(tmp_path / "cache"), str(tmp_path / "ws")
    os.makedirs(root)
    real, _, _ = _session(cache, root)
    (stored,) = _stored(cache)
    stale = dict(real["result"], stale=True)
    with open(stored, "w", encoding="utf-8") as handle:
        json.dump(stale, handle)

    sent, _, stderr = _session(cache, root)
    assert sent["result"] == stale  # what was stored went out before the server could answer
    assert "differed" in stderr
    with open(stored, encoding="utf-8") as handle:
        assert json.load(handle) == real["result"]


def test_another_first_message_is_handed_to_the_server_untouched(tmp_path) -> None:
    ping = _frame({"jsonrpc": "2.0", "id": 3, "method": "atenlint/ping"})
    rest = _frame({"jsonrpc": "2.0", "method": "exit"})
    handover = handshake.early_initialize(io.BytesIO(ping + rest), io.BytesIO())
    assert handover.stdin.read(len(ping) + len(rest)) == ping + rest
    assert isinstance(handover.stdout, io.BytesIO)
    assert handover.initialize_params is None


def test_a_malformed_first_message_is_read_back_as_it_came() -> None:
    endless_header = b"Content-Length: 2\r\n" + b"X-Padding: 0123456789\r\n" * 2000 + b"\r\n{}"
    for raw in (
        b"Content-Length: nope\r\n\r\n{}",
        b"no header at all",
        b"Content-Length: 10\r\n\r\n{}",
        endless_header,
    ):
        handover = handshake.early_initialize(io.BytesIO(raw), io.BytesIO())
        assert handover.initialize_params is None
        assert handover.stdin.read(len(raw)) == raw


def test_replayed_lines_and_reads_cross_the_prefix() -> None:
    replayed = handshake.Replayed(b"Content-Length: 2\r\n\r\n{", io.BytesIO(b"}\nnext line\nrest"))
    assert replayed.readline() == b"Content-Length: 2\r\n"
    assert replayed.readline() == b"\r\n"
    assert replayed.read(2) == b"{}"
    assert replayed.readline() == b"\n"
    assert replayed.readline() == b"next line\n"
    assert replayed.read(10) == b"rest"


def test_the_filter_holds_back_only_the_answered_request() -> None:
    out = io.BytesIO()
    seen: list[dict] = []
    log = _frame({"jsonrpc": "2.0", "method": "window/logMessage", "params": {"type": 3, "message": "hi"}})
    answer = _frame({"jsonrpc": "2.0", "id": 1, "result": {"capabilities": {}}})
    later = _frame({"jsonrpc": "2.0", "id": 1, "result": None})  # a later response with that id
    sink = handshake.AnswerFilter(out, 1, True, seen.append)
    data = log + answer + later
    for start in range(0, len(data), 7):  # written in pieces that split frames and headers
        sink.write(data[start : start + 7])
    assert out.getvalue() == log + later
    assert seen == [{"jsonrpc": "2.0", "id": 1, "result": {"capabilities": {}}}]


def test_without_an_early_answer_the_servers_answer_goes_out_and_is_kept() -> None:
    out = io.BytesIO()
    seen: list[dict] = []
    answer = _frame({"jsonrpc": "2.0", "id": "a", "result": {"capabilities": {"hoverProvider": True}}})
    handshake.AnswerFilter(out, "a", False, seen.append).write(answer)
    assert out.getvalue() == answer
    assert seen and seen[0]["result"]["capabilities"]["hoverProvider"]


def test_the_key_ignores_the_session_and_follows_the_client_abilities(tmp_path) -> None:
    one = _initialize_params(str(tmp_path / "a"))
    other = dict(_initialize_params(str(tmp_path / "b")), processId=1, trace="verbose")
    assert handshake.answer_key(one) == handshake.answer_key(other)
    push_only = dict(one, capabilities={"textDocument": {"publishDiagnostics": {}}})
    assert handshake.answer_key(push_only) != handshake.answer_key(one)
    trusted = dict(one, initializationOptions={"trusted": True})
    assert handshake.answer_key(trusted) != handshake.answer_key(one)
