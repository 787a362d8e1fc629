"""``ckptstore audit --spark-master``: the Spark run gives the single-process run's result.

Trees: ``tests/reference/_audit_trees.py`` (written through raw fsspec) and Apache Flink 2.3.0's
own tree (``fixtures/flink``), on local files and on moto (the kit's server; the executors reach
it on 127.0.0.1 and the ledger counts their requests too). Each Spark test compares
``to_dict()`` of both runs with the same ``audited_at`` (ages are computed from it), intact and
broken, and on moto counts the requests: the plan's delimited listings, one page per unit, one
GET per ``_metadata``, a HEAD only for the file outside the root.

One Spark session serves the module, on ``local[2]`` (``$CKPTSTORE_TEST_SPARK_MASTER`` picks
another, e.g. ``local-cluster[2,1,1024]``): its Python workers are processes of their own,
started by the JVM, that never saw this process's registry of storage options, so the options
must travel inside the tasks as on a cluster; ``local-cluster`` would add two executor JVMs of
1 GiB each and a minute of start-up on this two-core machine and prove nothing more about
this code. The listing plan's own tests (units partition the listing) need no Spark.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import tarfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import sparkrun
from ckptstore.admin import partitioned_listing, spark_audit
from ckptstore.admin.audit import AuditResult, AuditRun, run_audit
from ckptstore.admin.cli import main
from ckptstore.admin.listing import list_files
from ckptstore.admin.partitioned_listing import (
    ListingUnit,
    list_unit,
    plan_listing,
    shared_range_points,
)
from ckptstore.errors import InvalidArgumentError
from ckptstore.paths import parse_storage_path
from ckptstore.stores.registry import filesystem_for, register_path
from tests.reference._audit_trees import (
    ARCHIVE,
    COMPLETED,
    JOB,
    OUTSIDE_FILE,
    SAVEPOINT,
    Tree,
    build_tree,
)
from tests.reference._fsroot import FsRoot
from tests.reference._moto import S3Root

MASTER = os.environ.get("CKPTSTORE_TEST_SPARK_MASTER", "local[2]")
FLINK_JOB = "flinkckpt/28035f78a330f28ba4ff4840f31b71d0"
#: shared files with Flink's random names, so that key ranges of shared/ hold something
EXTRA_SHARED = 24


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    reason = spark_audit.spark_unavailable_reason()
    if reason is not None:
        pytest.skip(f"the Spark audit cannot run here: {reason}")
    with spark_audit.spark_session(MASTER) as session:
        yield session


def _plain(result: AuditResult) -> dict[str, Any]:
    return dataclasses.replace(result, audited_at=0.0).to_dict()


def _both(spark: Any, root: str, options: Any = None, **kwargs: Any) -> tuple[AuditRun, AuditRun]:
    """The single-process run and the Spark run of ``root``; their results must be equal."""
    one = run_audit(root, options, moved_from=kwargs.get("moved_from"))
    distributed = spark_audit.run_spark_audit(spark, root, options, **kwargs)
    assert _plain(distributed.result) == _plain(one.result)
    assert distributed.reads == one.reads
    assert distributed.referenced == one.referenced
    return one, distributed


def _status(result: AuditResult) -> dict[str, str]:
    return {c.relative: c.status for c in result.checkpoints}


def _local_tree(fsroot: FsRoot) -> Tree:
    return build_tree(fsroot.sub("root"), fsroot.sub("elsewhere"), fsroot.write)


def _with_extra_shared(tree: Tree, put: Callable[[str, bytes], None]) -> None:
    for n in range(EXTRA_SHARED):
        put(tree.url(f"{JOB}/shared/{uuid.UUID(int=n * 0x0B00_0000 << 96)}"), b"s" * n)


@pytest.fixture
def local(tmp_path: Path) -> FsRoot:
    import fsspec

    root = tmp_path / "local"
    root.mkdir()
    return FsRoot("local", parse_storage_path(str(root)).url, fsspec.filesystem("file"))


# ------------------------------------------------------------------ the plan (no Spark)


def _by_units(fs: Any, root: str, **kwargs: Any) -> list[Any]:
    path = parse_storage_path(root)
    plan = plan_listing(fs, path, **kwargs)
    listed = list(plan.files)
    for unit in plan.units:
        listed.extend(list_unit(fs, path, unit))
    return listed


def test_the_units_of_a_plan_partition_the_listing(fsroot: FsRoot) -> None:
    tree = _local_tree(fsroot)
    _with_extra_shared(tree, fsroot.write)
    root = parse_storage_path(tree.root)
    fs = filesystem_for(root, register_path(root))
    whole = list(list_files(fs, root))
    parts = _by_units(fs, tree.root)
    assert sorted(parts, key=lambda f: f.url) == sorted(whole, key=lambda f: f.url)
    plan = plan_listing(fs, root)
    assert [u.directory for u in plan.units] == [JOB, SAVEPOINT]
    assert [f.url for f in plan.files] == [tree.url("notes.txt")]


@pytest.mark.parametrize("ranges", [1, 4, 16])
def test_on_s3_key_ranges_of_shared_partition_the_listing(s3: S3Root, ranges: int) -> None:
    pytest.importorskip("s3fs")
    tree = build_tree(s3.sub("root"), s3.sub("elsewhere"), s3.put)
    _with_extra_shared(tree, s3.put)
    root = parse_storage_path(tree.root)
    fs = filesystem_for(root, register_path(root, s3.storage_options))
    whole = list(list_files(fs, root))
    with s3.ledger.small_pages(2):
        parts = _by_units(fs, tree.root, shared_ranges=ranges)
    assert len(parts) == len({f.url for f in parts})
    assert sorted(parts, key=lambda f: f.url) == sorted(whole, key=lambda f: f.url)
    units = plan_listing(fs, root, shared_ranges=ranges).units
    assert len(units) == (1 if ranges == 1 else ranges + 2) + 1  # the job's, the savepoint's
    shared = [f for f in whole if f"{JOB}/shared/" in f.url]
    if ranges > 1:  # every shared range holds some of the shared files
        counts = [sum(1 for f in shared if u.holds(f.url[len(tree.root) + 1 :])) for u in units]
        assert all(counts[1 : ranges + 1]), counts


def test_shared_range_points_cut_by_the_first_hex_character() -> None:
    assert shared_range_points("j/shared", 4) == [
        "j/shared/",
        "j/shared/4",
        "j/shared/8",
        "j/shared/c",
        "j/shared0",
    ]
    unit = ListingUnit("j", "j/shared/4", "j/shared/8")
    assert unit.holds("j/shared/4abc")
    assert unit.holds("j/shared/8")
    assert not unit.holds("j/shared/4")
    assert not unit.holds("j/shared/8a")
    with pytest.raises(InvalidArgumentError):
        plan_listing(None, parse_storage_path("s3://b/r"), shared_ranges=17)


# ------------------------------------------------------------------------ local files


def _break(kind: str, fsroot: FsRoot, tree: Tree) -> dict[str, Any]:
    """Damage the tree as ``kind`` says; the audit's keyword arguments."""
    if kind == "missing shared file":
        fsroot.raw.rm_file(fsroot.raw_path(tree.url(f"{JOB}/shared/sst-a")))
    elif kind == "short file, missing outside file":
        fsroot.write(tree.url(f"{JOB}/shared/sst-b"), b"b" * 199)
        fsroot.raw.rm_file(fsroot.raw_path(f"{tree.outside}/{OUTSIDE_FILE[0]}"))
    elif kind == "unreadable metadata":
        fsroot.write(tree.url(f"{JOB}/chk-1/_metadata"), b"\x49\x60\x67\x2d\x00\x00\x00\x06")
    return {}


@pytest.mark.parametrize(
    "kind",
    ["intact", "missing shared file", "short file, missing outside file", "unreadable metadata"],
)
def test_on_local_files_the_spark_run_gives_the_same_result(
    spark: Any, local: FsRoot, kind: str
) -> None:
    tree = _local_tree(local)
    one, _ = _both(spark, tree.root, **_break(kind, local, tree))
    broken = {c.relative for c in one.result.not_intact}
    assert (
        broken
        == {
            "intact": set(),
            "missing shared file": {f"{JOB}/chk-1", f"{JOB}/chk-2"},
            "short file, missing outside file": {f"{JOB}/chk-2"},
            "unreadable metadata": {f"{JOB}/chk-1"},
        }[kind]
    )


def test_a_local_session_runs_its_jvm_with_the_local_options(spark: Any) -> None:
    """A local master's JVM compiles with the client compiler only and the serial collector
    (``sparkrun.LOCAL_JVM_OPTIONS``), the executors' too where there are executors."""
    runtime = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    arguments = list(runtime.getInputArguments())
    for option in sparkrun.LOCAL_JVM_OPTIONS.split():
        assert option in arguments
    assert spark.sparkContext.getConf().get("spark.executor.defaultJavaOptions") == (
        sparkrun.LOCAL_JVM_OPTIONS
    )


def test_a_moved_tree_audits_the_same_on_spark(spark: Any, local: FsRoot) -> None:
    tree = _local_tree(local)
    copy = local.sub("copy")
    for url in local.files(tree.root):
        local.write(copy + url[len(tree.root) :], local.read(url))
    local.raw.rm(local.raw_path(tree.root), recursive=True)
    one, _ = _both(spark, copy, moved_from=tree.root)
    assert _status(one.result) == dict.fromkeys(COMPLETED, "intact")


@pytest.fixture
def flink_tree(tmp_path: Path) -> Path:
    with tarfile.open(ARCHIVE) as archive:
        archive.extractall(tmp_path / "flink", filter="data")
    return tmp_path / "flink"


def test_flinks_own_tree_audits_the_same_on_spark_intact_and_broken(
    spark: Any, flink_tree: Path
) -> None:
    one, _ = _both(spark, str(flink_tree))
    assert len(one.result.checkpoints) == 4
    assert not one.result.not_intact
    assert [o.kind for o in one.result.orphans] == ["in-flight"]
    _both(spark, str(flink_tree / "flinkckpt"))  # a root of jobs
    victim = next(p for p in (flink_tree / FLINK_JOB / "chk-11").iterdir() if p.name != "_metadata")
    victim.unlink()
    one, _ = _both(spark, str(flink_tree))
    (broken,) = one.result.not_intact
    assert [(p.url, p.problem) for p in broken.problems] == [
        (parse_storage_path(str(victim)).url, "missing")
    ]


# --------------------------------------------------------------------------------- moto


@pytest.fixture
def s3_tree(s3: S3Root) -> Tree:
    pytest.importorskip("s3fs")
    return build_tree(s3.sub("root"), s3.sub("elsewhere"), s3.put)


@pytest.mark.parametrize(("ranges", "listings"), [(1, 2 + 2), (4, 2 + 6 + 1)])
def test_on_s3_the_spark_run_sends_listing_pages_and_one_get_per_metadata(
    spark: Any, s3: S3Root, s3_tree: Tree, ranges: int, listings: int
) -> None:
    options = s3.storage_options
    one = run_audit(s3_tree.root, options)
    with s3.record() as recording:
        run = spark_audit.run_spark_audit(spark, s3_tree.root, options, shared_ranges=ranges)
    assert _plain(run.result) == _plain(one.result)
    assert _status(run.result) == dict.fromkeys(COMPLETED, "intact")
    # the plan: the root's level and savepoints/'s; then a page per unit (all are small)
    assert recording.operations() == {
        "ListObjectsV2": listings,
        "GetObject": len(COMPLETED),
        "HeadObject": 1,
    }, recording.summary()
    assert recording.filter("HeadObject")[0].key == s3.key_of(
        f"{s3_tree.outside}/{OUTSIDE_FILE[0]}"
    )
    assert {r.key for r in recording.filter("GetObject")} == {
        s3.key_of(s3_tree.url(f"{d}/_metadata")) for d in COMPLETED
    }


def test_on_s3_a_deleted_shared_file_gives_the_same_broken_report(
    spark: Any, s3: S3Root, s3_tree: Tree
) -> None:
    s3.raw.rm_file(parse_storage_path(s3_tree.url(f"{JOB}/shared/sst-b")).path)
    one, _ = _both(spark, s3_tree.root, s3.storage_options, shared_ranges=16)
    (broken,) = one.result.not_intact
    assert [(p.url, p.problem) for p in broken.problems] == [
        (s3_tree.url(f"{JOB}/shared/sst-b"), "missing")
    ]


def test_flinks_own_tree_on_s3_audits_the_same_on_spark(
    spark: Any, s3: S3Root, flink_tree: Path
) -> None:
    pytest.importorskip("s3fs")
    for path in sorted(flink_tree.rglob("*")):
        if path.is_file():
            s3.put(s3.sub(str(path.relative_to(flink_tree))), path.read_bytes())
    options = s3.storage_options
    one = run_audit(s3.url, options)
    with s3.record() as recording:
        run = spark_audit.run_spark_audit(spark, s3.url, options)
    assert _plain(run.result) == _plain(one.result)
    assert len(run.result.checkpoints) == 4
    assert not run.result.not_intact
    # the plan: the root, flinkckpt/ and flinksp/; a page each for the job and the savepoint
    assert recording.operations() == {"ListObjectsV2": 3 + 2, "GetObject": 4}, recording.summary()


def test_an_executor_that_cannot_list_fails_the_audit_with_its_error_and_no_secret(
    spark: Any, s3: S3Root, s3_tree: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = partitioned_listing.plan_listing

    def plan_then_deny(*args: Any, **kwargs: Any) -> Any:
        plan = real(*args, **kwargs)
        s3.ledger.inject("ListObjectsV2", status=403, code="AccessDenied", times=None)
        return plan

    monkeypatch.setattr(spark_audit, "plan_listing", plan_then_deny)
    try:
        with pytest.raises(spark_audit.SparkAuditError) as caught:
            spark_audit.run_spark_audit(spark, s3_tree.root, s3.storage_options)
    finally:
        s3.ledger.clear_faults()
    assert "AccessDenied" in str(caught.value) or "Forbidden" in str(caught.value), caught.value
    secret = str(s3.storage_options.get("secret", ""))
    assert secret
    assert secret not in str(caught.value)
    job = spark_audit._Job(s3_tree.root, s3.storage_options, None)
    assert secret not in repr(job)
    assert secret not in str(job)


# ---------------------------------------------------------------------------------- CLI


def test_pyspark_is_imported_only_for_a_session_and_the_kit_never() -> None:
    code = (
        "import sys, ckptstore.admin.cli, ckptstore.admin.spark_audit\n"
        "ckptstore.admin.cli.build_parser()\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'pyspark', 'py4j', 'ckptconform'}))"
    )
    answer = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert answer.stdout.strip() == "[]", answer.stderr


def test_memory_roots_are_refused_they_live_in_one_process(spark: Any) -> None:
    with pytest.raises(InvalidArgumentError, match="memory://"):
        spark_audit.run_spark_audit(spark, "memory://nowhere")


def test_the_cli_runs_the_audit_and_the_reaudit_on_one_spark_session(
    spark: Any, flink_tree: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    sessions: list[str] = []

    def the_module_session(master: str, conf: Any = None) -> Any:
        sessions.append(master)
        import contextlib

        return contextlib.nullcontext(spark)

    monkeypatch.setattr(spark_audit, "spark_session", the_module_session)
    report = tmp_path / "audit.json"
    argv = ["audit", str(flink_tree), "--quiet", "--spark-master", "local[3]"]
    assert main([*argv, "--json", str(report), "--spark-conf", "spark.x=1"]) == 0
    assert main([*argv, "--delete-orphans", "--older-than=0s", "--yes"]) == 0
    assert sessions == ["local[3]", "local[3]"]
    assert not list((flink_tree / FLINK_JOB / "chk-13").glob("*"))  # the in-flight orphan
    assert '"checkpoints"' in report.read_text()


@pytest.mark.parametrize(
    "extra",
    [
        ["--shared-ranges", "4"],
        ["--spark-conf", "a=b"],
        ["--spark-master", "local", "--spark-conf", "x"],
    ],
)
def test_spark_options_without_a_master_or_malformed_are_usage_errors(
    extra: list[str], tmp_path: Path
) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["audit", str(tmp_path), *extra])
    assert caught.value.code == 2
