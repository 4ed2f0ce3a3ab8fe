"""The worker: a separate process in the user's interpreter that imports and runs user code.

It needs only the standard library and torch (never pygls or PyYAML): `main.py` is its
entry point; `pool.py` is the parent's side (start, timeouts, restarts).
"""
