"""`atenlint check --fix`: only the intended spans change, the re-check is clean of every
exactly-fixable finding, everything else stays byte-identical."""

from __future__ import annotations

import difflib
import json
import os
import shutil
import subprocess
import sys

import pytest

from atenlint.config import SettingsResolver
from atenlint.fixes.apply import apply_to_files, choose, fix_until_clean
from support import REPO
from torch_facts import require_no_kernel

EXAMPLES = os.path.join(REPO, "examples")


def snapshot(root: str) -> dict:
    files = {}
    for directory, _, names in os.walk(root):
        for name in names:
            path = os.path.join(directory, name)
            with open(path, "rb") as handle:
                files[os.path.relpath(path, root)] = handle.read()
    return files


def check(engine, root: str):
    engine.resolver = SettingsResolver()
    return lambda: engine.check_paths([root], jobs=1)


def test_fix_on_the_example_workspace_changes_only_the_intended_spans(engine, tmp_path):
    require_no_kernel("MPS", "aten::logspace.out")  # the fix the example's fourier_field.py needs
    root = str(tmp_path / "examples")
    shutil.copytree(EXAMPLES, root)
    before = snapshot(root)
    first = check(engine, root)()
    intended = {}  # path -> the 0-based lines of the findings whose fixes apply
    for finding, fix in choose(first.findings, unsafe=False):
        lines = range(finding.range.start.line, finding.range.end.line + 1)
        intended.setdefault(os.path.relpath(finding.abs_path, root), set()).update(lines)
    assert "video/fourier_field.py" in intended

    report, outcome = fix_until_clean(check(engine, root), unsafe=False)
    after = snapshot(root)

    assert set(after) == set(before)
    for path in before:
        if path not in intended:
            assert after[path] == before[path], f"{path} changed but had nothing to fix"
            continue
        old = before[path].decode("utf-8").splitlines(keepends=True)
        new = after[path].decode("utf-8").splitlines(keepends=True)
        changed = set()
        for tag, i1, i2, _, _ in difflib.SequenceMatcher(a=old, b=new).get_opcodes():
            if tag != "equal":
                changed.update(range(i1, max(i2, i1 + 1)))
        assert changed and changed <= intended[path], f"{path}: lines {sorted(changed)} changed"

    fourier = after["video/fourier_field.py"].decode("utf-8")
    assert "    freqs = torch.pow(2.0, torch.linspace(0, num_bands - 1, num_bands, device=coords.device))\n" in fourier
    assert [a.fix_id for a in outcome.applied if a.call == "torch.logspace"] == ["logspace-pow-linspace"]
    # What is left has no exact rewrite: the pool needs input shapes, the embedding has none.
    assert not choose(report.findings, unsafe=False)
    assert {f.call for f in report.findings if f.target} >= {"self.pool", "self.tags"}


NESTED = """import torch
import torch.nn as nn


class Nested(nn.Module):
    def forward(self, x, v, ids):
        return torch.take(torch.heaviside(x, v), ids)
"""


def test_nested_fixes_are_applied_over_successive_passes(engine, tmp_path):
    require_no_kernel("MPS", "aten::take", "aten::heaviside")
    path = tmp_path / "nested.py"
    path.write_text(NESTED, encoding="utf-8")
    report, outcome = fix_until_clean(check(engine, str(tmp_path)), unsafe=False)
    assert sorted(a.fix_id for a in outcome.applied) == ["heaviside-where", "take-flat-index"]
    assert outcome.passes == 2
    assert "return torch.where(x == 0, v, (x > 0).to(x.dtype)).reshape(-1)[ids]\n" in path.read_text()
    assert not [f for f in report.findings if f.target]


APPROXIMATE = """import torch
import torch.nn as nn


class Quantile(nn.Module):
    def forward(self, p):
        return torch.special.ndtri(p)
"""


def test_approximate_fixes_only_with_unsafe(engine, tmp_path):
    require_no_kernel("MPS", "aten::special_ndtri")
    path = tmp_path / "quantile.py"
    path.write_text(APPROXIMATE, encoding="utf-8")
    _, outcome = fix_until_clean(check(engine, str(tmp_path)), unsafe=False)
    assert outcome.applied == [] and path.read_text() == APPROXIMATE
    report, outcome = fix_until_clean(check(engine, str(tmp_path)), unsafe=True)
    assert [(a.fix_id, a.exact) for a in outcome.applied] == [("special-ndtri-erfinv", False)]
    assert "torch.erfinv(2 * p - 1) * math.sqrt(2.0)" in path.read_text()
    assert not [f for f in report.findings if f.target]


LEGACY = (
    '# -*- coding: latin-1 -*-\r\n"""Caf\xe9 model."""\r\nimport torch\r\nimport torch.nn as nn\r\n\r\n\r\n'
    "class Gather(nn.Module):\r\n    def forward(self, x, ids):  # d\xe9j\xe0 vu\r\n"
    "        return torch.take(x, ids) + 1\r\n"
)


def test_a_legacy_file_keeps_its_encoding_and_line_breaks(engine, tmp_path):
    require_no_kernel("MPS", "aten::take")
    path = tmp_path / "legacy.py"
    path.write_bytes(LEGACY.encode("latin-1"))
    _, outcome = fix_until_clean(check(engine, str(tmp_path)), unsafe=False)
    assert [a.fix_id for a in outcome.applied] == ["take-flat-index"]
    assert path.read_bytes() == LEGACY.replace("torch.take(x, ids)", "x.reshape(-1)[ids]").encode("latin-1")


def test_a_file_changed_since_the_analysis_is_left_alone(engine, tmp_path):
    require_no_kernel("MPS", "aten::take", "aten::heaviside")
    path = tmp_path / "gather.py"
    path.write_text(NESTED, encoding="utf-8")
    report = check(engine, str(tmp_path))()
    edited = NESTED.replace("ids)\n", "ids)  # edited meanwhile\n")
    path.write_text(edited, encoding="utf-8")
    outcome = apply_to_files(choose(report.findings, unsafe=False))
    assert outcome.applied == []
    assert {reason for _, reason in outcome.skipped} == {"the file changed since it was analysed"}
    assert path.read_text() == edited


def run_cli(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "atenlint", "check", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_unsafe_fixes_needs_fix(tmp_path):
    result = run_cli(str(tmp_path), "--unsafe-fixes", cwd=tmp_path)
    assert result.returncode == 2 and "--unsafe-fixes only applies with --fix" in result.stderr


@pytest.mark.parametrize("output", ["text", "json"])
def test_the_cli_prints_what_it_fixed(tmp_path, output):
    require_no_kernel("MPS", "aten::take", "aten::heaviside")
    (tmp_path / "nested.py").write_text(NESTED, encoding="utf-8")
    result = run_cli(".", "--fix", "--format", output, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    if output == "json":
        fixed = json.loads(result.stdout)["fixed"]
        assert sorted(f["fix"] for f in fixed) == ["heaviside-where", "take-flat-index"]
        assert fixed[0]["path"] == "nested.py" and fixed[0]["exact"] is True
    else:
        lines = result.stdout.splitlines()
        assert any(line.startswith("nested.py:7:16: fixed [mps] `torch.take`") for line in lines)
        assert "atenlint: applied 2 fixes in 1 file; the report below is what remains" in lines
        assert lines[-1].startswith("atenlint: no problems in 1 file")
