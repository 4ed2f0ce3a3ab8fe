"""benchmarks/table.py and run.py: how a measured row is judged against issue 22's goals, and
that `run.py --check` fails exactly when a goal is missed (the CI information line)."""

from __future__ import annotations

import importlib.util
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("bench_table", REPO / "benchmarks" / "table.py")
assert spec is not None and spec.loader is not None
table = importlib.util.module_from_spec(spec)
sys.modules["bench_table"] = table  # dataclasses resolve annotations through sys.modules
spec.loader.exec_module(table)
Row = table.Row


def test_ratio_goal_with_an_allowance_per_class() -> None:
    row = Row("onnx:17 vs jit.trace", value_s=1.29, baseline_s=1.0, goal_ratio=1.15, goal_extra_s=0.05 * 3)
    assert row.ratio() == 1.29
    assert row.meets_goal()  # 1.29 <= 1.15 + 0.15
    assert not Row("x", 1.31, 1.0, goal_ratio=1.15, goal_extra_s=0.15).meets_goal()


def test_absolute_goal_and_both_goals() -> None:
    assert Row("initialize", 0.15, None, goal_abs_s=0.2).ratio() is None
    assert not Row("initialize", 0.25, None, goal_abs_s=0.2).meets_goal()
    # Both set: the tighter one decides.
    assert not Row("both", 0.5, 1.0, goal_ratio=1.0, goal_abs_s=0.4).meets_goal()
    assert Row("no goal", 9.0, 1.0).meets_goal()


def test_table_marks_the_missed_goal() -> None:
    text = table.format_table([Row("fast", 0.01, None, goal_abs_s=0.02), Row("slow", 2.0, 1.0, goal_ratio=1.1)])
    lines = text.splitlines()
    assert lines[2].endswith("| yes |") and "10 ms" in lines[2]
    assert lines[3].endswith("| NO |") and "2.00x" in lines[3] and "<= 1.10x" in lines[3]


def test_run_check_exits_1_on_a_missed_goal(tmp_path: pathlib.Path) -> None:
    bench = tmp_path / "benchmarks"
    bench.mkdir()
    for name in ("table.py", "run.py"):
        (bench / name).write_text((REPO / "benchmarks" / name).read_text(encoding="utf-8"), encoding="utf-8")
    (bench / "bench_fake.py").write_text(
        "from table import Row\n\n\ndef rows(quick: bool) -> list[Row]:\n"
        "    return [Row('fake', 2.0 if quick else 1.0, 1.0, goal_ratio=1.5)]\n",
        encoding="utf-8",
    )
    (bench / "bench_soak.py").write_text("raise SystemExit('a benchmark without rows is never imported')\n")
    run = [sys.executable, str(bench / "run.py"), "--check"]
    passed = subprocess.run(run, capture_output=True, text=True, check=False)
    assert passed.returncode == 0, passed.stderr
    assert "| fake |" in passed.stdout
    missed = subprocess.run([*run, "--quick"], capture_output=True, text=True, check=False)
    assert missed.returncode == 1 and "| NO |" in missed.stdout
