"""One pipeline, one answer: for every example, a few golden workspaces, a file that times
out and one that crashes the worker, what `atenlint check --format json` reports equals what
the pipeline function the editor calls (`pipeline.check_file` on each file's buffer, the
results shown per document with `findings_in`) gives: the same codes, ranges and files."""

from __future__ import annotations

import os
import textwrap

import pytest

from atenlint.config import SettingsResolver
from atenlint.discover import iter_python_files
from atenlint.output import report_json
from atenlint.pipeline import FileResult, FileSnapshot, check_file, findings_in
from support import GOLDEN, REPO

EXAMPLES = os.path.join(REPO, "examples")
EXAMPLE_ROOTS = sorted(
    os.path.join(EXAMPLES, d) for d in os.listdir(EXAMPLES) if os.path.isdir(os.path.join(EXAMPLES, d))
)
# Cross-file findings and config keys (relative_imports, factory_config), directives, a trace.
GOLDEN_ROOTS = [os.path.join(GOLDEN, d) for d in ("relative_imports", "factory_config", "directives", "structure")]

Shown = tuple[str, int, int, int, int, str, str | None, str]


def _cli(engine, root: str) -> list[Shown]:
    """The CLI's JSON diagnostics (`atenlint check ROOT --format json`), with absolute paths."""
    report = engine.check_paths([root], jobs=1)
    diagnostics = report_json(report)["diagnostics"]
    # A checked file is named as it was given (absolute here), another file relative to
    # the working directory the engine reports from.
    return sorted(_key(os.path.join(engine.cwd, d["path"]), d) for d in diagnostics)


def _editor(engine, root: str) -> list[Shown]:
    """Each file checked as the editor does (its buffer's text), every document then shown
    the findings every result placed in it."""
    files, _ = iter_python_files([root], notebooks=True)
    results: list[FileResult] = []
    for path in files:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        results.append(check_file(engine, FileSnapshot.of(path, text=text, resolver=engine.resolver)))
    places = sorted({place for result in results for place in result.places()})
    shown = [finding for place in places for finding in findings_in(place, results)]
    return sorted(_key(finding.abs_path, finding.as_json()) for finding in shown)


def _key(path: str, item: dict) -> Shown:
    start, end = item["range"]["start"], item["range"]["end"]
    return (
        os.path.realpath(path),
        start["line"],
        start["character"],
        end["line"],
        end["character"],
        item["code"],
        item["target"],
        item["severity"],
    )


@pytest.mark.parametrize("root", EXAMPLE_ROOTS + GOLDEN_ROOTS, ids=os.path.basename)
def test_cli_and_editor_find_the_same(engine, root):
    engine.resolver = SettingsResolver()
    cli = _cli(engine, root)
    engine.resolver = SettingsResolver()
    assert cli == _editor(engine, root)
    if root in GOLDEN_ROOTS:
        assert cli, f"nothing found in {root}: the comparison would prove little"


_MODEL = """
import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        return torch.special.ndtri(x)
"""


@pytest.mark.parametrize(
    "name, prelude, code",
    [
        ("loops", "while True:\n    pass\n", "ATL005"),
        ("crashes", "import os\nos._exit(3)\n", "ATL006"),
    ],
)
def test_after_a_timeout_or_a_crash_both_read_the_source(engine, tmp_path, name, prelude, code):
    """The worker fails on the file; the CLI and the editor both fall back to the static pass
    (the same ATL005/ATL006, and the op read from source), not a bare failure in the editor."""
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(_MODEL).lstrip().replace("import torch\n", "import torch\n" + prelude, 1))
    engine.resolver = SettingsResolver(overrides={"timeout": 4.0})
    cli = _cli(engine, str(tmp_path))
    editor = _editor(engine, str(tmp_path))
    assert cli == editor
    codes = [shown[5] for shown in cli]
    assert code in codes and "MPS001" in codes, codes
