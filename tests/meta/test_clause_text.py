"""Meta-test: every test of the suite is linked to clauses whose text states what it checks.

Read from the suite's source (``scripts/conformance_doc.py``: ``suite_tests``), the rule is:

1. Markers. Every test carries ``@pytest.mark.clause`` (its own or its module's
   ``pytestmark``), and every id it names is in the catalog.
2. Docstring. Every test has a docstring whose summary (the text before the first blank line)
   is a sequence of claims, each headed by the clause ids it is about:
   ``"ID[, ID...][ (SHOULD)]: claim"``, the next head starting the next claim
   (``"INL-1: ... stay inline; INL-3: more go to a file."``). The summary starts with a head;
   the ids of all heads are exactly the test's clause ids (module-level markers included: there
   is no group shorthand, so a reader sees every clause of a test where the test is); no other
   clause id appears in the summary.
3. Attribution. Every clause id spelled out as a string in the test or in a helper it reaches
   (``fail_message("X-1", ...)``, ``tagged("X-1", ...)``, ``require(..., "X-1", ...)``) is one
   of its clause ids, so no check of a test is blamed on a clause it does not claim; and in a
   test of several clauses every clause is named by at least one check (a test of one clause
   blames every plain ``assert`` on it).
4. Coverage. Every clause of the catalog has a test, or is listed in ``RESERVED`` with why.
5. The claim is covered by the clause. Each claim's terms must occur in the title, text
   (the requirement), conditions or rationale of the clauses of its head: its code terms
   (identifiers with ``_`` or ``()``, CamelCase names such as ``HeadObject`` or ``OSError``,
   backquoted text), its numbers, and its domain words (``VOCABULARY``: the nouns and verbs of
   the contract, matched by stem). A docstring that claims what its clause does not say fails,
   and the review of each test against its docstring (issue 11, item 1) keeps the assertions
   to what the docstring claims. The sizes, faults and spellings a test exercises belong in
   the clause's conditions, not in its requirement.

And every clause has the shape of a requirement (``shape_problems``): a text of at most
``MAX_TEXT`` characters that cites no source (no ``decision``, seed, Flink issue or id of its
``spec``: those go to its rationale and sources), at least one condition, each a phrase of at most
``MAX_CONDITION`` characters, and a rationale of at most ``MAX_RATIONALE`` characters.

``test_the_rules_are_not_vacuous`` feeds each rule a bad synthetic test or clause and checks it
is caught.
"""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from scripts.conformance_doc import SuiteTest, suite_tests

from ckptconform.clauses import CLAUSES, Clause

#: Clauses that have no test yet, with the reason (none at present).
RESERVED: dict[str, str] = {}

ID = r"[A-Z]+-\d+"
HEAD = re.compile(rf"(?P<ids>{ID}(?:, {ID})*)(?: \((?:MUST|SHOULD)\))?: ")
ANY_ID = re.compile(rf"\b{ID}\b")

#: Domain words a claim may use only where its clause uses them too. Each entry is a
#: set of stems that count as the same word (matched at the start of a word, case-insensitive).
VOCABULARY: tuple[tuple[str, ...], ...] = (
    ("pickl",),
    ("cloudpickl",),
    ("thread",),
    ("process",),
    ("executor",),
    ("coordinator",),
    ("worker",),
    ("inline",),
    ("director",),
    ("pointer",),
    ("referenc",),
    ("handle",),
    ("savepoint",),
    ("metadata",),
    ("shared",),
    ("exclusive",),
    ("task-owned",),
    ("request",),
    ("threshold",),
    ("entropy",),
    ("secret",),
    ("dispos",),
    ("discard",),
    ("duplicat",),
    ("resolv",),
    ("finaliz",),
    ("flush",),
    ("tell",),
    ("stream",),
    ("scope",),
    ("upload",),
    ("delet", "remov"),
    ("copy", "copie"),
    ("list",),
    ("abort",),
    ("restor",),
    ("retr",),
    ("throttl", "slowdown"),
    ("fault",),
    ("empty",),
    ("none",),
    ("chunk",),
    ("buffer",),
    ("job",),
    ("endpoint",),
    ("route",),
    ("variable",),
    ("fresh",),
    ("default",),
    ("target",),
    ("negative",),
    ("maximum",),
    ("size",),
    ("move",),
    ("concurrent",),
    ("context manager",),
    ("toolset",),
    ("factor",),
    ("access",),
    ("layout",),
    ("flink",),
    ("corpus",),
    ("hypothesis",),
    ("repr",),
    ("leftover", "staging", "temporary"),
    ("multipart",),
)

CODE = re.compile(
    r"`([^`]+)`"  # backquoted text
    r"|\b([A-Za-z_][A-Za-z0-9_]*_[A-Za-z0-9_]*)(?:\(\))?"  # identifiers with an underscore
    r"|\b([a-z_]+\(\))"  # calls such as tell()
    r"|\b([A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+)\b"  # CamelCase: HeadObject, OSError
)
NUMBER = re.compile(r"(?<![\w.-])\d+(?:\.\d+)*(?![\w-])")


def summary(docstring: str) -> str:
    return " ".join(docstring.strip().split("\n\n", 1)[0].split())


def claims(docstring: str) -> list[tuple[tuple[str, ...], str]] | str:
    """The (ids, claim) pairs of a docstring's summary, or why it does not follow the rule."""
    text = summary(docstring)
    heads = list(HEAD.finditer(text))
    if not heads or heads[0].start() != 0:
        return f"the summary does not start with 'ID: ' ({text[:60]!r})"
    pairs = []
    for head, after in zip(heads, [*heads[1:], None], strict=True):
        end = after.start() if after is not None else len(text)
        pairs.append((tuple(head["ids"].split(", ")), text[head.end() : end]))
    stray = [m.group() for _, claim in pairs for m in ANY_ID.finditer(claim)]
    if stray:
        return f"clause ids outside the heads: {stray}"
    return pairs


def _stems(text: str) -> set[tuple[str, ...]]:
    words = re.findall(r"[a-z][a-z-]*(?: manager)?", text.lower())
    return {
        entry
        for entry in VOCABULARY
        for word in words
        if any(word.startswith(stem) for stem in entry)
    }


def clause_words(clause: Clause) -> str:
    """What a clause says: its title, requirement, conditions and rationale."""
    return " ".join((clause.title, clause.text, *clause.conditions, clause.rationale))


def _clause_text(ids: tuple[str, ...]) -> str:
    return " ".join(clause_words(CLAUSES[i]) for i in ids if i in CLAUSES)


def uncovered(ids: tuple[str, ...], claim: str) -> list[str]:
    """The terms of ``claim`` that the text of clauses ``ids`` does not use."""
    text = _clause_text(ids)
    missing = []
    for match in CODE.finditer(claim):
        term = next(g for g in match.groups() if g).removesuffix("()")
        if term not in text:
            missing.append(term)
    missing += [n for n in NUMBER.findall(claim) if not re.search(rf"(?<![\d.]){n}(?![\d])", text)]
    missing += ["/".join(e) for e in sorted(_stems(claim) - _stems(text))]
    return missing


def problems(test: SuiteTest) -> list[str]:
    """Everything in which ``test`` breaks the rule (empty: it follows it)."""
    found = []
    if not test.clauses:
        found.append("no clause marker")
    unknown = [c for c in test.clauses if c not in CLAUSES]
    if unknown:
        found.append(f"clause ids not in the catalog: {unknown}")
    foreign = [c for c in test.named if c not in test.clauses]
    if foreign:
        found.append(f"checks blamed on clauses it does not claim: {foreign}")
    if len(test.clauses) > 1:
        silent = [c for c in test.clauses if c not in test.named]
        if silent:
            found.append(f"clauses no check of the test names: {silent}")
    if not test.docstring:
        return [*found, "no docstring"]
    parsed = claims(test.docstring)
    if isinstance(parsed, str):
        return [*found, parsed]
    named = [i for ids, _ in parsed for i in ids]
    if sorted(set(named)) != sorted(test.clauses):
        found.append(f"the docstring names {sorted(set(named))}, the markers {list(test.clauses)}")
    for ids, claim in parsed:
        missing = uncovered(ids, claim)
        if missing:
            found.append(f"{', '.join(ids)}'s text does not say {missing}: {claim!r}")
    return found


TESTS = suite_tests()


@pytest.mark.parametrize("test", TESTS, ids=lambda t: t.nodeid)
def test_each_test_names_clauses_that_state_its_claim(test):
    found = problems(test)
    assert not found, f"{test.nodeid}:\n  " + "\n  ".join(found)


def test_every_clause_has_a_test_or_is_reserved():
    tested = {c for t in TESTS for c in t.clauses}
    untested = [c for c in CLAUSES if c not in tested and c not in RESERVED]
    assert untested == [], (
        f"clauses without a test (test them or list them in RESERVED): {untested}"
    )
    stale = [c for c in RESERVED if c in tested or c not in CLAUSES]
    assert stale == [], f"RESERVED lists tested or unknown clauses: {stale}"


def test_the_suite_is_read():
    """The analysis sees the suite: many tests, and the clause ids their helpers name."""
    assert len(TESTS) >= 100
    by_id = {t.nodeid: t for t in TESTS}
    lifecycle = by_id["test_stateful.py::test_checkpoint_lifecycle"]
    assert {"DIS-1", "MD-7", "SER-3"} <= set(lifecycle.named)
    assert "SAV-7" not in lifecycle.named  # the subclass for moved savepoints names it


MAX_TEXT = 400
MAX_CONDITION = 250
MAX_RATIONALE = 400
SOURCE_WORDS = re.compile(r"\bdecision\b|\bseed \d{3}\b|\bFLINK-\d+")


def shape_problems(clause: Clause) -> list[str]:
    """Everything in which ``clause`` is not a terse requirement (empty: it is one)."""
    found = []
    if len(clause.text) > MAX_TEXT:
        found.append(f"text of {len(clause.text)} characters (at most {MAX_TEXT})")
    cited = [
        s for s in clause.spec if re.search(rf"(?<![\w-]){re.escape(s)}(?![\w-])", clause.text)
    ]
    cited += SOURCE_WORDS.findall(clause.text)
    if cited:
        found.append(f"text cites sources {sorted(set(cited))} (they go to the rationale)")
    if not clause.conditions:
        found.append("no conditions")
    for condition in clause.conditions:
        if not condition.strip() or len(condition) > MAX_CONDITION:
            found.append(f"condition of {len(condition)} characters: {condition[:60]!r}")
        elif condition.rstrip().endswith("."):
            found.append(f"condition ends with '.': a phrase, not a sentence: {condition[:60]!r}")
    if len(set(clause.conditions)) != len(clause.conditions):
        found.append("conditions repeated")
    if len(clause.rationale) > MAX_RATIONALE:
        found.append(f"rationale of {len(clause.rationale)} characters (at most {MAX_RATIONALE})")
    return found


@pytest.mark.parametrize("clause", CLAUSES.values(), ids=lambda c: c.id)
def test_each_clause_is_a_terse_requirement(clause):
    found = shape_problems(clause)
    assert not found, f"{clause.id}:\n  " + "\n  ".join(found)


def test_the_rules_are_not_vacuous():
    """Each rule flags a bad synthetic test, and the real docstring shape passes."""
    good = SuiteTest(
        module="test_x.py",
        name="test_x",
        clauses=("STR-3",),
        docstring="STR-3: close_and_get_handle() with nothing written returns None.",
        named=("STR-3",),
    )
    assert problems(good) == []

    def flagged(**changes: object) -> str:
        found = problems(replace(good, **changes))  # type: ignore[arg-type]
        assert found, f"not flagged: {changes}"
        return "\n".join(found)

    assert "no clause marker" in flagged(clauses=())
    assert "not in the catalog" in flagged(clauses=("STR-99",), docstring="STR-99: nothing.")
    assert "no docstring" in flagged(docstring=None)
    assert "does not start" in flagged(docstring="Empty streams give None (STR-3).")
    assert "outside the heads" in flagged(docstring="STR-3: returns None, as STR-1 says.")
    assert "the markers" in flagged(docstring="STR-1: close_and_get_handle() returns None.")
    assert "does not claim" in flagged(named=("STR-3", "STR-6"))
    assert "no check of the test names" in flagged(
        clauses=("STR-3", "STR-6"),
        docstring="STR-3: empty streams give None; STR-6: close() leaves no file.",
    )
    # claims the clause does not state: a term, a number, a domain word
    assert "state_size" in flagged(docstring="STR-3: an empty stream's state_size is 0.")
    assert "'4'" in flagged(docstring="STR-3: close_and_get_handle() returns None after 4 writes.")
    assert "savepoint" in flagged(docstring="STR-3: an empty savepoint stream gives None.")
    assert "HeadObject" in flagged(docstring="STR-3: an empty stream sends no HeadObject.")
    # each claim is held against the clauses of its own head
    two = replace(good, clauses=("STR-3", "INL-4"), named=("STR-3", "INL-4"))
    assert (
        problems(
            replace(two, docstring="STR-3: empty gives None; INL-4: with threshold 0, a file.")
        )
        == []
    )
    mixed = replace(two, docstring="STR-3: with threshold 0, a file; INL-4: empty gives None.")
    assert "threshold" in "\n".join(problems(mixed))
    # a claim's terms may come from the clause's conditions and rationale, not only its text
    str6, str3 = CLAUSES["STR-6"], CLAUSES["STR-3"]
    assert "default_block_size" not in str6.text
    assert "default_block_size" in str6.conditions[2]
    assert "MemoryCheckpointOutputStream" not in str3.text + "".join(str3.conditions)
    assert "MemoryCheckpointOutputStream" in str3.rationale
    assert uncovered(("STR-6",), "close() with default_block_size set leaves no file.") == []
    assert uncovered(("STR-3",), "MemoryCheckpointOutputStream gives a handle.") == []
    assert "default_block_size" in uncovered(("STR-3",), "default_block_size is kept.")

    # the shape of a clause: a terse requirement, its conditions, a short rationale
    assert shape_problems(str6) == []

    def misshapen(**changes: object) -> str:
        found = shape_problems(replace(str6, **changes))  # type: ignore[arg-type]
        assert found, f"not flagged: {changes}"
        return "\n".join(found)

    assert "text of 401" in misshapen(text="x" * 401)
    assert "cites sources" in misshapen(text=str6.text + " (Flink S13)")
    assert "cites sources" in misshapen(text=str6.text + " (decision)")
    assert "cites sources" in misshapen(text=str6.text + " (FLINK-5218)")
    assert "no conditions" in misshapen(conditions=())
    assert "condition of 251" in misshapen(conditions=("y" * 251,))
    assert "a phrase" in misshapen(conditions=("a sentence.",))
    assert "repeated" in misshapen(conditions=("one", "one"))
    assert "rationale of 401" in misshapen(rationale="z" * 401)
