"""Answer the editor's `initialize` before pygls and lsprotocol are imported (issue 22).

Importing lsprotocol's types alone takes 0.3 s on a quiet machine and 2 s on a loaded one,
and pygls cannot answer before it. Yet the answer is a function of what is installed
(atenlint's language-server sources, pygls, lsprotocol) and of what the client sent (its
capabilities and initialization options; not its process id, workspace folders or trace
level). So the answer pygls gives is stored under a key of all of those, and a later start
with the same key sends the stored answer as soon as it has read the request.

pygls still reads and handles that same `initialize` (the session starts from it as
before): this module hands it the request again in front of the rest of stdin, and keeps
its answer from being sent twice. Its answer is compared with the one sent; where they
differ (never expected: the test suite checks they agree) the store is corrected for the
next start and the difference is logged.

Nothing here imports more than the standard library.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import sys
from dataclasses import dataclass
from typing import Any, BinaryIO, cast

# What the client sends that does not change the answer (a session's identity, not its
# abilities): kept out of the key so that every workspace shares one stored answer.
_NOT_IN_KEY = frozenset({"processId", "rootPath", "rootUri", "workspaceFolders", "trace", "workDoneToken", "locale"})
# An `initialize` larger than this is not worth a stored answer; it is left to pygls.
_LARGEST_REQUEST = 1 << 20
_LARGEST_HEADER_LINE = 1 << 12
_LARGEST_HEADER = 1 << 14  # LSP has two header fields; more is not a request worth reading
_STORE = "lsp-initialize"


class Replayed:
    """A binary stdin that first gives back `prefix` (what was read before pygls started),
    then the rest of `stream`: the two methods pygls's reader calls."""

    def __init__(self, prefix: bytes, stream: BinaryIO) -> None:
        self._prefix = prefix
        self._stream = stream

    def readline(self) -> bytes:
        if self._prefix:
            end = self._prefix.find(b"\n")
            if end >= 0:
                line, self._prefix = self._prefix[: end + 1], self._prefix[end + 1 :]
                return line
            line, self._prefix = self._prefix, b""
            return line + self._stream.readline()
        return self._stream.readline()

    def read(self, size: int) -> bytes:
        if self._prefix:
            head, self._prefix = self._prefix[:size], self._prefix[size:]
            return head + (self._stream.read(size - len(head)) if size > len(head) else b"")
        return self._stream.read(size)


class AnswerFilter:
    """The stdout pygls writes to. Until pygls has answered the `initialize` with id
    `answered` (already answered from the store), the frames it writes are parsed: that
    answer is held back and passed to `on_answer`; everything else goes out unchanged.
    With `answered` None, pygls's answer goes out and is passed to `on_answer` too."""

    def __init__(self, stream: BinaryIO, request_id: Any, answered: bool, on_answer: Any) -> None:
        self._stream = stream
        self._id = request_id
        self._answered = answered
        self._on_answer = on_answer
        self._pending = b""
        self._done = False

    def write(self, data: bytes) -> int:
        if self._done:
            self._stream.write(data)
            return len(data)
        self._pending += data
        while not self._done:
            frame = _split_frame(self._pending)
            if frame is None:
                break
            raw, body, self._pending = frame
            message = _json(body)
            if isinstance(message, dict) and "method" not in message and message.get("id") == self._id:
                self._done = True
                self._on_answer(message)
                if self._answered:
                    continue  # the client has this answer already
            self._stream.write(raw)
        if self._done and self._pending:
            self._stream.write(self._pending)
            self._pending = b""
        return len(data)

    def flush(self) -> None:
        self._stream.flush()

    def close(self) -> None:
        self._stream.close()


def _split_frame(buffer: bytes) -> tuple[bytes, bytes, bytes] | None:
    """(the whole frame, its body, what follows) of the first complete frame in `buffer`."""
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        return None
    length = _content_length(buffer[:end].split(b"\r\n"))
    if length is None:
        return buffer[: end + 4], b"", buffer[end + 4 :]  # not a frame we understand: pass it on
    stop = end + 4 + length
    if len(buffer) < stop:
        return None
    return buffer[:stop], buffer[end + 4 : stop], buffer[stop:]


def _content_length(lines: list[bytes]) -> int | None:
    for line in lines:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            try:
                return int(value.strip())
            except ValueError:
                return None
    return None


def _json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return None


def read_first_message(stream: BinaryIO) -> tuple[bytes, Any]:
    """Every byte read of the client's first message, and its parsed body (None when it is
    not a well-formed message of reasonable size: pygls then reads it as it would have)."""
    raw = b""
    length = None
    while True:
        line = stream.readline(_LARGEST_HEADER_LINE)
        raw += line
        if not line or not line.endswith(b"\n") or len(raw) > _LARGEST_HEADER:
            return raw, None
        if line in (b"\r\n", b"\n"):
            break
        if length is None:
            length = _content_length([line.rstrip(b"\r\n")])
    if length is None or length > _LARGEST_REQUEST:
        return raw, None
    body = stream.read(length)
    raw += body
    return raw, _json(body) if len(body) == length else None


def answer_key(params: dict[str, Any]) -> str:
    """What the answer depends on: the installed language-server code and the client's
    abilities. Installed code is named by its files' sizes and times (a version number does
    not change while a developer edits) and by pygls's and lsprotocol's distributions."""
    installed = [_sources_signature(os.path.dirname(os.path.abspath(__file__)))]
    installed.append(
        _file_signature(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "__init__.py"))
    )
    for package in ("pygls", "lsprotocol"):
        installed.append(_package_signature(package))
    client = {key: value for key, value in params.items() if key not in _NOT_IN_KEY}
    text = json.dumps([installed, client], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _file_signature(path: str) -> list[Any]:
    try:
        status = os.stat(path)
    except OSError:
        return [path, None]
    return [path, status.st_size, status.st_mtime_ns]


def _sources_signature(folder: str) -> list[Any]:
    try:
        names = sorted(name for name in os.listdir(folder) if name.endswith(".py"))
    except OSError:
        return [folder, None]
    return [_file_signature(os.path.join(folder, name)) for name in names]


def _package_signature(name: str) -> list[Any]:
    """The package's distribution folders beside it (their names carry the version) and
    its `__init__.py`; nothing is imported."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.origin:
        return [name, None]
    parent = os.path.dirname(os.path.dirname(spec.origin))
    try:
        distributions = sorted(
            entry for entry in os.listdir(parent) if entry.startswith(f"{name}-") and entry.endswith(".dist-info")
        )
    except OSError:
        distributions = []
    return [name, distributions, _file_signature(spec.origin)]


def _store_path(key: str) -> str:
    """Where the answer for `key` is kept (its folder made on first use)."""
    from ..cache import cache_dir

    folder = os.path.join(cache_dir(), _STORE)
    os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, f"{key}.json")


def stored_answer(key: str) -> Any:
    """The answer kept for `key`; None when there is none or the cache cannot be used."""
    from ..cache import read_json

    try:
        return read_json(_store_path(key))
    except OSError:
        return None


def store_answer(key: str, result: Any) -> None:
    """Kept atomically; a read-only cache only costs the next start its early answer."""
    from ..cache import write_json

    with contextlib.suppress(OSError):
        write_json(_store_path(key), result)


def _frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


@dataclass(frozen=True)
class Handover:
    """What the server starts from: its stdin (the first message in front of the rest), its
    stdout (pygls's `initialize` answer held back when the stored one went out) and that
    first message's `initialize` params (None: it was something else)."""

    stdin: BinaryIO
    stdout: BinaryIO
    initialize_params: dict[str, Any] | None


def early_initialize(stdin: BinaryIO, stdout: BinaryIO) -> Handover:
    """Read the client's first message; when it is `initialize` and an answer for its key
    is stored, send that answer now. Returns the stdin and stdout for pygls: the first
    message handed back in front of the rest, and pygls's own answer held back (or, when
    nothing was sent early, stored for the next start)."""
    raw, message = read_first_message(stdin)
    replayed = Replayed(raw, stdin)
    # pygls calls only readline/read on its stdin and write/flush/close on its stdout.
    if not (isinstance(message, dict) and message.get("method") == "initialize" and "id" in message):
        return Handover(cast(BinaryIO, replayed), stdout, None)
    params = message.get("params")
    params = params if isinstance(params, dict) else {}
    key = answer_key(params)
    sent = stored_answer(key)
    if sent is not None:
        stdout.write(_frame({"jsonrpc": "2.0", "id": message["id"], "result": sent}))
        stdout.flush()

    def on_answer(answer: dict[str, Any]) -> None:
        if "result" not in answer:
            return  # pygls refused it; nothing worth storing
        if sent is not None and answer["result"] != sent:
            print(
                "atenlint: the stored `initialize` answer differed from the server's; it is replaced "
                "for the next start",
                file=sys.stderr,
            )
        if answer["result"] != sent:
            store_answer(key, answer["result"])

    answer_filter = AnswerFilter(stdout, message["id"], sent is not None, on_answer)
    return Handover(cast(BinaryIO, replayed), cast(BinaryIO, answer_filter), params)
