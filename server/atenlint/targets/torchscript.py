"""TorchScript: `torch.jit.script` of the module. Its verdict is the capture's own scripting
result; a class that fails is one diagnostic at TorchScript's caret, in its own words."""

from __future__ import annotations

import re

from ..worker.protocol import CallTree, ClassAnswer
from .base import ClassResult, Problem, Support, Target, TargetStatus, Verdict

CODE = "TS001"
_NOISE = re.compile(r"\s+")


def condense(message: str, details: str = "") -> str:
    """TorchScript's headline, as one sentence (no caret drawing, no trailing colon)."""
    text = message.strip() or next((ln.strip() for ln in details.splitlines() if ln.strip()), "")
    text = text.split("\n", 1)[0]
    text = re.sub(r"\s*<--- HERE.*$", "", text)
    text = _NOISE.sub(" ", text).rstrip(":. ")
    if details and text.lower().startswith(("expected", "unknown type", "arguments for call are not valid")):
        lines = [ln.strip() for ln in details.splitlines()]
        extra = next(
            (
                ln
                for ln in lines[1:]
                if ln and not ln.startswith(("File", "~", "'")) and "<---" not in ln and ln != text
            ),
            "",
        )
        if extra and len(extra) < 160:
            text = f"{text} ({extra.rstrip(':.')})"
    return text[:1].upper() + text[1:] if text else "TorchScript cannot compile it"


class TorchScriptTarget(Target):
    name = "torchscript"
    description = "torch.jit.script"
    device = "cpu"
    # Not a call tree: the capture always asks torch.jit.script itself, even for a class
    # it traced, and the verdict is per class (class_results).
    tree_view = "script"

    def __init__(self, torch_version: str) -> None:
        self.torch_version = torch_version

    def problems(self, tree: CallTree, phases: tuple[str, ...]) -> list[Problem]:
        return []  # whatever scripted, runs: the verdict is per class

    def verdict(self, problems: list[Problem]) -> Verdict:
        return Verdict("error", CODE, "cannot be scripted")

    def class_results(self, cls: ClassAnswer) -> list[ClassResult]:
        error = cls.get("script_error")
        if cls.get("status") == "build_failed" or not error:
            return []
        sentence = condense(error.get("message", ""), error.get("details", ""))
        return [
            ClassResult(
                "error",
                CODE,
                f"torch.jit.script(`{cls['name']}`) fails in torch {self.torch_version}: {sentence}",
                site=error.get("site"),
                replaces=("ATL004",),
            )
        ]

    def support(self, op: str) -> Support:
        return {"verdict": "supported", "reason": "every dispatcher op can be called from TorchScript"}

    def status(self) -> TargetStatus:
        return {
            "target": self.name,
            "available": True,
            "description": self.description,
            "data": {"compiler": f"torch.jit.script of torch {self.torch_version}"},
        }
