"""Write docs/rules.md: one section, with its own anchor, per rule code atenlint reports.

Source: `atenlint.formats.rules.RULES` (name, description, default severity of every code)
and `DETAILS` below (what to do about it). Editors link each diagnostic's code to
`docs/rules.md#<code>`; `tests/lsp/test_rules_doc.py` checks that every code the server
can emit has its anchor and that this file is what the script writes.

    python scripts/gen_rules_doc.py          # rewrite docs/rules.md
    python scripts/gen_rules_doc.py --check  # exit 1 when it is out of date
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "server"))

from atenlint.formats.rules import RULES

OUT = os.path.join(HERE, "..", "docs", "rules.md")
FAMILIES = [
    ("ATL", "Module-level results (any target)"),
    ("MPS", "Apple MPS (`mps`)"),
    ("CUDA", "CUDA (`cuda`)"),
    ("XLA", "XLA (`xla`)"),
    ("ONNX", "ONNX (`onnx`, `onnx:N`)"),
    ("ET", "ExecuTorch (`executorch`)"),
    ("CORE", "Core ATen (`core-aten`)"),
    ("COREML", "Core ML (`coreml`)"),
    ("TRT", "TensorRT (`tensorrt`)"),
    ("TS", "TorchScript (`torchscript`)"),
]
DETAILS = {
    "ATL001": "Fix the syntax error; the file's modules are analysed once it parses.",
    "ATL002": "atenlint imports the file to build its modules: make the import work (or guard script code "
    'with `if __name__ == "__main__":`). A syntax error in a file it imports is reported on the '
    "importing line.",
    "ATL003": "Give a factory: `# atenlint: init=Class(...)` on the class line or "
    '`[tool.atenlint.modules."pkg.Class"] init = "..."` (the quick fix writes the stub).',
    "ATL004": "Give example inputs (`# atenlint: inputs=torch.randn(...)`) so the class is traced instead.",
    "ATL005": "Raise `timeout` in `[tool.atenlint]` if the file is only slow.",
    "ATL012": "See docs/security.md: analysed code may not start processes, use the network or write files.",
    "MPS001": "The quick fixes offer a rewrite where one exists, an explicit CPU round trip otherwise; "
    "*Silence torch's runtime CPU-fallback warning* only hides the warning torch prints when the "
    "code runs (the op still runs on the CPU, and atenlint still reports it).",
    "MPS002": "These ops always run on the CPU on MPS in this torch; the warning filter quick fix hides "
    "only torch's run-time warning.",
    "COMPILE001": "Where the break is a `print(...)` statement whose arguments write nothing, the quick fix "
    "*Print only when not compiling* puts it under `if not torch.compiler.is_compiling():` (exact: the module "
    "computes the same; it still prints when run eagerly). Where it is an `if`/`else` (or `A if p else B`) on a "
    "boolean tensor whose sides only assign the same names from values that compute nothing else, *Select with "
    "torch.where* rewrites it as `torch.where(p, A, B)`; where both branches return or set the names used "
    "after them, *Branch with torch.cond* turns them into nested functions for `torch.cond`. Both are right "
    "only while both sides give tensors of one shape, dtype and device (not preferred; `--fix` needs "
    "`--unsafe-fixes`); see docs/targets.md. An `.item()` break gets an explanation: only Dynamo's "
    "`capture_scalar_outputs` config (or `fullgraph=True`) keeps it in the graph; `torch._check` does not.",
    "COMPILE002": "The same quick fixes as COMPILE001.",
    "COMPILE004": "Read from the installed Inductor's tables (`torch._inductor.lowering`): no lowering, a "
    "registered fallback (`make_fallback`), or a lowering that needs a code generator feature the device's "
    "backend lacks (SCAN, SORT on the cpu). A kernel boundary and a copy, never an error.",
    "COMPILE005": "From Dynamo's own guards on `forward`'s number arguments (CONSTANT_MATCH / EQUALS_MATCH). Pass "
    "the value as a tensor if it changes from call to call, or accept one recompilation.",
    "COREML000": "Said once per run (and in the editor's status item), not once per class.",
    "ET012": "The partitioner decides per node of the program `torch.export` makes from example inputs; the "
    "class was only scripted or read from source (no `# atenlint: inputs=...`, none inferred for it). One note "
    "per class and delegate; its calls are still judged where a traced class uses it.",
    "ET013": "The partitioner asked only whether the backend knows the op's name; the backend's conversion of "
    "the delegated partition (Core ML: `coremltools.convert` in `CoreMLBackend.preprocess`, for the default "
    "deployment target) refuses the node, so `to_edge_transform_and_lower` raises. Rewrite the call, raise the "
    "deployment target in the partitioner's compile specs where the message asks for it, or keep the op out "
    "of the delegate (`skip_ops_for_coreml_delegation`).",
    "TRT002": "Reported only when the call's constant arguments show that the converter's capability validator "
    "declines it (`ceil_mode=True` or a dilation on a pool, `divisor_override`, `topk` with k > 3840, "
    "a zero-sized `as_strided`); a validator that only may decline (shapes, dtypes, TensorRT-RTX) is not.",
}


# Codes the server emits that the formats' registry does not describe yet: (name, description, severity).
EXTRA = {
    "ATL012": (
        "SandboxRefused",
        (
            "importing or analysing the file tried to start a process, use the network, "
            "write outside atenlint's temporary folder or signal another process, and the "
            "worker's sandbox refused it"
        ),
        "warning",
    ),
    "ATL020": (
        "PartialCapture",
        ("one toolchain's front end could not capture a traced class; another view of the class stood in"),
        "information",
    ),
    "CORE003": ("CoreAtenCustomOp", "a call reaches a library's own operator, not core ATen", "warning"),
    "ET003": (
        "ExecutorchCustomOp",
        ("a call reaches a library's own operator, not core ATen: ExecuTorch needs a kernel for it"),
        "warning",
    ),
}


def all_rules() -> dict:
    """code -> (name, description, default severity)."""
    out = {code: (r.name, r.description, r.default_severity) for code, r in RULES.items()}
    for code, rule in EXTRA.items():
        out.setdefault(code, rule)
    return out


def render() -> str:
    lines = [
        "# Rule codes",
        "",
        "<!-- Written by scripts/gen_rules_doc.py from atenlint.formats.rules; do not edit by hand. -->",
        "",
        (
            "Every diagnostic atenlint reports carries one of these codes; editors link the code here. "
            "Severities are the defaults: `[tool.atenlint] severity` and the editor's `severity` setting "
            "override them per target."
        ),
        "",
    ]
    rules = all_rules()
    codes = sorted(rules)
    seen = set()
    for prefix, title in FAMILIES:
        family = [c for c in codes if c.rstrip("0123456789") == prefix]
        if not family:
            continue
        lines += [f"## {title}", ""]
        for code in family:
            seen.add(code)
            lines += _section(code, rules[code])
    rest = [c for c in codes if c not in seen]
    if rest:
        lines += ["## Other", ""]
        for code in rest:
            lines += _section(code, rules[code])
    return "\n".join(lines).rstrip() + "\n"


def _section(code: str, rule: tuple) -> list:
    name, description, severity = rule
    out = [
        f'<a id="{code.lower()}"></a>',
        f"### {code} {name}",
        "",
        f"{description[0].upper()}{description[1:]}. Default severity: {severity}.",
    ]
    if code in DETAILS:
        out += ["", DETAILS[code]]
    return out + [""]


def main(argv: list) -> int:
    text = render()
    if "--check" in argv:
        try:
            with open(OUT, encoding="utf-8") as handle:
                current = handle.read()
        except OSError:
            current = None
        if current != text:
            print(f"{OUT} is out of date: run python scripts/gen_rules_doc.py", file=sys.stderr)
            return 1
        return 0
    with open(OUT, "w", encoding="utf-8") as handle:
        handle.write(text)
    print(f"wrote {OUT} ({len(all_rules())} codes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
