"""``ckptconform bench`` end to end: ``--quick`` against the reference on local and moto S3
writes every figure, the targets and the three reports, and its exit code follows only the
gated figures; bad arguments are usage errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.meta.suite_runner import BROKEN_DIR

MIB = 1 << 20


def _bench(tmp_path: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(BROKEN_DIR), env.get("PYTHONPATH")) if p)
    return subprocess.run(
        [sys.executable, "-m", "ckptconform.cli", "bench", *args],
        capture_output=True, text=True, cwd=tmp_path, timeout=timeout, check=False, env=env,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "--impl is required"),
        (("--impl=ckptstore", "--reps=2"), "--reps must be at least 3"),
        (("--impl=ckptstore", "--sizes=0"), "--sizes wants at least one size"),
        (("--impl=ckptstore", "--sizes=x"), "--sizes wants MiB numbers"),
        (("--impl=ckptstore", "--backend=nowhere"), "unknown backend 'nowhere'"),
        (("--impl=no_such_module_here",), "no_such_module_here"),
    ],
)
def test_usage_errors(tmp_path, args, message):
    run = _bench(tmp_path, *args, f"--out={tmp_path / 'out'}")
    assert run.returncode == 4, run.stdout + run.stderr
    assert message in run.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.timeout(300)
def test_quick_run_against_the_reference(tmp_path):
    pytest.importorskip("moto", reason="the S3 leg needs moto (the s3 extra)")
    out = tmp_path / "out"
    run = _bench(tmp_path, "--impl=ckptstore", "--quick", f"--out={out}")
    document = json.loads((out / "bench.json").read_text())
    # the exit code follows the gated figures only, and the reference passes them: CI fails
    # when a change makes a checkpoint send more requests or a large stream hold more memory
    assert run.returncode == (0 if document["gate"]["passed"] else 1), run.stdout + run.stderr
    assert document["gate"]["passed"], run.stdout + run.stderr
    gated = [c for c in document["checks"] if c["gated"]]
    assert document["gate"]["passed"] == (
        all(c["passed"] for c in gated) and not document["gate"]["errors"]
    )
    assert document["quick"] is True
    assert document["plan"]["reps"] == 3
    figures = {f["id"]: f for f in document["figures"]}
    for leg in ("local", "moto"):
        for size in (1, 16):
            write, read = figures[f"write/{leg}/{size}MiB"], figures[f"read/{leg}/{size}MiB"]
            assert write["error"] is None, write
            assert read["error"] is None, read
            assert all(len(s) == 3 for s in write["seconds"].values())
            assert "target" in write["values"]
            assert write["baseline"] in write["values"]
    assert figures["write/local/1MiB"]["baseline"] == "fsspec+fsync"  # the reference fsyncs
    assert set(figures["write/local/1MiB"]["values"]) == {
        "target", "fsspec+fsync", "fsspec", "disk"
    }  # fmt: skip
    assert figures["write/moto/1MiB"]["baseline"] == "fsspec"
    assert figures["inline"]["values"]["target"]["median"] > 0
    assert "target 8 / 1" in figures["threads"]["ratios"]
    rss = {(e["leg"], e["variant"]): e for e in document["rss"]}
    assert set(rss) == {(leg, v) for leg in ("local", "moto") for v in ("target", "fsspec")}
    assert all(e["size"] == 256 * MIB and "error" not in e for e in rss.values()), rss
    rows = document["requests"]["rows"]
    assert [r["what"] for r in rows if r["kind"] == "checkpoint"] == [
        "checkpoint 1", "checkpoint 2"
    ]  # fmt: skip
    names = {c["name"] for c in document["checks"]}
    assert "S3 requests per checkpoint above the minimum (moto)" in names
    assert "peak RSS writing 256 MiB, local: above baseline" in names
    assert "inline 1000 B in 100 B writes: cost relative to io.BytesIO" in names
    markdown = (out / "bench.md").read_text()
    assert "## Targets" in markdown
    assert "| write 16 MiB, moto |" in markdown
    assert (out / "bench.png").stat().st_size > 10_000
    assert "Targets" in run.stdout
    assert "written:" in run.stdout


@pytest.mark.timeout(300)
def test_a_head_per_stream_fails_the_run_whatever_the_ratios(tmp_path):
    pytest.importorskip("moto", reason="the S3 leg needs moto (the s3 extra)")
    out = tmp_path / "out"
    run = _bench(
        tmp_path, "--impl=ckptbroken.head_before_stream", "--backend=moto", "--sizes=1",
        "--reps=3", "--no-rss", "--tasks=2", "--checkpoints=2", f"--out={out}",
    )  # fmt: skip
    assert run.returncode == 1, run.stdout + run.stderr
    document = json.loads((out / "bench.json").read_text())
    failed = document["gate"]["failed"]
    assert len(failed) == 1
    assert failed[0].startswith("S3 requests per checkpoint above the minimum (moto)")
    rows = [r for r in document["requests"]["rows"] if r["kind"] == "checkpoint"]
    assert len(rows) == 2
    for row in rows:
        assert row["operations"].get("HeadObject", 0) >= row["file_streams"] > 0, row
        assert row["requests"] > row["minimum"], row
    assert "GATE FAILED: S3 requests per checkpoint above the minimum" in run.stdout


def test_a_target_without_file_state_gets_no_file_figures(tmp_path):
    pytest.importorskip("moto", reason="the S3 leg needs moto (the s3 extra)")
    out = tmp_path / "out"
    run = _bench(tmp_path, "--impl=ckptstore-jobmanager", "--quick", f"--out={out}")
    assert run.returncode == 0, run.stdout + run.stderr
    document = json.loads((out / "bench.json").read_text())
    assert document["figures"] == []
    assert document["rss"] == []
    assert "no file-backed figures" in run.stdout
    rows = [r for r in document["requests"]["rows"] if r["kind"] == "checkpoint"]
    assert [(r["requests"], r["minimum"]) for r in rows] == [(1, 1), (1, 1)]  # _metadata only
