"""The macOS Seatbelt profile (`worker/seatbelt.py`) and when it is chosen.

These run on every platform but only check the profile's text and the selection logic:
`sandbox_init` exists on macOS alone, so on Linux and Windows no test here proves that the
kernel enforces the profile (the escape tests of test_confine.py do that for Landlock and
seccomp on Linux).
"""

from __future__ import annotations

import re
import sys

import pytest

from atenlint.worker import confine, seatbelt


def rules(text):
    return [line for line in text.splitlines() if line.strip()]


def test_the_profile_denies_reaching_out_and_allows_writes_beneath_the_run_folder_only():
    text = seatbelt.profile(["/private/var/folders/xy/atenlint-worker-1"])
    lines = rules(text)
    assert lines[:2] == ["(version 1)", "(allow default)"]
    for denied in (
        "(deny file-write*)",
        "(deny process-exec)",
        "(deny process-fork)",
        "(deny network*)",
        "(deny signal)",
    ):
        assert denied in lines
    allow_writes = lines.index(
        '(allow file-write* (subpath "/private/var/folders/xy/atenlint-worker-1") (literal "/dev/null"))'
    )
    assert allow_writes > lines.index("(deny file-write*)")  # the last rule that matches decides
    assert lines.index("(allow signal (target self))") > lines.index("(deny signal)")
    assert text.count("(allow") == 3  # nothing else is allowed back


def test_a_path_cannot_end_its_string_and_add_rules():
    hostile = '/tmp/run") (allow process-exec) ("'
    text = seatbelt.profile([hostile, "/tmp/back\\slash"])
    (allow_writes,) = [line for line in rules(text) if line.startswith("(allow file-write*")]
    literals = re.findall(r'"((?:[^"\\]|\\.)*)"', allow_writes)
    assert literals == ['/tmp/run\\") (allow process-exec) (\\"', "/tmp/back\\\\slash", "/dev/null"]
    assert "(allow process-exec)" not in rules(text)
    with pytest.raises(ValueError):
        seatbelt.profile(["/tmp/nul\x00byte"])


def test_only_macos_offers_it(monkeypatch):
    monkeypatch.setattr(sys, "platform", "linux")
    assert "macOS" in seatbelt.unavailable_reason()
    monkeypatch.setattr(sys, "platform", "darwin")
    monkeypatch.setattr(seatbelt, "_library", lambda: None)
    assert "sandbox_init" in seatbelt.unavailable_reason()
    assert seatbelt.unavailable_reason(library=_FakeLibSystem(0)) == ""


class _FakeLibSystem:
    """Stands in for libSystem: records what sandbox_init was given."""

    def __init__(self, answer):
        self.calls = []
        self.sandbox_init = _FakeFunction(answer, self.calls)


class _FakeFunction:
    """A foreign function: callable, with argtypes and restype set by its caller."""

    def __init__(self, answer, calls):
        self.answer, self.calls = answer, calls

    def __call__(self, profile, flags, error):
        self.calls.append((profile, flags))
        return self.answer


def test_applying_passes_the_profile_text_and_a_refusal_is_an_error():
    library = _FakeLibSystem(0)
    seatbelt.apply(["/private/tmp/run"], library)
    assert library.calls == [(seatbelt.profile(["/private/tmp/run"]).encode(), 0)]  # 0: the text is the profile
    with pytest.raises(seatbelt.SeatbeltError, match="refused the profile"):
        seatbelt.apply(["/private/tmp/run"], _FakeLibSystem(-1))


def test_on_macos_the_worker_reports_seatbelt_as_its_kernel_layer(monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    monkeypatch.setattr(seatbelt, "_library", lambda: _FakeLibSystem(0))
    support = confine.probe()
    assert support.seatbelt and support.kernel and support.reasons == []
    assert support.as_json()["seatbelt"] is True and support.as_json()["kernel"] is True
    support.withdraw("a confined process could not be made: refused")
    assert not support.kernel and support.as_json()["missing"] == ["a confined process could not be made: refused"]


def test_elsewhere_the_worker_says_why_seatbelt_is_missing(monkeypatch):
    monkeypatch.setattr(sys, "platform", "win32")
    support = confine.probe()
    assert not support.kernel and not support.seatbelt and "Linux and macOS only" in support.reasons[0]
