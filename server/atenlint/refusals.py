"""The parent's side of the sandbox: each action the worker refused becomes one ATL012
diagnostic on the user's line that attempted it. No torch, no user code here.

Parent side (it makes `Finding`s), so it lives next to `answers.py`, not in `worker/`:
the worker only records refusals (`worker/sandbox.py`), as `protocol.Refusal` records.
"""

from __future__ import annotations

import os

from . import findings as codes
from .captured import FileCapture
from .findings import Finding
from .sourcetext import Position, Range
from .worker.protocol import FileAnswer, Refusal

_PHASES = {"import": "importing this file", "build": "building a class of this file", "analyse": "analysing this file"}
_RULES = {
    "process": "atenlint does not let analysed code start processes",
    "network": "atenlint does not let analysed code use the network",
    "write": "atenlint does not let analysed code write files outside its own temporary folder",
    "signal": "atenlint does not let analysed code signal other processes",
    "file": "atenlint does not open files that are not regular files (a FIFO hangs, a device never ends)",
}
_HOW_TO_ALLOW = "run with ATENLINT_SANDBOX=off (or `atenlint check --no-sandbox`) if you need it"


def refusal_findings(result: FileCapture, answer: FileAnswer) -> list[Finding]:
    """ATL012 findings for `answer["refusals"]` of one analysed file."""
    found: list[Finding] = []
    seen: set[tuple[int, str | None, str | None]] = set()
    for refusal in answer.get("refusals") or ():
        # check_file_answer checks the list, not each entry: a malformed entry is skipped.
        if not isinstance(refusal, dict):
            continue
        line = refusal.get("analysed_line") or 0
        key = (line, refusal.get("kind"), refusal.get("action"))
        if key in seen:
            continue
        seen.add(key)
        found.append(_finding(result, refusal, max(line - 1, 0)))
    return found


def _finding(result: FileCapture, refusal: Refusal, line0: int) -> Finding:
    kind = str(refusal.get("kind") or "process")
    where = ""
    file, line = refusal.get("file"), refusal.get("line")
    if file and os.path.realpath(file) != os.path.realpath(result.path):
        where = f" (in {os.path.basename(file)}, line {line})"
    elif not file:
        where = " (from library code it called)"
    times = refusal.get("count", 1)
    again = f", {times} times" if isinstance(times, int) and times > 1 else ""
    message = (
        f"{_PHASES.get(str(refusal.get('phase')), 'analysing this file')} tried to {refusal.get('action')}{where}"
        f"{again}; {_RULES.get(kind, _RULES['process'])} (the attempt raised PermissionError there; "
        f"{_HOW_TO_ALLOW})"
    )
    source = result.source
    rng = source.line_range(line0) if source is not None else Range(Position(line0, 0), Position(line0, 0))
    # The refusal itself is in the message; nothing reads it back from the finding's data.
    return Finding(result.display, rng, "warning", codes.REFUSED, message, abs_path=result.path)
