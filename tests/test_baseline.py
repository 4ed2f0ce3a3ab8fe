"""Baselines and the other CI flags: --write-baseline / --baseline, --exit-zero, --statistics,
--output-file, all through the real command line."""

from __future__ import annotations

import json
import os
import pathlib

import pytest

from atenlint.baseline import (
    Baseline,
    BaselineError,
    BaselineKey,
    new_findings,
    read_baseline,
    text_fingerprint,
    write_baseline,
)
from atenlint.findings import Finding
from atenlint.sourcetext import Position, Range
from ci_support import make_workspace, model_calls, run_check
from torch_facts import mps_missing_two, require_no_kernel


def check(pool, monkeypatch, capsys, root, *args):
    return run_check(pool, monkeypatch, capsys, root, ".", "--no-exec", *args)


def test_write_then_check_shows_nothing_and_one_new_line_shows_one(pool, monkeypatch, capsys, tmp_path):
    root = make_workspace(tmp_path)
    status, out, err = check(pool, monkeypatch, capsys, root, "--write-baseline", "ci/atenlint-baseline.json")
    assert status == 0 and "recorded 3 findings" in err and "(MPS001)" in out
    baseline = json.loads(pathlib.Path(root, "ci", "atenlint-baseline.json").read_text(encoding="utf-8"))
    assert {e["path"] for e in baseline["findings"]} == {"../src/model.py", "../nb.ipynb"}  # beside the file
    assert all("line" not in e for e in baseline["findings"])

    status, out, _ = check(pool, monkeypatch, capsys, root, "--baseline", "ci/atenlint-baseline.json")
    assert status == 0 and "no problems" in out and "3 findings accepted by the baseline" in out

    # An unrelated edit above every finding resurrects none of them.
    model = os.path.join(root, "src", "model.py")
    text = pathlib.Path(model).read_text(encoding="utf-8")
    text = text.replace("import torch\n", "import math\nimport torch\n\n\n", 1)
    first, _ = model_calls()
    text = text.replace(f"picked = {first}", f"picked = {first.replace(', ', ',  ', 1)}")
    pathlib.Path(model).write_text(text, encoding="utf-8")
    status, out, _ = check(
        pool, monkeypatch, capsys, root, "--baseline", "ci/atenlint-baseline.json", "--format", "json"
    )
    assert status == 0 and json.loads(out)["diagnostics"] == [] and json.loads(out)["baselined"] == 3

    # One offending line added: exactly one finding, that one.
    again = mps_missing_two()[0].call.call("x")
    text = text.replace("        return picked", f"        extra = {again}\n        return picked + extra")
    pathlib.Path(model).write_text(text, encoding="utf-8")
    status, out, _ = check(
        pool, monkeypatch, capsys, root, "--baseline", "ci/atenlint-baseline.json", "--format", "json"
    )
    [new] = json.loads(out)["diagnostics"]
    assert status == 1 and new["code"] == "MPS001" and new["range"]["start"]["line"] == 14


def test_a_second_copy_of_an_accepted_call_is_reported(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("a = torch.take(x, i)\nb = torch.take(x, i)\n")

    def finding(line):
        return Finding(
            "m.py",
            Range(Position(line, 4), Position(line, 20)),
            "warning",
            "MPS001",
            "take",
            target="mps",
            ops=["aten::take"],
            abs_path=str(path),
        )

    baseline_path = tmp_path / "baseline.json"
    assert write_baseline(str(baseline_path), [finding(0)], "2.13.0") == 1
    kept, accepted = new_findings([finding(0), finding(1)], read_baseline(str(baseline_path)))
    assert accepted == 1 and [f.range.start.line for f in kept] == [1]
    other_target = Finding(
        "m.py", finding(0).range, "error", "ONNX001", "take", target="onnx", ops=["aten::take"], abs_path=str(path)
    )
    assert new_findings([other_target], read_baseline(str(baseline_path)))[0] == [other_target]


def test_fingerprints_ignore_whitespace_only():
    assert text_fingerprint("torch.take(x,  i)") == text_fingerprint("torch.take(\n    x, i\n)")
    assert text_fingerprint("torch.take(x, i)") != text_fingerprint("torch.take(x, j)")


@pytest.mark.parametrize(
    "content, message",
    [
        ("{", "not valid JSON"),
        ('{"findings": []}', "not an atenlint baseline"),
        ('{"atenlint-baseline": 1, "findings": [{"code": "X"}]}', "entry 0 is malformed"),
    ],
)
def test_a_bad_baseline_is_a_usage_error(pool, monkeypatch, capsys, tmp_path, content, message):
    bad = tmp_path / "baseline.json"
    bad.write_text(content)
    with pytest.raises(BaselineError, match=message):
        read_baseline(str(bad))
    root = make_workspace(tmp_path / "ws")
    status, _, err = check(pool, monkeypatch, capsys, root, "--baseline", str(bad))
    assert status == 2 and message in err


def test_missing_baseline_and_conflicting_flags_exit_2(pool, monkeypatch, capsys, tmp_path):
    root = make_workspace(tmp_path)
    status, _, err = check(pool, monkeypatch, capsys, root, "--baseline", "nope.json")
    assert status == 2 and "cannot read the baseline" in err
    status, _, err = check(pool, monkeypatch, capsys, root, "--baseline", "a.json", "--write-baseline", "b.json")
    assert status == 2 and "cannot be combined" in err
    status, _, err = check(pool, monkeypatch, capsys, root, "--output-file", "missing/dir/out.txt")
    assert status == 2 and "no such directory" in err


def test_exit_zero_statistics_and_output_file(pool, monkeypatch, capsys, tmp_path):
    require_no_kernel("MPS", "aten::_adaptive_avg_pool3d")  # the notebook's AdaptiveAvgPool3d (ci_support)
    root = make_workspace(tmp_path)
    status, out, _ = check(pool, monkeypatch, capsys, root, "--exit-zero", "--statistics")
    assert status == 0
    lines = out.splitlines()
    table = [line.split() for line in lines if line.split()[:2] in (["2", "MPS001"], ["1", "MPS001"])]
    ops = sorted(["aten::_adaptive_avg_pool3d", *(m.op for m in mps_missing_two())])
    assert sorted(table) == [["1", "MPS001", op, "[mps]"] for op in ops]
    status, out, _ = check(pool, monkeypatch, capsys, root, "--statistics", "--format", "json")
    rows = json.loads(out)["statistics"]
    assert {(r["code"], r["op"], r["count"]) for r in rows} == {("MPS001", op, 1) for op in ops}
    status, out, err = check(
        pool, monkeypatch, capsys, root, "--format", "sarif", "--output-file", "out.sarif", "--statistics"
    )
    assert status == 1 and out == "" and ops[-1] in err  # statistics stay off a machine format
    sarif = json.loads(pathlib.Path(root, "out.sarif").read_text(encoding="utf-8"))
    assert len(sarif["runs"][0]["results"]) == 3 and sarif["runs"][0]["properties"]["statistics"]


def test_baseline_keys_do_not_depend_on_the_checkout_location(tmp_path):
    first = tmp_path / "one" / "m.py"
    first.parent.mkdir()
    first.write_text("y = torch.take(x, i)\n")
    finding = Finding(
        "m.py",
        Range(Position(0, 4), Position(0, 20)),
        "warning",
        "MPS001",
        "take",
        target="mps",
        ops=["aten::take"],
        abs_path=str(first),
    )
    write_baseline(str(tmp_path / "one" / "baseline.json"), [finding], "2.13.0")
    moved = tmp_path / "two"
    os.rename(tmp_path / "one", moved)
    finding.abs_path = str(moved / "m.py")
    baseline = read_baseline(str(moved / "baseline.json"))
    assert isinstance(baseline, Baseline) and all(isinstance(k, BaselineKey) for k in baseline.counts)
    assert new_findings([finding], baseline) == ([], 1)
