"""What a list shows of each message (its first 100 characters carry the gist), the hover
(each verdict once, plain text for plain-text clients), and run-level notes said once."""

from __future__ import annotations

import asyncio
import json
import os
from glob import glob

from atenlint.engine import CallSite
from atenlint.findings import Finding
from atenlint.lsp import convert
from atenlint.lsp.session import split_run_notes
from atenlint.lsp.settings import EditorSettings
from atenlint.sourcetext import Position, Range
from fake_engine import FakeEngine
from session_support import make_session, settle

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RANGE = Range(Position(3, 4), Position(3, 9))
LOGSPACE = ("`torch.logspace` reaches `aten::logspace.out`, which has no MPS kernel in torch 2.13.0: without "
            "PYTORCH_ENABLE_MPS_FALLBACK=1 it raises NotImplementedError, with it the op runs on the CPU (a "
            "UserWarning and a copy to and from the GPU); supported on MPS from torch 2.15 (you have 2.13)")


def _finding(code: str, message: str) -> Finding:
    return Finding("m.py", RANGE, "warning", code, message, abs_path="/w/m.py")


def test_the_first_clause_carries_the_gist_within_100_characters():
    head = convert.headline(_finding("MPS001", LOGSPACE))
    assert head == "`aten::logspace.out` has no MPS kernel in torch 2.13.0 → CPU fallback; supported from 2.15"
    pool = convert.headline(_finding("MPS001", LOGSPACE.replace("`torch.logspace` reaches `aten::logspace.out`",
                                                                "`self.pool` reaches `aten::_adaptive_avg_pool3d`")))
    assert pool.startswith("`aten::_adaptive_avg_pool3d` has no MPS kernel in torch 2.13.0 → CPU fallback")


def test_every_recorded_message_reads_at_100_characters():
    messages = set()
    for path in glob(os.path.join(REPO, "tests", "golden", "*", "expected.json")):
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
        for item in data if isinstance(data, list) else data.get("diagnostics", []):
            messages.add((item["code"], item["message"]))
    assert len(messages) > 10
    for code, message in messages:
        head = convert.headline(_finding(code, message))
        assert 20 <= len(head) <= 100, (code, head)
        assert head.count("`") % 2 == 0, head  # no code span cut in half


def test_the_details_go_to_related_information():
    diagnostic = convert.diagnostic(_finding("MPS001", LOGSPACE), None, convert.Encoding())
    assert len(diagnostic.message) <= 100
    assert diagnostic.related_information[0].message == LOGSPACE
    assert diagnostic.related_information[0].location.range == diagnostic.range


def test_hover_says_each_verdict_once_and_plain_text_has_no_markers():
    site = CallSite("/w/m.py", RANGE, "F.interpolate", ["aten::upsample_bicubic2d"], ["aten::_upsample_bicubic2d_aa"],
                    {"mps": {"status": "problem", "ops": ["aten::_upsample_bicubic2d_aa"],
                             "message": "`F.interpolate` reaches `aten::_upsample_bicubic2d_aa`, which has no MPS "
                                        "kernel in torch 2.13.0"},
                     "onnx": {"status": "supported", "ops": [], "message": ""}}, "script")
    notes = ["Without PYTORCH_ENABLE_MPS_FALLBACK=1 this call raises", "Without PYTORCH_ENABLE_MPS_FALLBACK=1 this call raises"]
    markdown = convert.hover_markdown(site, "2.13.0", notes)
    assert markdown.count("has no MPS kernel") == 1 and markdown.count("PYTORCH_ENABLE_MPS_FALLBACK") == 1
    assert "Runs on **onnx**" in markdown
    plain = convert.hover_markdown(site, "2.13.0", notes, markdown=False)
    assert "`" not in plain and "**" not in plain and "F.interpolate → aten::upsample_bicubic2d" in plain


def test_run_level_notes_leave_the_files_and_are_told_once(tmp_path):
    note = "coremltools is not installed: the coreml target is not checked (pip install coremltools)"
    findings = [_finding("COREML000", note), _finding("COREML000", note), _finding("MPS001", LOGSPACE)]
    kept, notes = split_run_notes(findings)
    assert [f.code for f in kept] == ["MPS001"] and notes == (note,)

    class NotingEngine(FakeEngine):
        def findings(self, captures, sources=None):
            return super().findings(captures, sources) + [Finding("x", RANGE, "information", "COREML000", note,
                                                                  abs_path=captures[0].path)]

    loop = asyncio.new_event_loop()
    try:
        async def run():
            session, callbacks = make_session(NotingEngine(), EditorSettings(), [str(tmp_path)])
            session._announced = True
            for index in range(3):
                path = str(tmp_path / f"m{index}.py")
                with open(path, "w", encoding="utf-8") as handle:
                    handle.write("import torch\n")
                session.open(f"file://{path}", path, 1, "import torch\n")
            await settle(session)
            return session, callbacks

        session, callbacks = loop.run_until_complete(run())
    finally:
        loop.close()
    assert sum(note in message for message in callbacks.shown) == 1  # once per run, not per file or class
    assert all(f.code != "COREML000" for found in callbacks.published.values() for f in found)
    assert callbacks.statuses[-1]["notes"] == [note]  # and in the status item
