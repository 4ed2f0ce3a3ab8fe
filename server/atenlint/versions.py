"""Torch (and other package) release numbers, parsed one way everywhere.

Data files are keyed by releases ("2.13"), torch reports "2.13.0+cpu" or "2.15.0a0+git1234",
and fix catalog entries say where they apply (">=2.4,<2.15"). Pure standard library: the
worker, the server and the data-generating scripts may all import it.
"""

from __future__ import annotations

import re

_LEADING_NUMBERS = re.compile(r"^\s*v?(\d+(?:\.\d+)*)")
_COMPARISON = re.compile(r"^(>=|<=|==|<|>)(\d+(?:\.\d+)*)$")
UNKNOWN = (0, 0)


def release(version: str | None) -> tuple[int, ...] | None:
    """The numeric release of `version`: "2.13.0+cpu" -> (2, 13, 0), "2.15.0a0" -> (2, 15, 0);
    None when it does not start with a number."""
    match = _LEADING_NUMBERS.match(version or "")
    if match is None:
        return None
    return tuple(int(part) for part in match.group(1).split("."))


def major_minor(version: str | None) -> tuple[int, int]:
    """(major, minor) of `version`, for tables keyed by release; (0, 0) when unknown."""
    numbers = release(version)
    if numbers is None or len(numbers) < 2:
        return UNKNOWN
    return numbers[0], numbers[1]


def short(version: str | None) -> str:
    """ "2.13.0+cpu" -> "2.13" (the release users and data files name); as given when unknown."""
    numbers = major_minor(version)
    return f"{numbers[0]}.{numbers[1]}" if numbers != UNKNOWN else (version or "")


def valid_spec(spec: str) -> bool:
    """Whether `spec` is a comma-separated list of comparisons (">=2.4,<2.15")."""
    return bool(spec.strip()) and all(_COMPARISON.match(part.strip()) for part in spec.split(","))


def satisfies(spec: str, version: str | None) -> bool:
    """Whether `version` ("2.13.0+cpu") satisfies `spec` (">=2.4,<2.15"). An unknown version
    passes; a malformed spec admits nothing."""
    have = release(version)
    if have is None:
        return True
    for part in spec.split(","):
        match = _COMPARISON.match(part.strip())
        if match is None:
            return False
        operator, bound = match.group(1), tuple(int(n) for n in match.group(2).split("."))
        # Compare as many components as the bound names: "<2.15" admits 2.14.9.
        mine = have[: len(bound)] + (0,) * max(0, len(bound) - len(have))
        if not {"<": mine < bound, "<=": mine <= bound, ">": mine > bound, ">=": mine >= bound, "==": mine == bound}[
            operator
        ]:
            return False
    return True
