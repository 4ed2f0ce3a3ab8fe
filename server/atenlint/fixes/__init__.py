"""Quick fixes: a verified catalog of rewrites and remedies, applied as precise text edits.

- `catalog.py`: the entries, as data (which calls and overloads, targets, conditions,
  replacement template, exactness, torch versions).
- `callsite.py`, `conditions.py`, `template.py`, `imports.py`: from a finding to the
  user's call, its arguments, the replacement text and the import it needs.
- `attach.py`: findings -> `finding.fixes` (JSON-able; the engine calls `attach_fixes`).
- `apply.py`: `atenlint check --fix`: choose, apply and re-check.

A fix is a `finding_data.Fix` (JSON as `--format json` prints it): {"id", "title", "kind":
"rewrite"|"suppress"|"explain"|"config", "exact", "approximation", "description", "edits":
[{"range", "newText"}]}; an edit carries "path" only when it is in another file than its
finding (a pyproject.toml). What a fix acts on comes from `Finding.data` (`FindingData`),
never from the message's words.
"""

from .attach import attach_fixes
from .catalog import ENTRIES, REMEDIES, REWRITES

__all__ = ["ENTRIES", "REMEDIES", "REWRITES", "attach_fixes"]
