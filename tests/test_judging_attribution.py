"""judging.py: which classes a finding names, and where a call with no user frame goes.

A finding at a call site names (`module`, `modules`) only the classes whose own capture
makes the problems it reports: a class whose source pass may reach the op on a branch is
not named on a verdict another class's trace made (BERT: an `aten::diff` finding named
`BertModel` though only the LM-head class's trace reaches it). A call whose stack holds
no line of the user's code is reported at its class, never dropped."""

from __future__ import annotations

from atenlint.captured import FileCapture, Occurrence
from atenlint.config import Settings, SettingsResolver
from atenlint.discover import outline
from atenlint.judging import Judge
from atenlint.source_cache import SourceCache
from atenlint.sourcetext import SourceText
from support import RejectsOp

SOURCE = """import torch
from torch import nn


def shared(x):
    return torch.diff(x)


class Encoder(nn.Module):
    def forward(self, x):
        return shared(x)


class LMHead(nn.Module):
    def forward(self, x):
        return shared(x)
"""


def _capture(tmp_path, *occurrences: tuple[str, str, bool, list[dict]]) -> FileCapture:
    path = tmp_path / "m.py"
    path.write_text(SOURCE)
    source = SourceText(SOURCE)
    result = FileCapture(str(path), "m.py", Settings(), source, outline(source))
    result.classes = [
        {"qualname": name, "name": name, "module": f"m.{name}", "status": "ok", "ops": []}
        for name in ("Encoder", "LMHead")
    ]
    for name, capture, conditional, sites in occurrences:
        trees = {"export": {"op": "aten::diff", "calls": None}}
        located = [{"file": str(path), **site} for site in sites]
        result.occurrences.append(
            Occurrence(f"m.{name}", "aten::diff", trees, ("eval",), located, capture, conditional=conditional)
        )
    return result


def _findings(capture: FileCapture):
    judge = Judge(
        lambda settings: [RejectsOp("deploy", "export", "aten::diff")],
        SettingsResolver,
        lambda: "2.14.1",
        "/",
        lambda message: None,
    )
    return judge.findings([capture], SourceCache())


IN_SHARED = [{"line": 6, "col": 11}]


def test_a_class_that_only_may_reach_the_op_is_not_named_on_a_traced_verdict(tmp_path):
    # The source pass of Encoder walks a branch it cannot decide (conditional); LMHead's
    # trace runs the call. Encoder comes first, as it did in BERT's file.
    found = _findings(_capture(tmp_path, ("Encoder", "static", True, IN_SHARED), ("LMHead", "trace", False, IN_SHARED)))
    assert len(found) == 1
    finding = found[0]
    assert (finding.module, finding.modules, finding.all_modules()) == ("m.LMHead", ["m.LMHead"], ["m.LMHead"])
    assert finding.severity == "error" and finding.capture == "trace"
    assert finding.as_json()["modules"] == ["m.LMHead"]


def test_a_class_read_from_source_is_not_named_beside_a_class_that_ran_the_call(tmp_path):
    found = _findings(
        _capture(tmp_path, ("Encoder", "static", False, IN_SHARED), ("LMHead", "trace", False, IN_SHARED))
    )
    assert [(f.all_modules(), f.severity, f.capture) for f in found] == [(["m.LMHead"], "error", "trace")]


def test_every_class_whose_capture_runs_the_call_is_named(tmp_path):
    found = _findings(_capture(tmp_path, ("Encoder", "trace", False, IN_SHARED), ("LMHead", "trace", False, IN_SHARED)))
    assert [f.all_modules() for f in found] == [["m.Encoder", "m.LMHead"]]


def test_a_call_with_no_frame_of_the_users_code_is_reported_at_its_class(tmp_path):
    library = [{"file": "/usr/lib/python3/site-packages/lib/ops.py", "line": 3, "col": -1, "library": True}]
    capture = _capture(tmp_path, ("LMHead", "trace", False, []))
    capture.occurrences[0].sites = library
    found = _findings(capture)
    assert len(found) == 1
    finding = found[0]
    assert (finding.range.start.line, finding.call, finding.module) == (13, "LMHead", "m.LMHead")
    assert finding.severity == "error" and "no line of your code is on this call's recorded stack" in finding.message
    assert finding.path == "m.py"
