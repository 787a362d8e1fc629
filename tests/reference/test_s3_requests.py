"""What the reference storage sends to S3, counted at the server (moto + request ledger).

Each measurement starts from a fresh storage instance and a fresh process state (no cached
s3fs client or listing), and counts the requests that reach the server, whoever sent them.
The numbers are the contract of the plan: a file-backed stream costs one PutObject (or the
multipart set), an inline stream nothing, the worker path no HEAD/LIST of any kind (S1), the
coordinator no directory requests on an object store (ACC5, ACC6), finalizing one PutObject
(MD2), resolving a pointer one HEAD (PTR9), reading a handle one GET (H1), discarding one
DELETE (H2), duplicating server-side copies only (TO4).

Issue 9 added two on purpose: the coordinator's once-per-job setup
(``initialize_base_locations_for_checkpoint``) probes once per process whether the server
honours conditional writes (PutObject, PutObject refused with 412, DeleteObject of one probe
object; ``ckptstore.stores.s3``), and a process that publishes ``_metadata`` without any setup
probes before its first publish. The per-checkpoint path stays one PutObject per ``_metadata``. And
a directory's delete is the reference's own (ListMultipartUploads, then one ListObjectsV2 and
one DeleteObjects per 1000 keys) instead of s3fs's ``rm``.
"""

from __future__ import annotations

import os
import pickle
import re
from typing import Any

import pytest

from ckptstore import FileSystemCheckpointStorage
from ckptstore.api import (
    ByteStreamStateHandle,
    CheckpointedStateScope,
    CheckpointStorageLocationReference,
    JobID,
    encode_path_as_reference,
)
from ckptstore.filesystem.handles import FileStateHandle, RelativeFileStateHandle
from tests.reference._moto import (
    DIRECTORY_PROBES,
    PROBE_KEY,
    S3Root,
)

pytest.importorskip("s3fs")
pytest.importorskip("moto.server")

THRESHOLD = 20480  # the default inline threshold (CS4)
FILE_SIZE = 30000  # above the threshold: one file
SMALL_SIZE = 100  # below the threshold: inline
MIB = 1024 * 1024

EXCLUSIVE = CheckpointedStateScope.EXCLUSIVE
SHARED = CheckpointedStateScope.SHARED
DEFAULT_REFERENCE = CheckpointStorageLocationReference.default()


def make_storage(s3: S3Root, **options: Any) -> FileSystemCheckpointStorage:
    storage_options = {**s3.storage_options, **options.pop("storage_options", {})}
    options.setdefault("savepoint_path", s3.sub("savepoints"))
    return FileSystemCheckpointStorage(
        s3.sub("checkpoints"), storage_options=storage_options, **options
    )


def open_stream(kind: str, storage: FileSystemCheckpointStorage, job: JobID, chk: int) -> Any:
    """A fresh worker-side stream of the given kind (new access object, no I/O)."""
    access = storage.create_checkpoint_storage(job)
    if kind == "task-owned":
        return access.create_task_owned_state_stream()
    location = access.resolve_checkpoint_storage_location(chk, DEFAULT_REFERENCE)
    scope = EXCLUSIVE if kind == "exclusive" else SHARED
    return location.create_checkpoint_state_output_stream(scope)


def write_file_handle(
    s3: S3Root,
    storage: FileSystemCheckpointStorage,
    job: JobID,
    kind: str = "shared",
    size: int = FILE_SIZE,
) -> tuple[FileStateHandle, bytes]:
    data = os.urandom(size)
    stream = open_stream(kind, storage, job, 1)
    stream.write(data)
    handle = stream.close_and_get_handle()
    assert isinstance(handle, FileStateHandle), handle
    return handle, data


def finalize_checkpoint(storage: FileSystemCheckpointStorage, job: JobID, chk: int) -> Any:
    location = storage.create_checkpoint_storage(job).initialize_location_for_checkpoint(chk)
    with location.create_metadata_output_stream() as out:
        out.write(b"metadata of checkpoint %d" % chk)
        return out.close_and_finalize_checkpoint()


# --------------------------------------------------------------------------- streams


@pytest.mark.parametrize("kind", ["exclusive", "shared", "task-owned"])
def test_file_backed_stream_costs_exactly_one_put(s3: S3Root, kind: str) -> None:
    """S11, S12, S1: state above the threshold is one object, written by one PutObject.

    No HEAD, no LIST, no HeadBucket before or after: the stream assumes its directory.
    """
    job = JobID.generate()
    data = os.urandom(FILE_SIZE)
    with s3.record() as rec:
        storage = make_storage(s3)
        stream = open_stream(kind, storage, job, 3)
        for start in range(0, FILE_SIZE, 4096):
            stream.write(data[start : start + 4096])
        handle = stream.close_and_get_handle()
    assert rec.operations() == {"PutObject": 1}, rec.summary()
    assert isinstance(handle, FileStateHandle)
    assert rec.requests[0].key == s3.key_of(handle.file_path), rec.summary()
    assert s3.read(handle.file_path) == data


def test_large_stream_costs_exactly_the_multipart_set(s3: S3Root) -> None:
    """S12 on S3: a file larger than the client's block size is one multipart upload.

    storage_options reach s3fs (default_block_size=5 MiB), so 12 MiB costs
    CreateMultipartUpload, n x UploadPart, CompleteMultipartUpload and nothing else.
    """
    job = JobID.generate()
    data = os.urandom(12 * MIB)
    with s3.record() as rec:
        storage = make_storage(s3, storage_options={"default_block_size": 5 * MIB})
        stream = open_stream("shared", storage, job, 4)
        for start in range(0, len(data), MIB):
            stream.write(data[start : start + MIB])
        handle = stream.close_and_get_handle()
    ops = rec.operations()
    assert set(ops) == {"CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload"}, (
        rec.summary()
    )
    assert ops["CreateMultipartUpload"] == 1, rec.summary()
    assert ops["CompleteMultipartUpload"] == 1, rec.summary()
    assert 2 <= ops["UploadPart"] <= 3, rec.summary()  # 12 MiB in parts of >= 5 MiB
    assert isinstance(handle, FileStateHandle)
    assert handle.state_size == len(data)
    assert s3.read(handle.file_path) == data


@pytest.mark.parametrize("size", [1, SMALL_SIZE, THRESHOLD])
@pytest.mark.parametrize("kind", ["exclusive", "shared", "task-owned"])
def test_inline_stream_costs_zero_requests(s3: S3Root, kind: str, size: int) -> None:
    """S12, TO2: state up to the threshold travels in the handle; S3 sees nothing at all."""
    job = JobID.generate()
    data = os.urandom(size)
    with s3.record() as rec:
        storage = make_storage(s3)
        stream = open_stream(kind, storage, job, 5)
        stream.write(data)
        stream.flush()
        handle = stream.close_and_get_handle()
    assert len(rec) == 0, rec.summary()
    assert isinstance(handle, ByteStreamStateHandle)
    assert handle.as_bytes_if_in_memory() == data
    assert s3.keys() == []


def test_discarded_stream_leaves_nothing_and_sends_no_put(s3: S3Root) -> None:
    """S13: close() without close_and_get_handle drops the buffered file: no PUT, no object."""
    job = JobID.generate()
    with s3.record() as rec:
        storage = make_storage(s3)
        stream = open_stream("exclusive", storage, job, 6)
        stream.write(os.urandom(FILE_SIZE))  # spilled into the (client-side) file buffer
        stream.flush()
        stream.close()
        stream.close()  # idempotent
    assert rec.count(operation=("PutObject", "CreateMultipartUpload", "UploadPart")) == 0, (
        rec.summary()
    )
    assert rec.count(operation=DIRECTORY_PROBES) == 0, rec.summary()
    assert s3.keys() == []


def test_discarded_multipart_stream_aborts_its_upload(s3: S3Root) -> None:
    """S13: a discarded stream whose upload already started aborts it; no object remains."""
    job = JobID.generate()
    with s3.record() as rec:
        storage = make_storage(s3, storage_options={"default_block_size": 5 * MIB})
        stream = open_stream("shared", storage, job, 7)
        for _ in range(12):
            stream.write(os.urandom(MIB))
        stream.close()
    assert rec.count(operation=("PutObject", "CompleteMultipartUpload")) == 0, rec.summary()
    assert rec.count(operation="AbortMultipartUpload") == 1, rec.summary()
    assert rec.count(operation=DIRECTORY_PROBES) == 0, rec.summary()
    assert s3.keys() == []


# --------------------------------------------------------------------------- metadata


def test_finalizing_metadata_costs_exactly_one_put(s3: S3Root) -> None:
    """MD2, MD4: _metadata is published by one exclusive PutObject at finalize, nothing else.

    The coordinator's location setup (ACC6) and the metadata stream's creation send nothing.
    The job's setup ran before (it probes conditional writes once per process: not counted
    here, see ``test_coordinator_setup_probes_conditional_writes_once``).
    """
    job = JobID.generate()
    make_storage(s3).create_checkpoint_storage(job).initialize_base_locations_for_checkpoint()
    with s3.record() as rec:
        storage = make_storage(s3)
        access = storage.create_checkpoint_storage(job)
        location = access.initialize_location_for_checkpoint(8)
        out = location.create_metadata_output_stream()
        out.write(b"x" * 5000)
        completed = out.close_and_finalize_checkpoint()
    assert rec.operations() == {"PutObject": 1}, rec.summary()
    assert rec.requests[0].key == s3.key_of(s3.sub("checkpoints", str(job), "chk-8", "_metadata"))
    assert completed.external_pointer == s3.sub("checkpoints", str(job), "chk-8")
    assert completed.metadata_handle.state_size == 5000


def test_closed_metadata_stream_sends_nothing(s3: S3Root) -> None:
    """MD5: close() without finalize leaves no _metadata and costs no request."""
    job = JobID.generate()
    with s3.record() as rec:
        storage = make_storage(s3)
        location = storage.create_checkpoint_storage(job).initialize_location_for_checkpoint(9)
        out = location.create_metadata_output_stream()
        out.write(b"never published")
        out.close()
    assert len(rec) == 0, rec.summary()
    assert s3.keys() == []


# --------------------------------------------------------------------------- worker / coordinator


def test_worker_path_sends_no_head_and_no_list(s3: S3Root) -> None:
    """S1, ACC9, ACC10, T-FSA5: the whole worker path never asks S3 about directories.

    Unpickling the storage, create_checkpoint_storage, resolve_checkpoint_storage_location with
    the default and with a savepoint reference, exclusive/shared/task-owned streams above and
    below the threshold, close_and_get_handle and close(): no HeadObject, no HeadBucket, no
    ListObjects(V2); exactly one PutObject per file-backed stream and nothing else.
    """
    job = JobID.generate()
    configured = make_storage(s3)
    blob = pickle.dumps(configured)
    savepoint_dir = s3.sub("savepoints", f"savepoint-{str(job)[:6]}-0123456789ab")
    with s3.record() as rec:
        storage = pickle.loads(blob)
        access = storage.create_checkpoint_storage(job)
        checkpoint = access.resolve_checkpoint_storage_location(11, DEFAULT_REFERENCE)
        savepoint = access.resolve_checkpoint_storage_location(
            11, encode_path_as_reference(savepoint_dir)
        )
        handles = []
        factories = [
            lambda: checkpoint.create_checkpoint_state_output_stream(EXCLUSIVE),
            lambda: checkpoint.create_checkpoint_state_output_stream(SHARED),
            lambda: savepoint.create_checkpoint_state_output_stream(EXCLUSIVE),
            lambda: savepoint.create_checkpoint_state_output_stream(SHARED),
            access.create_task_owned_state_stream,
        ]
        for factory in factories:
            for size in (SMALL_SIZE, FILE_SIZE):
                stream = factory()
                stream.write(os.urandom(size))
                handles.append(stream.close_and_get_handle())
            discarded = factory()
            discarded.write(os.urandom(FILE_SIZE))
            discarded.close()
    assert rec.count(operation=DIRECTORY_PROBES) == 0, rec.summary()
    assert rec.operations() == {"PutObject": len(factories)}, rec.summary()
    files = [h for h in handles if isinstance(h, FileStateHandle)]
    assert len(files) == len(factories)
    assert sorted(r.key for r in rec.requests) == sorted(s3.key_of(h.file_path) for h in files)
    assert sum(isinstance(h, ByteStreamStateHandle) for h in handles) == len(factories)
    savepoint_files = [h for h in files if h.file_path.startswith(savepoint_dir + "/")]
    assert len(savepoint_files) == 2


def test_coordinator_initialization_sends_nothing_on_s3(s3: S3Root) -> None:
    """ACC1, ACC5, ACC6, ACC7: object stores have no directories, so the coordinator sends
    no directory request: not for the base locations, chk-<n>, nor a savepoint location.

    Issue 9: the first setup in a process probes conditional writes (three requests on one
    probe object below the job's checkpoint directory, none a HEAD or LIST); every later
    setup, location and savepoint initialization sends nothing.
    """
    job = JobID.generate()
    with s3.record() as first:
        make_storage(s3).create_checkpoint_storage(job).initialize_base_locations_for_checkpoint()
    assert [r.operation for r in first.requests] == ["PutObject", "PutObject", "DeleteObject"], (
        first.summary()
    )
    probe_keys = {r.key for r in first.requests}
    assert len(probe_keys) == 1, first.summary()
    probe_key = str(probe_keys.pop())
    assert probe_key.startswith(s3.key_of(s3.sub("checkpoints", str(job))) + PROBE_KEY)
    assert [r.status for r in first.requests] == [200, 412, 204], first.summary()
    with s3.record() as rec:
        storage = make_storage(s3)
        access = storage.create_checkpoint_storage(job)
        access.initialize_base_locations_for_checkpoint()
        location = access.initialize_location_for_checkpoint(12)
        savepoint = access.initialize_location_for_savepoint(13, None)
        targeted = access.initialize_location_for_savepoint(14, s3.sub("elsewhere"))
    assert len(rec) == 0, rec.summary()
    assert access.conditional_writes == "honoured"
    assert location.metadata_file_path == s3.sub("checkpoints", str(job), "chk-12", "_metadata")
    prefix = s3.sub("savepoints", f"savepoint-{str(job)[:6]}-")
    assert savepoint.metadata_file_path.startswith(prefix)
    assert targeted.metadata_file_path.startswith(s3.sub("elsewhere", "savepoint-"))
    assert s3.keys() == []


def test_first_publish_without_setup_probes_once(s3: S3Root) -> None:
    """Issue 9: a process that publishes _metadata without having run the setup probes
    before its first publish (the probe goes below the job's checkpoint directory); its
    later checkpoints cost one PutObject each."""
    job = JobID.generate()
    with s3.record() as first:
        finalize_checkpoint(make_storage(s3), job, 1)
    ops = [r.operation for r in first.requests]
    assert ops == ["PutObject", "PutObject", "DeleteObject", "PutObject"], first.summary()
    assert all(PROBE_KEY in str(r.key) for r in first.requests[:3]), first.summary()
    with s3.record() as later:
        finalize_checkpoint(make_storage(s3), job, 2)
    assert later.operations() == {"PutObject": 1}, later.summary()
    keys = s3.keys()
    assert not [key for key in keys if PROBE_KEY in "/" + key.rsplit("/", 1)[-1]]


def test_disposing_costs_one_list_and_one_delete_per_1000_keys(s3: S3Root) -> None:
    """MD6, MD7 on S3 (issue 9): the reference deletes a directory itself: one
    ListMultipartUploads, one ListObjectsV2 and one DeleteObjects for up to
    1000 keys; an empty directory costs the two listings. (s3fs's ``rm`` sent one
    ListObjectsV2 and one DeleteObjects here, but three listings and two HEADs for an empty
    directory, and aborted no upload.)"""
    job = JobID.generate()
    storage = make_storage(s3)
    access = storage.create_checkpoint_storage(job)
    location = access.initialize_location_for_checkpoint(20)
    for scope in (EXCLUSIVE, EXCLUSIVE, SHARED):
        stream = location.create_checkpoint_state_output_stream(scope)
        stream.write(os.urandom(FILE_SIZE))
        stream.close_and_get_handle()
    with location.create_metadata_output_stream() as out:
        out.write(b"metadata")
        completed = out.close_and_finalize_checkpoint()
    with s3.record() as rec:
        completed.dispose_storage_location()
    expected = {"ListMultipartUploads": 1, "ListObjectsV2": 1, "DeleteObjects": 1}
    assert rec.operations() == expected, rec.summary()
    assert "uploads" in rec.filter(operation="ListMultipartUploads")[0].query
    keys = s3.keys()
    assert [k for k in keys if "/chk-20/" in k] == []
    assert len([k for k in keys if "/shared/" in k]) == 1  # never below chk-20
    empty = access.initialize_location_for_checkpoint(21)
    with s3.record() as rec:
        empty.dispose_on_failure()
    assert rec.operations() == {"ListMultipartUploads": 1, "ListObjectsV2": 1}, rec.summary()


# --------------------------------------------------------------------------- pointers and handles


def test_resolving_a_pointer_costs_one_head_and_no_list(s3: S3Root) -> None:
    """PTR9, PTR6, PTR8: the dir form costs one HeadObject of <dir>/_metadata, never a LIST.

    The dir + '/' and the metadata-file forms cost the same single HEAD.
    """
    job = JobID.generate()
    completed = finalize_checkpoint(make_storage(s3), job, 15)
    pointer = completed.external_pointer
    metadata_key = s3.key_of(pointer + "/_metadata")
    for form in (pointer, pointer + "/", pointer + "/_metadata"):
        with s3.record() as rec:
            resolved = make_storage(s3).resolve_checkpoint(form)
        assert rec.operations() == {"HeadObject": 1}, f"{form}: {rec.summary()}"
        assert rec.requests[0].key == metadata_key, rec.summary()
        assert resolved.external_pointer == pointer
        assert resolved.metadata_handle.state_size == completed.metadata_handle.state_size


@pytest.mark.parametrize("relative", [False, True], ids=["absolute", "relative"])
def test_reading_a_file_handle_costs_exactly_one_get(s3: S3Root, relative: bool) -> None:
    """H1, H3: the handle knows its size, so reading costs one GetObject and no HEAD.

    The handle is read after pickling (as it travels to the coordinator) and, in the relative
    case, after the completed location rebased it (resolve_handle, no I/O).
    """
    job = JobID.generate()
    storage = make_storage(s3)
    handle, data = write_file_handle(s3, storage, job, "exclusive" if relative else "shared")
    completed = finalize_checkpoint(storage, job, 1)
    resolved = make_storage(s3).resolve_checkpoint(completed.external_pointer)
    blob = pickle.dumps(handle)
    with s3.record() as rec:
        copy = pickle.loads(blob)
        if relative:
            copy = resolved.resolve_handle(copy)
            assert isinstance(copy, RelativeFileStateHandle)
        with copy.open_input_stream() as stream:
            read = stream.read()
    assert read == data
    assert rec.operations() == {"GetObject": 1}, rec.summary()


def test_discarding_a_file_handle_costs_one_delete(s3: S3Root) -> None:
    """H2, T-FSH2, T-FSH3: discard deletes the file with one request, never touches or
    inspects the parent; discarding a missing file is not an error."""
    job = JobID.generate()
    storage = make_storage(s3)
    handle, _ = write_file_handle(s3, storage, job)
    sibling, _ = write_file_handle(s3, storage, job)
    with s3.record() as rec:
        pickle.loads(pickle.dumps(handle)).discard_state()
    assert len(rec) == 1, rec.summary()
    assert rec.count(operation=("DeleteObject", "DeleteObjects")) == 1, rec.summary()
    assert not s3.exists(handle.file_path)
    assert s3.exists(sibling.file_path)
    with s3.record() as rec:
        handle.discard_state()  # already gone: not an error (S3 answers 204 to the DELETE)
    assert rec.operations() == {"DeleteObject": 1}, rec.summary()


def test_duplicate_with_task_owned_toolset_is_server_side_copy(s3: S3Root) -> None:
    """TO4, ACC11, S17: duplication costs one CopyObject per handle; the data never travels
    through the client (no GetObject, no PutObject, no multipart)."""
    job = JobID.generate()
    storage = make_storage(s3)
    relative, relative_data = write_file_handle(s3, storage, job, "exclusive")
    absolute, absolute_data = write_file_handle(s3, storage, job, "shared")
    with s3.record() as rec:
        access = make_storage(s3).create_checkpoint_storage(job)
        toolset = access.create_task_owned_checkpoint_state_toolset()
        assert toolset.can_fast_duplicate(relative)
        assert toolset.can_fast_duplicate(absolute)
        copies = toolset.duplicate([relative, absolute])
    assert rec.operations() == {"CopyObject": 2}, rec.summary()
    taskowned = s3.sub("checkpoints", str(job), "taskowned")
    # fresh random names in taskowned/ (never the sources' names: no overwrites)
    assert [c.file_path.rsplit("/", 1)[0] for c in copies] == [taskowned, taskowned]
    assert len({c.file_path for c in copies} | {relative.file_path, absolute.file_path}) == 4
    assert isinstance(copies[0], RelativeFileStateHandle)
    assert type(copies[1]) is FileStateHandle
    assert [c.state_size for c in copies] == [relative.state_size, absolute.state_size]
    assert s3.read(copies[0].file_path) == relative_data
    assert s3.read(copies[1].file_path) == absolute_data


# --------------------------------------------------------------------------- entropy


def test_entropy_on_s3(s3: S3Root) -> None:
    """E3, E4, E6, E7, L7, MD1: data keys get random characters in place of the entropy key;
    _metadata and the external pointer have the key removed; each file costs one PUT."""
    key = "_entropy_"
    job = JobID.generate()
    storage = FileSystemCheckpointStorage(
        s3.sub(key, "checkpoints"),
        storage_options=s3.storage_options,
        entropy_key=key,
        entropy_length=4,
    )
    with s3.record() as setup:  # the probe: below the checkpoint directory without the key
        storage.create_checkpoint_storage(job).initialize_base_locations_for_checkpoint()
    assert setup.operations() == {"PutObject": 2, "DeleteObject": 1}, setup.summary()
    assert all(key not in str(r.key) for r in setup.requests), setup.summary()
    with s3.record() as rec:
        access = storage.create_checkpoint_storage(job)
        access.initialize_base_locations_for_checkpoint()
        location = access.initialize_location_for_checkpoint(16)
        handles = []
        for stream in (
            location.create_checkpoint_state_output_stream(EXCLUSIVE),
            location.create_checkpoint_state_output_stream(SHARED),
            access.create_task_owned_state_stream(),
        ):
            stream.write(os.urandom(FILE_SIZE))
            handles.append(stream.close_and_get_handle())
        with location.create_metadata_output_stream() as out:
            out.write(b"metadata")
            completed = out.close_and_finalize_checkpoint()
    assert rec.operations() == {"PutObject": 4}, rec.summary()
    root_key = s3.key_of(s3.url)
    expected_dirs = [f"{job}/chk-16", f"{job}/shared", f"{job}/taskowned"]
    for handle, directory in zip(handles, expected_dirs, strict=True):
        assert type(handle) is FileStateHandle, handle  # E6: no relative handles with entropy
        data_key = s3.key_of(handle.file_path)
        assert key not in data_key
        pattern = (
            rf"{re.escape(root_key)}/[0-9A-Za-z]{{4}}/checkpoints/{re.escape(directory)}"
            r"/[0-9a-f-]{36}"
        )
        assert re.fullmatch(pattern, data_key), data_key
    entropy = {s3.key_of(h.file_path)[len(root_key) + 1 :][:4] for h in handles}
    assert len(entropy) > 1, entropy  # fresh random characters per file (62^4 choices)
    put_keys = [r.key for r in rec.requests]
    assert all(key not in k for k in put_keys if k is not None), put_keys
    metadata_key = f"{root_key}/checkpoints/{job}/chk-16/_metadata"
    assert put_keys[-1] == metadata_key
    assert completed.external_pointer == s3.sub("checkpoints", str(job), "chk-16")
    assert key not in completed.external_pointer
    assert key not in completed.metadata_handle.file_path
    with s3.record() as rec:
        resolved = storage.resolve_checkpoint(completed.external_pointer)
    assert rec.operations() == {"HeadObject": 1}, rec.summary()
    assert resolved.external_pointer == completed.external_pointer
