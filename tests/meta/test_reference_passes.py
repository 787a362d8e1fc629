"""Meta-test: the reference passes every clause of the suite on local, memory and moto.

A clause may be skipped only because the target does not claim its capability; a skip for any
other reason (a backend that did not start, a missing dependency) fails this test.
"""

from __future__ import annotations

import pytest

from tests.meta.suite_runner import run_suite

BACKENDS = "local,memory,moto"


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("reference")
    return run_suite("ckptstore", BACKENDS, workdir, "--require-legs=moto,spark")


@pytest.fixture(scope="module")
def jobmanager_run(tmp_path_factory):
    return run_suite(
        "ckptstore-jobmanager",
        BACKENDS,
        tmp_path_factory.mktemp("jobmanager"),
        "--require-legs=spark",
    )


def _check_passes(run, allowed_unclaimed):
    statuses = run.clause_status()
    bad = {cid: s for cid, s in statuses.items() if s not in {"PASS", "SKIP"}}
    assert bad == {}, run.describe()
    assert run.returncode == 0, run.describe() + "\n" + run.output[-3000:]
    target = run.report["header"]["target"]
    target_name = target["name"] if isinstance(target, dict) else target
    allowed = {f"capability {cap} not claimed by {target_name}" for cap in allowed_unclaimed}
    for cid, entry in run.report["clauses"].items():
        if entry["status"] == "SKIP":
            unexplained = set(entry["reasons"]) - allowed
            assert not unexplained, f"{cid} was skipped for other reasons: {entry}"
    for backend in BACKENDS.split(","):
        assert any(
            backend == test.get("backend") and test["status"] == "PASS"
            for test in run.report["tests"]
        ), f"no test passed on backend {backend}"


def test_reference_passes_every_clause(reference_run):
    _check_passes(reference_run, allowed_unclaimed={"memory-limit"})
    claimed = set(reference_run.report["header"]["capabilities"])
    assert "memory-limit" not in claimed
    passed = {cid for cid, s in reference_run.clause_status().items() if s == "PASS"}
    skipped = {cid for cid, s in reference_run.clause_status().items() if s == "SKIP"}
    assert skipped == {cid for cid in skipped if cid.startswith("MEM-")}
    assert passed, "no clause passed"


def test_jobmanager_reference_passes_its_clauses(jobmanager_run):
    unclaimed = {
        "file-layout",
        "inline-state",
        "task-owned-state",
        "fast-duplicate",
        "entropy-injection",
    }
    _check_passes(jobmanager_run, allowed_unclaimed=unclaimed)
    mem = {cid: s for cid, s in jobmanager_run.clause_status().items() if cid.startswith("MEM-")}
    assert mem, "no MEM clause in the report"
    assert set(mem.values()) == {"PASS"}, mem
