"""``ckptstore audit`` on S3 (moto, requests counted at the server by the ledger) and SFTP.

On S3 the audit sends the minimum: the root's ListObjectsV2 pages, one GetObject per
``_metadata`` (its size comes from the listing) and one HeadObject per file referenced from
outside the root; never a HEAD per listed file.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from typing import Any

import pytest

from ckptstore.admin import cleanup
from ckptstore.admin.audit import AuditResult, run_audit
from ckptstore.admin.cli import main
from ckptstore.paths import parse_storage_path
from ckptstore.stores.registry import filesystem_for, register_path
from tests.reference._audit_trees import COMPLETED, FILES, JOB, ORPHANS, OUTSIDE_FILE, build_tree
from tests.reference._moto import S3Root

PAGE = 3  # keys per listing page the ledger answers with
DAY = 86400.0


def _status(result: AuditResult) -> dict[str, str]:
    return {c.relative: c.status for c in result.checkpoints}


@pytest.fixture
def s3_tree(s3: S3Root) -> Any:
    pytest.importorskip("s3fs")
    return build_tree(s3.sub("root"), s3.sub("elsewhere"), s3.put)


def test_on_s3_the_audit_sends_listing_pages_and_one_get_per_metadata(
    s3: S3Root, s3_tree: Any
) -> None:
    listed = len(FILES) + len(COMPLETED)
    with s3.ledger.small_pages(PAGE), s3.record() as recording:
        result = run_audit(s3_tree.root, s3.storage_options).result
    assert _status(result) == dict.fromkeys(COMPLETED, "intact")
    assert {o.relative: o.kind for o in result.orphans} == ORPHANS
    assert result.files_listed == listed
    assert all(
        o.modified is not None and abs(o.modified - time.time()) < 600 for o in result.orphans
    )
    outside_key = s3.key_of(f"{s3_tree.outside}/{OUTSIDE_FILE[0]}")
    assert recording.operations() == {
        "ListObjectsV2": math.ceil(listed / PAGE),
        "GetObject": len(COMPLETED),
        "HeadObject": 1,
    }, recording.summary()
    assert recording.filter("HeadObject")[0].key == outside_key
    assert {r.key for r in recording.filter("GetObject")} == {
        s3.key_of(s3_tree.url(f"{d}/_metadata")) for d in COMPLETED
    }
    # a root whose checkpoints reference nothing outside it: no HEAD at all
    with s3.record() as recording:
        run_audit(s3_tree.url("savepoints"), s3.storage_options)
    assert recording.operations() == {"ListObjectsV2": 1, "GetObject": 1}, recording.summary()


def test_on_s3_a_missing_shared_file_breaks_and_deletion_removes_only_orphans(
    s3: S3Root, s3_tree: Any
) -> None:
    s3.raw.rm_file(parse_storage_path(s3_tree.url(f"{JOB}/shared/sst-b")).path)
    result = run_audit(s3_tree.root, s3.storage_options).result
    (broken,) = result.not_intact
    assert [(p.url, p.problem) for p in broken.problems] == [
        (s3_tree.url(f"{JOB}/shared/sst-b"), "missing")
    ]
    s3.raw.pipe_file(parse_storage_path(s3_tree.url(f"{JOB}/shared/sst-b")).path, b"b" * 200)
    before = set(s3.keys())
    run = run_audit(s3_tree.root, s3.storage_options)
    plan = cleanup.plan_deletion(run.result, run.referenced, DAY, time.time() + 2 * DAY)
    root = parse_storage_path(s3_tree.root)
    fs = filesystem_for(root, register_path(root, s3.storage_options))
    with s3.record() as recording:
        report = cleanup.delete_planned(fs, root, plan, dry_run=False)
    assert report.failed == ()
    assert recording.operations() == {"DeleteObject": len(ORPHANS)}, recording.summary()
    assert set(s3.keys()) == before - {s3.key_of(s3_tree.url(r)) for r in ORPHANS}
    assert _status(run_audit(s3_tree.root, s3.storage_options).result) == dict.fromkeys(
        COMPLETED, "intact"
    )


def test_the_cli_on_s3_with_storage_options(
    s3: S3Root, s3_tree: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    options = [
        f"--storage-option={k}={v}" for k, v in s3.storage_options.items() if isinstance(v, str)
    ]
    assert main(["audit", s3_tree.root, "--quiet", *options]) == 0
    assert main(["inspect", s3_tree.url(f"{JOB}/chk-1"), "--json", *options]) == 0
    assert '"checkpoint_id": 1' in capsys.readouterr().out


# ----------------------------------------------------------------------------------- SFTP


@pytest.fixture(scope="module")
def sftp() -> Iterator[Any]:
    from ckptconform.backends.sftp import SftpBackend

    backend = SftpBackend()
    reason = backend.availability()
    if reason is not None:
        pytest.skip(f"the SFTP leg is unavailable: {reason}")
    backend.start()
    try:
        yield backend
    finally:
        backend.stop()


def test_on_sftp_the_audit_reports_the_truth_and_deletes_only_orphans(sftp: Any) -> None:
    root = sftp.new_root()

    def put(url: str, data: bytes) -> None:
        path = parse_storage_path(url).fs_path
        sftp.raw.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
        sftp.raw.pipe_file(path, data)

    tree = build_tree(f"{root}/root", f"{root}/elsewhere", put)
    run = run_audit(tree.root, sftp.storage_options)
    assert _status(run.result) == dict.fromkeys(COMPLETED, "intact")
    assert {o.relative: o.kind for o in run.result.orphans} == ORPHANS
    assert all(o.modified is not None for o in run.result.orphans)
    assert run.result.kind == "tree"
    path = parse_storage_path(tree.root)
    plan = cleanup.plan_deletion(run.result, run.referenced, DAY, time.time() + 2 * DAY)
    fs = filesystem_for(path, register_path(path, sftp.storage_options))
    report = cleanup.delete_planned(fs, path, plan, dry_run=False)
    assert report.failed == ()
    again = run_audit(tree.root, sftp.storage_options).result
    assert again.orphans == ()
    assert _status(again) == dict.fromkeys(COMPLETED, "intact")
    sftp.remove(root)
