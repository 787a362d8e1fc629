"""Faults with no loss (issue 9, case 1): answers lost after the server committed a write.

The request ledger in front of moto lets the server carry a PutObject (or the completion of a
multipart upload) out and then drops the connection, so the client cannot tell whether its
request took effect and retries. The retried exclusive create finds its own object:

* ``_metadata`` (a fixed name another coordinator could also write): the stored bytes are
  compared with ours (one GetObject, on that failure path only); equal means success,
  different means ``MetadataExistsError``;
* a state file (a random UUID only its writer uses): an object of the size written is ours
  (one HeadObject, on that failure path only), also for a multipart completion.

Every case: the checkpoint completes, every handle reads back, nothing is left over, and the
extra requests are exactly the failure path's.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from ckptstore import FileSystemCheckpointStorage
from ckptstore.api import CheckpointedStateScope, JobID
from ckptstore.errors import MetadataExistsError
from ckptstore.filesystem.handles import FileStateHandle
from tests.reference._moto import S3Root

pytest.importorskip("s3fs")
pytest.importorskip("moto.server")

EXCLUSIVE = CheckpointedStateScope.EXCLUSIVE
SHARED = CheckpointedStateScope.SHARED
FILE_SIZE = 30000
MIB = 1024 * 1024


def _storage(s3: S3Root, **options: Any) -> FileSystemCheckpointStorage:
    return FileSystemCheckpointStorage(
        s3.sub("checkpoints"), storage_options={**s3.storage_options, **options}
    )


def _prepared(s3: S3Root, **options: Any) -> tuple[Any, JobID]:
    """An access whose setup ran (the conditional-write probe is not part of a measurement)."""
    job = JobID.generate()
    access = _storage(s3, **options).create_checkpoint_storage(job)
    access.initialize_base_locations_for_checkpoint()
    return access, job


def _write(location: Any, scope: CheckpointedStateScope, data: bytes) -> Any:
    stream = location.create_checkpoint_state_output_stream(scope)
    stream.write(data)
    return stream.close_and_get_handle()


def _finalize(location: Any, data: bytes) -> Any:
    with location.create_metadata_output_stream() as out:
        out.write(data)
        return out.close_and_finalize_checkpoint()


def _read(handle: Any) -> bytes:
    with handle.open_input_stream() as stream:
        return bytes(stream.read())


def test_lost_answer_of_the_metadata_put_completes_the_checkpoint(s3: S3Root) -> None:
    """The PutObject of _metadata is committed, its answer lost; the retry gets 412; one GET
    finds our bytes: finalization succeeds and the checkpoint resolves."""
    access, _ = _prepared(s3)
    location = access.initialize_location_for_checkpoint(1)
    state = os.urandom(FILE_SIZE)
    handle = _write(location, EXCLUSIVE, state)
    metadata = b"metadata whose answer is lost " + os.urandom(64)
    fault = s3.ledger.inject(
        "PutObject", drop_connection=True, after_commit=True, times=1, key_contains="_metadata"
    )
    try:
        with s3.record() as rec:
            completed = _finalize(location, metadata)
    finally:
        s3.ledger.clear_faults()
    assert fault.hits == 1
    puts = rec.filter(operation="PutObject")
    assert len(puts) >= 2, rec.summary()
    assert puts[0].fault, rec.summary()
    assert puts[-1].status == 412, rec.summary()
    assert rec.count(operation="GetObject") == 1, rec.summary()
    assert rec.count(operation=("HeadObject", "ListObjectsV2", "DeleteObject")) == 0
    resolved = _storage(s3).resolve_checkpoint(completed.external_pointer)
    assert _read(resolved.metadata_handle) == metadata
    assert _read(resolved.resolve_handle(handle)) == state


def test_different_metadata_already_there_is_refused(s3: S3Root) -> None:
    """MD2: a _metadata with other bytes is another coordinator's: MetadataExistsError after
    one refused PutObject and one GetObject; the first one stays."""
    access, _ = _prepared(s3)
    location = access.initialize_location_for_checkpoint(2)
    first = _finalize(location, b"the first metadata")
    with s3.record() as rec, pytest.raises(MetadataExistsError):
        _finalize(access.initialize_location_for_checkpoint(2), b"a second, other metadata")
    assert [(r.operation, r.status) for r in rec.requests] == [
        ("PutObject", 412),
        ("GetObject", 200),
    ], rec.summary()
    assert _read(first.metadata_handle) == b"the first metadata"


@pytest.mark.parametrize("layout", ["one file", "many files"])
def test_lost_answers_of_state_file_puts_complete_the_checkpoint(s3: S3Root, layout: str) -> None:
    """Three PutObject answers of state files are lost after commit (on one file, or spread
    over several); every stream still returns its handle, one HEAD per affected file, every
    handle reads back and no orphan is left."""
    access, _ = _prepared(s3)
    location = access.initialize_location_for_checkpoint(3)
    streams = 1 if layout == "one file" else 5
    scopes = [EXCLUSIVE, SHARED] * 3
    data = [os.urandom(FILE_SIZE + i) for i in range(streams)]
    s3.ledger.seed(7)  # which requests a fault at a rate hits: repeatable
    fault = s3.ledger.inject(  # state files have UUID names; nothing else is written here
        "PutObject",
        drop_connection=True,
        after_commit=True,
        times=3,
        key_contains="-",
        rate=1.0 if layout == "one file" else 0.4,
    )
    try:
        with s3.record() as rec:
            handles = [_write(location, scopes[i], data[i]) for i in range(streams)]
    finally:
        s3.ledger.clear_faults()
    assert fault.hits == 3, rec.summary()
    assert all(isinstance(h, FileStateHandle) for h in handles)
    faulted_keys = {r.key for r in rec.requests if r.fault}
    assert (len(faulted_keys) == 1) == (layout == "one file"), rec.summary()
    assert rec.count(operation="HeadObject") == len(faulted_keys), rec.summary()
    assert rec.count(operation=("DeleteObject", "DeleteObjects")) == 0, rec.summary()
    completed = _finalize(location, b"metadata")
    resolved = _storage(s3).resolve_checkpoint(completed.external_pointer)
    for handle, expected in zip(handles, data, strict=True):
        assert _read(resolved.resolve_handle(handle)) == expected
    written = {s3.key_of(h.file_path) for h in handles}
    keys = s3.keys()
    state_keys = {k for k in keys if not k.endswith("/_metadata")}
    assert state_keys == written  # no orphan, nothing lost


@pytest.mark.parametrize(
    "retry_answer",
    [None, (404, "NoSuchUpload"), (412, "PreconditionFailed")],
    ids=["moto-repeats-the-completion", "NoSuchUpload", "PreconditionFailed"],
)
def test_lost_answer_of_a_multipart_completion(
    s3: S3Root, retry_answer: tuple[int, str] | None
) -> None:
    """A large state file: CompleteMultipartUpload is carried out, its answer lost. moto
    answers the retried completion with 200, as S3 may; S3 may also answer NoSuchUpload (the
    upload is complete) or 412 (If-None-Match): then one HEAD finds the object of our size
    and the handle stands."""
    access, _ = _prepared(s3, default_block_size=5 * MIB)
    location = access.initialize_location_for_checkpoint(4)
    data = os.urandom(11 * MIB)
    s3.ledger.inject("CompleteMultipartUpload", drop_connection=True, after_commit=True, times=1)
    if retry_answer is not None:
        status, code = retry_answer
        s3.ledger.inject("CompleteMultipartUpload", status=status, code=code, times=1)
    try:
        with s3.record() as rec:
            handle = _write(location, SHARED, data)
    finally:
        s3.ledger.clear_faults()
    completions = rec.filter(operation="CompleteMultipartUpload")
    assert len(completions) == 2, rec.summary()
    assert completions[0].fault, rec.summary()
    assert rec.count(operation="HeadObject") == (0 if retry_answer is None else 1), rec.summary()
    assert rec.count(operation=("AbortMultipartUpload", "DeleteObject")) == 0, rec.summary()
    assert isinstance(handle, FileStateHandle)
    assert handle.state_size == len(data)
    assert _read(handle) == data


def test_a_real_failure_is_still_a_failure_and_leaves_nothing(s3: S3Root) -> None:
    """The failure path's HEAD finds nothing: the stream fails (OSError), sends no DELETE
    (there is nothing to delete) and leaves nothing behind."""
    access, _ = _prepared(s3, retry_attempts=2)
    location = access.initialize_location_for_checkpoint(5)
    s3.ledger.inject("PutObject", status=500, code="InternalError", times=None, key_contains="-")
    try:
        with s3.record() as rec, pytest.raises(OSError, match="InternalError"):
            _write(location, EXCLUSIVE, os.urandom(FILE_SIZE))
    finally:
        s3.ledger.clear_faults()
    assert rec.operations() == {"PutObject": 2, "HeadObject": 1}, rec.summary()
    assert s3.keys() == []
