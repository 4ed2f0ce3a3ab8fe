"""Regenerate `server/atenlint/targets/data/mps_history.json`: for each released torch, which
aten overloads have an MPS kernel, read from that wheel's own `native_functions.yaml` with
that wheel's own torchgen parser (the code generator's view, as for the installed torch).

    python scripts/gen_mps_history.py --download 2.0.1 2.1.2 ... 2.11.0   # fetch macOS arm64 wheels with pip
    python scripts/gen_mps_history.py WHEEL.whl [WHEEL.whl ...]         # or use wheels you have

The yaml is the same file in every platform's wheel of a release, so a Linux wheel serves
for releases without a macOS arm64 wheel on the index you use. Only the compact derived
table is written (per overload, the version ranges in which it has an MPS kernel); the
wheels are not kept.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVER = os.path.join(REPO, "server")
OUT = os.path.join(SERVER, "atenlint", "targets", "data", "mps_history.json")
YAML = "torchgen/packaged/ATen/native/native_functions.yaml"

# Run inside a subprocess whose sys.path starts with the wheel's own torchgen.
_PARSE = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import torchgen
assert torchgen.__file__.startswith(sys.argv[1]), torchgen.__file__
from atenlint.targets.native_table import derive_entries
json.dump(derive_entries(sys.argv[2]), sys.stdout)
"""


def wheel_version(path: str) -> str:
    match = re.match(r"torch-(\d+\.\d+\.\d+)", os.path.basename(path))
    if not match:
        raise SystemExit(f"{path}: not a torch wheel name")
    return match.group(1)


def mps_overloads(wheel: str) -> tuple[set, str]:
    """Overloads with an MPS kernel of their own or through a structured out= delegate."""
    with tempfile.TemporaryDirectory() as tmp, zipfile.ZipFile(wheel) as archive:
        members = [m for m in archive.namelist() if m.startswith("torchgen/")]
        archive.extractall(tmp, members)
        yaml_path = os.path.join(tmp, YAML)
        with open(yaml_path, "rb") as handle:
            sha = hashlib.sha256(handle.read()).hexdigest()
        env = dict(os.environ, PYTHONPATH=SERVER)
        out = subprocess.run(
            [sys.executable, "-c", _PARSE, tmp, yaml_path], capture_output=True, text=True, env=env, check=True
        )
    entries = json.loads(out.stdout)
    own = {name for name, e in entries.items() if "MPS" in e["k"]}
    effective = set(own)
    for name, entry in entries.items():
        if entry.get("d") in own:
            effective.add(name)
    return effective, sha


def download(versions: list[str], folder: str) -> list[str]:
    wheels = []
    for version in versions:
        before = set(os.listdir(folder))
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                f"torch=={version}",
                "--no-deps",
                "--platform",
                "macosx_11_0_arm64",
                "--only-binary=:all:",
                "--python-version",
                "3.11",
                "-d",
                folder,
                "-q",
            ],
            check=True,
        )
        new = sorted(set(os.listdir(folder)) - before) or [f for f in os.listdir(folder) if f"torch-{version}" in f]
        wheels.append(os.path.join(folder, new[0]))
    return wheels


def key(version: str) -> tuple:
    return tuple(int(p) for p in version.split("."))


def build(wheels: list[str]) -> dict:
    per_version = {}
    sources = {}
    for wheel in sorted(wheels, key=lambda w: key(wheel_version(w))):
        version = wheel_version(wheel)
        minor = ".".join(version.split(".")[:2])
        ops, sha = mps_overloads(wheel)
        per_version[minor] = ops
        sources[minor] = {
            "release": version,
            "wheel": os.path.basename(wheel),
            "yaml_sha256": sha,
            "mps_overloads": len(ops),
        }
        print(f"torch {version}: {len(ops)} overloads with an MPS kernel", file=sys.stderr)
    versions = list(per_version)
    ranges: dict[str, list] = {}
    for name in sorted(set().union(*per_version.values())):
        spans, start = [], None
        for index, version in enumerate(versions):
            present = name in per_version[version]
            if present and start is None:
                start = version
            if not present and start is not None:
                spans.append([start, versions[index - 1]])
                start = None
        if start is not None:
            spans.append([start, None])
        ranges[name] = spans
    return {
        "about": "Per aten overload, the torch releases (major.minor) in which it has an MPS kernel, directly "
        "(`MPS:` in native_functions.yaml) or through a structured out= delegate that has one. "
        "A range [first, last] is inclusive; last null means still present in the newest release listed.",
        "source": "native_functions.yaml of each torch wheel on PyPI, parsed with that wheel's torchgen",
        "generated_by": "scripts/gen_mps_history.py",
        "versions": sources,
        "ops": ranges,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("wheels", nargs="*", help="torch wheel files")
    parser.add_argument("--download", nargs="+", metavar="VERSION", help="fetch these releases with pip")
    parser.add_argument("--out", default=OUT)
    args = parser.parse_args()
    wheels = list(args.wheels)
    with tempfile.TemporaryDirectory() as folder:
        if args.download:
            wheels += download(args.download, folder)
        if not wheels:
            parser.error("give wheels or --download VERSION...")
        data = build(wheels)
    with open(args.out, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=0, sort_keys=False)
        handle.write("\n")
    print(f"wrote {args.out}: {len(data['ops'])} overloads, releases {', '.join(data['versions'])}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
