"""A view that comes from the scripted graph (or the source) in place of a trace keeps to
the statements the class's other traces ran with the same inputs: the real trace holds one
side of each branch, the scripted graph both (llama2.c's `if targets is not None:` loss)."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from atenlint.capture import executed_lines, file_capture, infer_inputs
from atenlint.worker.protocol import CapturedOp

SOURCE = textwrap.dedent("""\
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from typing import Optional


    @torch.jit.script
    def scripted_gelu(x: torch.Tensor) -> torch.Tensor:
        return x * 0.5 * (1.0 + torch.erf(x / 1.41421))


    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.flash = True
            self.proj = nn.Linear(8, 8)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if self.flash:
                y = torch.relu(self.proj(x))
            else:
                y = torch.nn.functional.hardshrink(self.proj(x))
            return scripted_gelu(y)


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()
            self.head = nn.Linear(8, 4)

        def forward(self, x: torch.Tensor, targets: Optional[torch.Tensor] = None) -> torch.Tensor:
            logits = self.head(self.block(x))
            if targets is not None:
                logits = logits + F.cross_entropy(
                    logits, targets
                )
            return logits
    """)
# TorchScript refuses an attribute `__init__` does not set: the stand-in is the source pass.
UNSCRIPTABLE = SOURCE.replace("logits = logits + F.cross_entropy(", "self.loss = F.cross_entropy(")


def _line(text: str) -> int:
    return SOURCE.splitlines().index(text) + 1


@pytest.fixture(scope="module", params=["script", "static"])
def model(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """`Model` captured with inferred inputs for the dispatcher and Core ML's jit view, the
    jit view made to fall back to the scripted graph, or the source when TorchScript
    refuses the class (no real weights allowed)."""
    root = tmp_path_factory.mktemp("executed")
    (root / "executed_case.py").write_text(SOURCE if request.param == "script" else UNSCRIPTABLE)
    capture_request: dict[str, Any] = {
        "path": str(root / "executed_case.py"),
        "module": "executed_case",
        "roots": [str(root)],
        "overlays": {},
        "classes": {"Model": {}},
        "devices": ["mps"],
        "views": ["dispatch", "jit"],
    }
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(infer_inputs, "INFERRED_REAL_LIMIT_BYTES", 1)
        classes = file_capture.capture_file(capture_request)["classes"]
    answer = next(c for c in classes if c["qualname"] == "Model")
    assert answer["capture"] == "trace" and answer.get("fallback") == {"jit": request.param}, {
        k: v for k, v in answer.items() if k != "ops"
    }
    return answer


def _jit_ops(answer: dict[str, Any]) -> dict[str, set[int]]:
    found: dict[str, set[int]] = {}
    for op in answer["ops"]:
        if "jit" in op["trees"]:
            user = [s["line"] for s in op["sites"] if not s.get("library")]
            found.setdefault(op["op"], set()).update(user[-1:])
    return found


def test_the_scripted_stand_in_keeps_only_the_branches_the_trace_took(model: dict[str, Any]) -> None:
    jit = _jit_ops(model)
    assert "aten::cross_entropy_loss" not in jit and not any("nll_loss" in op for op in jit), jit  # targets=None
    assert "aten::hardshrink" not in jit, jit  # self.flash is True
    assert _line("            y = torch.relu(self.proj(x))") in jit["aten::relu"], jit


def test_a_scripted_function_the_trace_saw_no_frames_of_is_kept(model: dict[str, Any]) -> None:
    """Eager runs a `@torch.jit.script` function without Python frames: its body's lines
    are no evidence either way."""
    assert _line("    return x * 0.5 * (1.0 + torch.erf(x / 1.41421))") in _jit_ops(model)["aten::erf"]


def _entry(*sites: tuple[str, int, bool]) -> CapturedOp:
    return {
        "op": "aten::relu",
        "trees": {},
        "sites": [
            {"file": file, "line": line, "col": 0, "library": library, "hint": [], "text": ""}
            for file, line, library in sites
        ],
    }


def test_statements_not_lines_decide(tmp_path: Any) -> None:
    """One call of a multi-line statement may sit on any of its lines, in eager frames and in
    TorchScript alike; a compound statement counts by its header."""
    path = str(tmp_path / "multi.py")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(
            "def f(x, t):\n    if t:\n        y = g(\n            x)\n    else:\n        y = h(x)\n    return y\n"
        )
    ran = executed_lines.executed_statements([_entry((path, 3, False)), _entry((path, 2, False))])
    assert ran is not None
    on_line_4, in_else = _entry((path, 4, False)), _entry((path, 6, False))
    library_only, unseen_function = _entry(("/lib/torch/x.py", 9, True)), _entry((str(tmp_path / "other.py"), 1, False))
    kept = executed_lines.on_executed_statements([on_line_4, in_else, library_only, unseen_function], ran)
    assert kept == [on_line_4, library_only, unseen_function]


def test_a_guessed_value_keeps_every_stand_in_call(tmp_path: Any) -> None:
    """A trace that had to guess a tensor's value may have taken the other branch from the
    real one: it is no evidence of what the inputs run."""
    guessed = _entry((str(tmp_path / "a.py"), 1, False))
    guessed["facts"] = {"guessed": True}
    assert executed_lines.executed_statements([guessed]) is None
    entries = [_entry((str(tmp_path / "a.py"), 5, False))]
    assert executed_lines.on_executed_statements(entries, None) == entries
