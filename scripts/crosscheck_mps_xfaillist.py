"""Cross-check atenlint's MPS verdicts against PyTorch's own list of ops that MPS does not
implement: `UNIMPLEMENTED_XFAILLIST` in the wheel's torch/testing/_internal/common_mps.py
(read with `ast`, since it is only defined on a Mac).

For every entry that fails for all dtypes (value None), each OpInfo sample input is run
on meta tensors under atenlint's call recorder and judged with the MPS target. An entry
counts as agreeing when atenlint reports a CPU fallback for at least one sample.

Needs numpy and expecttest (test extras). Usage:
    python scripts/crosscheck_mps_xfaillist.py [--json]
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import sys
import warnings

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "server"))

from atenlint.capture.decompose import record_calls
from atenlint.targets.mps import MpsTarget
from atenlint.targets.native_table import NativeTable


def all_dtype_entries() -> list[str]:
    from torch.testing._internal import common_mps

    with open(common_mps.__file__, encoding="utf-8") as source:
        tree = ast.parse(source.read())
    for node in ast.walk(tree):
        target = (
            node.target
            if isinstance(node, ast.AnnAssign)
            else (node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None)
        )
        if isinstance(target, ast.Name) and target.id == "UNIMPLEMENTED_XFAILLIST" and isinstance(node.value, ast.Dict):
            return [
                k.value
                for k, v in zip(node.value.keys, node.value.values)
                if isinstance(k, ast.Constant) and isinstance(v, ast.Constant) and v.value is None
            ]
    raise SystemExit("UNIMPLEMENTED_XFAILLIST not found")


def _to_meta(value):
    if isinstance(value, torch.Tensor):
        return torch.empty(value.shape, dtype=value.dtype, device="meta")
    if isinstance(value, (list, tuple)):
        return type(value)(_to_meta(v) for v in value)
    if isinstance(value, dict):
        return {k: _to_meta(v) for k, v in value.items()}
    if isinstance(value, (torch.device, str)) and str(value) == "cpu":
        return "meta"
    return value


def judge_entry(opinfos, target: MpsTarget, max_samples: int = 6) -> dict:
    fallbacks, reached, errors = set(), set(), []
    for opinfo in opinfos:
        dtype = torch.float32 if torch.float32 in opinfo.dtypes else next(iter(opinfo.dtypes), torch.float32)
        try:
            samples = list(opinfo.sample_inputs("cpu", dtype))[:max_samples]
        except Exception as error:  # noqa: BLE001
            errors.append(f"samples: {error}")
            continue
        for sample in samples:
            args = (_to_meta(sample.input), *_to_meta(tuple(sample.args)))
            kwargs = _to_meta(dict(sample.kwargs))
            roots, error = record_calls(opinfo.op, *args, **kwargs)
            if error is not None and not roots:
                errors.append(f"{type(error).__name__}: {str(error)[:120]}")
                continue
            tree = {"op": f"opinfo::{opinfo.name}", "calls": roots}
            reached.update(node["op"] for node in roots)
            fallbacks.update(p.op for p in target.problems(tree, ("eval", "train")))
    return {"fallbacks": sorted(fallbacks), "reached": sorted(reached), "errors": errors[:3]}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    import torchgen
    from torch.testing._internal.common_methods_invocations import op_db

    yaml = os.path.join(os.path.dirname(torchgen.__file__), "packaged", "ATen", "native", "native_functions.yaml")
    table = NativeTable.load(yaml, torch.__version__.split("+")[0])
    target = MpsTarget(table, torch._C._dispatch_get_registrations_for_dispatch_key("MPS"))
    by_name: dict[str, list] = {}
    for opinfo in op_db:
        by_name.setdefault(opinfo.name + opinfo.variant_test_name, []).append(opinfo)
        by_name.setdefault(opinfo.name + "." + opinfo.variant_test_name, []).append(opinfo)
    rows = []
    for entry in all_dtype_entries():
        opinfos = by_name.get(entry, [])
        result = judge_entry(opinfos, target) if opinfos else {"fallbacks": [], "reached": [], "errors": ["no OpInfo"]}
        result["entry"] = entry
        result["agrees"] = bool(result["fallbacks"])
        rows.append(result)
    agree = sum(r["agrees"] for r in rows)
    if args.json:
        json.dump(
            {"torch": torch.__version__, "entries": len(rows), "agree": agree, "rows": rows}, sys.stdout, indent=1
        )
    else:
        for row in rows:
            mark = "agree " if row["agrees"] else "DIFFER"
            detail = (
                ", ".join(row["fallbacks"])
                if row["agrees"]
                else ("reaches " + ", ".join(row["reached"][:6]) if row["reached"] else "; ".join(row["errors"]))
            )
            print(f"{mark} {row['entry']:<40} {detail[:150]}")
        print(
            f"{agree}/{len(rows)} all-dtypes UNIMPLEMENTED_XFAILLIST entries are marked as CPU fallbacks "
            f"(torch {torch.__version__})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
