"""Tracing a >= 10-billion-parameter transformer costs no memory: weights on meta, inputs fake.

Builds a GPT-style stack (dim 8192, 13 layers: 10.5 B parameters) in a temporary file and
has one worker analyse it twice in the same run: with example inputs (trace capture) and
without (TorchScript capture). Reports the worker's peak RSS and both wall times.

    python benchmarks/bench_trace_memory.py [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import textwrap
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "server"))

from atenlint.worker.pool import WorkerPool

MODEL = textwrap.dedent("""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F


    class Block(nn.Module):
        def __init__(self, dim: int, heads: int):
            super().__init__()
            self.heads = heads
            self.norm1 = nn.LayerNorm(dim)
            self.qkv = nn.Linear(dim, 3 * dim, bias=False)
            self.proj = nn.Linear(dim, dim, bias=False)
            self.norm2 = nn.LayerNorm(dim)
            self.up = nn.Linear(dim, 4 * dim, bias=False)
            self.down = nn.Linear(4 * dim, dim, bias=False)

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
            return x + self.down(F.gelu(self.up(self.norm2(x))))


    class GiantLM(nn.Module):
        def __init__(self, vocab: int = 32000, dim: int = 8192, depth: int = 13, heads: int = 64):
            super().__init__()
            self.embed = nn.Embedding(vocab, dim)
            self.blocks = nn.ModuleList([Block(dim, heads) for _ in range(depth)])
            self.head = nn.Linear(dim, vocab, bias=False)

        def forward(self, tokens):
            x = self.embed(tokens)
            for block in self.blocks:
                x = block(x)
            return self.head(x)
""")
PARAMETERS = 32000 * 8192 * 2 + 13 * (12 * 8192 * 8192 + 4 * 8192)


def analyse(pool: WorkerPool, path: str, inputs: str | None) -> tuple[float, dict]:
    classes = {"GiantLM": {"inputs": inputs} if inputs else {}}
    started = time.perf_counter()
    answer = pool.request(
        "analyse",
        {
            "path": path,
            "module": "giant",
            "roots": [os.path.dirname(path)],
            "classes": classes,
            "devices": ["mps"],
            "views": ["dispatch"],
        },
        600,
    )
    return time.perf_counter() - started, next(c for c in answer["classes"] if c["qualname"] == "GiantLM")


def _high_water_mb(pid: int) -> float | None:
    """The kernel's record of the worker's peak resident memory (VmHWM), not a sample."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        path = os.path.join(scratch, "giant.py")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(MODEL)
        pool = WorkerPool(1)
        pool.warm()
        try:
            baseline_rss = pool.peak_rss_mb
            script_s, scripted = analyse(pool, path, None)
            trace_s, traced = analyse(pool, path, "torch.randint(0, 32000, (1, 2048))")
            peak = _high_water_mb(pool._all[0].process.pid) or pool.peak_rss_mb
        finally:
            pool.close()
    result = {
        "parameters": PARAMETERS,
        "script_seconds": round(script_s, 2),
        "script_capture": scripted.get("capture", "script"),
        "trace_seconds": round(trace_s, 2),
        "trace_capture": traced.get("capture"),
        "trace_vs_script": round(trace_s / script_s, 2),
        "worker_peak_rss_mb": round(peak),
        "worker_rss_after_start_mb": round(baseline_rss),
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(
            f"{PARAMETERS / 1e9:.1f} B parameters: trace {trace_s:.2f}s ({traced.get('capture')}), "
            f"script {script_s:.2f}s, ratio {trace_s / script_s:.2f}; worker peak RSS {peak:.0f} MB "
            f"(after start {baseline_rss:.0f} MB)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
