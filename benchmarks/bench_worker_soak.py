"""Worker memory soak: analyse the same files again and again in one warm worker and watch
its resident memory (issue 12: 1,000 cycles, RSS flat within 10 %).

Each cycle imports a model file afresh (its module is dropped after every analysis),
builds its classes on meta, scripts them, and runs the per-file state reset; one file in
four also poisons global state (default dtype, warnings filter, a monkeypatch, a mode
left entered) so the reset is exercised too. Recycling is switched off, so the numbers
show what the reset itself keeps flat.

    python benchmarks/bench_worker_soak.py [--cycles 1000] [--json out.json]

Prints RSS after the warm-up cycles and at every tenth of the run, and exits 1 when the
last reading is more than 10 % above the first.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "server"))

from atenlint.worker.pool import WorkerPool, WorkerSettings, _rss_mb

MODEL = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, dim: int = 64):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        return F.gelu(self.norm(self.proj(x))) + torch.take(x, torch.tensor([0]))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block() for _ in range(4)])
        self.pool = nn.AdaptiveAvgPool1d(1)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.pool(x)
"""

POISON = """
import warnings
import torch
import torch.nn as nn
torch.set_default_dtype(torch.float64)
warnings.simplefilter("error")
torch.nn.functional.relu = lambda x, inplace=False: x
torch.device("meta").__enter__()


class Poisoned(nn.Module):
    def forward(self, x):
        return x.relu()
"""


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=1000)
    parser.add_argument("--json", metavar="FILE", help="write the readings as JSON")
    parser.add_argument("--warm-up", type=int, default=50, help="cycles before the first reading")
    args = parser.parse_args(argv)
    folder = tempfile.mkdtemp(prefix="atenlint-soak-")
    files = []
    for index in range(4):
        path = os.path.join(folder, f"model_{index}.py")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(POISON if index == 3 else MODEL)
        files.append((path, f"model_{index}"))
    pool = WorkerPool(1, WorkerSettings(recycle_growth=1e9))
    started = time.perf_counter()
    pool.warm()
    worker = pool._all[0]
    readings = []
    first = None
    statuses_seen: dict = {}
    failures = 0
    for cycle in range(1, args.cycles + 1):
        path, module = files[cycle % len(files)]
        answer = pool.request(
            "analyse",
            {"path": path, "module": module, "roots": [folder], "classes": {"Net": {}, "Block": {}, "Poisoned": {}}},
            120,
        )
        statuses = [(c["qualname"], c["status"], len(c["ops"])) for c in answer["classes"]]
        expected = statuses_seen.setdefault(module, statuses)
        if statuses != expected or "import_error" in answer:
            failures += 1
            print(
                f"cycle {cycle}: {module} answered {statuses} {answer.get('import_error')}, first {expected}",
                flush=True,
            )
        if worker.recycle_reason or pool.recycled:
            print(f"cycle {cycle}: the worker was recycled ({worker.recycle_reason})")
        if (
            cycle == args.warm_up
            or (cycle > args.warm_up and cycle % max(1, args.cycles // 10) == 0)
            or cycle == args.cycles
        ):
            rss = _rss_mb(worker.process.pid)
            first = first or rss
            readings.append({"cycle": cycle, "rss_mb": round(rss, 1), "growth": round(rss / first - 1, 4)})
            print(f"cycle {cycle:5d}: RSS {rss:7.1f} MB ({(rss / first - 1) * 100:+.1f} %)", flush=True)
    seconds = time.perf_counter() - started
    pool.close()
    growth = readings[-1]["rss_mb"] / readings[0]["rss_mb"] - 1
    print(
        f"{args.cycles} cycles in {seconds:.0f} s; RSS {readings[0]['rss_mb']} -> {readings[-1]['rss_mb']} MB "
        f"({growth * 100:+.1f} %), recycled {pool.recycled} times, {failures} answers differed from the first"
    )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(
                {
                    "cycles": args.cycles,
                    "seconds": seconds,
                    "readings": readings,
                    "growth": growth,
                    "recycled": pool.recycled,
                    "differing_answers": failures,
                },
                handle,
                indent=2,
            )
    return 0 if growth <= 0.10 and not failures else 1


if __name__ == "__main__":
    sys.exit(main())
