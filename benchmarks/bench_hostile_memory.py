"""The peak memory of every process atenlint starts, under each hostile input (issue 21:
"no process over 1 GB, no hang"). Runs the real CLI and the real language server, as
users start them, over the inputs of tests/test_hostile_*.py and the issue's list:
devices, FIFOs, a 10 GB file, 1.5 GB of worker stderr without a newline, `--baseline
/dev/zero`, huge option values, malformed notebooks and configs, 500 open/close pairs.

Each process in the tree is sampled from /proc while the scenario runs: its `VmHWM`
(the kernel's own high-water mark of resident memory), so a peak between two samples is
still seen; a process that starts and ends between two samples is not (the analysis
children live for a file, far longer than a sample). Linux only.

    python benchmarks/bench_hostile_memory.py [--quick] [--only server|cli]

prints one row per scenario and process role (the CLI or server, its workers, their
per-file children) with the peak in MB, the time, the exit code and whether it hung.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
ATENLINT = str(Path(sys.executable).parent / "atenlint")
LIMIT_MB = 1024.0  # the bound for every process
# Over this a process is killed with its whole tree (the run goes on, the row says so):
# the benchmark must not take the machine's memory while it proves it is not taken.
KILL_MB = 4096.0
SAMPLE_S = 0.05

# A healthy module, as the hostile CLI test writes it beside the hostile ones.
from test_hostile_cli import GOOD

# -- the process tree --------------------------------------------------------------------


@dataclass
class Peak:
    role: str
    mb: float


@dataclass
class Result:
    scenario: str
    seconds: float
    exit_code: int | None  # None: it hung (killed at the scenario's limit)
    peaks: dict[int, Peak] = field(default_factory=dict)  # pid -> its peak
    note: str = ""

    def by_role(self) -> dict[str, tuple[float, int]]:
        """role -> (the highest peak of its processes, how many there were)."""
        out: dict[str, tuple[float, int]] = {}
        for peak in self.peaks.values():
            highest, count = out.get(peak.role, (0.0, 0))
            out[peak.role] = (max(highest, peak.mb), count + 1)
        return out

    def worst_mb(self) -> float:
        return max((p.mb for p in self.peaks.values()), default=0.0)


def _status(pid: int) -> dict[str, str]:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
            return dict(line.rstrip("\n").split(":\t", 1) for line in status if ":\t" in line)
    except OSError:
        return {}


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return cmdline.read().replace(b"\x00", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def _tree(root: int) -> list[int]:
    """`root` and every process below it."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            ppid = _status(int(name)).get("PPid", "").strip()
            if ppid.isdigit():
                children.setdefault(int(ppid), []).append(int(name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def _role(pid: int, root: int, root_role: str, roles: dict[int, str]) -> str:
    if pid == root:
        return root_role
    if pid in roles:
        return roles[pid]
    parent = _status(pid).get("PPid", "").strip()
    if "atenlint.worker.main" in _cmdline(pid) or "importlib.util" in _cmdline(pid):
        parent_role = roles.get(int(parent)) if parent.isdigit() else None
        return "analysis child" if parent_role == "worker" else "worker"
    return "other"


class Sampler:
    """Samples the peak resident memory of a process tree until stopped."""

    def __init__(self, root: int, root_role: str):
        self.root, self.root_role = root, root_role
        self.peaks: dict[int, Peak] = {}
        self.killed = ""  # the process over KILL_MB, when one was
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(SAMPLE_S)

    def sample(self) -> None:
        roles = {pid: peak.role for pid, peak in self.peaks.items()}
        for pid in _tree(self.root):
            hwm = _status(pid).get("VmHWM", "0 kB").split()[0]
            if not hwm.isdigit():
                continue
            role = _role(pid, self.root, self.root_role, roles)
            roles[pid] = role
            previous = self.peaks.get(pid)
            mb = int(hwm) / 1024
            self.peaks[pid] = Peak(role, max(mb, previous.mb if previous else 0.0))
            if mb > KILL_MB and not self.killed:
                self.killed = f"the {role} was killed at {mb:.0f} MB"
                with contextlib.suppress(OSError):
                    os.killpg(self.root, 9)

    def stop(self) -> dict[int, Peak]:
        self._stop.set()
        self._thread.join()
        return self.peaks


# -- the CLI -----------------------------------------------------------------------------


def run_cli(name: str, args: list[str], cwd: Path, limit_s: float = 300, note: str = "") -> Result:
    started = time.perf_counter()
    process = subprocess.Popen(
        [ATENLINT, *args], cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    sampler = Sampler(process.pid, "cli")
    try:
        code: int | None = process.wait(timeout=limit_s)
    except subprocess.TimeoutExpired:
        code = None
        sampler.sample()
        os.killpg(process.pid, 9)
        process.wait()
    peaks = sampler.stop()
    return Result(name, time.perf_counter() - started, code, peaks, "; ".join(filter(None, [note, sampler.killed])))


def _project(base: Path, name: str) -> Path:
    root = base / name
    (root / ".git").mkdir(parents=True)
    return root


def cli_scenarios(base: Path, quick: bool) -> list[Callable[[], Result]]:
    from test_hostile_cli import hostile_workspace

    def hostile() -> Result:
        root, canaries = base / "hostile" / "project", base / "hostile" / "canaries"
        root.mkdir(parents=True)
        canaries.mkdir()
        hostile_workspace(root, canaries)
        return run_cli("check a hostile workspace (tests/test_hostile_cli.py)", ["check", "--timeout", "60", "."], root)

    def stderr_flood() -> Result:
        root = _project(base, "flood")
        (root / "flood.py").write_text(
            "import os\nfor _ in range(1536):\n    os.write(2, b'x' * (1 << 20))  # 1.5 GB, no newline\n" + GOOD
        )
        return run_cli("1.5 GB of stderr without a newline", ["check", "--timeout", "120", "flood.py"], root)

    def huge_file() -> Result:
        root = _project(base, "huge")
        with open(root / "huge.py", "wb") as huge:
            huge.truncate(10 << 30)  # sparse: 10 GB that take no disk
        (root / "good.py").write_text(GOOD)
        return run_cli("a 10 GB source file", ["check", "huge.py", "good.py"], root)

    def baseline_zero() -> Result:
        root = _project(base, "baseline")
        (root / "good.py").write_text(GOOD)
        return run_cli("--baseline /dev/zero", ["check", "--baseline", "/dev/zero", "good.py"], root)

    def jobs() -> Result:
        root = _project(base, "jobs")
        for index in range(4):
            (root / f"m{index}.py").write_text(GOOD)
        return run_cli("--jobs 100000", ["check", "--jobs", "100000", "."], root)

    def workers() -> Result:
        root = _project(base, "workers")
        (root / "pyproject.toml").write_text("[tool.atenlint]\nworkers = 64\n")
        for index in range(4):
            (root / f"m{index}.py").write_text(GOOD)
        return run_cli("a project's workers = 64", ["check", "."], root)

    def timeout_nan() -> Result:
        root = _project(base, "nan")
        (root / "good.py").write_text(GOOD)
        return run_cli("--timeout nan", ["check", "--timeout", "nan", "good.py"], root)

    def malformed() -> Result:
        root = _project(base, "malformed")
        (root / "deep.ipynb").write_text("[" * 1_000_000 + "]" * 1_000_000)
        (root / "garbage.ipynb").write_bytes(os.urandom(1 << 20))
        cells = [{"cell_type": "code", "metadata": {}, "source": ["x = 1\n" * 2_000_000], "outputs": []}]
        (root / "big_cell.ipynb").write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4}))
        os.mkfifo(root / "fifo.ipynb")
        sub = root / "sub"
        sub.mkdir()
        (sub / "pyproject.toml").write_text("[tool.atenlint]\nignore = " + "[" * 100_000 + "]" * 100_000 + "\n")
        (sub / "m.py").write_text(GOOD)
        return run_cli("malformed notebooks and configs", ["check", "."], root)

    chosen = [hostile, stderr_flood, huge_file, baseline_zero, timeout_nan, malformed]
    return chosen if quick else [*chosen, jobs, workers]


# -- the server ----------------------------------------------------------------------------


class Client:
    """Just enough LSP over stdio to send what a hostile editor session sends, answer the
    server's own requests, and wait for an answer or a notification."""

    def __init__(self, cwd: Path):
        self.process = subprocess.Popen(
            [ATENLINT, "serve"],
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.next_id = 0
        self.answers: dict[int, Any] = {}
        self.published: dict[str, int] = {}  # uri -> how many publishDiagnostics
        self.changed = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self.process.stdin.flush()
        except BrokenPipeError:
            pass

    def _read(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        while True:
            length = 0
            while (line := stream.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if not line:
                with self.changed:  # the server is gone: no answer will come
                    self.changed.notify_all()
                return
            message = json.loads(stream.read(length))
            if "method" in message and "id" in message:  # the server asks: answer plainly
                items = (message.get("params") or {}).get("items")
                self._send({"id": message["id"], "result": [None] * len(items) if items is not None else None})
                continue
            with self.changed:
                if "id" in message:
                    self.answers[message["id"]] = message
                elif message.get("method") == "textDocument/publishDiagnostics":
                    uri = message["params"]["uri"]
                    self.published[uri] = self.published.get(uri, 0) + 1
                self.changed.notify_all()

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self._send({"method": method, "params": params})

    def request(self, method: str, params: dict[str, Any], timeout: float = 60) -> Any:
        """The answer, or None when none came within `timeout` (a hang)."""
        self.next_id += 1
        request_id = self.next_id
        self._send({"id": request_id, "method": method, "params": params})
        with self.changed:
            self.changed.wait_for(lambda: request_id in self.answers or not self.alive(), timeout)
            return self.answers.pop(request_id, None)

    def wait_published(self, uri: str, timeout: float) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: self.published.get(uri, 0) > 0 or not self.alive(), timeout)

    def alive(self) -> bool:
        return self.process.poll() is None


Ask = Callable[[str, str, dict[str, Any], float], Any]


def run_session(root: Path, scenario: str, steps: Callable[[Client, Ask], str]) -> Result:
    """One server session over `root`: `steps` sends its requests through `ask` and returns
    a note. The row's note says which request first took the server over the limit, and
    what went unanswered."""
    started = time.perf_counter()
    client = Client(root)
    sampler = Sampler(client.process.pid, "server")
    unanswered: list[str] = []
    over: list[str] = []

    def ask(label: str, method: str, params: dict[str, Any], timeout: float = 60) -> Any:
        answer = client.request(method, params, timeout)
        if answer is None:
            unanswered.append(label)
        sampler.sample()
        server = sampler.peaks.get(client.process.pid)
        if server is not None and server.mb > LIMIT_MB and not over:
            over.append(f"the server passed {LIMIT_MB:.0f} MB at: {label}")
        return answer

    note = ""
    code: int | None = None
    try:
        init = {
            "processId": os.getpid(),
            "rootUri": root.as_uri(),
            "workspaceFolders": [{"uri": root.as_uri(), "name": "ws"}],
            "capabilities": {"textDocument": {"diagnostic": {}}},
            "initializationOptions": {"trusted": True, "timeout": 20},
        }
        ask("initialize", "initialize", init, 120)
        client.notify("initialized", {})
        note = steps(client, ask)
        ask("shutdown", "shutdown", {}, 30)
        client.notify("exit", {})
        code = client.process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        code = None
    finally:
        if client.process.poll() is None:
            sampler.sample()
            os.killpg(client.process.pid, 9)
            client.process.wait()
        elif code is None:
            code = client.process.returncode
    peaks = sampler.stop()
    notes = [note, *over, sampler.killed]
    if unanswered:
        notes.append("no answer: " + ", ".join(unanswered))
    return Result(scenario, time.perf_counter() - started, code, peaks, "; ".join(filter(None, notes)))


def server_scenarios(base: Path, quick: bool) -> list[Callable[[], Result]]:
    root = _project(base, "server")
    (root / "good.py").write_text(GOOD)
    (root / "loops.py").write_text("while True:\n    pass\n" + GOOD)
    os.symlink("/dev/zero", root / "zero.py")
    os.mkfifo(root / "fifo.py")
    with open(root / "huge.py", "wb") as huge:
        huge.truncate(10 << 30)
    position = {"line": 0, "character": 0}
    span = {"start": position, "end": position}

    def unopened(target: str) -> Callable[[], Result]:
        """Requests on a URI the client never opened: the server reads it from disk."""

        def steps(client: Client, ask: Ask) -> str:
            document = {"textDocument": {"uri": target}}
            ask("hover", "textDocument/hover", {**document, "position": position}, 60)
            ask(
                "codeAction", "textDocument/codeAction", {**document, "range": span, "context": {"diagnostics": []}}, 60
            )
            ask("diagnostic", "textDocument/diagnostic", document, 60)
            ask(
                "atenlint.report", "workspace/executeCommand", {"command": "atenlint.report", "arguments": [target]}, 60
            )
            return ""

        name = target.rsplit("/", 1)[-1]
        return lambda: run_session(root, f"language server: unopened {name}", steps)

    def workspace_and_pairs(client: Client, ask: Ask) -> str:
        # Waited for to its end (it analyses loops.py to its time limit, minutes on a loaded
        # machine): the pairs below must not queue behind it, or the new file's wait measures it.
        started = time.perf_counter()
        ask("checkWorkspace", "workspace/executeCommand", {"command": "atenlint.checkWorkspace"}, 1200)
        workspace_s = time.perf_counter() - started
        pairs = 100 if quick else 500
        loops = (root / "loops.py").as_uri()
        text = (root / "loops.py").read_text()
        for version in range(1, pairs + 1):
            item = {"uri": loops, "languageId": "python", "version": version, "text": text}
            client.notify("textDocument/didOpen", {"textDocument": item})
            client.notify("textDocument/didClose", {"textDocument": {"uri": loops}})
        fresh = (root / "fresh.py").as_uri()
        opened = time.perf_counter()
        item = {"uri": fresh, "languageId": "python", "version": 1, "text": GOOD}
        client.notify("textDocument/didOpen", {"textDocument": item})
        if not client.wait_published(fresh, 180):
            ask("a new file after the pairs", "textDocument/diagnostic", {"textDocument": {"uri": fresh}}, 180)
        return (
            f"Check Workspace {workspace_s:.0f} s; {pairs} open/close pairs of a looping file, then a new file "
            f"answered in {time.perf_counter() - opened:.1f} s"
        )

    targets = ["file:///dev/zero", *((root / name).as_uri() for name in ("zero.py", "fifo.py", "huge.py"))]
    return [
        *(unopened(target) for target in targets),
        lambda: run_session(root, "language server: workspace check, open/close pairs", workspace_and_pairs),
    ]


# -- the whole ----------------------------------------------------------------------------


def measure(quick: bool = False, only: str = "all") -> list[Result]:
    """`only`: "server" or "cli" runs that program's scenarios alone."""
    base = Path(tempfile.mkdtemp(prefix="atenlint-bench-hostile-"))
    try:
        results = []
        chosen = [
            *(server_scenarios(base, quick) if only in ("all", "server") else []),
            *(cli_scenarios(base, quick) if only in ("all", "cli") else []),
        ]
        for scenario in chosen:
            results.append(scenario())
            print(format_results(results[-1:]), flush=True)  # as it comes: a long run shows progress
        return results
    finally:
        shutil.rmtree(base, ignore_errors=True)


def format_results(results: list[Result]) -> str:
    lines = [
        "| scenario | process | peak RSS | processes | time | exit | under 1 GB |",
        "|---|---|---|---|---|---|---|",
    ]
    for result in results:
        exit_text = "hung" if result.exit_code is None else str(result.exit_code)
        for role, (mb, count) in sorted(result.by_role().items(), key=lambda item: -item[1][0]):
            lines.append(
                f"| {result.scenario} | {role} | {mb:.0f} MB | {count} | {result.seconds:.1f} s | {exit_text} | "
                f"{'yes' if mb <= LIMIT_MB else 'NO'} |"
            )
        if result.note:
            lines.append(f"| {result.scenario} | ({result.note}) | | | | | |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer scenarios and 100 open/close pairs")
    parser.add_argument(
        "--only", choices=("all", "server", "cli"), default="all", help="the scenarios of one program only"
    )
    args = parser.parse_args()
    if not sys.platform.startswith("linux"):
        print("this benchmark reads /proc: Linux only", file=sys.stderr)
        return 2
    results = measure(args.quick, args.only)
    print(format_results(results))
    worst = max(result.worst_mb() for result in results)
    hung = [result.scenario for result in results if result.exit_code is None]
    print(f"\nlargest process: {worst:.0f} MB (limit {LIMIT_MB:.0f} MB); hung: {', '.join(hung) or 'none'}")
    return 0 if worst <= LIMIT_MB and not hung else 1


if __name__ == "__main__":
    sys.exit(main())
