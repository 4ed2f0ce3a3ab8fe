"""What a list shows of each message (its first 100 characters carry the gist), the hover
(each verdict once, plain text for plain-text clients), and run-level notes said once."""

from __future__ import annotations

import asyncio
import json
import os
from glob import glob
from pathlib import Path

from fake_engine import FakeEngine
from session_support import make_session, settle

from atenlint.engine import CallSite
from atenlint.findings import Finding
from atenlint.lsp import convert
from atenlint.lsp.session import split_run_notes
from atenlint.lsp.settings import EditorSettings
from atenlint.sourcetext import Position, Range
from atenlint.targets.site_verdict import SiteVerdict

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RANGE = Range(Position(3, 4), Position(3, 9))
LOGSPACE = (
    "`torch.logspace` reaches `aten::logspace.out`, which has no MPS kernel in torch 2.13.0: without "
    "PYTORCH_ENABLE_MPS_FALLBACK=1 it raises NotImplementedError, with it the op runs on the CPU (a "
    "UserWarning and a copy to and from the GPU); supported on MPS from torch 2.15 (you have 2.13)"
)


def _finding(code: str, message: str) -> Finding:
    return Finding("m.py", RANGE, "warning", code, message, abs_path="/w/m.py")


def test_the_first_clause_carries_the_gist_within_100_characters():
    head = convert.headline(_finding("MPS001", LOGSPACE))
    assert head == "`aten::logspace.out` has no MPS kernel in torch 2.13.0 → CPU fallback; supported from 2.15"
    pool = convert.headline(
        _finding(
            "MPS001",
            LOGSPACE.replace(
                "`torch.logspace` reaches `aten::logspace.out`", "`self.pool` reaches `aten::_adaptive_avg_pool3d`"
            ),
        )
    )
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
    details = diagnostic.related_information[0].message
    assert details.startswith("Without PYTORCH_ENABLE_MPS_FALLBACK=1 it raises NotImplementedError")
    assert "has no MPS kernel" not in details  # the headline said it
    assert diagnostic.related_information[0].location.range == diagnostic.range


NEEDS_DIM = (
    "`Attention` was analysed from its source only: its constructor needs `dim`. Add to pyproject.toml: "
    '[tool.atenlint.modules."attn.Attention"] init = "Attention(dim=...)", or put '
    "`# atenlint: init=Attention(dim=...)` on the class line; with it atenlint builds and scripts the "
    "class, and example inputs (`inputs=`) add dtypes and shapes"
)


def test_the_editor_says_each_clause_once_as_the_cli_does():
    """Headline, then only what it did not say: "constructor needs `dim`" was in the headline,
    again in relatedInformation and a third time in the client's hover of both."""
    diagnostic = convert.diagnostic(_finding("ATL003", NEEDS_DIM), None, convert.Encoding())
    shown = [diagnostic.message] + [r.message for r in diagnostic.related_information or []]
    assert sum(text.count("constructor needs `dim`") for text in shown) == 1 == NEEDS_DIM.count("needs `dim`")
    assert 'init = "Attention(dim=...)"' in shown[1]  # nothing is lost
    short = _finding("ATL003", "`Net` could not be built")
    assert convert.diagnostic(short, None, convert.Encoding()).related_information is None
    # A headline cut mid-clause keeps the whole message in the details.
    long_clause = _finding("ATL002", "importing the file raised " + "x" * 150)
    assert convert.details(long_clause) == long_clause.message


def test_hover_says_each_verdict_once_and_plain_text_has_no_markers():
    site = CallSite(
        "/w/m.py",
        RANGE,
        "F.interpolate",
        ["aten::upsample_bicubic2d"],
        ["aten::_upsample_bicubic2d_aa"],
        {
            "mps": SiteVerdict(
                "problem",
                ("aten::_upsample_bicubic2d_aa",),
                "warning",
                "MPS001",
                "reaches `aten::_upsample_bicubic2d_aa`, which has no MPS kernel in torch 2.13.0",
            ),
            "onnx": SiteVerdict("supported"),
        },
        "script",
    )
    notes = [
        "Without PYTORCH_ENABLE_MPS_FALLBACK=1 this call raises",
        "Without PYTORCH_ENABLE_MPS_FALLBACK=1 this call raises",
    ]
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
            return super().findings(captures, sources) + [
                Finding("x", RANGE, "information", "COREML000", note, abs_path=captures[0].path)
            ]

    loop = asyncio.new_event_loop()
    try:

        async def run():
            session, callbacks = make_session(NotingEngine(), EditorSettings(), [str(tmp_path)])
            session._announced = True
            for index in range(3):
                path = str(tmp_path / f"m{index}.py")
                Path(path).write_text("import torch\n", encoding="utf-8")
                session.open(f"file://{path}", path, 1, "import torch\n")
            await settle(session)
            return session, callbacks

        _session, callbacks = loop.run_until_complete(run())
    finally:
        loop.close()
    assert sum(note in message for message in callbacks.shown) == 1  # once per run, not per file or class
    assert all(f.code != "COREML000" for found in callbacks.published.values() for f in found)
    assert callbacks.statuses[-1]["notes"] == [note]  # and in the status item


BICUBIC = """import torch
import torch.nn as nn
import torch.nn.functional as F


class Resize(nn.Module):
    def forward(self, x):
        return F.interpolate(x, size=(16, 16), mode="bicubic", antialias=True)


# atenlint: inputs=torch.randn(1, 3, 32, 32)
class ResizeTraced(nn.Module):
    def forward(self, x):
        return F.interpolate(x, scale_factor=2, mode="bicubic", antialias=True)
"""


def test_an_antialiased_bicubic_interpolate_has_a_hover_on_both_paths(engine, tmp_path):
    """Issue 13: no hover at all on `F.interpolate(..., mode="bicubic", antialias=True)`."""
    from atenlint.lsp.session import call_site_at

    path = tmp_path / "resize.py"
    path.write_text(BICUBIC)
    capture = engine.capture(str(path))
    sites = engine.call_sites([capture])

    class Result:
        call_sites = sites

    for line in (7, 13):  # 0-based lines of the two calls
        column = BICUBIC.splitlines()[line].index("F.interpolate") + 3
        site = call_site_at(Result(), line, column)
        assert site is not None and site.call == "F.interpolate", (line, [s.call for s in sites])
        assert any("_upsample_bicubic2d_aa" in op for op in site.ops + site.reached), site
        markdown = convert.hover_markdown(site, engine.torch_version, [])
        assert "F.interpolate" in markdown and "_upsample_bicubic2d_aa" in markdown
        for verdict in site.verdicts.values():
            if verdict.message:
                assert markdown.count(verdict.message) <= 1
        plain = convert.hover_markdown(site, engine.torch_version, [], markdown=False)
        assert "`" not in plain and "**" not in plain


def test_a_capability_this_torch_lacks_is_said_once_and_stays_in_the_status_item(tmp_path):
    from fake_engine import FakeEngine
    from session_support import make_session

    from atenlint.lsp.settings import EditorSettings

    lost = "the TorchScript call walk is unavailable on torch 9.0: calls are located from the source only"

    class OldTorchEngine(FakeEngine):
        torch_degradations = [lost]  # noqa: RUF012 - the engine's property, as a class value

    async def scenario():
        session, callbacks = make_session(OldTorchEngine(), EditorSettings(), [str(tmp_path)])
        session.announce()
        session.use_engine(session.engine)  # a second start of the same engine says nothing new
        return session, callbacks

    session, callbacks = asyncio.run(scenario())
    assert callbacks.shown == [f"atenlint: {lost}"]
    assert callbacks.statuses[-1]["notes"] == [lost]
    session.shutdown()
