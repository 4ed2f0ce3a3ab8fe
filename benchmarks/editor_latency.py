"""The editor's latencies (issue 22, items 2 and 4), measured on the real `atenlint serve`
over stdio by a plain JSON-RPC client (no LSP library on the client side: what is timed is
the server), each with the baseline it is judged against, measured in the same run.

- `initialize_s`: process start -> the `initialize` answer (what an editor waits for
  before it sends anything else); baseline `bare_pygls_initialize_s`: the same for a pygls
  server with no features (the framework's own import and answer: the floor for any pygls
  server). `initialize_handler_s`: request -> answer once the process is up (the handler's
  own work, separated from the imports).
- `code_action_p95_s`: p95 of textDocument/codeAction on every diagnostic of a probe file
  (the two-speed model below), after its full result; absolute goal 20 ms.
- `cold_first_squiggle_s`: process start -> the first diagnostic of a fast target (mps) for
  a file opened right after `initialized` (an editor restoring its open file); baseline
  `torch_import_s`: a fresh interpreter's `import torch` (the worker cannot be faster).
- `restarted_first_squiggle_s`: the same for a server restarted on the unchanged file (its
  stored check is served: no capture); baseline `cold_first_squiggle_s`.
- `save_to_squiggle_s`: didSave of a changed file -> its first diagnostics (the fast
  targets'); `save_to_full_result_s`: -> every target's; baseline `probe_import_s`: the
  probe file's own import with torch loaded (goal: import + 0.5 s).

    python benchmarks/editor_latency.py [--rounds 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import queue
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVER = [sys.executable, "-m", "atenlint", "serve"]
TIMEOUT_S = 600.0

# The probe file: mps findings with fixes (special.ndtri has no MPS kernel in torch 2.13-2.15,
# heaviside none before 2.15), and an export target that makes the result two-speed (the
# dispatcher view's mps diagnostics first, then onnx:17's).
PROBE = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):  # atenlint: inputs=torch.randn(2, 16, 32, 32)
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(16, 16, 3, padding=1)
        self.bn = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 16, 3, padding=1)

    def forward(self, x):
        y = F.relu(self.bn(self.conv1(x)))
        y = torch.special.ndtri(torch.sigmoid(self.conv2(y)))
        return F.interpolate(y, scale_factor=2.0, mode="bilinear") + torch.heaviside(y, y).mean()


class Head(nn.Module):  # atenlint: inputs=torch.randn(4, 10, 64)
    def __init__(self):
        super().__init__()
        self.attention = nn.MultiheadAttention(64, 4, batch_first=True)
        self.norm = nn.LayerNorm(64)
        self.out = nn.Linear(64, 8)

    def forward(self, x):
        y, _ = self.attention(x, x, x)
        return self.out(self.norm(x + y)).softmax(-1)
"""
PROBE_TARGETS = '[tool.atenlint]\ntargets = ["mps", "onnx:17"]\n'
FAST_TARGETS = ("mps", "cuda", "xla")

CAPABILITIES: dict[str, Any] = {  # a push client with what VS Code says of code actions and edits
    "textDocument": {
        "synchronization": {"didSave": True},
        "publishDiagnostics": {"versionSupport": True, "relatedInformation": True},
        "codeAction": {
            "codeActionLiteralSupport": {"codeActionKind": {"valueSet": ["quickfix", "source.fixAll"]}},
            "dataSupport": True,
        },
    },
    "workspace": {"workspaceEdit": {"documentChanges": True}},
    "general": {"positionEncodings": ["utf-16"]},
}


class Client:
    """A plain LSP client over a child's stdio: requests by id, notifications in a queue."""

    def __init__(self, command: list[str], cwd: str, extra_env: dict[str, str] | None = None) -> None:
        self.started = time.perf_counter()
        env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "server"), **(extra_env or {}))
        self.process = subprocess.Popen(
            command, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
        )
        self._ids = iter(range(1, 1 << 30))
        self._answers: dict[int, queue.Queue[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self.notifications: queue.Queue[tuple[float, dict[str, Any]]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        while True:
            length = 0
            while (line := stream.readline()) not in (b"\r\n", b"\n"):
                if not line:
                    return
                name, _, value = line.decode("ascii").partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            message = json.loads(stream.read(length))
            if "id" in message and "method" in message:  # the server asks: answer like an editor
                items = (message.get("params") or {}).get("items") or []
                self._send({"id": message["id"], "result": [None] * len(items) if items else None})
            elif "id" in message:
                with self._lock:
                    answers = self._answers.get(message["id"])
                if answers is not None:
                    answers.put(message)
            else:
                self.notifications.put((time.perf_counter(), message))

    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps(dict(message, jsonrpc="2.0")).encode("utf-8")
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        stdin.flush()

    def request(self, method: str, params: Any, timeout: float = TIMEOUT_S) -> dict[str, Any]:
        request_id = next(self._ids)
        answers: queue.Queue[dict[str, Any]] = queue.Queue()
        with self._lock:
            self._answers[request_id] = answers
        self._send({"id": request_id, "method": method, "params": params})
        return answers.get(timeout=timeout)

    def cpu_s(self) -> float:
        """CPU seconds the server process has used so far (Linux): the work, whatever the load."""
        with open(f"/proc/{self.process.pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def notify(self, method: str, params: Any) -> None:
        self._send({"method": method, "params": params})

    def initialize(self, root: str) -> dict[str, Any]:
        uri = pathlib.Path(root).as_uri()
        answer = self.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": uri,
                "workspaceFolders": [{"uri": uri, "name": "ws"}],
                "capabilities": CAPABILITIES,
            },
        )
        self.notify("initialized", {})
        return answer

    def wait(self, accept: Callable[[dict[str, Any]], bool], timeout: float = TIMEOUT_S) -> float:
        """The arrival time of the first notification `accept` takes (earlier ones are dropped)."""
        deadline = time.perf_counter() + timeout
        while True:
            at, message = self.notifications.get(timeout=max(0.0, deadline - time.perf_counter()))
            if accept(message):
                return at

    def close(self) -> None:
        try:
            self.request("shutdown", None, timeout=60)
            self.notify("exit", None)
            self.process.wait(timeout=60)
        except (OSError, queue.Empty, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()


def _probe_workspace(scratch: str) -> tuple[str, str]:
    pathlib.Path(scratch, "pyproject.toml").write_text(PROBE_TARGETS, encoding="utf-8")
    path = os.path.join(scratch, "probe_model.py")
    pathlib.Path(path).write_text(PROBE, encoding="utf-8")
    return path, pathlib.Path(path).as_uri()


def _open(client: Client, uri: str, text: str, version: int = 1) -> None:
    client.notify(
        "textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": version, "text": text}}
    )


def _publish_of(uri: str, version: int | None = None) -> Callable[[dict[str, Any]], bool]:
    def accept(message: dict[str, Any]) -> bool:
        params = message.get("params") or {}
        return (
            message.get("method") == "textDocument/publishDiagnostics"
            and params.get("uri") == uri
            and (version is None or params.get("version") == version)
        )

    return accept


def _squiggles_of(uri: str, version: int) -> Callable[[dict[str, Any]], bool]:
    """A publish of diagnostics (any target's) for this version of `uri`."""
    published = _publish_of(uri, version)
    return lambda message: published(message) and bool(_targets_of(message))


def _targets_of(message: dict[str, Any]) -> set[str]:
    return {str((d.get("data") or {}).get("target")) for d in message["params"]["diagnostics"]}


def _full_result(client: Client, uri: str, version: int) -> list[dict[str, Any]]:
    """The diagnostics of `version` once every target is in them (the fast targets' partial
    result is published first)."""
    found: list[dict[str, Any]] = []

    def accept(message: dict[str, Any]) -> bool:
        if _publish_of(uri, version)(message) and "onnx:17" in _targets_of(message):
            found.extend(message["params"]["diagnostics"])
            return True
        return False

    client.wait(accept)
    return found


def _median(measure: Callable[[], float], rounds: int) -> float:
    return statistics.median(measure() for _ in range(rounds))


def initialize_s(rounds: int = 3, stored: bool = True) -> float:
    """Median of: spawn `atenlint serve` -> its answer to `initialize`. `stored`: the
    answer for this client is in the cache (lsp/handshake.py; every start after the first
    of an installation); else each start has an empty cache and waits for pygls."""
    with tempfile.TemporaryDirectory() as cache:
        if stored:
            _spawn_to_initialized_s(SERVER, {"ATENLINT_CACHE_DIR": cache})  # the first start stores it
            return _median(lambda: _spawn_to_initialized_s(SERVER, {"ATENLINT_CACHE_DIR": cache}), rounds)

        def empty_cache() -> float:
            with tempfile.TemporaryDirectory() as fresh:
                return _spawn_to_initialized_s(SERVER, {"ATENLINT_CACHE_DIR": fresh})

        return _median(empty_cache, rounds)


def _spawn_to_initialized_s(command: list[str], extra_env: dict[str, str] | None = None) -> float:
    """Seconds from spawning `command` to its answer to `initialize`."""
    with tempfile.TemporaryDirectory() as root:
        client = Client(command, root, extra_env)
        client.initialize(root)
        seconds = time.perf_counter() - client.started
        client.close()
        return seconds


def initialize_cpu_s(rounds: int = 3) -> float:
    """Median of the CPU seconds `atenlint serve` has used when its `initialize` answer
    arrives: what `initialize_s` measures, without the machine's load in it."""

    def once() -> float:
        with tempfile.TemporaryDirectory() as root:
            client = Client(SERVER, root)
            client.initialize(root)
            seconds = client.cpu_s()
            client.close()
            return seconds

    return _median(once, rounds)


def bare_pygls_initialize_cpu_s(rounds: int = 3) -> float:
    """`initialize_cpu_s` for a pygls server with no features."""

    def once() -> float:
        with tempfile.TemporaryDirectory() as root:
            client = Client([sys.executable, "-c", BARE_SERVER], root)
            client.initialize(root)
            seconds = client.cpu_s()
            client.close()
            return seconds

    return _median(once, rounds)


BARE_SERVER = "from pygls.lsp.server import LanguageServer; LanguageServer('bare', '0').start_io()"


def bare_pygls_initialize_s(rounds: int = 3) -> float:
    """Median of: spawn a pygls server with no features -> its answer to `initialize`."""
    return _median(lambda: _spawn_to_initialized_s([sys.executable, "-c", BARE_SERVER]), rounds)


def initialize_handler_s(rounds: int = 3) -> float:
    """Median of: `initialize` sent to a server whose imports are done -> its answer. A
    request before `initialize` is answered with an error as soon as the server reads it,
    which says the process is up."""

    def once() -> float:
        with tempfile.TemporaryDirectory() as root:
            client = Client(SERVER, root)
            client.request("atenlint/ping", None)
            started = time.perf_counter()
            client.initialize(root)
            seconds = time.perf_counter() - started
            client.close()
            return seconds

    return _median(once, rounds)


def code_action_p95_s(rounds: int = 20) -> float:
    """p95 of textDocument/codeAction over every diagnostic of the probe file, `rounds`
    times each, with the diagnostics echoed as VS Code echoes them (with `data`)."""
    with tempfile.TemporaryDirectory() as root:
        _, uri = _probe_workspace(root)
        client = Client(SERVER, root)
        try:
            client.initialize(root)
            _open(client, uri, PROBE)
            diagnostics = _full_result(client, uri, 1)
            times = []
            for _ in range(rounds):
                for diagnostic in diagnostics:
                    started = time.perf_counter()
                    client.request(
                        "textDocument/codeAction",
                        {
                            "textDocument": {"uri": uri},
                            "range": diagnostic["range"],
                            "context": {"diagnostics": [diagnostic], "triggerKind": 1},
                        },
                    )
                    times.append(time.perf_counter() - started)
        finally:
            client.close()
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def _first_fast_squiggle(client: Client, root: str, uri: str) -> float:
    """Initialize, open the probe, and the time its first fast-target diagnostics came."""
    client.initialize(root)
    _open(client, uri, PROBE)
    return client.wait(lambda m: _publish_of(uri, 1)(m) and bool(_targets_of(m) & set(FAST_TARGETS)))


def cold_first_squiggle_s() -> float:
    """Spawn `atenlint serve` -> the first published diagnostic of a fast target, for the
    probe file opened right after `initialized` (an editor restoring an open file)."""
    with tempfile.TemporaryDirectory() as root:
        _, uri = _probe_workspace(root)
        client = Client(SERVER, root)
        try:
            at = _first_fast_squiggle(client, root, uri)
        finally:
            client.close()
    return at - client.started


def restarted_first_squiggle_s() -> float:
    """`cold_first_squiggle_s` for a server restarted on the same workspace, the probe file
    unchanged since the previous server checked it: its result is served from the stored
    check (result_cache.py), without a capture; what remains is the server's and the
    worker's start. Baseline: `cold_first_squiggle_s`."""
    with tempfile.TemporaryDirectory() as root, tempfile.TemporaryDirectory() as cache:
        _, uri = _probe_workspace(root)
        env = {"ATENLINT_CACHE_DIR": cache}
        first = Client(SERVER, root, env)
        try:
            first.initialize(root)
            _open(first, uri, PROBE)
            _full_result(first, uri, 1)
        finally:
            first.close()
        client = Client(SERVER, root, env)
        try:
            at = _first_fast_squiggle(client, root, uri)
        finally:
            client.close()
    return at - client.started


def save_to_squiggle_s(rounds: int = 3) -> float:
    """Median of: didSave of the probe file with a changed text (on disk too) -> the first
    diagnostics of that version (the fast targets' squiggles), on a server that has
    analysed the file once."""
    return _save_rounds(rounds, full=False)


def save_to_full_result_s(rounds: int = 3) -> float:
    """`save_to_squiggle_s` up to the full result (every target's diagnostics)."""
    return _save_rounds(rounds, full=True)


def _save_rounds(rounds: int, full: bool) -> float:
    with tempfile.TemporaryDirectory() as root:
        path, uri = _probe_workspace(root)
        client = Client(SERVER, root)
        times = []
        try:
            client.initialize(root)
            _open(client, uri, PROBE)
            _full_result(client, uri, 1)
            for round_ in range(rounds):
                version = round_ + 2
                text = PROBE + f"\n# edit {round_}\n"
                pathlib.Path(path).write_text(text, encoding="utf-8")
                client.notify(
                    "textDocument/didChange",
                    {"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]},
                )
                started = time.perf_counter()
                client.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
                if full:
                    _full_result(client, uri, version)
                    times.append(time.perf_counter() - started)
                else:
                    first = client.wait(_squiggles_of(uri, version))
                    times.append(first - started)
                    _full_result(client, uri, version)  # the next round starts from a settled server
        finally:
            client.close()
    return statistics.median(times)


def torch_import_s(rounds: int = 1) -> float:
    """A fresh interpreter's `import torch` (a worker's start cannot be faster)."""

    def once() -> float:
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import torch"], check=True)
        return time.perf_counter() - started

    return _median(once, rounds)


PROBE_IMPORT = """
import importlib, sys, time, warnings
warnings.simplefilter("ignore")
import torch
sys.path.insert(0, sys.argv[1])
started = time.perf_counter()
importlib.import_module("probe_model")
print(time.perf_counter() - started)
"""


def probe_import_s(rounds: int = 3) -> float:
    """The probe file's own import with torch loaded (a warm worker's situation)."""
    with tempfile.TemporaryDirectory() as root:
        _probe_workspace(root)

        def once() -> float:
            done = subprocess.run(
                [sys.executable, "-c", PROBE_IMPORT, root], capture_output=True, text=True, check=True
            )
            return float(done.stdout.split()[-1])

        return _median(once, rounds)


def measure(rounds: int = 3) -> dict[str, float]:
    """Every latency and its baseline, in one run."""
    return {
        "initialize_s": initialize_s(rounds),
        "bare_pygls_initialize_s": bare_pygls_initialize_s(rounds),
        "initialize_handler_s": initialize_handler_s(rounds),
        "initialize_cpu_s": initialize_cpu_s(rounds),
        "bare_pygls_initialize_cpu_s": bare_pygls_initialize_cpu_s(rounds),
        "code_action_p95_s": code_action_p95_s(),
        "cold_first_squiggle_s": cold_first_squiggle_s(),
        "restarted_first_squiggle_s": restarted_first_squiggle_s(),
        "torch_import_s": torch_import_s(),
        "save_to_squiggle_s": save_to_squiggle_s(rounds),
        "save_to_full_result_s": save_to_full_result_s(rounds),
        "probe_import_s": probe_import_s(rounds),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--only", nargs="*", help="names of the measures to run (default: all)")
    args = parser.parse_args()
    if args.only:
        results = {name: float(globals()[name]()) for name in args.only}
    else:
        results = measure(args.rounds)
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        for name, value in results.items():
            print(f"{name}: {value * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
