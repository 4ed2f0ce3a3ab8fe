"""Notebooks: code cells as one module, IPython syntax made inert, findings in cells, --fix in cells."""

from __future__ import annotations

import json
import os
import pathlib

import pytest

from atenlint.config import SettingsResolver
from atenlint.findings import Finding
from atenlint.fixes.apply import fix_until_clean
from atenlint.notebook import (
    Cell,
    FilePositions,
    NotebookError,
    build_module,
    module_name_for,
    parse_notebook,
    place_in_cells,
    python_cell_lines,
)
from atenlint.output import finding_json, report_text
from atenlint.sourcetext import Position, Range
from torch_facts import mps_missing, require_no_kernel

TAKE_CELL = [
    "class Scorer(nn.Module):\n",
    "    def __init__(self):\n",
    "        super().__init__()\n",
    "        self.proj = nn.Linear(8, 8)\n",
    "\n",
    "    def forward(self, x, index):\n",
    "        return torch.take(self.proj(x), index)\n",
]


def model_cell() -> list[str]:
    """TAKE_CELL with, on its last line, a call of an op that has no MPS kernel in the
    installed torch (torch_facts): `torch.take` where torch lacks that kernel."""
    return [*TAKE_CELL[:-1], f"        return {mps_missing().call.call('self.proj(x)')}\n"]


def notebook(*cells, language="python", indent=1) -> str:
    """An nbformat 4 notebook; a cell is (kind, source) with source a str or list of lines."""
    out = []
    for kind, source in cells:
        cell = {"cell_type": kind, "metadata": {}, "source": source}
        if kind == "code":
            cell.update(execution_count=None, outputs=[])
        out.append(cell)
    document = {
        "cells": out,
        "metadata": {"kernelspec": {"name": "python3", "language": language, "display_name": "Python 3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(document, indent=indent, ensure_ascii=False) + "\n"


def write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


# -- the module the cells make ----------------------------------------------------------


def test_magics_and_shell_lines_become_pass_line_for_line():
    lines = python_cell_lines(
        "import torch\n%matplotlib inline\n!pip install x \\\n   y\nfiles = !ls\n"
        "torch.nn.Linear?\ndef f(a):\n    %time g()\n    return a\n"
    )
    assert lines == ["import torch", "pass", "pass", "", "pass", "pass", "def f(a):", "    pass", "    return a", ""]


def test_percent_and_bang_inside_strings_and_calls_are_code():
    source = 's = """\n%d items\n!not shell\n"""\nx = f(\n    !1 if 0 else 2,\n)\ny = 5 % 3\n'
    lines = python_cell_lines(source)
    assert lines[1:3] == ["%d items", "!not shell"]
    assert lines[5] == "    !1 if 0 else 2,"  # inside a call: left for Python to judge


def test_cell_magics_blank_foreign_cells_and_keep_python_bodies():
    assert python_cell_lines("%%bash\ntouch /tmp/x\n") == ["", "", ""]
    assert python_cell_lines("%%writefile helpers.py\nimport os\n") == ["", "", ""]
    assert python_cell_lines("%%time\ny = model(x)\n") == ["", "y = model(x)", ""]


def test_module_maps_positions_to_cells_and_back():
    cells = [
        Cell(0, "markdown", "# Title"),
        Cell(1, "code", "import torch\nx = 1"),
        Cell(2, "raw", "raw text"),
        Cell(3, "code", "y = torch.take(a, i)\n"),
    ]
    module = build_module(cells)
    assert module.text == "import torch\nx = 1\ny = torch.take(a, i)\n\n"
    assert module.to_cell(Position(2, 4)) == (3, Position(0, 4))
    assert module.to_cell(Position(1, 0)) == (1, Position(1, 0))
    assert module.to_module(3, Position(0, 4)) == Position(2, 4)
    assert module.range_to_cell(Range(Position(2, 4), Position(2, 20))) == (3, Range(Position(0, 4), Position(0, 20)))


def test_a_cell_that_does_not_parse_is_left_out_and_reported():
    cells = [
        Cell(0, "code", "import torch"),
        Cell(1, "code", "def broken(:\n    pass"),
        Cell(2, "code", "await asyncio.sleep(0)"),
        Cell(3, "code", "z = 1"),
    ]
    module = build_module(cells)
    assert module.text.splitlines() == ["import torch", "", "", "", "z = 1"]
    [problem] = module.problems  # top-level await is valid IPython: left out, not reported
    assert problem.cell == 1 and problem.range.start == Position(0, 11)
    assert "cannot parse this cell" in problem.message


def test_future_imports_in_later_cells_keep_the_module_valid():
    cells = [
        Cell(0, "code", "from __future__ import annotations\nimport torch"),
        Cell(1, "code", "from __future__ import annotations\nx: Undefined = 1"),
    ]
    module = build_module(cells)
    assert module.text.splitlines() == [
        "from __future__ import annotations",
        "import torch",
        "pass",
        "x: Undefined = 1",
    ]
    compile(module.text, "nb", "exec")


def test_cells_of_other_languages_are_not_python():
    text = notebook(("code", "library(torch)"), language="R")
    assert build_module(parse_notebook(text.encode())).text == "\n"
    document = json.loads(notebook(("code", "SELECT 1"), ("code", "x = 1")))
    document["cells"][0]["metadata"] = {"vscode": {"languageId": "sql"}}
    assert build_module(parse_notebook(json.dumps(document).encode())).text == "x = 1\n"


@pytest.mark.parametrize(
    "data, message",
    [
        (b"{not json", "not valid JSON"),
        (b'{"worksheets": []}', "nbformat 3"),
        (b'{"metadata": {}}', "no `cells`"),
        (b'{"cells": [{"cell_type": "code", "source": 3}]}', "`source` must be"),
        (b"\xff\xfe", "not valid UTF-8"),
    ],
)
def test_unreadable_notebooks_say_why(data, message):
    with pytest.raises(NotebookError, match=message):
        parse_notebook(data)


@pytest.mark.parametrize("indent", [1, None])
def test_file_positions_point_into_the_json_text(indent):
    raw = notebook(("markdown", "# T"), ("code", ["a = 1\n", 'b = "é😀\\t" + c\n']), indent=indent)
    cells = parse_notebook(raw.encode())
    positions = FilePositions(raw)
    cell_text = cells[1].source
    # `c` in cell 1, line 1: after the escaped quote, the astral character and `\\t`.
    character = len('b = "é') + 2 + len('\\t" + ')  # UTF-16: the emoji counts 2
    where = positions.position(1, Position(1, character), cell_text)
    raw_line = raw.splitlines()[where.line]
    prefix = raw_line.encode("utf-16-le")[: where.character * 2].decode("utf-16-le")
    assert raw_line[len(prefix)] == "c"


def test_module_names_are_importable_and_never_shadow():
    assert module_name_for("/x/01 my-nb.ipynb") == "_01_my_nb"
    assert module_name_for("/x/torch.ipynb") == "torch_ipynb"
    assert module_name_for("/x/os.ipynb") == "os_ipynb"
    assert module_name_for("/x/analysis.ipynb") == "analysis"


# -- through the engine ----------------------------------------------------------------------


@pytest.fixture
def resolver(engine):
    saved = engine.resolver
    engine.resolver = SettingsResolver()
    yield
    engine.resolver = saved


def test_a_finding_is_reported_in_its_cell(engine, resolver, tmp_path):
    path = write(
        tmp_path,
        "nb.ipynb",
        notebook(
            ("markdown", "# Scoring"),
            ("code", ["import torch\n", "import torch.nn as nn\n", "%matplotlib inline"]),
            ("code", model_cell()),
        ),
    )
    report = engine.check_paths([path], execute=False)
    [finding] = [f for f in report.findings if f.code == "MPS001"]
    item = finding_json(finding)
    assert item["cell"] == 2
    end = 15 + len(mps_missing().call.site("self.proj(x)"))
    assert item["range"] == {"start": {"line": 6, "character": 15}, "end": {"line": 6, "character": end}}
    function = mps_missing().call.function
    assert f"nb.ipynb:cell 3:7:16: warning [mps] `{function}`" in report_text(report).replace(path, "nb.ipynb")


def test_shell_lines_and_foreign_cells_never_run(engine, resolver, tmp_path):
    marker = tmp_path / "ran"
    path = write(
        tmp_path,
        "nb.ipynb",
        notebook(
            ("code", ["import torch\n", "import torch.nn as nn\n", f"!touch {marker}\n", f"x = !touch {marker}"]),
            ("code", f"%%bash\ntouch {marker}\n"),
            ("code", model_cell()),
            ("code", "def broken(:\n"),
            ("code", "scores = Scorer()(torch.randn(2, 8), torch.tensor([0]))"),
        ),
    )
    report = engine.check_paths([path], execute=True)
    assert not marker.exists()
    codes = sorted((f.code, f.data["notebook"]["cell"], f.range.start.line) for f in report.findings)
    assert codes == [("ATL001", 3, 0), ("MPS001", 2, 6)]
    assert report.findings[0].capture in ("script", "trace", None)


def test_a_notebook_imports_its_sibling_modules(engine, resolver, tmp_path):
    call = mps_missing().call.call("x")
    (tmp_path / "blocks.py").write_text(f"import torch\n\ndef pick(x, i):\n    return {call}\n")
    path = write(
        tmp_path,
        "nb.ipynb",
        notebook(
            ("code", "import torch\nimport torch.nn as nn\nfrom blocks import pick"),
            ("code", "class M(nn.Module):\n    def forward(self, x, i):\n        return pick(x, i)\n"),
        ),
    )
    report = engine.check_paths([path], execute=True)
    assert [f.code for f in report.findings if f.code.startswith("ATL")] == []
    assert any(f.code == "MPS001" for f in report.findings)


def test_folders_yield_notebooks_and_unreadable_ones_get_a_finding(engine, resolver, tmp_path):
    write(tmp_path, "broken.ipynb", "{oops")
    write(tmp_path, "empty.ipynb", notebook(("markdown", "nothing")))
    report = engine.check_paths([str(tmp_path)], execute=False)
    assert report.files == 2
    [finding] = report.findings
    assert finding.code == "ATL007" and "not valid JSON" in finding.message
    assert finding_json(finding)["cell"] == 0


def test_fix_edits_the_cell_source_and_nothing_else(engine, resolver, tmp_path):
    require_no_kernel("MPS", "aten::take")  # the fix below is take's
    original = notebook(
        ("code", ["import torch\n", "import torch.nn as nn"]), ("markdown", ["Model:\n"]), ("code", TAKE_CELL)
    )
    path = write(tmp_path, "nb.ipynb", original)
    report, fixed = fix_until_clean(lambda: engine.check_paths([path], execute=False), False)
    assert [a.fix_id for a in fixed.applied] == ["take-flat-index"]
    assert not [f for f in report.findings if f.code == "MPS001"]
    before, after = json.loads(original), json.loads(pathlib.Path(path).read_text(encoding="utf-8"))
    assert after["cells"][2]["source"][6] == "        return self.proj(x).reshape(-1)[index]\n"
    assert after["cells"][2]["source"][:6] == before["cells"][2]["source"][:6]
    assert after["cells"][:2] == before["cells"][:2] and after["metadata"] == before["metadata"]
    assert pathlib.Path(path).read_text(encoding="utf-8").startswith('{\n "cells": [\n  {\n')  # Jupyter's layout kept
    assert os.path.getsize(path) > 0


# -- where a fix's import goes (issue 19 item 5) ------------------------------------------


def _module_finding(module, line: int, edits: list[dict]) -> Finding:
    rng = Range(Position(line, 15), Position(line, 33))
    fix = {"id": "f", "title": "t", "kind": "rewrite", "exact": True, "edits": edits}
    return Finding("nb.ipynb", rng, "warning", "MPS001", "m", target="mps", abs_path="/nb.ipynb", fixes=[fix])


def _import_at_top(module) -> dict:
    """The import edit the module-level fix code makes when the module has no import."""
    return {"range": Range(Position(0, 0), Position(0, 0)).as_json(), "newText": "import math\n"}


def test_an_added_import_goes_in_the_fixed_cell_not_an_unrelated_one():
    cells = [Cell(0, "code", "x = 1 + 1\n"), Cell(1, "markdown", "m"), Cell(2, "code", "y = 2\nz = f(y)\n")]
    module = build_module(cells)
    line = module.to_module(2, Position(1, 0)).line
    call = {"range": Range(Position(line, 4), Position(line, 8)).as_json(), "newText": "math.f(y)"}
    [finding] = place_in_cells(
        [_module_finding(module, line, [_import_at_top(module), call])], "/nb.ipynb", module, None
    )
    edits = finding.fixes[0]["edits"]
    assert [e["cell"] for e in edits] == [2, 2]
    assert (
        edits[0]["range"] == Range(Position(0, 0), Position(0, 0)).as_json() and edits[0]["newText"] == "import math\n"
    )


def test_an_added_import_joins_an_earlier_imports_cell_after_its_imports():
    cells = [
        Cell(0, "code", "x = 1 + 1\n"),
        Cell(1, "code", '"""Setup."""\nimport torch\n%matplotlib inline\nimport numpy as np\nseed = 0'),
        Cell(2, "code", "y = f(2)\n"),
    ]
    module = build_module(cells)
    line = module.to_module(2, Position(0, 0)).line
    call = {"range": Range(Position(line, 4), Position(line, 8)).as_json(), "newText": "math.f(2)"}
    [finding] = place_in_cells(
        [_module_finding(module, line, [_import_at_top(module), call])], "/nb.ipynb", module, None
    )
    first = finding.fixes[0]["edits"][0]
    assert first["cell"] == 1 and first["newText"] == "import math\n"
    # After the cell's leading imports, as in a file (the magic, inert, ends them).
    assert first["range"]["start"] == {"line": 2, "character": 0}


def test_an_imports_cell_after_the_fixed_cell_is_not_used():
    cells = [Cell(0, "code", "y = f(2)"), Cell(1, "code", "import torch\n")]
    module = build_module(cells)
    call = {"range": Range(Position(0, 4), Position(0, 8)).as_json(), "newText": "math.f(2)"}
    [finding] = place_in_cells([_module_finding(module, 0, [_import_at_top(module), call])], "/nb.ipynb", module, None)
    assert [e["cell"] for e in finding.fixes[0]["edits"]] == [0, 0]


def test_a_notebook_remedy_imports_in_its_cell_and_silencing_comes_last(engine, resolver, tmp_path):
    path = write(
        tmp_path,
        "nb.ipynb",
        notebook(
            ("code", "x = 1 + 1\n"), ("code", ["import torch\n", "import torch.nn as nn\n"]), ("code", model_cell())
        ),
    )
    report = engine.check_paths([path], execute=False)
    [finding] = [f for f in report.findings if f.code == "MPS001" and f.target == "mps"]
    kinds = [fix["kind"] for fix in finding.fixes]
    assert kinds.count("suppress") == 1 and kinds[-1] == "suppress" and len(kinds) > 1
    silence = next(fix for fix in finding.fixes if fix["kind"] == "suppress")
    imports = [e for e in silence["edits"] if e["newText"].strip() == "import warnings"]
    assert imports and all(e["cell"] == 1 for e in imports)  # the imports cell, never `x = 1 + 1`


def test_odd_json_is_checked_and_fixed_without_touching_anything_else(engine, resolver, tmp_path):
    """`1e400` stays `1e400` (json would write `Infinity`, which is not JSON) and a lone
    `\\ud83d` escape neither aborts the run nor is lost."""
    require_no_kernel("MPS", "aten::take")  # the fix below is take's
    text = notebook(
        ("code", ["import torch\n", "import torch.nn as nn\n", "label = 'x'  # \ud83d\n"]), ("code", TAKE_CELL)
    )
    text = text.replace('"execution_count": null', '"execution_count": null, "metadata_number": 1e400', 1)
    text = text.replace("\ud83d", "\\ud83d")
    assert "\\ud83d" in text and "1e400" in text
    path = write(tmp_path, "odd.ipynb", text)
    _, fixed = fix_until_clean(lambda: engine.check_paths([path], execute=False), False, allowed_roots=[path])
    assert [a.fix_id for a in fixed.applied] == ["take-flat-index"] and fixed.skipped == []
    after = pathlib.Path(path).read_text(encoding="utf-8")
    assert after == text.replace("torch.take(self.proj(x), index)", "self.proj(x).reshape(-1)[index]")
