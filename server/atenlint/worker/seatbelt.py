"""Containment on macOS: the Seatbelt profile a per-file child applies to itself
(`sandbox_init`, libsystem_sandbox) before it imports the analysed code. The macOS
counterpart of Landlock and seccomp in `confine.py`; see docs/security.md.

The profile starts from `(allow default)`, because Python and torch need a long list of
Mach services, sysctls and IOKit classes that no one can keep right by hand, and denies
what lets code reach beyond its own process:

- every change to the file system (`file-write*`: data, creation, removal, mode, owner,
  times, extended attributes) except beneath the run folder and writing /dev/null;
- running another program (`process-exec`) and starting a process (`process-fork`);
- the network (`network*`: no bind, connect or send, to an address or a Unix socket's
  path; a socket pair has no address and stays usable);
- signals to any process but itself.

In SBPL the last rule that matches an operation decides, so each allowance follows the
denial it narrows. A profile is fixed once applied: the process cannot lift it, and a
child it could start would inherit it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from typing import Any

# The library that exports sandbox_init (part of libSystem; named for the error messages).
_LIBRARY = "libsystem_sandbox.dylib"


class SeatbeltError(OSError):
    """sandbox_init refused the profile (its own words in the message)."""


def _quoted(text: str) -> str:
    """An SBPL string literal: a path with a quote or a backslash cannot end the string
    and add rules of its own."""
    if "\x00" in text:
        raise ValueError("a path with a NUL byte cannot be named in a profile")
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def profile(writable: list[str]) -> str:
    """The SBPL text for a process that may change files only beneath `writable` folders
    (real paths: Seatbelt compares the resolved path, /private/var and not /var)."""
    allowed = " ".join([*(f"(subpath {_quoted(folder)})" for folder in writable), '(literal "/dev/null")'])
    return "\n".join(
        [
            "(version 1)",
            "(allow default)",
            "(deny file-write*)",
            f"(allow file-write* {allowed})",
            "(deny process-exec)",
            "(deny process-fork)",
            "(deny network*)",
            "(deny signal)",
            "(allow signal (target self))",
            "",
        ]
    )


def _library() -> Any | None:
    """libSystem, where sandbox_init lives on every macOS since 10.5; None elsewhere."""
    if sys.platform != "darwin":
        return None
    for name in (ctypes.util.find_library("System"), "/usr/lib/libSystem.B.dylib", None):
        try:
            library = ctypes.CDLL(name)
        except OSError:
            continue
        if hasattr(library, "sandbox_init"):
            return library
    return None


def unavailable_reason(library: Any | None = None) -> str:
    """Why Seatbelt cannot contain the analysed code here ('' when it can). `library`:
    the loaded libSystem (found when None)."""
    platform = sys.platform
    if platform != "darwin":
        return f"Seatbelt is macOS's (this is {platform})"
    if (library if library is not None else _library()) is None:
        return f"sandbox_init is not in {_LIBRARY}"
    return ""


def apply(writable: list[str], library: Any | None = None) -> None:
    """Confine this process for good with `profile(writable)`. Raises SeatbeltError when
    sandbox_init refuses it (the caller must then not run analysed code)."""
    library = library if library is not None else _library()
    if library is None:
        raise SeatbeltError(0, f"sandbox_init is not in {_LIBRARY}")
    init = library.sandbox_init
    init.argtypes = [ctypes.c_char_p, ctypes.c_uint64, ctypes.POINTER(ctypes.c_char_p)]
    init.restype = ctypes.c_int
    error = ctypes.c_char_p()
    # flags 0: the first argument is the profile's text, not a named built-in profile.
    if init(profile(writable).encode("utf-8", "surrogateescape"), 0, ctypes.byref(error)) == 0:
        return
    said = (error.value or b"").decode("utf-8", "replace") or "no reason given"
    free = getattr(library, "sandbox_free_error", None)
    if free is not None and error.value is not None:
        free.argtypes = [ctypes.c_char_p]
        free(error)
    raise SeatbeltError(0, f"sandbox_init refused the profile: {said}")
