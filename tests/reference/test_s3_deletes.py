"""What the reference's own S3 delete does with servers that answer a DeleteObjects oddly.

s3rver 3.7 showed three things a disposal must survive (the suite's s3rver leg): it trims the
whitespace that begins a key in a DeleteObjects body (and then deletes nothing: DIS-1, DIS-2
for a checkpoint directory whose name starts with a space), it answers a DeleteObjects of
several keys of one directory with 500 after deleting them (its parallel deletes race on the
emptied directory), and it does not implement ListMultipartUploads (501). Here on moto, with
the answers injected by the request ledger.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

import pytest

from ckptstore import FileSystemCheckpointStorage
from ckptstore.api import CheckpointedStateScope, JobID
from ckptstore.errors import CheckpointIOError
from ckptstore.stores import s3 as s3_module
from tests.reference._moto import S3Root

pytest.importorskip("s3fs")
pytest.importorskip("moto.server")

EXCLUSIVE = CheckpointedStateScope.EXCLUSIVE


def _keys(s3: S3Root, part: str) -> list[str]:
    """The keys below the root that contain ``part``."""
    found = s3.keys()
    return [k for k in found if part in k]


def _checkpoint(s3: S3Root, checkpoint_dir: str, **options: Any) -> tuple[Any, list[str]]:
    """A completed checkpoint with three state files below ``checkpoint_dir`` (one attempt
    per request unless ``options`` say otherwise), and the keys of its objects."""
    storage = FileSystemCheckpointStorage(
        checkpoint_dir,
        file_state_size_threshold=0,
        storage_options={**s3.storage_options, "retry_attempts": 1, **options},
    )
    access = storage.create_checkpoint_storage(JobID.generate())
    access.initialize_base_locations_for_checkpoint()
    location = access.initialize_location_for_checkpoint(1)
    for size in (10, 2000, 3000):
        stream = location.create_checkpoint_state_output_stream(EXCLUSIVE)
        stream.write(b"x" * size)
        stream.close_and_get_handle()
    metadata = location.create_metadata_output_stream()
    metadata.write(b"metadata")
    completed = metadata.close_and_finalize_checkpoint()
    keys = _keys(s3, "/chk-1/")
    return completed, keys


def test_keys_that_begin_with_a_space_are_deleted_one_by_one(s3: S3Root) -> None:
    """DIS-2 where the directory's name starts with a space: each of its keys goes in a
    DeleteObject of its own (the key travels in the URL, which no XML parser trims)."""
    bucket = s3.url.split("/")[2]
    top = f"s3://{bucket}/ {s3.url.rsplit('/', 1)[-1]}"
    try:
        completed, _ = _checkpoint(s3, top)
        with s3.record() as rec:
            completed.dispose_storage_location()
        assert rec.count(operation="DeleteObjects") == 0, rec.summary()
        assert rec.count(operation="DeleteObject") == 4, rec.summary()
        assert not s3.raw.find(top.split("://", 1)[1])
    finally:
        with contextlib.suppress(FileNotFoundError):
            s3.raw.rm(top.split("://", 1)[1], recursive=True)


def test_a_failed_delete_objects_whose_keys_are_gone_counts_as_done(s3: S3Root) -> None:
    """A DeleteObjects answered 500 after the server deleted the keys (s3rver), with one
    attempt per request: the same listing again shows none of them, so the disposal
    succeeds."""
    completed, keys = _checkpoint(s3, s3.sub("checkpoints"))
    assert len(keys) == 4
    fault = s3.ledger.inject("DeleteObjects", status=500, code="InternalError", after_commit=True)
    try:
        with s3.record() as rec:
            completed.dispose_storage_location()
    finally:
        s3.ledger.clear_faults()
    assert fault.hits == 1
    assert [r.operation for r in rec.requests][-2:] == ["DeleteObjects", "ListObjectsV2"]
    assert _keys(s3, "/chk-1/") == []


def test_a_failed_delete_objects_whose_keys_remain_fails(s3: S3Root) -> None:
    """A DeleteObjects answered 500 that deleted nothing: the listing again shows the keys,
    and the disposal raises the failure; every object is still there."""
    completed, keys = _checkpoint(s3, s3.sub("checkpoints"))
    s3.ledger.inject("DeleteObjects", status=500, code="InternalError", times=None)
    try:
        with pytest.raises(CheckpointIOError):
            completed.dispose_storage_location()
    finally:
        s3.ledger.clear_faults()
    assert _keys(s3, "/chk-1/") == keys


def test_a_missing_upload_listing_is_said_once(
    s3: S3Root, caplog: pytest.LogCaptureFixture
) -> None:
    """ListMultipartUploads answered 501 (s3rver): disposals delete every object and a
    warning names the endpoint and the missing listing once, not per disposal."""

    s3_module._WARNED_NO_UPLOAD_LISTING.clear()
    first, _ = _checkpoint(s3, s3.sub("one"))
    second, _ = _checkpoint(s3, s3.sub("two"))
    s3.ledger.inject("ListMultipartUploads", status=501, code="NotImplemented", times=None)
    try:
        with caplog.at_level(logging.WARNING, logger="ckptstore.stores.s3"):
            first.dispose_storage_location()
            second.dispose_storage_location()
    finally:
        s3.ledger.clear_faults()
    said = [r for r in caplog.records if "ListMultipartUploads" in r.getMessage()]
    assert len(said) == 1, caplog.text
    assert s3.backend.endpoint in said[0].getMessage()
    assert _keys(s3, "/chk-1/") == []
