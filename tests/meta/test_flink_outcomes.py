"""Meta-test: CONFORMANCE.md's Flink columns agree with the target, the reproducers and the text.

The columns are rendered from ``conformance/ckptconform/data/flink-2.3.0-outcomes.json``, which
``scripts/flink_outcomes.py`` writes from the conformance reports of ``--impl=flink`` and
``--impl=flink-jobmanager`` (the CI's Flink leg checks it against its own runs). Without a JVM,
this test checks the rest (issue 12, item 3): every clause has an outcome on both targets;
every clause Flink fails is a deviation the target declares (its ``known_failures`` are made
from them) with a reason and a reproducer in tests/flink/test_flink_deviations.py whose
docstring names the clause, and every reproducer belongs to a deviation; a clause that goes
beyond Flink says so in its rationale; a SHOULD clause Flink does not meet is the only failure
without a reproducer.
"""

from __future__ import annotations

import ast

import pytest
from scripts.conformance_doc import FLINK_CELLS, FLINK_OUTCOMES, flink_outcomes

from ckptconform.clauses import CLAUSES
from tests.meta.suite_runner import REPO

flinktarget = pytest.importorskip("flinktarget")

REPRODUCERS = REPO / flinktarget.REPRODUCERS
DEVIATION = ("flink-bug", "beyond-flink")


def _outcomes() -> dict:
    document = flink_outcomes()
    assert document is not None, f"{FLINK_OUTCOMES} is missing: run scripts/flink_outcomes.py"
    return document


def _reproducers() -> dict[str, str]:
    """Test name -> docstring, for the tests of tests/flink/test_flink_deviations.py."""
    tree = ast.parse(REPRODUCERS.read_text(encoding="utf-8"))
    return {
        node.name: ast.get_docstring(node) or ""
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
    }


def test_the_outcomes_cover_both_targets_and_every_clause():
    document = _outcomes()
    assert document["flink"] == flinktarget.__version__
    assert set(document["targets"]) == set(flinktarget.DEVIATIONS)
    for name, target in document["targets"].items():
        assert list(target["clauses"]) == list(CLAUSES), f"{name}: regenerate the outcomes"
        assert target["version"] == flinktarget.__version__
        odd = {
            c: r["outcome"] for c, r in target["clauses"].items() if r["outcome"] not in FLINK_CELLS
        }
        assert odd == {}, f"{name}: outcomes that are none of {list(FLINK_CELLS)}"


@pytest.mark.parametrize("name", sorted(flinktarget.DEVIATIONS))
def test_every_failure_is_a_declared_deviation(name):
    """The clauses Flink fails are exactly the target's deviations, with the same reasons; a
    deviation whose tests did not run in the recorded runs (a leg they turned off: the Spark
    leg's SPK-3) is n/a there."""
    declared = flinktarget.DEVIATIONS[name]
    clauses = _outcomes()["targets"][name]["clauses"]
    failed = {
        cid: (r["outcome"], r["reason"], r["reproducer"])
        for cid, r in clauses.items()
        if r["outcome"] in DEVIATION and "reproducer" in r
    }
    not_run = {cid for cid in declared if clauses[cid]["outcome"] == "n/a"}
    for cid in not_run:
        assert "leg is turned off" in clauses[cid]["reason"], (name, cid, clauses[cid])
    assert failed == {
        cid: (d.kind, d.reason, d.reproducer) for cid, d in declared.items() if cid not in not_run
    }
    target = {"flink": flinktarget.target_unchecked}.get(
        name, flinktarget.jobmanager_target_unchecked
    )
    assert target.name == name
    assert dict(target.known_failures or {}) == {
        cid: d.known_failure() for cid, d in declared.items()
    }
    for cid, record in clauses.items():
        if record["outcome"] in DEVIATION and "reproducer" not in record:
            assert CLAUSES[cid].level == "SHOULD", f"{name}: {cid} fails without a reproducer"


@pytest.mark.parametrize("name", sorted(flinktarget.DEVIATIONS))
def test_reproducers_name_their_clause(name):
    tests = _reproducers()
    for cid, deviation in flinktarget.DEVIATIONS[name].items():
        assert deviation.reproducer in tests, f"{cid}: no test {deviation.reproducer}"
        docstring = tests[deviation.reproducer]
        assert cid in docstring, f"{deviation.reproducer}'s docstring does not name {cid}"
        label = "Flink bug" if deviation.kind == "flink-bug" else "Beyond Flink"
        assert docstring.startswith(label), f"{deviation.reproducer}: not '{label} ...'"


def test_every_reproducer_belongs_to_a_deviation():
    used = {d.reproducer for table in flinktarget.DEVIATIONS.values() for d in table.values()}
    pinned = {
        name
        for name, doc in _reproducers().items()
        if doc.startswith(("Flink bug", "Beyond Flink"))
    }
    assert pinned - used == set(), "reproducers no deviation names"


def test_clauses_beyond_flink_say_so():
    """A clause that asks more than Flink does says so (and why) in its rationale."""
    for name, target in _outcomes()["targets"].items():
        for cid, record in target["clauses"].items():
            if record["outcome"] == "beyond-flink":
                assert "beyond Flink" in CLAUSES[cid].rationale, f"{name}: {cid}'s rationale"


def test_the_columns_are_rendered():
    text = (REPO / "CONFORMANCE.md").read_text(encoding="utf-8")
    document = _outcomes()
    assert f"## Flink {document['flink']}" in text
    for cid in CLAUSES:
        assert f"\n| {cid} | {CLAUSES[cid].level} | " in text


def test_a_deviation_whose_tests_did_not_run_is_not_applicable():
    """scripts/flink_outcomes.py: a declared deviation all of whose tests were skipped (the
    Spark leg turned off, for SPK-3) is n/a with the skip's reason; one that passed is refused."""
    import importlib.util

    path = REPO / "scripts" / "flink_outcomes.py"
    spec = importlib.util.spec_from_file_location("flink_outcomes", path)
    assert spec is not None
    assert spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    off = "the Spark leg is turned off (--spark-master=none)"
    deviations = {"SPK-3": flinktarget.FS_DEVIATIONS["SPK-3"]}
    report = {
        "clauses": {
            cid: {"status": "SKIP", "reasons": [off]} if cid == "SPK-3" else {"status": "PASS"}
            for cid in CLAUSES
        }
    }
    found = script.clause_outcomes(report, deviations)
    assert found["SPK-3"] == {"outcome": "n/a", "reason": off}
    report["clauses"]["SPK-3"] = {"status": "PASS"}
    with pytest.raises(script.OutcomeError, match="SPK-3 is a declared deviation"):
        script.clause_outcomes(report, deviations)
