"""The clause set of each suite version: which version introduced a clause, which tightened it.

The clauses are the API of a CI gate. A storage's CI pins the clause set it is judged by
(``--clauses-as-of=VERSION``); clauses introduced or tightened after that version still run
and report WARN ("new in X.Y.Z") instead of failing, so upgrading the kit and adopting its new
clauses are two decisions. The sets below are taken from the history (the clause catalog at
each release, ``docs/CHANGELOG.md``); ``tests/meta/test_clause_versions.py`` holds them to the
CHANGELOG. A new clause, or a change that lets a storage which passed a clause before fail it
now, goes under the next version here and in the CHANGELOG.
"""

from __future__ import annotations

import re

__all__ = [
    "INTRODUCED",
    "TIGHTENED",
    "VERSIONS",
    "VersionError",
    "newer_than",
    "parse_version",
]


def _ids(text: str) -> tuple[str, ...]:
    return tuple(text.split())


#: Every suite version with a clause set, oldest first.
VERSIONS: tuple[str, ...] = ("0.1.0", "0.2.0", "0.3.0", "0.4.0")

#: version -> the clauses it introduced
INTRODUCED: dict[str, tuple[str, ...]] = {
    "0.1.0": _ids(
        "SER-1 SER-2 SER-3 SER-4 SER-5 SER-6 SER-7 THR-1 THR-2 THR-3 STR-1 STR-2 STR-3 "
        "STR-4 STR-5 STR-6 STR-7 STR-8 STR-9 STR-10 INL-1 INL-2 INL-3 INL-4 INL-5 INL-6 "
        "INL-7 INL-8 LAY-1 LAY-2 LAY-3 LAY-4 LAY-5 LAY-6 LAY-7 LAY-8 PTR-1 PTR-2 PTR-3 "
        "PTR-4 PTR-5 PTR-6 PTR-7 PTR-8 PTR-9 PTR-10 PTR-11 NOX-1 NOX-2 NOX-3 NOX-4 NOX-5 "
        "NOX-6 NOX-7 NOX-8 TOW-1 TOW-2 TOW-3 TOW-4 TOW-5 TOW-6 TOW-7 TOW-8 TOW-9 SAV-1 "
        "SAV-2 SAV-3 SAV-4 SAV-5 SAV-6 SAV-7 MD-1 MD-2 MD-3 MD-4 MD-5 MD-6 MD-7 MD-8 "
        "DIS-1 DIS-2 DIS-3 DIS-4 DIS-5 MEM-1 MEM-2 MEM-3 MEM-4 MEM-5"
    ),
    "0.2.0": _ids(
        "SER-8 STR-11 STR-12 STR-13 STR-14 INL-9 LAY-9 LAY-10 PTR-12 PTR-13 NOX-9 NOX-10 "
        "TOW-10 SAV-8 MD-9 MD-10 MD-11 DIS-6 BAD-1 BAD-2 BAD-3 BAD-4 BAD-5 BAD-6 BAD-7 "
        "BAD-8 BAD-9 BAD-10 BAD-11 BAD-12 BAD-13 BAD-14 BAD-15 BAD-16 SPK-1 SPK-2 SPK-3 "
        "SPK-4 SPK-5 SPK-6 SPK-7 SPK-8 SPK-9 REQ-1 REQ-2 REQ-3 REQ-4 REQ-5 REQ-6 REQ-7 "
        "REQ-8 REQ-9 REQ-10 REQ-11 REQ-12"
    ),
    "0.3.0": _ids("THR-4 STR-15 STR-16 MD-12 MD-13 DIS-7 BAD-17 REQ-13"),
    "0.4.0": _ids("FLK-1"),
}

#: version -> the clauses whose requirement it tightened: a storage that passed such a clause
#: before that version can fail it from then on
TIGHTENED: dict[str, tuple[str, ...]] = {
    "0.1.0": (),
    "0.2.0": _ids(
        "SER-4 STR-4 STR-5 STR-6 STR-7 LAY-2 LAY-6 LAY-7 LAY-8 PTR-1 PTR-2 PTR-3 PTR-4 "
        "PTR-7 TOW-5 TOW-8 TOW-9 SAV-1 SAV-7 MD-2 MD-3 MD-4 MD-7 DIS-1 DIS-2 DIS-4"
    ),
    "0.3.0": (),
    "0.4.0": (),
}

_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


class VersionError(ValueError):
    """A clause-set version this suite does not know."""


def parse_version(text: str) -> str:
    """The known version ``text`` names (``0.2`` is ``0.2.0``); else a ``VersionError``."""
    match = _VERSION.fullmatch(text.strip())
    if match is None:
        raise VersionError(
            f"{text!r} is not a version (X.Y or X.Y.Z); clause sets: {', '.join(VERSIONS)}"
        )
    major, minor, patch = match.group(1), match.group(2), match.group(3) or "0"
    version = f"{int(major)}.{int(minor)}.{int(patch)}"
    if version not in VERSIONS:
        raise VersionError(
            f"no clause set {version} in this suite (it has {', '.join(VERSIONS)}): pin one "
            "of those, or upgrade the kit to the version the pin names"
        )
    return version


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def newer_than(since: str, tightened: tuple[str, ...], pin: str) -> str | None:
    """Why a clause is newer than the clause set ``pin`` ("new in 0.2.0", "tightened in
    0.2.0"), or ``None`` when that set already holds it as it is now."""
    if _key(since) > _key(pin):
        return f"new in {since}"
    later = [version for version in tightened if _key(version) > _key(pin)]
    if later:
        return f"tightened in {later[-1]}"
    return None
