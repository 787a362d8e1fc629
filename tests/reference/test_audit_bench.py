"""``scripts/audit_bench.py`` at 20,000 objects: it runs, every audit reports what the generator
put there, and on moto the audit sends exactly the minimum (counted by the kit's ledger); its
Spark leg on a small root gives the one-process result.

The minimum is stated here from the generated shape, not taken from the script: 20 listing
pages of 1,000 keys, one GetObject per ``_metadata`` (2 jobs x 3 retained checkpoints) and one
HeadObject per file referenced from outside the root (8). Timings are not judged here: on a
shared machine they say nothing; ``python scripts/audit_bench.py`` reports them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scripts import audit_bench
from scripts.audit_tree import shape_for, truth

OBJECTS = 20_000


def test_the_benchmark_runs_and_the_audit_on_moto_sends_the_minimum(tmp_path: Path) -> None:
    pytest.importorskip("s3fs")
    from ckptconform.backends.moto import MotoBackend

    reason = MotoBackend().availability()
    if reason is not None:
        pytest.skip(f"the moto leg is unavailable: {reason}")
    shape = shape_for(OBJECTS)
    assert (shape.jobs, shape.retained, shape.outside) == (2, 3, 8)
    expected = truth(shape)
    assert expected.orphans_by_kind["shared"] == 2 * 32 * (25 + 25)

    document = audit_bench.run_bench(
        OBJECTS, 1, ["local", "moto"], tmp_path / "work", log=lambda _: None
    )

    assert audit_bench.problems(document) == []
    local, moto = document["legs"]["local"], document["legs"]["moto"]
    assert local["written"]["objects"] == moto["written"]["objects"] == OBJECTS
    assert local["written"]["metadata_files"] == 6
    minimum = {"ListObjectsV2": 20, "GetObject": 6, "HeadObject": 8}
    assert moto["requests"]["minimum"] == minimum
    assert moto["requests"]["audit"] == [minimum]
    # the raw listing reads the same pages, and nothing else
    assert moto["requests"]["s3fs find"] == [{"ListObjectsV2": 20}]
    for leg, baselines in ((local, ["find", "os.walk+stat"]), (moto, ["s3fs find"])):
        assert set(leg["ratios"]) == {f"{b} / audit" for b in baselines}
        assert all(r["median"] > 0 for r in leg["ratios"].values())
        assert set(leg["audit_phases"]) == {"list", "read _metadata", "check outside", "join"}

    # the reports, and the README's block from the saved JSON (no measurement)
    saved = tmp_path / "run.json"
    saved.write_text(json.dumps(document), encoding="utf-8")
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n{audit_bench.BEGIN}\nold\n{audit_bench.END}\n\nafter\n")
    assert audit_bench.main(["--render", str(saved), "--readme", str(readme),
                             "--out", str(tmp_path / "out")]) == 0  # fmt: skip
    text = readme.read_text()
    assert "old" not in text
    assert text.endswith("\nafter\n")
    assert "| moto: the audit's requests (ledger) |" in text
    assert "= the minimum: pass" in text
    assert (tmp_path / "docs" / "audit-bench.json").exists()
    assert "Where the audit's time goes" in (tmp_path / "out" / "audit-bench.md").read_text()


def test_the_spark_leg_gives_the_one_process_result(tmp_path: Path) -> None:
    """The Spark row: the audit on Spark and in one process, interleaved, agree with each
    other and with the generator (a small root, on ``local[2]``, which starts one JVM: that
    the cluster's executors give the same result is test_admin_audit_spark.py's)."""
    from ckptstore.admin.spark_audit import spark_unavailable_reason

    reason = spark_unavailable_reason()
    if reason is not None:
        pytest.skip(f"the Spark leg is unavailable: {reason}")
    shape = shape_for(2_000)
    spark = audit_bench.spark_leg(shape, 1, tmp_path / "work", lambda _: None, "local[2]")
    document = {"legs": {"spark": spark}, "target": audit_bench.TARGET}
    assert audit_bench.problems(document) == []
    assert spark["same_result"] is True
    assert spark["master"] == "local[2]"
    assert set(spark["seconds"]) == {"spark", "one process"}
    assert spark["ratio"]["median"] > 0
    rows = audit_bench._rows(document)
    assert rows[0][0] == "spark (local[2]) vs one process"
    assert rows[0][-1] == "same result: pass"
