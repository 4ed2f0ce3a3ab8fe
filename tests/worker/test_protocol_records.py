"""Typed records at the worker boundary (issue 19): the parent builds each request with one
constructor, the worker reads it through a check, capture/ builds its answers with the
protocol's constructors, and mypy catches a key written or read wrong on either side."""

from __future__ import annotations

import ast
import io
import json
import os
import textwrap

import pytest

from atenlint.worker import main as worker_main
from atenlint.worker import protocol, vocabulary
from support import REPO


def _analyse() -> protocol.AnalyseParams:
    return protocol.analyse_params(
        "/w/model.py",
        "model",
        roots=["/w"],
        skip=["Skipped"],
        devices=["mps"],
        views=[vocabulary.VIEW_DISPATCH, vocabulary.VIEW_EXPORT],
        classes={"Net": {"key": "model.Net", "inputs": "torch.randn(1, 3)"}},
        overlays={"/w/model.py": "import torch\n"},
        infer_inputs=True,
        graph_options={"onnx_export_ops": ["aten::add.Tensor"]},
    )


def test_what_the_parent_builds_is_what_the_worker_accepts():
    sent = protocol.request(7, "analyse", _analyse())
    assert protocol.check_request(sent)["params"]["classes"] == {
        "Net": {"key": "model.Net", "inputs": "torch.randn(1, 3)"}
    }
    assert protocol.check_analyse_params(sent["params"]) == _analyse()
    static = protocol.static_params(
        "/w/model.py", "model", text=None, classes=["Net"], roots=[], skip=[], devices=["cpu"], views=["dispatch"]
    )
    assert protocol.check_static_params(dict(static)) == static
    # No graph options: the key is left out, not sent empty.
    assert "graph_options" not in protocol.analyse_params(
        "/w/m.py", "m", roots=[], skip=[], devices=[], views=[], classes={}, overlays={}, infer_inputs=False
    )


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"path": None}, "analyse.path"),
        ({"module": 3}, "analyse.module"),
        ({"views": "dispatch"}, "analyse.views"),
        ({"classes": ["Net"]}, "analyse.classes"),
        ({"classes": {"Net": "model.Net"}}, "analyse.classes.Net"),
        ({"infer_inputs": "yes"}, "analyse.infer_inputs"),
    ],
)
def test_a_malformed_request_names_its_field(change, field):
    with pytest.raises(protocol.ProtocolError, match=field.replace(".", r"\.")):
        protocol.check_analyse_params({**_analyse(), **change})


def test_the_worker_refuses_malformed_params_before_touching_the_file():
    # Nothing is imported or read: the reply names the field (the worker answers in this process).
    out = io.StringIO()
    line = json.dumps({"id": 4, "method": "analyse", "params": {"path": "/w/m.py", "module": "m", "roots": "/w"}})
    assert worker_main._answer(line, out)
    (reply,) = [json.loads(text) for text in out.getvalue().splitlines()]
    assert reply["id"] == 4 and reply["error"]["type"] == "ProtocolError"
    assert reply["error"]["message"] == "analyse.roots: expected list, got str"


def test_a_captured_call_is_made_and_merged_in_one_place():
    site: protocol.Site = {"file": "/w/model.py", "line": 3, "col": 4}
    entry = protocol.captured_op("aten::take", [site], {"dispatch": None}, conditional=True)
    assert entry == {
        "op": "aten::take",
        "sites": [site],
        "trees": {"dispatch": None},
        "args": {},
        "phases": [],
        "devices": [],
        "conditional": True,
    }
    protocol.seen_in(entry, "eval", "mps")
    protocol.seen_in(entry, "eval", "cuda")
    protocol.seen_in(entry, "train")
    assert entry["phases"] == ["eval", "train"] and entry["devices"] == ["mps", "cuda"]
    assert protocol.check_captured_op(entry, "op") is entry


def _views_targets_name() -> set[str]:
    """Every view a target's source names as its `tree_view` (literals, either branch)."""
    found: set[str] = set()
    folder = os.path.join(REPO, "server", "atenlint", "targets")
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".py"):
            continue
        with open(os.path.join(folder, name), encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
        for node in ast.walk(tree):
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(ast.unparse(t).endswith("tree_view") for t in targets) and node.value is not None:
                    found |= _literals(node.value)
    return found


def _literals(value: ast.expr) -> set[str]:
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return {value.value}
    if isinstance(value, ast.IfExp):
        return _literals(value.body) | _literals(value.orelse)
    return set()


def test_every_view_a_target_judges_is_in_the_vocabulary():
    views = {getattr(vocabulary, n) for n in dir(vocabulary) if n.startswith("VIEW_")}
    named = _views_targets_name()
    assert {"dispatch", "export", "onnx-jit"} <= named  # the scan reads the targets
    assert named <= views, f"views not in worker/vocabulary.py: {sorted(named - views)}"
    assert set(vocabulary.GRAPH_VIEWS) == set(vocabulary.JIT_VIEWS) | set(vocabulary.EXPORT_VIEWS)


def test_the_worker_captures_the_views_the_vocabulary_names():
    from atenlint.capture import delegate_view, graphs

    assert graphs.EXPORT_VIEWS is vocabulary.EXPORT_VIEWS and graphs.JIT_VIEWS is vocabulary.JIT_VIEWS
    # One list of delegates: each partitioner the worker runs is a view both sides name.
    assert delegate_view.DELEGATE_VIEWS == vocabulary.DELEGATE_VIEWS
    assert tuple(delegate_view.PARTITIONERS) == vocabulary.DELEGATES


_WRONG_KEYS = """
from atenlint.worker import protocol

def produce(site: protocol.Site) -> protocol.CapturedOp:
    entry = protocol.captured_op("aten::take", [site], {}, conditional=False)
    entry["phase"] = ["eval"]  # a producer's typo
    return entry

def request() -> protocol.AnalyseParams:
    return {"path": "/w/m.py", "module": "m", "view": ["dispatch"]}  # a parent's typo

def read(params: protocol.AnalyseParams) -> list[str]:
    return params["root"]  # a reader's typo
"""


def test_mypy_catches_a_key_written_or_read_wrong(tmp_path, monkeypatch):
    api = pytest.importorskip("mypy.api")
    monkeypatch.setenv("MYPYPATH", os.path.join(REPO, "server"))  # the source, not the installed copy
    source = tmp_path / "producer.py"
    source.write_text(textwrap.dedent(_WRONG_KEYS), encoding="utf-8")
    out, err, status = api.run(
        [
            "--strict",
            "--no-incremental",
            "--cache-dir",
            os.devnull,
            "--follow-imports",
            "silent",
            "--python-version",
            "3.11",
            str(source),
        ]
        + ["--config-file", os.path.join(REPO, "pyproject.toml")]
    )
    assert status == 1, out + err
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert any('"phase"' in line for line in errors), out
    assert any('"view"' in line for line in errors), out
    assert any('"root"' in line for line in errors), out
    # Each typo is caught where it is made, and nothing else is reported.
    assert {int(line.split(":")[1]) for line in errors} == {6, 10, 13}, out
