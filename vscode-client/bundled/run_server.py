"""Starts the atenlint language server shipped in the VS Code extension.

The extension runs this file with the user's interpreter: torch (and the user's own packages)
come from that environment; atenlint and its pure-Python dependencies come from the extension,
ahead of anything the environment has, so another pygls or an older atenlint there cannot
change the server. Analysis workers get only this folder (the `atenlint` package) on their
path, never `libs/`.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LIBS = os.path.join(os.path.dirname(HERE), "libs")

if sys.version_info < (3, 10):
    sys.stderr.write(f"atenlint needs Python 3.10 or newer; {sys.executable} is {sys.version.split()[0]}\n")
    raise SystemExit(2)

# Python put this file's folder first; keep it first and put the libraries right after it.
sys.path[:] = [HERE, LIBS] + [p for p in sys.path if os.path.abspath(p or os.curdir) not in (HERE, LIBS)]

from atenlint.cli import main  # noqa: E402 - needs the path above

raise SystemExit(main(["serve"]))
