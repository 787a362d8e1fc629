"""Meta-test: every Flink fact id a clause cites is defined in ``docs/flink-facts.md``.

A clause's ``spec`` tuple names its sources: fact ids of the Flink digest (``S7``, ``T-BASE4``,
``P4``, ``S12a``, ``PATH``), seed documents (``seed 000`` .. ``seed 004``) and ``decision``.
Its rationale may mention fact ids as well ("As Flink: S7, T-FSF1."). The digest itself lives
outside the repository, so ``docs/flink-facts.md`` restates every fact under an anchor and bold
lead, ``<a id="S7"></a>**S7**``; seeds and ``decision`` are entries of its "Seed documents"
section.

1. Every entry of every clause's ``spec`` tuple resolves: seeds and ``decision`` to the seeds
   section, everything else to a fact entry.
2. Every fact id mentioned in a clause's title, text, conditions or rationale resolves to a
   fact entry.
3. The doc's entries are well formed: each anchor equals its lead (spaces as ``-``), no anchor
   is defined twice, and the seeds section holds exactly the seeds and ``decision``.

``test_the_check_is_not_vacuous`` feeds the check made-up ids and checks they are reported.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path

from ckptconform.clauses import CLAUSES, Clause

DOC = Path(__file__).resolve().parents[2] / "docs" / "flink-facts.md"

#: One entry of the doc: an HTML anchor directly followed by the bold lead it anchors.
ENTRY = re.compile(r'<a id="(?P<anchor>[^"]+)"></a>\*\*(?P<lead>[^*]+)\*\*')
SEEDS_HEADING = "## Seed documents"
SEED = re.compile(r"seed \d{3}")

#: A fact id as clause texts write it: a family letter group and a number, with an optional
#: sub-item letter (``S12a``), or a Flink test id (``T-BASE4``, ``T-EI3b``). Clause ids such as
#: ``MD-1`` (a hyphen before the number) and words such as ``S3A`` or ``P100x`` do not match.
FAMILIES = "ACC|CFG|CS|CC|E|H|L|MD|MEM|P|PTR|Q|REF|S|TO"
FACT_ID = re.compile(rf"(?<![\w-])(?:(?:{FAMILIES})\d+[a-z]?|T-[A-Z]+\d+[a-z]?)(?!\w)")


def doc_entries(text: str) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """The doc's fact entries and seed entries (lead -> anchor), and its format problems."""
    before, _, rest = text.partition(SEEDS_HEADING)
    seeds_part, _, after = rest.partition("\n## ")
    facts: dict[str, str] = {}
    seeds: dict[str, str] = {}
    problems: list[str] = []
    if not rest:
        problems.append(f"no section {SEEDS_HEADING!r}")
    anchors: set[str] = set()
    for part, target in ((before + after, facts), (seeds_part, seeds)):
        for match in ENTRY.finditer(part):
            anchor, lead = match["anchor"], match["lead"]
            if anchor != lead.replace(" ", "-"):
                problems.append(f"anchor {anchor!r} does not match its lead {lead!r}")
            if anchor in anchors:
                problems.append(f"anchor {anchor!r} defined twice")
            anchors.add(anchor)
            target[lead] = anchor
    for lead in seeds:
        if lead != "decision" and not SEED.fullmatch(lead):
            problems.append(f"seeds section holds {lead!r}, neither a seed nor 'decision'")
    for lead in facts:
        if lead == "decision" or SEED.fullmatch(lead):
            problems.append(f"{lead!r} is defined outside the seeds section")
    return facts, seeds, problems


def unresolved(
    clauses: Iterable[Clause], facts: Mapping[str, str], seeds: Mapping[str, str]
) -> list[str]:
    """``"<clause>: <id> (spec|text)"`` for every cited id the doc does not define."""
    missing: list[str] = []
    for clause in clauses:
        for source in clause.spec:
            if source == "decision" or SEED.fullmatch(source):
                if source not in seeds:
                    missing.append(f"{clause.id}: {source!r} (spec; not in the seeds section)")
            elif source not in facts:
                missing.append(f"{clause.id}: {source!r} (spec)")
        words = "\n".join((clause.title, clause.text, *clause.conditions, clause.rationale))
        mentioned = dict.fromkeys(FACT_ID.findall(words))
        missing.extend(f"{clause.id}: {fact!r} (text)" for fact in mentioned if fact not in facts)
    return missing


def _doc() -> tuple[dict[str, str], dict[str, str], list[str]]:
    return doc_entries(DOC.read_text(encoding="utf-8"))


def test_the_doc_is_well_formed() -> None:
    facts, seeds, problems = _doc()
    assert not problems, "docs/flink-facts.md:\n" + "\n".join(problems)
    assert set(seeds) == {"decision", *(f"seed {n:03d}" for n in range(5))}, sorted(seeds)
    assert len(facts) > 100, f"only {len(facts)} fact entries parsed from docs/flink-facts.md"


def test_every_cited_id_resolves() -> None:
    facts, seeds, _ = _doc()
    missing = unresolved(CLAUSES.values(), facts, seeds)
    assert not missing, (
        f"{len(missing)} cited ids are not defined in docs/flink-facts.md:\n" + "\n".join(missing)
    )


def test_the_check_is_not_vacuous() -> None:
    facts, seeds, _ = _doc()
    real = next(iter(CLAUSES.values()))
    fake = replace(
        real,
        id="FAKE-1",
        title="a made-up clause",
        text="Cites S99 and T-NOSUCH7 in its text, and S12a and T-BASE4, which exist; "
        "MD-1 and S3A are no fact ids.",
        conditions=("a condition citing S95 and S7",),
        rationale="As Flink: S96.",
        spec=("S7", "S98", "seed 000", "seed 009", "decision", "T-BASE4"),
    )
    assert unresolved([fake], facts, seeds) == [
        "FAKE-1: 'S98' (spec)",
        "FAKE-1: 'seed 009' (spec; not in the seeds section)",
        "FAKE-1: 'S99' (text)",
        "FAKE-1: 'T-NOSUCH7' (text)",
        "FAKE-1: 'S95' (text)",
        "FAKE-1: 'S96' (text)",
    ]
    # A seed defined among the facts rather than in the seeds section does not count.
    assert unresolved([fake], {**facts, "seed 009": "seed-009"}, seeds)[1:2] == [
        "FAKE-1: 'seed 009' (spec; not in the seeds section)"
    ]
    _, _, problems = doc_entries(
        '## Seed documents\n<a id="seed-000"></a>**seed 000** x\n<a id="S1"></a>**S1** y\n'
        '## 1. CS\n<a id="S2"></a>**S3** z\n<a id="S2"></a>**S2** w\n'
    )
    assert problems == [
        "anchor 'S2' does not match its lead 'S3'",
        "anchor 'S2' defined twice",
        "seeds section holds 'S1', neither a seed nor 'decision'",
    ]
