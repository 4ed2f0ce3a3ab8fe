"""Regenerate `server/atenlint/targets/data/xla_native_functions.json` from pytorch/xla's
`codegen/xla_native_functions.yaml` (the list of aten overloads torch_xla lowers).

torch_xla cannot be loaded next to a newer torch (its newest release pairs with an older
torch), so its registrations are kept as a versioned data file. Give the yaml of a
pytorch/xla checkout and say which release or commit it is:

    python scripts/gen_xla_native_functions.py xla/codegen/xla_native_functions.yaml --ref v2.9.0
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(REPO, "server", "atenlint", "targets", "data", "xla_native_functions.json")
SECTIONS = ("full_codegen", "ir_gen", "supported", "autograd")


def lowered_ops(document: dict) -> dict[str, list[str]]:
    """Overloads per section, as `aten::name.overload` (the yaml writes `name.overload`)."""
    out = {}
    for section in SECTIONS:
        names = []
        for item in document.get(section) or []:
            name = f"aten::{item}"
            if name not in names:
                names.append(name)
        out[section] = sorted(names)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("yaml", help="codegen/xla_native_functions.yaml")
    parser.add_argument("--ref", required=True, help="pytorch/xla tag or commit the file comes from")
    parser.add_argument("--out", default=OUT)
    args = parser.parse_args()
    with open(args.yaml, "rb") as handle:
        raw = handle.read()
    document = yaml.safe_load(raw)
    if document.get("backend") != "XLA":
        parser.error(f"{args.yaml}: not an XLA backend yaml (backend: {document.get('backend')!r})")
    sections = lowered_ops(document)
    data = {
        "about": "Aten overloads torch_xla lowers (XLA dispatch key), by codegen section. An op outside these "
        "lists runs through torch_xla's CPU fallback (aten_cpu_fallback), unless torch decomposes it "
        "first (CompositeImplicitAutograd / CompositeExplicitAutograd).",
        "source": f"pytorch/xla {args.ref}: codegen/xla_native_functions.yaml",
        "generated_by": "scripts/gen_xla_native_functions.py",
        "ref": args.ref,
        "yaml_sha256": hashlib.sha256(raw).hexdigest(),
        "sections": sections,
    }
    with open(args.out, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=1)
        handle.write("\n")
    print(f"{sum(len(v) for v in sections.values())} entries from {args.ref}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
