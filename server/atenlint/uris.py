"""File paths as `file:` URIs, one way for the whole server (diagnostics, code actions and
what the session publishes for files no editor has open). Pure standard library, so the
session, which knows nothing of pygls, builds the same URIs as the protocol layer."""

from __future__ import annotations

import os
from pathlib import Path


def path_uri(path: str) -> str:
    """`/w/My Model.py` -> `file:///w/My%20Model.py` (relative paths from the working directory)."""
    return Path(os.path.abspath(path)).as_uri()
