"""Meta-tests of CONFORMANCE.md: it is current, every MUST clause has a test, every clause id
a test uses exists, and no id is used twice."""

from __future__ import annotations

import re
from collections import Counter

from scripts.conformance_doc import HEADING_FORMAT, clause_tests, render

from ckptconform.clauses import CLAUSES
from tests.meta.suite_runner import REPO

HEADING = re.compile(
    "^"
    + re.escape(HEADING_FORMAT)
    .replace(r"\{id\}", r"(?P<id>[A-Z]+-\d+)")
    .replace(r"\{level\}", r"(?P<level>MUST|SHOULD)")
    .replace(r"\{title\}", r"(?P<title>.+)")
    + "$",
    re.MULTILINE,
)


def _published() -> str:
    return (REPO / "CONFORMANCE.md").read_text(encoding="utf-8")


def _parsed() -> list[tuple[str, str, str]]:
    """(id, level, tests) for every clause heading of CONFORMANCE.md (its 'Tests:' part)."""
    text = _published()
    clauses = []
    for match in HEADING.finditer(text):
        rest = text[match.end() :]
        tests_line = re.search(r"(?:^|· )Tests: (.*)$", rest, re.MULTILINE)
        assert tests_line is not None, f"clause {match['id']} has no 'Tests:' part"
        clauses.append((match["id"], match["level"], tests_line.group(1)))
    return clauses


def test_conformance_md_is_current():
    """CONFORMANCE.md is what scripts/gen_conformance_md.py renders from the catalog."""
    stale = "CONFORMANCE.md is stale: run python scripts/gen_conformance_md.py"
    assert _published() == render(), stale


def test_no_clause_id_is_published_twice():
    counts = Counter(cid for cid, _, _ in _parsed())
    assert [cid for cid, n in counts.items() if n > 1] == []
    assert set(counts) == set(CLAUSES), "CONFORMANCE.md and the catalog list different clauses"


def test_every_must_clause_has_a_test():
    untested = [cid for cid, level, tests in _parsed() if level == "MUST" and tests == "none"]
    assert untested == [], f"MUST clauses without a test: {untested}"


def test_every_clause_id_used_by_a_test_exists():
    published = {cid for cid, _, _ in _parsed()}
    unknown = sorted(set(clause_tests()) - published)
    assert unknown == [], f"tests name clause ids that CONFORMANCE.md does not define: {unknown}"


def test_tests_line_matches_the_suite():
    """The 'Tests:' part of each clause names exactly the suite tests carrying its marker."""
    markers = clause_tests()
    for cid, _, tests in _parsed():
        listed = set(re.findall(r"`([^`]+)`", tests))
        assert listed == set(markers.get(cid, [])), f"{cid}: CONFORMANCE.md lists {listed}"


def test_no_test_mixes_must_and_should_clauses():
    """A SHOULD failure is a WARN: a test that also checks a MUST clause would hide it."""
    by_test: dict[str, set[str]] = {}
    for cid, tests in clause_tests().items():
        for test in tests:
            by_test.setdefault(test, set()).add(CLAUSES[cid].level)
    mixed = sorted(test for test, levels in by_test.items() if len(levels) > 1)
    assert mixed == [], f"tests that check MUST and SHOULD clauses at once: {mixed}"
