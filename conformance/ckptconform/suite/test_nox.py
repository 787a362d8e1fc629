"""NOX: no directory-existence calls (seed 002; Flink S1, T-FSA5, T-FSH3; pain point P1).

Counted on S3 through the request ledger (requests the suite makes through ``raw`` are not
counted). What "the worker path" includes, decided here: unpickling the storage it received,
``create_checkpoint_storage`` for its job, ``resolve_checkpoint_storage_location``, and creating,
writing, closing and finishing state streams of both scopes and task-owned streams. The
coordinator's setup (``initialize_base_locations_for_checkpoint`` and
``initialize_location_for_checkpoint``) runs before the counted block: on a real cluster it runs
once, on the JobManager, which is exactly why workers need not check anything.
"""

from __future__ import annotations

import pickle
from contextlib import nullcontext
from urllib.parse import parse_qs

import pytest

from ckptconform.suite._driver import (
    EXCLUSIVE,
    SHARED,
    JobDriver,
    fail_message,
    file_path,
    files_below,
    payload,
    tagged,
    write_chunks,
    write_state,
)

EXISTENCE_CHECKS = ("HeadObject", "HeadBucket", "ListObjectsV2", "ListObjects")
LISTS = ("ListObjectsV2", "ListObjects", "HeadBucket")
UPLOADS = {"PutObject", "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload"}


def _fail(clause, operation, rec, sandbox=None, **inputs) -> str:
    return fail_message(clause, operation, sandbox, **inputs) + "\nrequests:\n" + rec.summary()


@pytest.mark.clause("NOX-1", "SER-1")
@pytest.mark.parametrize("threshold", [None, 0])
def test_worker_path_sends_no_existence_checks(sandbox, target, ledger, threshold):
    """NOX-1: the worker path sends no HeadObject, HeadBucket or List request; SER-1: the
    storage survives pickle."""
    options = (
        {}
        if threshold is None or "inline-state" not in target.capabilities
        else {"inline_threshold": threshold}
    )
    drv = JobDriver(sandbox, **options)
    drv.init_base()
    location = drv.location(1)
    with tagged("SER-1", "pickle the storage for the worker"):
        blob = pickle.dumps(drv.storage)
    reference = location.location_reference
    with ledger.record() as rec:
        storage = pickle.loads(blob)
        access = storage.create_checkpoint_storage(drv.job_id)
        factory = access.resolve_checkpoint_storage_location(1, reference)
        for scope in (EXCLUSIVE, SHARED):
            for size in (0, 10, 30_000):
                write_state(factory, payload(size, seed=size), scope, [4096])
            abandoned = factory.create_checkpoint_state_output_stream(scope)
            abandoned.write(payload(30_000))
            abandoned.close()
        for size in (10, 30_000):
            stream = access.create_task_owned_state_stream()
            write_chunks(stream, payload(size), [1000])
            stream.close_and_get_handle()
    bad = rec.count(operation=EXISTENCE_CHECKS)
    with tagged("NOX-1", "worker path", threshold=threshold):
        assert bad == 0, "requests:\n" + rec.summary()


@pytest.mark.clause("NOX-2")
def test_resolving_a_location_costs_nothing(sandbox, target, backend):
    """NOX-2: create_checkpoint_storage and resolve_checkpoint_storage_location create nothing
    and send no request."""
    storage = sandbox.make_storage()
    coordinator = JobDriver(sandbox, storage=storage)
    coordinator.init_base()
    reference = coordinator.location(3).location_reference
    fresh = sandbox.make_storage()
    before = files_below(sandbox, sandbox.root)
    recording = backend.ledger.record() if backend.ledger is not None else nullcontext()
    with recording as rec:
        for _ in range(3):
            access = storage.create_checkpoint_storage(coordinator.job_id)
            access.resolve_checkpoint_storage_location(3, reference)
            access.resolve_checkpoint_storage_location(4, reference)
            other = fresh.create_checkpoint_storage(coordinator.job_id)
            other.resolve_checkpoint_storage_location(17, reference)
    if rec is not None:
        assert len(rec) == 0, _fail("NOX-2", "create_checkpoint_storage + resolve location", rec)
    assert files_below(sandbox, sandbox.root) == before, fail_message(
        "NOX-2", "create_checkpoint_storage + resolve location created files", sandbox
    )
    if "file-layout" in target.capabilities and not backend.object_store:
        assert not sandbox.exists(coordinator.chk_dir(17)), fail_message(
            "NOX-2", "resolve_checkpoint_storage_location(17) created chk-17", sandbox
        )


def _file_factory(sandbox, threshold):
    drv = JobDriver(sandbox, inline_threshold=threshold)
    drv.init_base()
    location = drv.location(1)
    return drv, drv.worker(1, location.location_reference)


#: The kinds of state stream: of both scopes from a factory, and task-owned from the access.
STREAM_KINDS = (EXCLUSIVE, SHARED, "task-owned")


def _new_stream(drv, factory, kind):
    """A new state stream of ``kind`` (one of :data:`STREAM_KINDS`)."""
    if kind == "task-owned":
        return drv.access.create_task_owned_state_stream()
    return factory.create_checkpoint_state_output_stream(kind)


@pytest.mark.clause("NOX-3")
def test_inline_streams_send_nothing(sandbox, ledger):
    """NOX-3: a stream whose state stays inline sends no request."""
    drv, factory = _file_factory(sandbox, 4096)
    with ledger.record() as rec:
        for scope in (EXCLUSIVE, SHARED):
            write_state(factory, payload(4096), scope, [100])
            write_state(factory, payload(1), scope)
        stream = drv.access.create_task_owned_state_stream()
        stream.write(payload(10))
        stream.close_and_get_handle()
    assert len(rec) == 0, _fail("NOX-3", "inline streams", rec, threshold=4096)


@pytest.mark.clause("NOX-4")
@pytest.mark.parametrize("size", [1, 70_000, 6 * 1024 * 1024])
def test_one_upload_per_file(sandbox, ledger, size):
    """NOX-4: a file-backed stream costs one PutObject or one multipart upload, nothing else."""
    drv, factory = _file_factory(sandbox, 0)
    blob = payload(size)
    for scope in STREAM_KINDS:
        with ledger.record() as rec:
            stream = _new_stream(drv, factory, scope)
            write_chunks(stream, blob, [65536] * (size // 65536 + 1))
            stream.close_and_get_handle()
        ops = rec.operations()
        msg = _fail("NOX-4", "write one file-backed stream", rec, size=size, scope=scope)
        assert set(ops) <= UPLOADS, msg
        if ops.get("PutObject"):
            assert ops == {"PutObject": 1}, msg
        else:
            assert ops["CreateMultipartUpload"] == 1, msg
            assert ops["CompleteMultipartUpload"] == 1, msg
            assert ops["UploadPart"] >= 1, msg


#: NOX-10's stream: past the inline threshold and the write buffer, below S3's 5 MiB minimum
#: part size, so that nothing of it has to reach the store before it is finished
DISCARDED_SIZE = 100 * 1024


@pytest.mark.clause("NOX-10")
def test_discarded_streams_that_uploaded_nothing_send_nothing(sandbox, ledger):
    """NOX-10: creating a stream, writing 100 KiB to it and discarding it with close() sends
    no request, for exclusive, shared and task-owned streams."""
    drv, factory = _file_factory(sandbox, 0)
    blob = payload(DISCARDED_SIZE)
    for scope in STREAM_KINDS:
        with ledger.record() as rec:
            stream = _new_stream(drv, factory, scope)
            write_chunks(stream, blob, [16384] * (DISCARDED_SIZE // 16384 + 1))
            stream.close()
        assert len(rec) == 0, _fail(
            "NOX-10", "create, write and discard a stream", rec, size=DISCARDED_SIZE, scope=scope
        )


@pytest.mark.clause("NOX-5")
def test_discard_without_existence_checks(sandbox, ledger):
    """NOX-5: discard_state() of a file handle deletes without HeadObject or List requests."""
    drv, factory = _file_factory(sandbox, 0)
    handles = [write_state(factory, payload(500), scope) for scope in (EXCLUSIVE, SHARED)]
    stream = drv.access.create_task_owned_state_stream()
    stream.write(payload(500))
    handles.append(stream.close_and_get_handle())
    for handle in handles:
        with ledger.record() as rec:
            handle.discard_state()
        msg = _fail("NOX-5", "discard_state", rec, handle=handle)
        assert rec.count(operation=EXISTENCE_CHECKS) == 0, msg
        assert rec.count(operation=("DeleteObject", "DeleteObjects")) >= 1, msg
        assert not sandbox.exists(file_path(handle)), msg + "\nthe file is still there"


@pytest.mark.clause("NOX-6")
def test_resolving_a_pointer_never_lists(sandbox, target, ledger):
    """NOX-6: resolve_checkpoint sends no List and no HeadBucket request."""
    drv = JobDriver(sandbox)
    drv.init_base()
    completed, _ = drv.checkpoint(6, exclusive=[payload(100)])
    pointers = [
        completed.external_pointer,
        completed.external_pointer + "/",
        file_path(completed.metadata_handle),
    ]
    for pointer in pointers:
        if pointer is None:
            continue
        storage = drv.fresh_storage()
        with ledger.record() as rec:
            storage.resolve_checkpoint(pointer)
        assert rec.count(operation=LISTS) == 0, _fail(
            "NOX-6", "resolve_checkpoint", rec, pointer=pointer
        )


@pytest.mark.clause("NOX-9")
def test_resolving_a_pointer_costs_one_request(sandbox, target, ledger):
    """NOX-9: resolving a completed checkpoint's pointer, the pointer with a trailing '/' and
    its metadata file each send one request, a HeadObject or GetObject of the metadata file."""
    drv = JobDriver(sandbox)
    drv.init_base()
    completed, _ = drv.checkpoint(9, exclusive=[payload(100)], metadata=b"one request")
    metadata = file_path(completed.metadata_handle)
    if metadata is None:
        pytest.skip("the metadata handle names no file: there is no metadata file to look up")
    for pointer in (completed.external_pointer, completed.external_pointer + "/", metadata):
        storage = drv.fresh_storage()
        with ledger.record() as rec:
            storage.resolve_checkpoint(pointer)
        msg = _fail("NOX-9", "resolve_checkpoint", rec, pointer=pointer)
        assert len(rec) == 1, msg + f"\n{len(rec)} requests, not 1"
        (request,) = rec.requests
        assert request.operation in ("HeadObject", "GetObject"), msg
        assert metadata.endswith(request.key or "\0"), msg + "\nnot a request for the metadata file"


@pytest.mark.clause("NOX-7")
@pytest.mark.backend_traits(object_store=True)
def test_no_directory_requests_on_object_stores(sandbox, ledger):
    """NOX-7: on S3 initialize_base_locations_for_checkpoint sends no directory request and
    initialize_location_for_checkpoint no request at all."""
    drv = JobDriver(sandbox)
    with ledger.record() as setup:
        drv.init_base()
    probes = setup.count(operation=EXISTENCE_CHECKS)
    assert probes == 0, _fail("NOX-7", "initialize_base_locations_for_checkpoint", setup)
    with ledger.record() as rec:
        drv.location(1)
        drv.location(2)
    assert len(rec) == 0, _fail("NOX-7", "initialize_location_for_checkpoint 1, 2", rec)


@pytest.mark.clause("NOX-8")
@pytest.mark.parametrize("size", [0, 100, 70_000])
def test_finalization_never_lists(sandbox, ledger, size):
    """NOX-8: writing and finalizing _metadata sends no HeadBucket, no List but of the keys
    that begin with the metadata file's own key, HEAD only on itself."""
    drv = JobDriver(sandbox)
    drv.init_base()
    location = drv.location(8)
    with ledger.record() as rec:
        completed = drv.finalize(location, payload(size))
    msg = _fail("NOX-8", "create_metadata_output_stream + finalize", rec, size=size)
    metadata = file_path(completed.metadata_handle) or ""
    key = sandbox.raw_path(metadata).split("/", 1)[-1]
    for request in rec.filter(operation=LISTS):
        prefix = parse_qs(request.query).get("prefix", [""])[0]
        assert request.operation != "HeadBucket", msg
        assert prefix.startswith(key), msg + f"\n{request} lists more than the keys of {key}"
    for request in rec.filter(operation="HeadObject"):
        assert request.key, msg
        assert metadata.endswith(request.key), msg
