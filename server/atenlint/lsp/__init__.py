"""The language server (`atenlint serve`): pygls handlers in `server.py`, state and
scheduling in `session.py`, LSP conversions in `convert.py`. The only package that
imports pygls."""
