"""Remedies that are not rewrites: silence one op's fallback warning, explain the MPS
fallback variable, export at a higher ONNX opset."""

from __future__ import annotations

import re
from collections.abc import Callable

from ..bounded_read import read_regular_file
from ..config import Settings
from ..finding_data import Fix, FixEdit
from ..findings import Finding
from .callsite import FileContext
from .compile_cond import branch_with_cond
from .compile_fixes import guard_print
from .compile_item import explain_item_capture
from .compile_select import select_with_where
from .edits import LineIndex, TextEdit
from .imports import insertion_point, module_spelling
from .model import Remedy

_MAX_CONFIG_BYTES = 16 * 1024 * 1024  # a pyproject.toml; larger is not one a person wrote
FALLBACK_WARNING = "The operator '{op}' is not currently supported on the MPS backend"


def fallback_warning_filter(op: str, warnings_name: str = "warnings") -> str:
    """A filter for exactly this op's MPS fallback warning. Filters match the start of the
    message (re.match), and torch's message starts with these words and the op's name."""
    pattern = _escape(FALLBACK_WARNING.format(op=op))
    return f'{warnings_name}.filterwarnings("ignore", message=r"{pattern}", category=UserWarning)'


def _escape(text: str) -> str:
    """Escape regular-expression syntax only (re.escape also escapes spaces and quotes
    the user would then read as backslashes)."""
    return re.sub(r"([.^$*+?{}\[\]\\|()])", r"\\\1", text)


def silence_fallback_warning(
    remedy: Remedy, finding: Finding, file: FileContext | None, settings: Settings | None
) -> Fix | None:
    # MPS001 falls back (with its warning) only when the user runs with the variable set;
    # with mps-fallback = false it raises instead, and there is no warning to silence.
    if file is None or (finding.code == "MPS001" and not (settings is None or settings.mps_fallback)):
        return None
    if finding.code not in ("MPS001", "MPS002"):
        return None
    kinds = finding.data.get("kinds") or {}
    ops = [op for op in finding.ops if kinds.get(op, "fallback") in ("fallback", "forced")]
    spelling = module_spelling(file.bindings, file.tree, file.index, "warnings")
    if spelling is None:
        return None
    warnings_name, edits = spelling
    statements = [fallback_warning_filter(op, warnings_name) for op in ops]
    statements = [s for s in statements if s not in file.text]
    if not statements:
        return None  # already silenced here
    offset, before, after = insertion_point(file.tree, file.index)
    newline = file.index.newline()
    edits.append(TextEdit(offset, offset, before + newline.join(statements) + after))
    return {
        "id": remedy.id,
        # It hides torch's warning when the code runs; the call still falls back, so the lint
        # still reports it: the title says which of the two it silences.
        "title": f"{remedy.title} for `{', '.join(ops)}` (not this lint: the op still runs on the CPU)",
        "kind": remedy.kind,
        "exact": True,
        "approximation": None,
        "edits": [edit.as_json(file.index) for edit in edits],
        "description": f"{remedy.why[0].upper()}{remedy.why[1:]}.",
    }


def explain_mps_fallback(
    remedy: Remedy, finding: Finding, file: FileContext | None, settings: Settings | None
) -> Fix | None:
    if finding.code != "MPS001":
        return None
    declared_off = not (settings is None or settings.mps_fallback)
    description = (
        "Without PYTORCH_ENABLE_MPS_FALLBACK=1 this call raises NotImplementedError on MPS. With it, torch runs "
        "the op on the CPU (a copy to and from the GPU, and one UserWarning). torch reads the variable once, "
        "when `import torch` loads the MPS backend, so set it before that: in the shell "
        "(`PYTORCH_ENABLE_MPS_FALLBACK=1 python train.py`), or at the very top of your entry point, before any "
        'import of torch: `import os; os.environ.setdefault("PYTORCH_ENABLE_MPS_FALLBACK", "1")`. '
        "Setting it after torch is imported has no effect."
    )
    if declared_off:
        description += (
            " This project says it does not set it (`mps-fallback = false` in [tool.atenlint]), "
            "which is why this is an error; once it does, set `mps-fallback = true`."
        )
    return {
        "id": remedy.id,
        "title": "Run with PYTORCH_ENABLE_MPS_FALLBACK=1 (set before torch is imported)",
        "kind": remedy.kind,
        "exact": True,
        "approximation": None,
        "edits": [],
        "description": description,
    }


_TARGETS_LINE = re.compile(r"^\s*targets\s*=\s*\[(?P<items>[^\]]*)\]")


def raise_onnx_opset(
    remedy: Remedy, finding: Finding, file: FileContext | None, settings: Settings | None
) -> Fix | None:
    # The target's verdict says from which opset every reached op exports (Verdict.required_opset).
    needed = finding.data.get("required_opset")
    if needed is None or not finding.target:
        return None
    edits: list[FixEdit] = []
    config = settings.config_path if settings is not None else None
    if config:
        edit = _targets_edit(config, finding.target, f"onnx:{needed}")
        if edit is not None:
            edits.append(edit)
    where = (
        f"; this edits `targets` in {config} so atenlint checks opset {needed}"
        if edits
        else f'; then check with `--target onnx:{needed}` (or `targets = ["onnx:{needed}"]` in [tool.atenlint])'
    )
    return {
        "id": remedy.id,
        "title": f"Export at opset {needed} (`torch.onnx.export(..., opset_version={needed})`)",
        "kind": remedy.kind,
        "exact": True,
        "approximation": None,
        "edits": edits,
        "description": f"{', '.join(f'`{op}`' for op in finding.ops)} exports from opset {needed}: pass "
        f"`opset_version={needed}` to torch.onnx.export{where}.",
    }


def _targets_edit(config: str, current: str, wanted: str) -> FixEdit | None:
    """Replace the target's string in `[tool.atenlint] targets = [...]` (one line) of the config."""
    try:
        text = read_regular_file(config, _MAX_CONFIG_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError):  # NotRegularFile is an OSError
        return None
    index = LineIndex(text)
    section = None
    for line in range(len(index.starts)):
        content = index.line_text(line)
        header = re.match(r"^\s*\[([^\]]+)\]\s*(#.*)?$", content)
        if header:
            section = header.group(1).strip()
            continue
        if section != "tool.atenlint":
            continue
        match = _TARGETS_LINE.match(content)
        if not match:
            continue
        for quoted in re.finditer(r"([\"'])([^\"']*)\1", match.group("items")):
            if quoted.group(2) == current:
                start = index.starts[line] + match.start("items") + quoted.start(2)
                edit = TextEdit(start, start + len(current), wanted)
                located = edit.as_json(index)
                located["path"] = config
                return located
    return None


RemedyBuilder = Callable[[Remedy, Finding, FileContext | None, Settings | None], Fix | None]
BUILDERS: dict[str, RemedyBuilder] = {
    "guard_print": guard_print,
    "select_with_where": select_with_where,
    "branch_with_cond": branch_with_cond,
    "explain_item_capture": explain_item_capture,
    "silence_fallback_warning": silence_fallback_warning,
    "explain_mps_fallback": explain_mps_fallback,
    "raise_onnx_opset": raise_onnx_opset,
}
