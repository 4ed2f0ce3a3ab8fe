"""One parser of release numbers for every torch-version question (targets, data files, fixes)."""

from __future__ import annotations

import pytest

from atenlint.versions import UNKNOWN, major_minor, release, satisfies, short, valid_spec


@pytest.mark.parametrize(
    "version, numbers",
    [
        ("2.13.0", (2, 13, 0)),
        ("2.13.0+cpu", (2, 13, 0)),
        ("2.15.0a0+git1234", (2, 15, 0)),
        ("2.14", (2, 14)),
        ("v2.9.1", (2, 9, 1)),
        ("", None),
        ("nightly", None),
        (None, None),
    ],
)
def test_release_reads_the_leading_numbers(version, numbers):
    assert release(version) == numbers


def test_major_minor_and_short_name_a_release_or_say_unknown():
    assert major_minor("2.13.0+cu121") == (2, 13)
    assert major_minor("2") == UNKNOWN and major_minor("?") == UNKNOWN
    assert short("2.13.0+cpu") == "2.13" and short("?") == "?"
    # Ordered as numbers, not text: 2.9 is older than 2.13.
    assert sorted(["2.13", "2.9", "2.10"], key=major_minor) == ["2.9", "2.10", "2.13"]


@pytest.mark.parametrize(
    "spec, version, allowed",
    [
        (">=2.4,<2.15", "2.13.0+cpu", True),
        (">=2.4,<2.15", "2.15.0", False),
        ("<2.15", "2.14.9", True),
        ("==2.13", "2.13.1", True),
        (">2.13", "2.13.5", False),
        (">=2.0", "unknown", True),
        ("<2.14", "", True),
        (">=2.6,<2.8", "2.7.1", True),
        (">=2.6,<2.8", "2.5.1", False),
        (">=2.6,<2.8", "2.8", False),
        ("~=2.13", "2.13.0", False),
    ],
)
def test_satisfies_compares_as_many_components_as_the_bound_names(spec, version, allowed):
    assert satisfies(spec, version) is allowed


def test_valid_spec_rejects_what_satisfies_cannot_read():
    assert valid_spec(">=2.4,<2.15") and valid_spec("<2.14")
    assert not valid_spec("") and not valid_spec(">= 2.4") and not valid_spec("2.4")


def test_no_other_module_parses_torch_versions_by_hand():
    import pathlib
    import re

    package = pathlib.Path(__file__).resolve().parents[1] / "server" / "atenlint"
    by_hand = re.compile(r"""split\(["']\+["']\)\[0\]\.split\(["']\.["']\)""")
    offenders = [
        str(p.relative_to(package))
        for p in package.rglob("*.py")
        if p.name != "versions.py" and by_hand.search(p.read_text(encoding="utf-8"))
    ]
    assert offenders == []
