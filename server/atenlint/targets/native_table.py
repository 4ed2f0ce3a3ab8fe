"""Every aten overload of the installed torch and where its kernels come from, read from the
wheel's own `native_functions.yaml` with torchgen's parser (the code generator's view).

Cached on disk by torch version and yaml hash: parsing takes about a second, a cached
load a few milliseconds. torchgen is pure Python and ships in the torch wheel; it does
not import torch.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

from ..cache import cache_dir, read_json, write_json

if TYPE_CHECKING:  # annotations only: this module also runs as a script under another Python
    from typing_extensions import NotRequired

_FORMAT = 2
_COMPOSITE_KEYS = ("CompositeImplicitAutograd", "CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional")


class RawEntry(TypedDict):
    """One overload in the on-disk cache (short keys: the file holds every aten overload)."""

    k: list[str]  # dispatch keys with a kernel
    d: NotRequired[str]  # structured delegate
    t: NotRequired[list[str]]  # tags


@dataclass(frozen=True)
class NativeEntry:
    kernels: frozenset[str]  # dispatch keys with a kernel of their own (CPU, MPS, CompositeImplicitAutograd, ...)
    delegate: str | None  # structured_delegate, as "aten::name.out"
    tags: frozenset[str]

    @property
    def implicit(self) -> bool:
        return "CompositeImplicitAutograd" in self.kernels

    @property
    def explicit(self) -> bool:
        return bool(self.kernels & {"CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional"})


class NativeTable:
    def __init__(self, entries: dict[str, NativeEntry], torch_version: str, yaml_sha: str, yaml_path: str) -> None:
        self.entries = entries
        self.torch_version = torch_version
        self.yaml_sha = yaml_sha
        self.yaml_path = yaml_path

    def get(self, name: str) -> NativeEntry | None:
        return self.entries.get(name)

    def __contains__(self, name: str) -> bool:
        return name in self.entries

    def has_kernel(self, name: str, key: str) -> bool:
        entry = self.entries.get(name)
        return entry is not None and key in entry.kernels

    @classmethod
    def load(cls, yaml_path: str, torch_version: str) -> NativeTable:
        with open(yaml_path, "rb") as handle:
            sha = hashlib.sha256(handle.read()).hexdigest()
        cache_file = os.path.join(cache_dir(), f"native-{torch_version}-{sha[:16]}-v{_FORMAT}.json")
        data: dict[str, RawEntry] | None = read_json(cache_file)
        if not isinstance(data, dict):
            data = _derive(yaml_path)
            write_json(cache_file, data)
        entries = {
            name: NativeEntry(frozenset(e["k"]), e.get("d"), frozenset(e.get("t", ()))) for name, e in data.items()
        }
        return cls(entries, torch_version, sha, yaml_path)


def _derive(yaml_path: str) -> dict[str, RawEntry]:
    """Parse with torchgen: in-process when it is the same torchgen, else in a subprocess
    of ours with the worker's torchgen on its path (the server may run another Python)."""
    torchgen_dir = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(yaml_path))))
    try:
        import torchgen  # type: ignore[import-untyped]  # torchgen ships no type information

        same = os.path.abspath(os.path.dirname(torchgen.__file__)) == os.path.abspath(torchgen_dir)
    except ImportError:
        same = False
    if same:
        return derive_entries(yaml_path)
    env = dict(os.environ)
    package_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join([package_parent, env.get("PYTHONPATH", ""), os.path.dirname(torchgen_dir)])
    out = subprocess.run(
        [sys.executable, "-m", "atenlint.targets.native_table", yaml_path],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=True,
    )
    derived: dict[str, RawEntry] = json.loads(out.stdout)
    return derived


def derive_entries(yaml_path: str) -> dict[str, RawEntry]:
    from torchgen.gen import parse_native_yaml  # type: ignore[import-untyped]  # no type information

    tags_path = os.path.join(os.path.dirname(yaml_path), "tags.yaml")
    parsed = parse_native_yaml(yaml_path, tags_path)
    out: dict[str, RawEntry] = {}
    for function in parsed.native_functions:
        kernels = sorted(str(key) for key, index in parsed.backend_indices.items() if index.has_kernel(function))
        entry: RawEntry = {"k": kernels}
        if function.structured_delegate is not None:
            entry["d"] = f"aten::{function.structured_delegate}"
        tags = sorted(function.tags)
        if tags:
            entry["t"] = tags
        out[f"aten::{function.func.name}"] = entry
    return out


if __name__ == "__main__":
    json.dump(derive_entries(sys.argv[1]), sys.stdout)
