"""The compile fixes through the real pipeline: the worker runs Dynamo on the class with its
example inputs, the compile target reports each break at the user's line with Dynamo's
reason, the finding carries its fixes, and `atenlint check --fix` applies the torch.where
select only with `--unsafe-fixes` (it is right only while both sides share shape and dtype)."""

from __future__ import annotations

import torch
from compile_fixes_support import load

from atenlint.config import SettingsResolver
from atenlint.fixes.apply import fix_until_clean
from atenlint.lsp.convert import is_preferred_fix

GATE = """\
import torch
import torch.nn as nn


class Gate(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            y = x * 2
        else:
            y = x - 1
        n = x.abs().sum().int().item()
        return y + n
"""


def _check(engine, root: str):
    engine.resolver = SettingsResolver()
    return lambda: engine.check_paths([root], jobs=1)


def test_the_compile_target_offers_the_fixes_and_fix_applies_the_select(engine, tmp_path):
    path = tmp_path / "gate.py"
    path.write_text(GATE, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.atenlint]\ntargets = ["compile"]\ninfer-inputs = false\n'
        '[tool.atenlint.modules."gate.Gate"]\ninputs = "torch.randn(3, 4)"\n'
    )
    report = _check(engine, str(tmp_path))()
    found = {(f.range.start.line + 1, f.code): f for f in report.findings if f.target == "compile"}
    branch, item = found[(7, "COMPILE001")], found[(11, "COMPILE001")]
    assert "Dynamo (torch" in branch.message and "torch.where or torch.cond" in branch.message
    assert [fix["id"] for fix in branch.fixes] == ["select-with-where", "branch-with-cond"]
    # The editor's quick fixes: neither is preferred (applied by "auto fix").
    assert not any(is_preferred_fix(fix) for fix in branch.fixes)
    assert [fix["id"] for fix in item.fixes] == ["capture-item-scalars"]

    _, outcome = fix_until_clean(_check(engine, str(tmp_path)), unsafe=False)
    assert outcome.applied == [] and path.read_text(encoding="utf-8") == GATE
    report, outcome = fix_until_clean(_check(engine, str(tmp_path)), unsafe=True)
    assert [applied.fix_id for applied in outcome.applied] == ["select-with-where"]
    fixed = path.read_text(encoding="utf-8")
    assert "        y = torch.where(x.sum() > 0, x * 2, x - 1)\n" in fixed
    left = sorted((f.range.start.line + 1, f.code) for f in report.findings if f.target == "compile")
    assert (7, "COMPILE001") not in left and any(code == "COMPILE001" for _, code in left)  # `.item()` stays
    for x in (torch.rand(3, 4) + 0.1, -torch.rand(3, 4) - 0.1):
        original, rewritten = load(GATE, "Gate")(), load(fixed, "Gate")()
        assert torch.equal(original(x), rewritten(x))
