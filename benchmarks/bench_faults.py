"""How fast the language server recovers from user code that hangs, exits, aborts or blows
up its memory (what tests/lsp/test_faults_and_trust.py checks for correctness, timed here).

For each fault, in a fresh `atenlint serve` (editor timeout 5 s, worker memory limit
1500 MB): didOpen of the faulty file -> its one diagnostic (ATL005 / ATL006), then didOpen
of a healthy file -> its diagnostics from the replacement worker. Goal: each fault reported
within 40 s of the open and the healthy file within 40 s after it, on a loaded 2-core machine.

    python benchmarks/bench_faults.py [--rounds 1] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests", "lsp"))

from faults import FAULTS
from harness import SERVER, WORKSPACE, diagnostics, open_file, start
from pytest_lsp.client import make_test_lsp_client

GOAL_S = 40.0


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


async def one_fault(fault: str, root: str) -> dict:
    code, body = FAULTS[fault]
    client = make_test_lsp_client()
    await client.start_io(*SERVER)
    try:
        await start(client, "neovim", root, {"timeout": 5, "memoryLimitMb": 1500})
        bad = os.path.join(root, f"{fault}.py")
        _write(bad, body)
        started = time.monotonic()
        items = await diagnostics(client, open_file(client, bad), timeout=300)
        fault_s = time.monotonic() - started
        started = time.monotonic()
        healthy = await diagnostics(client, open_file(client, os.path.join(root, "model.py")), timeout=300)
        healthy_s = time.monotonic() - started
        await client.shutdown_session()
    finally:
        await client.stop()
    return {
        "fault": fault,
        "codes": [d.code for d in items],
        "expected": code,
        "fault_s": fault_s,
        "healthy_codes": [d.code for d in healthy],
        "healthy_s": healthy_s,
    }


async def run(rounds: int) -> list[dict]:
    results = []
    for _ in range(rounds):
        for fault in sorted(FAULTS):
            root = tempfile.mkdtemp(prefix="atenlint-bench-faults-")
            try:
                shutil.copytree(WORKSPACE, root, dirs_exist_ok=True)
                results.append(await one_fault(fault, root))
            finally:
                shutil.rmtree(root, ignore_errors=True)
    return results


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    results = asyncio.run(run(args.rounds))
    if args.json:
        print(json.dumps(results, indent=1))
        return 0
    worst_ok = True
    for fault in sorted(FAULTS):
        rows = [r for r in results if r["fault"] == fault]
        fault_s = statistics.median(r["fault_s"] for r in rows)
        healthy_s = statistics.median(r["healthy_s"] for r in rows)
        right = all(r["codes"] == [r["expected"]] for r in rows)
        ok = right and fault_s < GOAL_S and healthy_s < GOAL_S
        worst_ok &= ok
        print(
            f"{fault:12} fault reported in {fault_s:5.1f} s, healthy file after it in {healthy_s:5.1f} s "
            f"({'ok' if ok else 'MISSED'}: goal < {GOAL_S:.0f} s each{'' if right else ', wrong diagnostics'})"
        )
    return 0 if worst_ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
