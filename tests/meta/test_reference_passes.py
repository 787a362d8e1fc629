"""Meta-test: the reference passes every clause of the suite on local, memory, moto and Spark.

A clause may be skipped only because the target does not claim its capability; a skip for any
other reason (a backend that did not start, a missing dependency) fails this test.

CI runs the main job (the same suite against the reference, with the moto, Spark and Flink legs
required) and the JobManager reference's run (``scripts/jobmanager.sh``) just before the tests
and names their reports in ``CKPTCONFORM_REFERENCE_REPORT`` and
``CKPTCONFORM_JOBMANAGER_REPORT``; the runs are then read from those reports instead of being
run a second time. ``scripts/test.sh`` names them too while they are of the same tree
(``scripts/report_reuse.py``). Without the variables the suite runs here.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tests.meta.suite_runner import SuiteRun, run_suite

BACKENDS = "local,memory,moto"
#: The JobManager keeps state in memory; its file-system parts are the FS reference's, which the
#: main job checks on every leg (CI budget: the memory leg adds nothing here).
JOBMANAGER_BACKENDS = "local,moto"


def _report_run(variable: str, target: str) -> SuiteRun | None:
    """The run of ``target`` whose report CI names in ``variable``, if it does."""
    path = os.environ.get(variable)
    if not path:
        return None
    report = json.loads(Path(path).read_text(encoding="utf-8"))
    header = report["header"]
    assert header["target"]["name"] == target, header["target"]
    command = [f"(the report {path})"]
    return SuiteRun(command, int(header["exit_status"]), "", report)


def _selected(run: SuiteRun) -> set[str]:
    return {b["name"] for b in run.report["header"]["backends"] if b["status"] == "selected"}


def _main_job_run() -> SuiteRun | None:
    """The main job's report of this checkout, when CI names it."""
    found = _report_run("CKPTCONFORM_REFERENCE_REPORT", "ckptstore")
    if found is not None:
        assert set(BACKENDS.split(",")) <= _selected(found), found.report["header"]
        # the README's main job runs the Spark leg where Java is found, without requiring it
        assert found.report["header"]["spark"]["status"] == "selected", found.report["header"]
    return found


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory):
    found = _main_job_run()
    if found is not None:
        return found
    workdir = tmp_path_factory.mktemp("reference")
    return run_suite(
        "ckptstore", f"{BACKENDS},spark", workdir, "--require-legs=moto,spark,flink", fresh=True
    )


@pytest.fixture(scope="module")
def jobmanager_run(tmp_path_factory):
    found = _report_run("CKPTCONFORM_JOBMANAGER_REPORT", "ckptstore-jobmanager")
    if found is not None:
        assert set(JOBMANAGER_BACKENDS.split(",")) <= _selected(found), found.report["header"]
        return found
    # without the Spark leg, which runs against the FS reference (CI budget)
    return run_suite(
        "ckptstore-jobmanager", JOBMANAGER_BACKENDS, tmp_path_factory.mktemp("jm"), fresh=True
    )


def _check_passes(run, allowed_unclaimed, backends=BACKENDS, allowed_reasons=None):
    statuses = run.clause_status()
    bad = {cid: s for cid, s in statuses.items() if s not in {"PASS", "SKIP"}}
    assert bad == {}, run.describe()
    assert run.returncode == 0, run.describe() + "\n" + run.output[-3000:]
    target = run.report["header"]["target"]
    target_name = target["name"] if isinstance(target, dict) else target
    allowed: set[str] = set()
    spark = run.report["header"]["spark"]
    if spark["status"] != "selected":
        allowed.add(spark["reason"])
    flink = run.report["header"].get("flink", {})
    if flink.get("status") == "skipped" and not flink.get("required"):
        allowed.add(flink["reason"])  # Flink's own loader (FLK) where this machine lacks it
    # legs beyond BACKENDS (the main job also selects minio) may skip with their own reason
    allowed |= {
        b["reason"]
        for b in run.report["header"]["backends"]
        if b["name"] not in backends.split(",") and b["status"] == "skipped"
    }
    # REQ-12 needs a server that drops connections: the sftp leg, which these runs lack
    allowed |= {
        f"backend {b} cannot drop a client's connection (sftp can)" for b in backends.split(",")
    }
    # "capability A, B not claimed by T": every capability named must be one T may lack
    unclaimed = re.compile(rf"capability (.+) not claimed by {re.escape(str(target_name))}")

    def explained(reason: str) -> bool:
        lacking = unclaimed.fullmatch(reason)
        if lacking is not None:
            return set(lacking.group(1).split(", ")) <= set(allowed_unclaimed)
        return reason in allowed or bool(allowed_reasons and allowed_reasons.search(reason))

    for cid, entry in run.report["clauses"].items():
        if entry["status"] == "SKIP":
            unexplained = {reason for reason in entry["reasons"] if not explained(reason)}
            assert not unexplained, f"{cid} was skipped for other reasons: {entry}"
    for backend in backends.split(","):
        assert any(
            backend == test.get("backend") and test["status"] == "PASS"
            for test in run.report["tests"]
        ), f"no test passed on backend {backend}"


def test_reference_passes_every_clause(reference_run):
    _check_passes(reference_run, allowed_unclaimed={"memory-limit", "in-memory-checkpoints"})
    claimed = set(reference_run.report["header"]["capabilities"])
    assert not claimed & {"memory-limit", "in-memory-checkpoints"}
    spark = reference_run.report["header"]["spark"]
    assert spark["master"] == "local-cluster[2,1,1024]", spark
    assert len(spark["executors"]) == 2, spark
    assert spark["tasks"] > 0, spark
    on_every_backend = {"SPK-1", "SPK-2", "SPK-3", "SPK-7", "SPK-8"}  # others: object stores
    for cid, entry in reference_run.report["clauses"].items():
        if cid.startswith("SPK-"):
            assert entry["backends"]["spark"] == "PASS", (cid, entry)  # the Spark leg's column
            passed_on = {
                test["backend"]
                for test in reference_run.report["tests"]
                if cid in test["clauses"] and test["status"] == "PASS" and test.get("spark")
            }
            assert "moto" in passed_on, (cid, entry)
            if cid in on_every_backend:
                assert "local" in passed_on, (cid, entry)
    passed = {cid for cid, s in reference_run.clause_status().items() if s == "PASS"}
    skipped = {cid for cid, s in reference_run.clause_status().items() if s == "SKIP"}
    legs = {
        b["name"] for b in reference_run.report["header"]["backends"] if b["status"] == "selected"
    }
    # REQ-12 needs the sftp leg's server, which only the main job's run has
    needs_sftp = {"REQ-12"} if "sftp" not in legs else set()
    assert skipped == {
        cid for cid in skipped if cid.startswith("MEM-") or cid == "MD-10" or cid in needs_sftp
    }
    assert passed, "no clause passed"


def test_jobmanager_reference_passes_its_clauses(jobmanager_run):
    unclaimed = {
        "file-layout",
        "inline-state",
        "task-owned-state",
        "fast-duplicate",
        "entropy-injection",
        "flat-layout",
        "retry-budget",  # REQ-6 times a state upload; the JobManager's state is inline
    }
    # STR-15 and MD-12 inject faults into the writes of state files, which this storage keeps
    # in memory: its bytes never meet the fault
    in_memory = re.compile(
        r"the target's bytes did not meet the fault|a file size limit of a child process fails "
        r"writes of local files only|backend \w+ has object_store=False"
    )
    _check_passes(
        jobmanager_run,
        allowed_unclaimed=unclaimed,
        backends=JOBMANAGER_BACKENDS,
        allowed_reasons=in_memory,
    )
    mem = {cid: s for cid, s in jobmanager_run.clause_status().items() if cid.startswith("MEM-")}
    assert mem, "no MEM clause in the report"
    assert set(mem.values()) == {"PASS"}, mem
