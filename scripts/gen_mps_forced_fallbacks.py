"""Add or refresh one torch release in `server/atenlint/targets/data/mps_forced_fallbacks.json`.

The ops torch always sends to the CPU on MPS are registered in C++ by
`aten/src/ATen/mps/MPSFallback.mm` (`m.impl("op", ...makeFromBoxedFunction<&mps_fallback>())`
inside `TORCH_LIBRARY_IMPL(aten, MPS, m)`), which no wheel ships. Give the file of that
release's source tree (tag vX.Y.Z of pytorch/pytorch):

    python scripts/gen_mps_forced_fallbacks.py path/to/MPSFallback.mm --torch 2.13 --ref v2.13.0

Registrations to anything other than the boxed `mps_fallback` (an assertion such as
`_slow_conv2d_forward`'s) are not CPU fallbacks and are left out.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(REPO, "server", "atenlint", "targets", "data", "mps_forced_fallbacks.json")

_BLOCK = re.compile(r"TORCH_LIBRARY_IMPL\(\s*aten\s*,\s*MPS\s*,\s*m\s*\)\s*\{(?P<body>.*?)\n\}", re.DOTALL)
_IMPL = re.compile(r'm\.impl\(\s*"(?P<op>[^"]+)"\s*,\s*(?P<kernel>[^;]*?)\)\s*;', re.DOTALL)


def forced_ops(source: str) -> list[str]:
    ops = []
    for block in _BLOCK.finditer(source):
        body = re.sub(r"//[^\n]*", "", block["body"])
        for impl in _IMPL.finditer(body):
            if "&mps_fallback" in impl["kernel"]:
                ops.append(f"aten::{impl['op']}")
    return ops


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", help="MPSFallback.mm of the release")
    parser.add_argument("--torch", required=True, help="release as major.minor, e.g. 2.13")
    parser.add_argument("--ref", help="where the file came from (tag or commit), recorded in the data")
    parser.add_argument("--out", default=OUT)
    args = parser.parse_args()
    if not re.fullmatch(r"\d+\.\d+", args.torch):
        parser.error("--torch takes major.minor")
    with open(args.source, encoding="utf-8") as handle:
        ops = forced_ops(handle.read())
    with open(args.out, encoding="utf-8") as handle:
        data = json.load(handle)
    entry = {"ops": ops}
    if args.ref:
        entry["checked"] = f"pytorch/pytorch {args.ref}: aten/src/ATen/mps/MPSFallback.mm"
    data["versions"][args.torch] = entry
    data["versions"] = dict(sorted(data["versions"].items(), key=lambda kv: tuple(map(int, kv[0].split(".")))))
    with open(args.out, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2)
        handle.write("\n")
    print(f"torch {args.torch}: {', '.join(ops) or 'no forced fallbacks'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
