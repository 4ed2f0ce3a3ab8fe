"""Record what the real torch.compile does on the hand-written compile cases:
`python scripts/regen_compile_case_truth.py [--force]`.

Runs tests/real_models/compile_truth.py (`torch._dynamo.explain` and
`torch.compile(fullgraph=True)`, no Inductor) on every case in
tests/real_models/models/compile, as tests/real_models/test_compile_cases.py does, and writes
tests/real_models/compile_truth_data/torch-<version>.json with paths relative to the
repository. The test reads that file, so a CI run does not repeat minutes of Dynamo work; a
case or runner changed since, or a torch with no file, is computed once into the user cache.

Run it in each environment CI tests (torch 2.13.0 and 2.15.0), after adding or changing a
case or the runner, then review and commit the file. Without --force, results already in the
user cache for exactly these versions, sources and runner are reused.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

from real_models.compile_agreement import (
    MODELS,
    real_compile,
    truth_digest,
    write_committed_compile_truth,
)
from real_models.test_compile_cases import CHOSEN, RUNNER_ARGUMENTS


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="recompute everything, ignoring the user cache")
    args = parser.parse_args(argv)
    scratch = tempfile.mkdtemp(prefix="atenlint-compile-truth-") if args.force else None
    if scratch:
        os.environ["ATENLINT_CACHE_DIR"] = scratch
    try:
        results = {}
        for case in CHOSEN:
            path = os.path.join(MODELS, case)
            name = case[:-3].replace("/", "-")
            result = real_compile(path, list(RUNNER_ARGUMENTS), use_committed=False)
            if not result.get("complete"):
                print(f"{case}: the runner did not finish ({result.get('crashed', 'incomplete')}); not recorded")
                return 1
            results[name] = (truth_digest(path, list(RUNNER_ARGUMENTS)), result)
            print(f"{case}: {len((result.get('explain') or {}).get('breaks', []))} breaks")
        print("wrote", write_committed_compile_truth(results))
    finally:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
