"""Open multipart uploads and the reference's own recursive delete on S3 (issue 9, case 3).

A writer that crashes mid-upload leaves an open multipart upload: no listing of objects shows
it, a recursive delete never aborted it, and S3 bills its parts until a lifecycle rule (if
any) removes it. Deleting a checkpoint or savepoint directory (``dispose_on_failure``,
``dispose_storage_location``) now lists the open uploads below the directory and aborts them,
and the leftover cleaner aborts those of crashed writers in the layout. The delete itself is
the reference's: one ListObjectsV2 and one DeleteObjects per 1000 keys. It stays inside the
directory: uploads and objects next to it are untouched.
"""

from __future__ import annotations

import datetime
import os
import uuid
from typing import Any

import pytest

from ckptstore import FileSystemCheckpointStorage, JobManagerCheckpointStorage
from ckptstore.api import CheckpointedStateScope, JobID
from ckptstore.errors import DisposalRefusedError
from ckptstore.filesystem import leftovers
from ckptstore.paths import parse_storage_path
from ckptstore.stores import s3 as s3_module
from ckptstore.stores.operations import delete_tree
from ckptstore.stores.registry import filesystem_for
from tests.reference._moto import S3Root

pytest.importorskip("s3fs")
pytest.importorskip("moto.server")

EXCLUSIVE = CheckpointedStateScope.EXCLUSIVE
MIB = 1024 * 1024


def _storage(s3: S3Root) -> FileSystemCheckpointStorage:
    return FileSystemCheckpointStorage(
        s3.sub("checkpoints"),
        0,
        savepoint_path=s3.sub("savepoints"),
        storage_options=s3.storage_options,
    )


def _crashed_upload(s3: S3Root, directory: str) -> str:
    """An upload a crashed writer left in ``directory``: started, one part, never finished.

    Sent through the backend's raw file system (not counted by the ledger). Returns its key.
    """
    bucket, _, prefix = parse_storage_path(directory).path.partition("/")
    key = f"{prefix}/{uuid.uuid4()}"
    upload = s3.raw.call_s3("create_multipart_upload", Bucket=bucket, Key=key)
    s3.raw.call_s3(
        "upload_part",
        Bucket=bucket,
        Key=key,
        PartNumber=1,
        UploadId=upload["UploadId"],
        Body=os.urandom(5 * MIB),
    )
    return key


def _open_uploads(s3: S3Root) -> set[str]:
    bucket, _, prefix = parse_storage_path(s3.url).path.partition("/")
    answer = s3.raw.call_s3("list_multipart_uploads", Bucket=bucket, Prefix=prefix + "/")
    return {str(u["Key"]) for u in answer.get("Uploads") or ()}


def _state(location: Any, size: int = 100) -> Any:
    stream = location.create_checkpoint_state_output_stream(EXCLUSIVE)
    stream.write(os.urandom(size))
    return stream.close_and_get_handle()


@pytest.mark.parametrize("how", ["dispose_on_failure", "dispose_storage_location", "savepoint"])
def test_disposal_aborts_the_open_uploads_below_the_directory(s3: S3Root, how: str) -> None:
    """The directory's objects are deleted and its open upload aborted, with one
    ListMultipartUploads, one AbortMultipartUpload, one ListObjectsV2 and one DeleteObjects;
    an upload in a sibling directory stays open."""
    storage = _storage(s3)
    access = storage.create_checkpoint_storage(JobID.generate())
    if how == "savepoint":
        location = access.initialize_location_for_savepoint(3)
    else:
        location = access.initialize_location_for_checkpoint(3)
    handle = _state(location)
    crashed = _crashed_upload(s3, location.checkpoint_directory)
    sibling = _crashed_upload(s3, access.initialize_location_for_checkpoint(4).checkpoint_directory)
    if how == "dispose_storage_location":
        with location.create_metadata_output_stream() as out:
            out.write(b"metadata")
            dispose = out.close_and_finalize_checkpoint().dispose_storage_location
    else:
        dispose = location.dispose_on_failure
    assert _open_uploads(s3) == {crashed, sibling}
    with s3.record() as rec:
        dispose()
    assert rec.operations() == {
        "ListMultipartUploads": 1,
        "AbortMultipartUpload": 1,
        "ListObjectsV2": 1,
        "DeleteObjects": 1,
    }, rec.summary()
    assert rec.filter(operation="AbortMultipartUpload")[0].key == crashed
    assert _open_uploads(s3) == {sibling}
    assert not s3.exists(handle.file_path)


def test_jobmanager_disposal_aborts_open_uploads(s3: S3Root) -> None:
    """The JobManager storage's persistent locations delete the same way."""
    storage = JobManagerCheckpointStorage(s3.sub("jm"), storage_options=s3.storage_options)
    access = storage.create_checkpoint_storage(JobID.generate())
    location = access.initialize_location_for_checkpoint(1)
    crashed = _crashed_upload(s3, location.checkpoint_directory)
    assert _open_uploads(s3) == {crashed}
    location.dispose_on_failure()
    assert _open_uploads(s3) == set()


def test_leftover_cleaner_aborts_crashed_uploads_in_the_layout(s3: S3Root) -> None:
    """An open upload of a state file in chk-<n> older than the grace period is an
    ``open-upload`` leftover; cleaning aborts it. Uploads in shared/ and fresh ones stay.

    (moto reports every upload as initiated at 2010-11-10T20:48:33Z, so the grace period is
    checked with the scan's ``now`` set just after that moment.)
    """
    storage = _storage(s3)
    job = JobID.generate()
    access = storage.create_checkpoint_storage(job)
    crashed_dir = access.initialize_location_for_checkpoint(2).checkpoint_directory
    crashed = _crashed_upload(s3, crashed_dir)
    shared = _crashed_upload(s3, access.shared_state_directory)
    just_after = datetime.datetime(2010, 11, 10, 21, 0, tzinfo=datetime.UTC)
    scope = storage._leftover_scope(job)
    assert leftovers.find_leftovers(**scope, older_than=3600, now=just_after) == []
    assert len(leftovers.find_leftovers(**scope, older_than=600, now=just_after)) == 1
    found = storage.find_leftovers(job, older_than=0)
    assert [(item.kind, s3.key_of(item.url), item.directory) for item in found] == [
        ("open-upload", crashed, crashed_dir)
    ]
    with s3.record() as rec:
        removed = storage.clean_leftovers(job, older_than=0)
    assert removed == found
    assert rec.count(operation="AbortMultipartUpload") == 1, rec.summary()
    assert _open_uploads(s3) == {shared}


def test_one_list_and_one_delete_per_1000_keys(s3: S3Root, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pages of 1000 keys (S3's maximum): one ListObjectsV2 and one DeleteObjects per page.
    Checked with pages of 10 and 11 objects, to keep the test fast: two of each."""
    assert s3_module._PAGE == 1000
    monkeypatch.setattr(s3_module, "_PAGE", 10)
    access = _storage(s3).create_checkpoint_storage(JobID.generate())
    location = access.initialize_location_for_checkpoint(9)
    directory = parse_storage_path(location.checkpoint_directory).path
    s3.raw.pipe({f"{directory}/{uuid.uuid4()}": b"x" for _ in range(11)})
    with s3.record() as rec:
        location.dispose_on_failure()
    expected = {"ListMultipartUploads": 1, "ListObjectsV2": 2, "DeleteObjects": 2}
    assert rec.operations() == expected, rec.summary()
    assert s3.keys() == []


def test_a_bucket_root_is_never_deleted(s3: S3Root) -> None:
    """Layout confinement below the layout: the raw delete refuses a bucket's root."""
    bucket = parse_storage_path(s3.url).path.split("/", 1)[0]
    root = parse_storage_path(f"s3://{bucket}")
    with s3.record() as rec, pytest.raises(DisposalRefusedError):
        delete_tree(filesystem_for(root), root)
    assert len(rec) == 0, rec.summary()
