"""``ckptconform budget`` end to end on moto, tasks on threads (the Spark runner is the same
workload on executors): the reference within the default budgets, a broken storage with a HEAD
per stream named by the gate and failing a parallelism target the reference meets, a baseline
catching growth, faults with retries shown, throttling at the checkpoint burst."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ckptconform.budget.command import parse_fault
from ckptconform.budget.limits import DEFAULT_BUDGETS, first_attempts
from tests.meta.suite_runner import BROKEN_DIR

pytest.importorskip("moto", reason="the budget gate needs moto (the s3 extra)")
SMALL = ["--runner=threads", "--tasks=6", "--streams=3", "--checkpoints=2"]
#: S3's per-prefix limits only: the parallelism gate alone decides
LIMITS_ONLY = "[peak_per_second_per_prefix]\nwrite = 3500\nread = 5500\n"


def _budget(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    out = tmp_path / "out"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(BROKEN_DIR), env.get("PYTHONPATH")) if p)
    completed = subprocess.run(
        [sys.executable, "-m", "ckptconform.cli", "budget", f"--out={out}", *args],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600, check=False,
    )  # fmt: skip
    report = out / "budget.json"
    return completed, json.loads(report.read_text()) if report.exists() else {}


def test_reference_within_the_default_budgets(tmp_path):
    run, document = _budget(tmp_path, "--impl=ckptstore", *SMALL, "--write-baseline=base.json")
    assert run.returncode == 0, run.stdout + run.stderr
    assert document["passed"] is True
    assert (tmp_path / "out" / "budget.png").stat().st_size > 10_000
    assert (tmp_path / "base.json").exists()
    workers = [p for p in document["phases"] if p["kind"] == "worker"]
    assert workers
    for phase in workers:
        # nothing but one upload per file-backed stream on the worker path
        assert phase["operations"] == {"PutObject": phase["file_streams"]}, phase
    for phase in document["phases"]:
        if phase["name"].endswith(": metadata"):
            assert phase["operations"] == {"PutObject": 1}, phase
    assert "checkpoint 2: tasks" in run.stdout
    assert "every phase completed: True" in run.stdout
    progress = re.findall(r"^budget: (\d+)/(\d+) ", run.stdout + run.stderr, re.MULTILINE)
    assert progress, run.stdout + run.stderr
    assert all(int(done) <= int(total) == len(document["phases"]) for done, total in progress)
    assert run.stdout.rstrip().splitlines()[-1].startswith("budget: PASS — every phase within")
    assert "no orphan below the root" in run.stdout.rstrip().splitlines()[-1]
    audit = document["root_audit"]
    assert audit["clean"] is True, audit
    assert audit["orphan_count"] == 0
    # the last retained checkpoint and the savepoint; every file below the root is theirs
    assert len(audit["retained"]) == 2
    assert audit["listed"] == audit["referenced"] > 0
    assert document["verdict"] in (tmp_path / "out" / "budget.md").read_text()
    rows = {(r["phase"], r["operation"]): r for r in document["projection"]["rows"]}
    assert set(rows) == {
        ("checkpoint", "PutObject"), ("savepoint", "PutObject"), ("restore", "GetObject")
    }  # fmt: skip
    assert all(r["whole_class"] and r["parallelism"] == 6 for r in rows.values())


@pytest.mark.parametrize(
    ("impl", "left"),
    [
        ("dispose_keeps_files", "/chk-1/"),  # the subsumed checkpoint's directory stays
        ("taskowned_discard_noop", "/taskowned/"),  # its task-owned state stays
    ],
)
def test_files_a_disposal_leaves_are_orphans_named_by_the_root_audit(tmp_path, impl, left):
    run, document = _budget(tmp_path, f"--impl=ckptbroken.{impl}", *SMALL, "--no-plot")
    assert run.returncode == 1, run.stdout + run.stderr
    audit = document["root_audit"]
    assert audit["clean"] is False
    assert audit["orphan_count"] > 0
    assert all(left in url for url in audit["orphans"]), audit["orphans"]
    last = run.stdout.rstrip().splitlines()[-1]
    assert last.startswith("budget: FAIL"), last
    assert f"{audit['orphan_count']} orphan(s) below the root" in last
    assert audit["orphans"][0] in (tmp_path / "out" / "budget.md").read_text()


def test_a_head_per_stream_exceeds_the_default_budget(tmp_path):
    run, document = _budget(tmp_path, "--impl=ckptbroken.head_before_stream", *SMALL)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "EXCEEDED checkpoint 1: tasks: HeadObject" in run.stdout
    assert any(v["metric"] == "HeadObject" for v in document["violations"])


def test_a_parallelism_target_fails_an_extra_head_per_file_where_the_reference_passes(tmp_path):
    """A HEAD per state file multiplies the reads on one prefix: at parallelism 3,000 they pass
    S3's 5,500 reads per second per prefix, while the reference stays within both limits."""
    (tmp_path / "limits.toml").write_text(LIMITS_ONLY)
    limits = f"--budgets={tmp_path / 'limits.toml'}"
    target = ["--parallelism-target=3000", limits, "--no-plot"]
    run, reference = _budget(tmp_path / "ref", "--impl=ckptstore", *SMALL, *target)
    assert run.returncode == 0, run.stdout + run.stderr
    assert reference["projection"]["parallelism_target"] == 3000
    assert "at parallelism 3,000 the peak is" in run.stdout.splitlines()[-1]
    run, broken = _budget(tmp_path / "broken", "--impl=ckptbroken.head_before_stream", *SMALL,
                          *target)  # fmt: skip
    assert run.returncode == 1, run.stdout + run.stderr
    assert broken["violations"]
    for violation in broken["violations"]:  # the checkpoint's and the savepoint's tasks
        assert violation["source"] == "projection"
        assert violation["metric"].startswith("projected reads/s per prefix (checkpoints/<job>/")
        assert violation["actual"] > violation["limit"] == 5500
    last = run.stdout.rstrip().splitlines()[-1]
    assert last.startswith("budget: FAIL — at parallelism 3,000 the projected peak is "), last
    assert "reads/s per prefix in the checkpoint tasks, over S3's limit of 5,500" in last

    def reads_limit(document: dict) -> int:
        return min(
            r["limit_parallelism"]
            for r in document["projection"]["rows"]
            if r["whole_class"] and r["limit_class"] == "read"
        )

    assert reads_limit(broken) < 3000 <= reads_limit(reference)
    assert "| OVER |" in (tmp_path / "broken" / "out" / "budget.md").read_text()


def test_throttling_at_the_burst_is_recovered_and_timed(tmp_path):
    """Two PUTs per second per prefix: the checkpoint's burst is answered SlowDown, retried."""
    run, document = _budget(tmp_path, "--impl=ckptstore", *SMALL, "--throttle=PutObject:2")
    assert run.returncode == 0, run.stdout + run.stderr
    bursts = [p for p in document["phases"] if p["kind"] == "worker"]
    assert any(p["throttled"] for p in bursts), bursts
    for phase in bursts:
        if phase["throttled"]:
            assert phase["retried"] >= phase["throttled"]
            assert phase["recovery_seconds"] > 0
    assert "every phase completed under the faults" in run.stdout.splitlines()[-1]


def test_entropy_injection_spreads_the_checkpoint_over_prefixes(tmp_path):
    run, document = _budget(tmp_path, "--impl=ckptstore", *SMALL, "--entropy-length=4",
                            "--no-plot")  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    (row,) = [r for r in document["projection"]["rows"] if r["phase"] == "checkpoint"]
    assert row["prefixes"] > 3, row
    assert row["busiest_share"] < 0.4, row


def test_a_baseline_fails_a_run_whose_counts_grew(tmp_path):
    first, _ = _budget(tmp_path, "--impl=ckptstore", *SMALL, "--write-baseline=base.json")
    assert first.returncode == 0, first.stdout + first.stderr
    run, document = _budget(
        tmp_path, "--impl=ckptstore", *SMALL, "--baseline=base.json", "--budgets=none.toml"
    )
    assert run.returncode == 4, run.stdout + run.stderr  # a missing budget file: usage error
    (tmp_path / "loose.toml").write_text("[worker]\nrequests = 100000\n")
    run, document = _budget(
        tmp_path, "--impl=ckptbroken.head_before_stream", *SMALL, "--baseline=base.json",
        "--budgets=loose.toml",
    )  # fmt: skip
    assert run.returncode == 1, run.stdout + run.stderr
    grown = [v for v in document["violations"] if v["source"].startswith("baseline")]
    assert grown, document["violations"]
    assert "HeadObject" in {v["metric"] for v in grown}
    assert "baseline 0 (+" in run.stdout


def test_faults_are_retried_and_every_checkpoint_completes(tmp_path):
    run, document = _budget(
        tmp_path, "--impl=ckptstore", *SMALL, "--seed=3",
        "--fault=PutObject:0.1:503", "--fault=PutObject:0.1:drop",
        "--fault=PutObject:0.1:drop-after-commit",
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert document["totals"]["completed"] is True
    assert document["gated_on_budgets"] is False
    retried = sum(p["retried"] for p in document["phases"])
    failed = sum(p["failed"] for p in document["phases"])
    assert retried > 0
    assert retried == failed


def test_small_listing_pages_still_complete_every_phase(tmp_path):
    """Disposal of the checkpoints not retained reads every page of its listings."""
    run, document = _budget(tmp_path, "--impl=ckptstore", *SMALL, "--list-page-size=1")
    assert run.returncode == 0, run.stdout + run.stderr
    assert document["list_page_size"] == 1
    assert document["totals"]["completed"] is True


def test_hang_and_per_key_denial_fault_kinds():
    assert parse_fault("PutObject:0.5:hang") == {
        "operation": ["PutObject"], "rate": 0.5, "times": None, "key_contains": None,
        "delay": 30.0,
    }  # fmt: skip
    assert parse_fault("DeleteObjects:1:denied-per-key")["per_key"] is True


def test_usage_errors_exit_4(tmp_path):
    run, _ = _budget(tmp_path, "--impl=ckptstore", "--fault=PutObject:2:503", *SMALL)
    assert run.returncode == 4
    assert "rate must be in (0, 1]" in run.stderr
    run, _ = _budget(tmp_path, "--tasks=0", "--impl=ckptstore")
    assert run.returncode == 4
    assert "--tasks must be at least 1" in run.stderr
    run, _ = _budget(tmp_path, "--list-page-size=0", "--impl=ckptstore")
    assert run.returncode == 4
    assert "--list-page-size must be at least 1" in run.stderr
    run, _ = _budget(tmp_path, "--parallelism-target=0", "--impl=ckptstore")
    assert run.returncode == 4
    assert "--parallelism-target must be at least 1" in run.stderr


def test_same_workload_same_counts_on_moto_and_s3rver(tmp_path):
    """The counting proxy on s3rver sees exactly what the built-in ledger sees on moto."""
    from ckptconform.backends.s3rver import S3rverBackend

    reason = S3rverBackend().availability()
    if reason is not None:
        pytest.skip(reason)
    shape = [*SMALL, "--no-savepoint"]
    moto_run, on_moto = _budget(tmp_path / "moto", "--impl=ckptstore", *shape)
    # the default budgets with the one listing of claim-then-write (MD-13) on the coordinator
    budgets = DEFAULT_BUDGETS.replace(
        "[coordinator]\nHeadBucket = 0\nListObjectsV2 = 0",
        "[coordinator]\nHeadBucket = 0\nListObjectsV2 = 1",
    )
    assert budgets != DEFAULT_BUDGETS
    claims = tmp_path / "claims.toml"
    claims.write_text(budgets)
    s3rver_run, on_s3rver = _budget(
        tmp_path / "s3rver", "--impl=ckptstore", "--backend=s3rver", f"--budgets={claims}", *shape
    )
    assert moto_run.returncode == 0, moto_run.stdout + moto_run.stderr
    assert s3rver_run.returncode == 0, s3rver_run.stdout + s3rver_run.stderr
    assert "via counting proxy" in on_s3rver["backend"]
    # first attempts: s3rver answers some parallel deletes with its own 500, which is retried
    counts_moto = {p["name"]: first_attempts(p) for p in on_moto["phases"]}
    counts_s3rver = {p["name"]: first_attempts(p) for p in on_s3rver["phases"]}
    # s3rver ignores If-None-Match, so the kit passes allow_unconditional_metadata and the
    # reference claims the checkpoint before it publishes _metadata (a claim's PutObject, one
    # ListObjectsV2, the claim's DeleteObject), by design: the only requests the server changes
    for name, counts in counts_s3rver.items():
        if name.endswith(": metadata"):
            assert counts.pop("ListObjectsV2", 0) == 1, (name, counts)
            assert counts.pop("DeleteObject", 0) == 1, (name, counts)
            counts["PutObject"] -= 1
    assert counts_s3rver == counts_moto
