"""Servers that ignore conditional writes (issue 9, case 4), on moto and on s3rver.

s3rver 3.7 (a real, independent S3 server in Node.js) ignores ``If-None-Match: *``: without
care a second ``_metadata`` for the same checkpoint silently replaces the first (the suite's
MD-3). The storage probes once per process per endpoint and bucket, during the coordinator's
setup, and where the server ignores the condition publishes check-then-write (one HEAD
before the PUT, a documented race window, a warning once). On servers that honour it, the
per-checkpoint path keeps its single PutObject. s3rver runs only where Node.js is (it is
installed with npm on first use); otherwise those cases skip with the backend's reason.

Also here: the same dispose costs the same requests on moto and s3rver (issue 9, case 3).
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from ckptstore import FileSystemCheckpointStorage
from ckptstore import s3 as s3_module
from ckptstore.api import CheckpointedStateScope, JobID
from ckptstore.errors import MetadataExistsError
from tests.reference._moto import PROBE_KEY, S3Root, new_root, reset_process_state

pytest.importorskip("s3fs")
pytest.importorskip("moto.server")

EXCLUSIVE = CheckpointedStateScope.EXCLUSIVE
SHARED = CheckpointedStateScope.SHARED
HONOURED = "honoured"
IGNORED = "ignored: check-then-write"


@pytest.fixture(scope="module")
def s3rver_backend() -> Iterator[Any]:
    """s3rver on 127.0.0.1 behind the counting proxy, for this module; always stopped."""
    from ckptconform.backends.base import BackendUnavailableError
    from ckptconform.backends.s3rver import S3rverBackend

    backend = S3rverBackend()
    reason = backend.availability()
    if reason is not None:
        pytest.skip(reason)
    try:
        backend.start()
    except BackendUnavailableError as exc:
        pytest.skip(str(exc))
    try:
        yield backend
    finally:
        backend.stop()


@pytest.fixture
def s3rver(s3rver_backend: Any) -> Iterator[S3Root]:
    """A fresh root on s3rver and a fresh process state (no probe answer)."""
    root = new_root(s3rver_backend)
    reset_process_state()
    try:
        yield root
    finally:
        reset_process_state()
        root.cleanup()


def _storage(root: S3Root) -> FileSystemCheckpointStorage:
    return FileSystemCheckpointStorage(
        root.sub("checkpoints"), storage_options=root.storage_options
    )


def _finalize(location: Any, data: bytes) -> Any:
    stream = location.create_metadata_output_stream()
    try:
        stream.write(data)
        return stream.close_and_finalize_checkpoint()
    finally:
        stream.close()


def _probes(root: S3Root) -> list[str]:
    """Keys of conditional-write probe objects below the root."""
    keys = root.keys()
    return [k for k in keys if PROBE_KEY in "/" + k.rsplit("/", 1)[-1]]


def _read(handle: Any) -> bytes:
    with handle.open_input_stream() as stream:
        return bytes(stream.read())


def _setup(root: S3Root) -> tuple[Any, Any]:
    """A job's access after its setup, and the setup's recording."""
    access = _storage(root).create_checkpoint_storage(JobID.generate())
    assert access.conditional_writes == "unknown: not probed yet"
    with root.record() as rec:
        access.initialize_base_locations_for_checkpoint()
    return access, rec


def test_moto_honours_conditional_writes(s3: S3Root) -> None:
    """moto refuses the probe's second create (412): mode "honoured", the probe is gone, and
    a second _metadata is refused by the conditional PUT itself."""
    access, setup = _setup(s3)
    assert access.conditional_writes == HONOURED
    assert [(r.operation, r.status) for r in setup.requests] == [
        ("PutObject", 200),
        ("PutObject", 412),
        ("DeleteObject", 204),
    ], setup.summary()
    location = access.initialize_location_for_checkpoint(1)
    with s3.record() as rec:
        first = _finalize(location, b"first")
    assert rec.operations() == {"PutObject": 1}, rec.summary()
    with pytest.raises(MetadataExistsError):
        _finalize(access.initialize_location_for_checkpoint(1), b"second, longer")
    assert _read(first.metadata_handle) == b"first"
    assert not _probes(s3)


def test_s3rver_ignores_conditional_writes_and_md3_holds(
    s3rver: S3Root, caplog: pytest.LogCaptureFixture
) -> None:
    """MD-3 on s3rver: the probe's second create succeeds (the server ignores the
    condition), the mode says so and a warning names the limitation once; every publish is
    HEAD + PUT; a second _metadata (same location or a new one) is refused by the HEAD and
    the first stays."""
    with caplog.at_level(logging.WARNING, logger="ckptstore.s3"):
        access, setup = _setup(s3rver)
        _storage(s3rver).create_checkpoint_storage(JobID.generate())
        access.initialize_base_locations_for_checkpoint()  # answered from the cache
    assert access.conditional_writes == IGNORED
    assert [(r.operation, r.status) for r in setup.requests] == [
        ("PutObject", 200),
        ("PutObject", 200),
        ("DeleteObject", 204),
    ], setup.summary()
    warnings = [r for r in caplog.records if "ignores conditional writes" in r.getMessage()]
    assert len(warnings) == 1, caplog.text
    assert s3rver.backend.endpoint in warnings[0].getMessage()
    location = access.initialize_location_for_checkpoint(5)
    with s3rver.record() as rec:
        first = _finalize(location, b"first metadata")
    assert [r.operation for r in rec.requests] == ["HeadObject", "PutObject"], rec.summary()
    for again in (location, access.initialize_location_for_checkpoint(5)):
        with s3rver.record() as rec, pytest.raises(MetadataExistsError):
            _finalize(again, b"second metadata, longer than the first")
        assert [r.operation for r in rec.requests] == ["HeadObject"], rec.summary()
    resolved = _storage(s3rver).resolve_checkpoint(first.external_pointer)
    assert _read(resolved.metadata_handle) == b"first metadata"


def test_check_then_write_on_moto(s3: S3Root, monkeypatch: pytest.MonkeyPatch) -> None:
    """The weaker mode, without s3rver: a server taken for one that ignores conditions gets
    HEAD + PUT per publish and a refusal (HEAD only) for an existing _metadata."""
    monkeypatch.setattr(s3_module, "_probe", lambda fs, directory: IGNORED)
    access = _storage(s3).create_checkpoint_storage(JobID.generate())
    with s3.record() as rec:
        access.initialize_base_locations_for_checkpoint()
    assert len(rec) == 0
    assert access.conditional_writes == IGNORED
    with s3.record() as rec:
        first = _finalize(access.initialize_location_for_checkpoint(2), b"first")
    assert [r.operation for r in rec.requests] == ["HeadObject", "PutObject"], rec.summary()
    with s3.record() as rec, pytest.raises(MetadataExistsError):
        _finalize(access.initialize_location_for_checkpoint(2), b"second")
    assert rec.operations() == {"HeadObject": 1}, rec.summary()
    assert _read(first.metadata_handle) == b"first"


def test_a_probe_that_cannot_be_deleted_is_a_leftover(
    s3: S3Root, caplog: pytest.LogCaptureFixture
) -> None:
    """The probe's delete is refused: the setup still succeeds (the answer is known), a
    warning says so, and the leftover cleaner finds and removes the probe object."""
    storage = _storage(s3)
    job = JobID.generate()
    access = storage.create_checkpoint_storage(job)
    s3.ledger.inject(
        "DeleteObject", status=403, code="AccessDenied", times=1, key_contains=PROBE_KEY
    )
    try:
        with caplog.at_level(logging.WARNING, logger="ckptstore.s3"):
            access.initialize_base_locations_for_checkpoint()
    finally:
        s3.ledger.clear_faults()
    assert access.conditional_writes == HONOURED
    assert "conditional-write probe" in caplog.text
    probes = _probes(s3)
    assert len(probes) == 1
    found = storage.find_leftovers(job, older_than=0)
    assert [(i.kind, s3.key_of(i.url)) for i in found] == [("write-probe", probes[0])]
    assert storage.find_leftovers(job) == []  # younger than the grace period: left alone
    assert storage.clean_leftovers(job, older_than=0) == found
    assert s3.keys() == []


def _dispose_workload(root: S3Root) -> list[Counter[str]]:
    """A checkpoint with three state files, disposed; an empty location, disposed."""
    access = _storage(root).create_checkpoint_storage(JobID.generate())
    access.initialize_base_locations_for_checkpoint()
    location = access.initialize_location_for_checkpoint(7)
    for scope in (EXCLUSIVE, EXCLUSIVE, EXCLUSIVE, SHARED):
        stream = location.create_checkpoint_state_output_stream(scope)
        stream.write(os.urandom(30000))
        stream.close_and_get_handle()
    completed = _finalize(location, b"metadata")
    counts = []
    for dispose in (
        completed.dispose_storage_location,
        access.initialize_location_for_checkpoint(8).dispose_on_failure,
    ):
        with root.record() as rec:
            dispose()
        retried = rec.retries()
        assert all(r.operation == "DeleteObjects" for r in retried), (
            rec.summary()
        )  # see the docstring of the test below
        counts.append(Counter(r.operation for r in rec.requests if r not in retried))
    keys = root.keys()
    assert [k for k in keys if "/chk-7/" in k] == []
    return counts


def test_dispose_costs_the_same_on_moto_and_s3rver(s3: S3Root, s3rver: S3Root) -> None:
    """The reference's own delete: ListMultipartUploads (s3rver answers 501: tolerated), one
    ListObjectsV2, one DeleteObjects, on both servers; an empty directory: the two listings.

    Found on the way: s3rver 3.7.1 answers the first DeleteObjects of several keys in one
    directory with 500 (its store deletes the keys in parallel and races on removing the
    emptied directory: ENOENT from readdirSync), and botocore retries it. That retried
    request was the "extra DeleteObjects" s3fs's ``rm`` seemed to send; it is the server's,
    so retries of server errors are left out of the comparison (and must be DeleteObjects).
    """
    on_moto = _dispose_workload(s3)
    on_s3rver = _dispose_workload(s3rver)
    assert on_moto == on_s3rver
    assert on_moto == [
        Counter({"ListMultipartUploads": 1, "ListObjectsV2": 1, "DeleteObjects": 1}),
        Counter({"ListMultipartUploads": 1, "ListObjectsV2": 1}),
    ]
