"""Every rule code the server can emit has an anchor in docs/rules.md, where editors link
it, and docs/rules.md is what `scripts/gen_rules_doc.py` writes."""

from __future__ import annotations

import glob
import os
import re
import subprocess
import sys

from atenlint.findings import Finding
from atenlint.lsp import convert
from atenlint.sourcetext import Position, Range

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RULES_DOC = os.path.join(REPO, "docs", "rules.md")


def emitted_codes() -> set:
    codes = set()
    for path in glob.glob(os.path.join(REPO, "server", "atenlint", "**", "*.py"), recursive=True):
        with open(path, encoding="utf-8") as handle:
            codes |= set(re.findall(r'"([A-Z]{2,8}\d{3})"', handle.read()))
    return codes


def test_every_emitted_code_has_an_anchor_and_links_to_it():
    with open(RULES_DOC, encoding="utf-8") as handle:
        anchors = set(re.findall(r'<a id="([a-z]+\d{3})"></a>', handle.read()))
    codes = emitted_codes()
    assert len(codes) >= 30
    assert {c.lower() for c in codes} - anchors == set()
    finding = Finding("m.py", Range(Position(0, 0), Position(0, 1)), "warning", "MPS001", "m")
    href = convert.diagnostic(finding, None, convert.Encoding()).code_description.href
    assert href.endswith("docs/rules.md#mps001")


def test_rules_doc_is_what_the_script_writes():
    result = subprocess.run(
        [sys.executable, os.path.join(REPO, "scripts", "gen_rules_doc.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
