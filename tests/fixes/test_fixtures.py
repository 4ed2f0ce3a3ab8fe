"""Golden fixtures for every catalog entry, and self-consistency.

Each `fixtures/<name>.in.py` names the entry it exercises (`# fix:`), the targets to
check it for (`# targets:`), and optionally the input shapes a trace capture would record
(`# arg-shapes:`) or a `[tool.atenlint]` table (`# config:`). The test analyses it with the
real engine, applies that entry's fix wherever atenlint offers it, and compares the result
with `<name>.out.py` (and `.out.toml` for a config edit). The test only reads them: after
an intended change, regenerate them with `python scripts/regen_golden.py` and review the diff.
A fixture whose targets need a package of the `exporters` extra that is not installed is
skipped, naming the package (it is never judged for fewer targets than it names).

Self-consistency: for a rewrite, atenlint run on the result reports, for each target, the
same findings as before minus the fixed ones (nothing at the rewritten calls, nothing new
anywhere), and every class is still analysed the same way.
"""

from __future__ import annotations

import os
from collections import Counter

import pytest
from fixes_support import (
    BY_ID,
    analyse,
    fixture_mps_as_of,
    load_fixtures,
    missing_packages,
    mps_releases,
    run_fixture_fix,
    write_workspace,
)

from atenlint.fixes.model import offered_in

FIXTURES = load_fixtures()


def _key(finding) -> tuple:
    return (finding.target, finding.code, tuple(finding.ops), finding.call)


def _module_level(findings) -> Counter:
    return Counter((f.code, f.module) for f in findings if not f.target)


@pytest.mark.parametrize("fixture", FIXTURES, ids=[f.name for f in FIXTURES])
def test_fixture(engine, tmp_path, monkeypatch, fixture):
    missing = missing_packages(fixture.targets)
    if missing:
        pytest.skip(f"targets {', '.join(fixture.targets)} need {', '.join(missing)} (the exporters extra)")
    mps_as_of = fixture_mps_as_of(fixture, engine.torch_version)
    _check(engine, tmp_path, monkeypatch, fixture, fixture.targets, mps_as_of, golden=True)


def _release_cases() -> list:
    """(fixture, release) for the first and last known MPS release inside each MPS rewrite's
    range, from 2.4 (the oldest torch atenlint supports)."""
    releases = [r for r in mps_releases() if tuple(map(int, r.split("."))) >= (2, 4)]
    cases = []
    for fixture in FIXTURES:
        entry = BY_ID[fixture.entry]
        if entry.kind != "rewrite" or "mps" not in fixture.targets:
            continue
        inside = [r for r in releases if offered_in(entry, "mps", r)]
        for release in sorted({inside[0], inside[-1]}) if inside else ():
            cases.append((fixture, release))
    return cases


RELEASE_CASES = _release_cases()


@pytest.mark.skipif(not RELEASE_CASES, reason="needs targets/data/mps_history.json")
@pytest.mark.parametrize("fixture, release", RELEASE_CASES, ids=[f"{f.name}@{r}" for f, r in RELEASE_CASES] or None)
def test_fixture_on_mps_release(engine, tmp_path, monkeypatch, fixture, release):
    """The entry's torch range holds at its ends: with the MPS kernels of that release the
    original call is reported and the rewrite is clean."""
    _check(engine, tmp_path, monkeypatch, fixture, ("mps",), release, golden=False)


def _check(engine, tmp_path, monkeypatch, fixture, targets, mps_as_of, golden: bool) -> None:
    entry = BY_ID[fixture.entry]
    before_root = tmp_path / "before"
    before_root.mkdir()
    outcome = run_fixture_fix(engine, str(before_root), fixture, targets, mps_as_of, monkeypatch)
    before, fixed, new_source = outcome.before, outcome.fixed, outcome.new_source
    for target in targets:
        assert any(f.target == target for f in fixed), (
            f"{entry.id} was offered for no {target} finding in {fixture.name}.in.py"
        )

    if golden:
        _assert_golden(fixture.out_path, new_source, fixture.name)
        if outcome.new_config is not None:
            _assert_golden(fixture.out_config_path, outcome.new_config, fixture.name)
        else:
            assert not os.path.exists(fixture.out_config_path), (
                f"{fixture.name}: the fix no longer edits pyproject.toml (python scripts/regen_golden.py {fixture.name})"
            )
    if entry.kind != "rewrite":
        return

    after_root = tmp_path / "after"
    after_root.mkdir()
    write_workspace(str(after_root), new_source, fixture.config)
    after = analyse(
        engine, str(after_root), targets, fixture.config, fixture.arg_shapes, mps_as_of, monkeypatch, fixture.flags
    )
    remaining = Counter(_key(f) for f in before if f.target) - Counter(_key(f) for f in fixed)
    assert Counter(_key(f) for f in after if f.target) == remaining
    # The rewrite must not cost the analysis: same classes analysed, by the same capture.
    assert _module_level(after) == _module_level(before)
    assert Counter(f.capture for f in after if f.target) <= Counter(f.capture for f in before if f.target)


def _assert_golden(path: str, actual: str, name: str) -> None:
    regen = f"python scripts/regen_golden.py {name}"
    assert os.path.exists(path), f"no {path}: run {regen}"
    with open(path, encoding="utf-8", newline="") as handle:
        assert actual == handle.read(), f"{path} differs (after an intended change: {regen})"
