import os as _os
import sys as _sys

# `python -m atenlint` puts the working folder first on sys.path; editors start the server
# in the project root, where a `json.py` or `typing.py` would then stand in for the
# standard library in atenlint's own process. The folder has no business there.
_here = _os.getcwd()
_sys.path[:] = [p for p in _sys.path if p not in ("", ".") and _os.path.abspath(p) != _here] + [
    p
    for p in _sys.path
    if _os.path.abspath(p or ".") == _here and _os.path.isfile(_os.path.join(p or ".", "atenlint", "__init__.py"))
]

from atenlint.cli import main

raise SystemExit(main())
