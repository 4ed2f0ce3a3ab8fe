"""ATL021: a capability torchcompat found missing in the worker's torch reaches the user as
one information note per run, in torchcompat's own words (never silently less analysis)."""

from __future__ import annotations

from atenlint.config import Settings
from atenlint.discover import outline
from atenlint.engine import Engine, FileCapture
from atenlint.findings import TORCH_DEGRADED, once_per_run
from atenlint.sourcetext import SourceText

LOST = {
    "capability": "TorchScript call walk",
    "message": "the TorchScript call walk is unavailable on torch 9.9: classes are read from their source",
    "reason": "torch._C has no attribute _jit_x",
    "torch": "9.9",
}


def _capture(path: str, text: str) -> FileCapture:
    source = SourceText(text, path)
    return FileCapture(path, path, Settings(), source, outline(source))


def test_each_file_answer_carries_the_note_and_the_run_says_it_once(tmp_path):
    engine = Engine(pool=None)  # type: ignore[arg-type]  # _read_answer needs no worker
    found = []
    for name in ("a.py", "b.py"):
        capture = _capture(str(tmp_path / name), "import torch\n")
        answer = {"path": capture.path, "module": name[:-3], "classes": [], "torch_degraded": [LOST]}
        engine._read_answer(capture, answer, name[:-3], capture.outline)
        found += capture.module_findings
    notes = [f for f in found if f.code == TORCH_DEGRADED]
    assert len(notes) == 2 and notes[0].severity == "information" and notes[0].message == LOST["message"]
    assert [f.message for f in once_per_run(found) if f.code == TORCH_DEGRADED] == [LOST["message"]]


def test_a_complete_torch_says_nothing(tmp_path):
    engine = Engine(pool=None)  # type: ignore[arg-type]
    capture = _capture(str(tmp_path / "a.py"), "import torch\n")
    engine._read_answer(capture, {"path": capture.path, "module": "a", "classes": []}, "a", capture.outline)
    assert not [f for f in capture.module_findings if f.code == TORCH_DEGRADED]
