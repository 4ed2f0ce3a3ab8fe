"""Record what the real exporters do on the corpus: `python scripts/regen_corpus_truth.py [--force]`.

Runs tests/corpus/ground_truth.py (torch.jit.script, the TorchScript and dynamo ONNX
exporters, torch.export + ExecuTorch's verifier and to_edge, coremltools) over every module
in tests/corpus/modules with the installed packages, and writes
tests/corpus/truth/<package versions>.json. The agreement tests read that file, so a CI run
does not repeat minutes of exporter work; with versions that have no file (or a module or
the runner changed since), the tests compute the missing results once into the user cache.

Run it in each environment CI tests (torch 2.13.0 and 2.15.0 with the `exporters` extra),
after adding or changing a corpus module or the runner, then review and commit the file.
Without --force, results already in the user cache for exactly these versions, sources and
runner are reused.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

from atenlint.cache import cache_dir
from corpus.agreement import ground_truth, versions, write_truth


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="recompute everything, ignoring the user cache")
    args = parser.parse_args(argv)
    started = time.monotonic()
    scratch = tempfile.mkdtemp(prefix="atenlint-truth-") if args.force else None
    try:
        results = ground_truth(scratch or cache_dir(), use_committed=False, log=print)
    finally:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
    crashed = sorted(name for name, result in results.items() if "crashed" in result)
    if crashed:
        print(f"the runner crashed on {crashed}; nothing written", file=sys.stderr)
        return 1
    out = write_truth(results)
    print(f"{os.path.relpath(out)}: {len(results)} modules, {versions()} ({time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
