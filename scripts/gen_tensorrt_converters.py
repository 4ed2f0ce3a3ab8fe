"""Regenerate `server/atenlint/targets/data/tensorrt_converters.json` from torch-tensorrt wheels.

torch_tensorrt cannot be imported without CUDA and TensorRT, so its converter registry is
read from the wheel's source with `ast`: every `@dynamo_tensorrt_converter(TARGET, ...)`
decorator in `torch_tensorrt/dynamo/conversion/*.py`. A converter with a
`capability_validator` only takes the calls its validator accepts (the rest run in
PyTorch), so it is recorded as validated.

    python scripts/gen_tensorrt_converters.py --download 2.13.0 2.14.0
    python scripts/gen_tensorrt_converters.py torch_tensorrt-2.13.0-....whl
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(REPO, "server", "atenlint", "targets", "data", "tensorrt_converters.json")
PREFIX = "torch_tensorrt/dynamo/conversion/"


def _dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def target_name(node: ast.AST) -> tuple[str, bool] | None:
    """`torch.ops.aten.add.Tensor` -> ("aten::add.Tensor", False); a packet
    (`torch.ops.aten.batch_norm`, every overload) -> ("aten::batch_norm", True)."""
    dotted = _dotted(node)
    if not dotted or not dotted.startswith("torch.ops."):
        return None
    parts = dotted.split(".")[2:]
    if len(parts) == 2:
        return f"{parts[0]}::{parts[1]}", True
    if len(parts) == 3:
        namespace, name, overload = parts
        return (f"{namespace}::{name}" if overload == "default" else f"{namespace}::{name}.{overload}"), False
    return None


def converters_in(source: str, filename: str) -> list[dict]:
    tree = ast.parse(source, filename)
    found = []

    def visit(body, conditional: bool):
        for statement in body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for decorator in statement.decorator_list:
                    if not (
                        isinstance(decorator, ast.Call)
                        and _dotted(decorator.func)
                        and _dotted(decorator.func).split(".")[-1] == "dynamo_tensorrt_converter"
                    ):
                        continue
                    if not decorator.args:
                        continue
                    named = target_name(decorator.args[0])
                    if named is None:
                        continue
                    keywords = {k.arg for k in decorator.keywords}
                    found.append(
                        {
                            "op": named[0],
                            "packet": named[1],
                            "validator": "capability_validator" in keywords,
                            "conditional": conditional,
                            "file": os.path.basename(filename),
                            "line": decorator.lineno,
                        }
                    )
            elif isinstance(statement, ast.If):
                visit(statement.body, True)
                visit(statement.orelse, True)
            elif isinstance(statement, ast.Try):
                visit(statement.body, True)

    visit(tree.body, False)
    return found


def read_wheel(path: str) -> dict:
    with zipfile.ZipFile(path) as archive:
        names = sorted(n for n in archive.namelist() if n.startswith(PREFIX) and n.endswith(".py"))
        converters = []
        digest = hashlib.sha256()
        for name in names:
            text = archive.read(name).decode("utf-8")
            digest.update(text.encode("utf-8"))
            converters += converters_in(text, name)
        metadata = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        meta = archive.read(metadata).decode("utf-8")
    version = re.search(r"^Version: (.+)$", meta, re.MULTILINE).group(1).strip()
    torch_req = [
        line.split(":", 1)[1].strip()
        for line in meta.splitlines()
        if line.startswith("Requires-Dist: torch")
        and not line.startswith("Requires-Dist: torch_")
        and not line.startswith("Requires-Dist: torchvision")
    ]
    ops: dict[str, dict] = {}
    for entry in converters:
        current = ops.setdefault(
            entry["op"],
            {"packet": entry["packet"], "validator": entry["validator"], "conditional": entry["conditional"], "at": []},
        )
        # Several registrations of one op: it is validated only if every one of them is.
        current["validator"] = current["validator"] and entry["validator"]
        current["conditional"] = current["conditional"] and entry["conditional"]
        current["packet"] = current["packet"] or entry["packet"]
        current["at"].append(f"{entry['file']}:{entry['line']}")
    return {
        "release": version,
        "wheel": os.path.basename(path),
        "requires": torch_req,
        "sources_sha256": digest.hexdigest(),
        "files_read": len(names),
        "ops": dict(sorted(ops.items())),
    }


def download(versions: list[str], folder: str) -> list[str]:
    out = []
    for version in versions:
        before = set(os.listdir(folder))
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                f"torch-tensorrt=={version}",
                "--no-deps",
                "--platform",
                "manylinux_2_28_x86_64",
                "--only-binary=:all:",
                "--python-version",
                "3.11",
                "-d",
                folder,
                "-q",
            ],
            check=True,
        )
        out.append(os.path.join(folder, min(set(os.listdir(folder)) - before)))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("wheels", nargs="*")
    parser.add_argument("--download", nargs="+", metavar="VERSION")
    parser.add_argument("--out", default=OUT)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        wheels = list(args.wheels) + (download(args.download, folder) if args.download else [])
        if not wheels:
            parser.error("give wheels or --download VERSION...")
        versions = {}
        for wheel in wheels:
            data = read_wheel(wheel)
            versions[data["release"]] = data
            print(
                f"torch-tensorrt {data['release']}: {len(data['ops'])} converter targets "
                f"({sum(o['validator'] for o in data['ops'].values())} with capability validators)",
                file=sys.stderr,
            )
    result = {
        "about": "Torch-TensorRT (dynamo) converter registrations: each aten target with a "
        "@dynamo_tensorrt_converter, whether it has a capability_validator (it may still run in "
        "PyTorch), and whether the registration is conditional on the TensorRT version. A packet "
        "(no overload) registers every overload of the op.",
        "source": "torch_tensorrt/dynamo/conversion/*.py in the torch-tensorrt wheels on PyPI, parsed with ast",
        "generated_by": "scripts/gen_tensorrt_converters.py",
        "versions": dict(sorted(versions.items())),
    }
    with open(args.out, "w", encoding="utf-8") as handle:
        json.dump(result, handle, indent=1)
        handle.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
