"""What a machine-readable report may say of text that analysed code controls.

SARIF is uploaded to code-scanning dashboards and GitHub annotations are shown to anyone
who can read a pull request, so neither may carry what the analysed code chose to put in
an exception message: a file's contents it read, an environment variable's value, a
traceback. A finding's message is atenlint's own sentence with, for some codes, such a
message inside it. In these formats:

- every fragment of analysed-code text the finding records (`untrusted_text`, and the
  messages of `script_error` / `graph_errors`) is cut to its first line, at most
  HEADLINE_CHARS characters;
- the message as a whole keeps its first line only (atenlint's own sentences are one
  line; a multi-line message is one that quotes something), at most MESSAGE_CHARS;
- the value of every environment variable of this process that could be a secret (six
  characters or more, not a path, not a number or version, not one of the variables
  that only name the user, the machine, the locale or the terminal) is replaced by
  `[$NAME]`.

docs/security.md ("Reports") says the same for users.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any, cast

from ..findings import Finding

HEADLINE_CHARS = 160
MESSAGE_CHARS = 1000
SECRET_MIN_CHARS = 6
_LINE_BREAK = re.compile(r"\r\n|\r|\n|\x0b|\x0c|\x1c|\x1d|\x1e|\x85|\u2028|\u2029")
# Variables whose values are who and where, not secrets: they are also in every path and
# prompt the report already shows, and redacting them would garble those paths.
_NOT_SECRET = frozenset(
    {
        "USER",
        "LOGNAME",
        "USERNAME",
        "HOSTNAME",
        "HOST",
        "NAME",
        "SHELL",
        "TERM",
        "COLORTERM",
        "TERM_PROGRAM",
        "TERM_PROGRAM_VERSION",
        "LANG",
        "LANGUAGE",
        "TZ",
        "EDITOR",
        "VISUAL",
        "PAGER",
        "DISPLAY",
        "HOME",
        "PWD",
        "OLDPWD",
        "PATH",
        "GITHUB_REPOSITORY",
        "GITHUB_REPOSITORY_OWNER",
        "GITHUB_ACTOR",
        "GITHUB_WORKFLOW",
        "GITHUB_JOB",
        "GITHUB_EVENT_NAME",
        "GITHUB_REF",
        "GITHUB_REF_NAME",
        "GITHUB_BASE_REF",
        "GITHUB_HEAD_REF",
        "RUNNER_OS",
        "RUNNER_ARCH",
        "RUNNER_NAME",
        "ImageOS",
        "ImageVersion",
    }
)


def headline(text: str, limit: int = HEADLINE_CHARS) -> str:
    """The first line of `text`, at most `limit` characters; `…` says something was cut."""
    lines = _LINE_BREAK.split(text.strip(), maxsplit=1)
    first = lines[0].rstrip()
    cut = len(lines) > 1 or len(first) > limit
    if len(first) > limit:
        first = first[: limit - 1].rstrip()
    return first + " …" if cut else first


def secret_values(environ: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """(value, name) of the environment variables whose values are redacted, longest first
    (so a value that contains another is replaced whole)."""
    environ = os.environ if environ is None else environ
    found: dict[str, str] = {}
    for name, value in environ.items():
        stripped = value.strip()
        if len(stripped) < SECRET_MIN_CHARS or name in _NOT_SECRET or name.startswith("LC_"):
            continue
        if _VERSION.match(stripped) or _is_path_list(stripped):
            continue
        found.setdefault(stripped, name)
    return sorted(found.items(), key=lambda item: -len(item[0]))


# Numbers and version strings (`123456789`, `2.13.0`, `v1.2.3-rc1`): messages name torch
# and package versions, which a CI's `TORCH_VERSION` must not turn into `[$TORCH_VERSION]`.
_VERSION = re.compile(r"^[vV]?\d+(\.\d+)*([.+-][0-9A-Za-z]+)*$")


def _is_path_list(value: str) -> bool:
    """An absolute path, or a list of them (PATH, PYTHONPATH, LD_LIBRARY_PATH ...)."""
    parts = [p for p in value.split(os.pathsep) if p]
    return bool(parts) and all(os.path.isabs(p) for p in parts)


def redact_environment(text: str, secrets: Iterable[tuple[str, str]]) -> str:
    for value, name in secrets:
        if value in text:
            text = text.replace(value, f"[${name}]")
    return text


def untrusted_fragments(finding: Finding) -> list[str]:
    """The text in the finding's message that analysed code controls, as recorded."""
    data = cast(Mapping[str, Any], finding.data)
    fragments: list[str] = []
    recorded = data.get("untrusted_text")
    if isinstance(recorded, list):
        fragments.extend(item for item in recorded if isinstance(item, str))
    errors = [data.get("script_error"), *(data.get("graph_errors") or [])]
    for error in errors:
        if isinstance(error, Mapping) and isinstance(error.get("message"), str):
            fragments.append(error["message"])
    return [f for f in fragments if f]


def machine_text(text: str, untrusted: Iterable[str] = (), secrets: Iterable[tuple[str, str]] | None = None) -> str:
    """`text` as a machine format may carry it (see the module's rules)."""
    for fragment in sorted(set(untrusted), key=len, reverse=True):
        short = headline(fragment)
        if short != fragment:
            text = text.replace(fragment, short)
    text = redact_environment(text, secret_values() if secrets is None else secrets)
    return headline(text, MESSAGE_CHARS)


def finding_message(finding: Finding, secrets: Iterable[tuple[str, str]] | None = None) -> str:
    """A finding's message for SARIF and GitHub annotations."""
    return machine_text(finding.message, untrusted_fragments(finding), secrets)
