"""The catalog is complete and well formed: every entry has targets, exactness, a fixture,
an equivalence test (rewrites), and a torch range that matches the MPS kernel history."""

from __future__ import annotations

import pytest
from fixes_support import MPS_HISTORY, load_fixtures, mps_releases
from test_equivalence import CASES

from atenlint.fixes.catalog import ENTRIES, REWRITES
from atenlint.fixes.conditions import CHECKS, DERIVATIONS
from atenlint.fixes.model import Rewrite, check_entry, offered_in

FIXTURES = load_fixtures()


def test_at_least_fifteen_rewrites_and_unique_ids():
    assert len(REWRITES) >= 15
    ids = [entry.id for entry in ENTRIES]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.id for e in ENTRIES])
def test_entry_is_well_formed(entry):
    assert check_entry(entry, set(CHECKS), set(DERIVATIONS)) == []


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.id for e in ENTRIES])
def test_entry_has_a_fixture(entry):
    assert any(f.entry == entry.id for f in FIXTURES), f"no fixtures/{entry.id}.in.py"


@pytest.mark.parametrize("entry", REWRITES, ids=[e.id for e in REWRITES])
def test_rewrite_has_an_equivalence_test_and_exactness(entry):
    assert any(case.entry == entry.id for case in CASES), f"no equivalence case for {entry.id}"
    assert isinstance(entry.exact, bool)
    if not entry.exact:
        assert entry.approximation and entry.title.endswith(")"), "say it is approximate in the title"


@pytest.mark.parametrize("fixture", FIXTURES, ids=[f.name for f in FIXTURES])
def test_fixture_names_an_entry_and_its_targets(fixture):
    entries = {entry.id: entry for entry in ENTRIES}
    assert fixture.entry in entries
    assert fixture.name.split(".")[0] == fixture.entry, "fixture files are named after their entry"
    targets = entries[fixture.entry].targets
    assert fixture.targets and all(t.split(":")[0] in targets for t in fixture.targets)


def test_every_target_of_every_entry_is_exercised_by_a_fixture():
    exercised = {(f.entry, t.split(":")[0]) for f in FIXTURES for t in f.targets}
    missing = [(e.id, t) for e in ENTRIES for t in e.targets if (e.id, t) not in exercised]
    assert not missing, f"targets no fixture checks: {missing}"


def test_check_entry_reports_mistakes():
    broken = Rewrite(
        id="Bad Id",
        title="",
        targets=(),
        ops=("take",),
        signature="input",
        exact=True,
        approximation="but it is exact",
        why="",
        equivalence="",
        template="{nope}.x()",
        when=(),
        derive={"k": "no_such_derivation"},
        torch_versions={"mps": "2.4+"},
    )
    problems = "\n".join(check_entry(broken, set(CHECKS), set(DERIVATIONS)))
    for expected in (
        "id must be",
        "no targets",
        "no title",
        "ops must be aten",
        "applies to no call",
        "an exact entry has no approximation",
        "why and equivalence",
        "{nope}",
        "unknown derivation",
        "torch_versions",
    ):
        assert expected in problems


def test_ranges_are_per_target():
    take = next(e for e in REWRITES if e.id == "take-flat-index")
    assert not offered_in(take, "mps", "2.15.0")  # MPS has a take kernel from 2.15
    assert offered_in(take, "coreml", "2.15.0")  # Core ML still has no take


MPS_REWRITES = [e for e in REWRITES if "mps" in e.targets]


@pytest.mark.skipif(not mps_releases(), reason=f"needs {MPS_HISTORY}")
@pytest.mark.parametrize("entry", MPS_REWRITES, ids=[e.id for e in MPS_REWRITES])
def test_mps_range_matches_the_kernel_history(engine, entry):
    """Inside the entry's range, some overload it answers has no MPS kernel in every known
    release; after the range, each of them that runs on a kernel of its own (composites run
    through what they call) has one, else the range ends too early."""
    history = _history()
    table = engine.native
    releases = mps_releases()
    assert "mps" in entry.torch_versions, "an MPS entry states its MPS range"
    inside = [r for r in releases if offered_in(entry, "mps", r)]
    assert inside, "the range covers no known release"
    for release in inside:
        assert any(not _had(history, op, release) for op in entry.ops), f"every op has an MPS kernel in {release}"
    later = [r for r in releases if _key(r) > _key(inside[-1])]
    for release in later:
        missing = [op for op in entry.ops if not _had(history, op, release) and _own_kernel(table, op)]
        assert not missing, f"{missing} still lack an MPS kernel in {release}: the range should include it"


def _own_kernel(table, op: str) -> bool:
    native = table.get(op)
    return native is not None and not (native.implicit or native.explicit)


def _history() -> dict:
    import json

    with open(MPS_HISTORY, encoding="utf-8") as handle:
        return json.load(handle)["ops"]


def _key(release: str) -> tuple:
    return tuple(int(part) for part in release.split("."))


def _had(history: dict, op: str, release: str) -> bool:
    return any(
        _key(first) <= _key(release) and (last is None or _key(release) <= _key(last))
        for first, last in history.get(op, ())
    )
