"""The status item the client shows (`atenlint/status`): the session's state, the run-level
notes told once, the last error, and what Check Workspace is doing."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol


class Teller(Protocol):
    def status(self, status: dict[str, Any]) -> None: ...
    def show(self, message: str, level: str = "info") -> None: ...


class Status:
    def __init__(self, teller: Teller, describe: Callable[[], dict[str, Any]]) -> None:
        """`describe`: the session's settings and workers as the status item shows them."""
        self.teller = teller
        self.describe = describe
        self.state = "starting"
        self.announced = False  # custom notifications wait for `initialized`
        self.last_error: str | None = None
        self.run_notes: list[str] = []
        self.workspace_note: str | None = None  # why Check Workspace saw what it saw
        self.workspace_checks = 0
        self._told_restricted = False

    def set(self, state: str) -> None:
        self.state = state
        if not self.announced:
            return
        if state == "idle" and self.workspace_checks:
            state = "busy"  # Check Workspace runs outside the per-document checks
        self.teller.status(
            {
                "state": state,
                **self.describe(),
                "lastError": self.last_error,
                "message": self.workspace_note if self.workspace_checks else None,
                "notes": list(self.run_notes),
                "workspaceChecks": self.workspace_checks,
            }
        )

    def note_run_level(self, notes: Iterable[str]) -> None:
        """Run-level notes (a converter that is not installed, a capability this torch lacks)
        are told once, and stay in the status item, instead of sitting on every class of
        every file."""
        fresh = [n for n in notes if n not in self.run_notes]
        if not fresh:
            return
        self.run_notes.extend(fresh)
        for note in fresh:
            self.teller.show(f"atenlint: {note}", "warning")
        self.set(self.state)

    def restricted(self) -> None:
        if not self._told_restricted:
            self._told_restricted = True
            self.teller.show(
                "atenlint: this workspace is not trusted, so none of its code is imported or run; "
                "findings come from reading the source only (static analysis). Trust the workspace "
                "for complete results.",
                "info",
            )

    def workspace_check(self, running: bool) -> None:
        self.workspace_checks = self.workspace_checks + 1 if running else max(0, self.workspace_checks - 1)
        self.set(self.state)
