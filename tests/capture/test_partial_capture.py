"""Publish fast targets first (capture/file_capture.py): `capture_file(params, on_partial)`
hands over the dispatch view of every class before any toolchain graph is captured, in
an answer of the final answer's shape, and the final answer reuses that capture."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from atenlint.capture import file_capture, graphs

SOURCE = """
    import torch
    import torch.nn as nn


    class Traced(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(8, 8)

        def forward(self, x):
            return self.lin(x).softmax(-1)


    class Inferred(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3)

        def forward(self, x):
            return torch.relu(self.conv(x))


    class NotBuilt(nn.Module):
        def __init__(self, checkpoint):  # a file: no inferred argument can stand in for it
            super().__init__()
            self.lin = nn.Linear(8, 8)
            self.load_state_dict(torch.load(checkpoint))

        def forward(self, x):
            return self.lin(x).sigmoid()
"""

VIEWS = ["dispatch", "jit", "onnx-jit", "export", "script"]


def _request(tmp_path: Any, views: list[str] = VIEWS) -> dict[str, Any]:
    path = tmp_path / "partial_case.py"
    path.write_text(textwrap.dedent(SOURCE).lstrip())
    return {
        "path": str(path),
        "module": "partial_case",
        "roots": [str(tmp_path)],
        "overlays": {},
        "classes": {"Traced": {"inputs": "torch.randn(2, 8)"}, "Inferred": {}, "NotBuilt": {}},
        "devices": ["cpu", "mps"],
        "views": views,
    }


def _without_times(answer: dict[str, Any]) -> dict[str, Any]:
    return dict(answer, seconds=None, classes=[dict(c, seconds=None) for c in answer["classes"]])


@pytest.fixture
def graph_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The toolchain graph captures, in order, with what had been published before each."""
    calls: list[str] = []
    for name in ("jit_graph_ops", "export_graph_ops"):
        original = getattr(graphs, name)

        def recording(*args: Any, _original: Any = original, _name: str = name, **kwargs: Any) -> Any:
            calls.append(_name)
            return _original(*args, **kwargs)

        monkeypatch.setattr(graphs, name, recording)
    return calls


def test_the_dispatch_view_of_every_class_comes_first(tmp_path: Any, graph_calls: list[str]) -> None:
    published: list[tuple[dict[str, Any], int]] = []
    final = file_capture.capture_file(
        _request(tmp_path), on_partial=lambda answer: published.append((answer, len(graph_calls)))
    )
    assert len(published) == 1
    partial, graphs_before = published[0]
    assert graphs_before == 0  # no jit or export graph was captured before it
    # Traced's configured inputs, then Inferred's (its Conv2d(3, ...) says 3 channels).
    assert graph_calls == ["jit_graph_ops", "export_graph_ops"] * 2
    assert partial["partial"] is True and "partial" not in final
    assert set(partial) == set(final) | {"partial"}
    assert [c["qualname"] for c in partial["classes"]] == [c["qualname"] for c in final["classes"]]
    by_name = {c["qualname"]: c for c in partial["classes"]}
    for cls in partial["classes"]:
        assert cls["ops"], cls["qualname"]
        assert all(set(entry["trees"]) == {"dispatch"} for entry in cls["ops"])
    assert by_name["Traced"]["capture"] == "trace" and by_name["Traced"]["covered"] == ["dispatch"]
    assert by_name["Inferred"]["capture"] == "trace" and by_name["Inferred"]["covered"] == ["dispatch"]
    assert by_name["Inferred"]["inputs_inferred"] == "(torch.randn(2, 3, 32, 32),)"
    assert "inputs_inferred" not in by_name["Traced"]
    assert by_name["NotBuilt"]["status"] == "build_failed" and by_name["NotBuilt"]["capture"] == "static"
    # The final answer holds the same dispatch capture, plus every other view.
    for early, late in zip(partial["classes"], final["classes"]):
        dispatch_only = file_capture._only_views(late, ("dispatch",))
        assert [e["op"] for e in early["ops"]] == [e["op"] for e in dispatch_only["ops"]]
        assert [e["trees"] for e in early["ops"]] == [e["trees"] for e in dispatch_only["ops"]]
    traced = next(c for c in final["classes"] if c["qualname"] == "Traced")
    assert set(traced["covered"]) == {"dispatch", "jit", "onnx-jit", "export"}
    inferred = next(c for c in final["classes"] if c["qualname"] == "Inferred")
    assert set(inferred["covered"]) == {"dispatch", "jit", "onnx-jit", "export"}
    assert "script_error" not in inferred and "graph_errors" not in inferred


def test_without_a_callback_the_answer_is_the_same(tmp_path: Any) -> None:
    published: list[dict[str, Any]] = []
    views = ["dispatch", "jit", "onnx-jit", "script"]  # export is covered above; it is the slow one
    with_callback = file_capture.capture_file(_request(tmp_path, views), on_partial=published.append)
    plain = file_capture.capture_file(_request(tmp_path, views))
    assert _without_times(plain) == _without_times(with_callback)


def test_a_request_without_the_dispatch_view_still_publishes_once(tmp_path: Any) -> None:
    published: list[dict[str, Any]] = []
    final = file_capture.capture_file(_request(tmp_path, ["jit", "script"]), on_partial=published.append)
    assert len(published) == 1 and published[0]["partial"] is True
    assert all(not c["ops"] for c in published[0]["classes"] if c["status"] == "ok")
    assert any(c["ops"] for c in final["classes"])


def test_a_file_that_cannot_be_imported_publishes_its_static_dispatch_view(tmp_path: Any) -> None:
    request = _request(tmp_path)
    with open(request["path"], "a", encoding="utf-8") as handle:
        handle.write("\nimport not_a_package_at_all\n")
    published: list[dict[str, Any]] = []
    final = file_capture.capture_file(request, on_partial=published.append)
    assert "import_error" in final and len(published) == 1
    partial = published[0]
    assert partial["import_error"] == final["import_error"]
    assert all(set(e["trees"]) == {"dispatch"} for c in partial["classes"] for e in c["ops"])
    assert any(c["ops"] for c in partial["classes"])


def test_the_torchscript_view_alone_traces_nothing_and_says_no_trace_failed(
    tmp_path: Any, graph_calls: list[str]
) -> None:
    """Only `script` asked (the torchscript target alone): torch.jit.script is the verdict,
    so a class with inputs is scripted, with no "could not be traced" note (ATL011)."""
    answer = file_capture.capture_file(_request(tmp_path, ["script"]))
    assert graph_calls == []
    traced = next(c for c in answer["classes"] if c["qualname"] == "Traced")
    assert traced["status"] == "ok"
    assert "trace_error" not in traced and "script_error" not in traced
