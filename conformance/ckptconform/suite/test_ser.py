"""SER: serializability (seed 000/003: storages are distributed across parallel processes).

Bounds on the size of a storage's pickle (SER-5 MUST 4 KiB, SER-6 SHOULD 1 KiB) include the
backend's ``storage_options`` (an endpoint and test credentials on S3): a storage is its
configuration, so that is what it may carry.

The fresh-process test runs ``sys.executable`` with the parent's ``sys.path``; the child
unpickles the storage first and calls ``create_checkpoint_storage`` before it reads any handle,
as a Flink TaskManager or a restarted JobManager has its storage configured before it touches
state.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import subprocess
import sys
import textwrap
from typing import Any

import cloudpickle
import pytest

from ckptconform.suite._driver import (
    EXCLUSIVE,
    S3_ENDPOINT_VARIABLE,
    SHARED,
    JobDriver,
    check_reads_took_route,
    endpointless_options,
    fail_message,
    file_options,
    file_path,
    join,
    payload,
    process_wide_configuration,
    read_handle,
    require,
    routed_options,
    second_bucket,
    second_route,
    tagged,
    write_state,
)
from ckptstore.api import CheckpointStorageLocationReference, JobID, encode_path_as_reference

PICKLERS = {"pickle": pickle.dumps, "cloudpickle": cloudpickle.dumps}
MUST_BOUND, SHOULD_BOUND = 4096, 1024


def _used_driver(sandbox, target) -> tuple[JobDriver, object, list]:
    drv = JobDriver(sandbox, **file_options(target))
    drv.init_base()
    completed, written = drv.checkpoint(
        1, exclusive=[payload(3000, 1), payload(5, 2)], shared=[payload(4000, 3)]
    )
    drv.storage.resolve_checkpoint(completed.external_pointer)
    return drv, completed, written


@pytest.mark.clause("SER-1")
@pytest.mark.parametrize("how", sorted(PICKLERS))
def test_storage_survives_pickling(sandbox, target, how):
    """SER-1: a storage, fresh and used, survives pickling; the copy writes and resolves alike."""
    fresh = sandbox.make_storage(**file_options(target))
    copy_of_fresh = pickle.loads(PICKLERS[how](fresh))
    drv, completed, _ = _used_driver(sandbox, target)
    for label, storage in (
        ("fresh", copy_of_fresh),
        ("used", pickle.loads(PICKLERS[how](drv.storage))),
    ):
        msg = fail_message("SER-1", f"{how} round trip of a {label} storage", sandbox)
        loc = storage.resolve_checkpoint(completed.external_pointer)
        assert read_handle(loc.metadata_handle) == read_handle(completed.metadata_handle), msg
        copy = JobDriver(sandbox, storage=storage, job_id=drv.job_id)
        factory = copy.worker(1)
        blob = payload(2500, seed=9)
        assert read_handle(copy.write(factory, blob)) == blob, msg + "\nwrite through the copy"


@pytest.mark.clause("SER-2")
@pytest.mark.parametrize("how", sorted(PICKLERS))
def test_handles_survive_pickling(sandbox, target, how):
    """SER-2: inline and file handles survive pickling with size and bytes intact."""
    options = {"inline_threshold": 100} if "inline-state" in target.capabilities else {}
    drv = JobDriver(sandbox, **options)
    drv.init_base()
    factory = drv.worker(1, drv.location(1).location_reference)
    for size in (10, 5000):
        for scope in (EXCLUSIVE, SHARED):
            blob = payload(size, seed=size)
            handle = write_state(factory, blob, scope)
            copy = pickle.loads(PICKLERS[how](handle))
            msg = fail_message(
                "SER-2",
                f"{how} round trip of a handle",
                sandbox,
                size=size,
                scope=scope,
                handle=handle,
            )
            assert copy.state_size == handle.state_size, msg
            assert read_handle(copy) == blob, msg


@pytest.mark.clause("SER-3")
@pytest.mark.parametrize("how", sorted(PICKLERS))
def test_references_and_completed_locations_survive_pickling(sandbox, target, how):
    """SER-3: references keep equality and default-ness; completed locations keep pointers."""
    default = CheckpointStorageLocationReference.default()
    copy = pickle.loads(PICKLERS[how](default))
    assert copy.is_default, fail_message("SER-3", "default reference", how=how)
    assert copy == default, fail_message("SER-3", "default reference", how=how)
    drv, completed, _ = _used_driver(sandbox, target)
    refs = [drv.location(2).location_reference, encode_path_as_reference(sandbox.savepoint_dir)]
    for ref in refs:
        copy = pickle.loads(PICKLERS[how](ref))
        msg = fail_message("SER-3", "location reference", ref=ref, how=how)
        assert copy == ref, msg
        assert copy.is_default == ref.is_default, msg
    copy = pickle.loads(PICKLERS[how](completed))
    msg = fail_message("SER-3", f"{how} round trip of a completed location", sandbox)
    assert copy.external_pointer == completed.external_pointer, msg
    assert read_handle(copy.metadata_handle) == read_handle(completed.metadata_handle), msg


def _pickle_sizes(sandbox, target) -> tuple[int, dict[str, int]]:
    fresh = sandbox.make_storage(**file_options(target))
    before = len(pickle.dumps(fresh))
    drv, _, _ = _used_driver(sandbox, target)
    return before, {
        "fresh": before,
        "used": len(pickle.dumps(drv.storage)),
        "used (cloudpickle)": len(cloudpickle.dumps(drv.storage)),
    }


@pytest.mark.clause("SER-5")
def test_storage_pickle_is_small(sandbox, target):
    """SER-5: a storage pickles to less than 4 KiB, also after use."""
    _, sizes = _pickle_sizes(sandbox, target)
    for label, size in sizes.items():
        assert size < MUST_BOUND, fail_message(
            "SER-5", f"pickle a {label} storage", bytes=size, bound=MUST_BOUND
        )


@pytest.mark.clause("SER-6")
def test_storage_pickle_is_under_1k_and_does_not_grow(sandbox, target):
    """SER-6: a storage pickles below 1 KiB and its pickle does not grow with use."""
    before, sizes = _pickle_sizes(sandbox, target)
    assert max(sizes.values()) < SHOULD_BOUND, fail_message("SER-6", "pickle size", **sizes)
    assert sizes["used"] <= before, fail_message("SER-6", "pickle grew with use", **sizes)


@pytest.mark.clause("SER-7")
@pytest.mark.requires("inline-state")
def test_file_handle_pickle_is_small(sandbox):
    """SER-7: a file-backed handle pickles below 1 KiB."""
    drv = JobDriver(sandbox, inline_threshold=0)
    drv.init_base()
    factory = drv.worker(1, drv.location(1).location_reference)
    for scope in (EXCLUSIVE, SHARED):
        handle = write_state(factory, payload(10_000), scope)
        size = len(pickle.dumps(handle))
        assert size < SHOULD_BOUND, fail_message(
            "SER-7", "pickle a file handle", handle=handle, bytes=size, scope=scope
        )


#: What every fresh process of these tests starts with: a reader of a handle's bytes.
CHILD_PRELUDE = textwrap.dedent(
    """
    import pickle, sys

    def read(handle):
        stream = handle.open_input_stream()
        try:
            return stream.read()
        finally:
            stream.close()
    """
)


def in_fresh_process(
    script: str, first: bytes, rest: bytes, environ: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run :data:`CHILD_PRELUDE` and ``script`` in a fresh interpreter with this process's
    import path and environment (updated by ``environ``); its stdin holds the two pickles
    ``(first, rest)``, unpickled in that order."""
    env = {**os.environ, **(environ or {})}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return subprocess.run(
        [sys.executable, "-c", CHILD_PRELUDE + script],
        input=pickle.dumps((first, rest)),
        capture_output=True,
        env=env,
        timeout=180,
        check=False,
    )


CHILD = textwrap.dedent(
    """
    from ckptstore.api import CheckpointedStateScope

    first, rest = pickle.load(sys.stdin.buffer)
    # the storage and the handles alone first, read before the storage made anything here
    box = pickle.loads(first)
    storage = box["storage"]
    out = {"handles": [read(h) for h in box["handles"]]}
    box.update(pickle.loads(rest))
    out["completed_metadata"] = read(box["completed"].metadata_handle)
    out["completed_pointer"] = box["completed"].external_pointer
    access = storage.create_checkpoint_storage(box["job_id"])
    resolved = storage.resolve_checkpoint(box["pointer"])
    out["resolved_metadata"] = read(resolved.metadata_handle)
    out["resolved_handles"] = [read(resolved.resolve_handle(h)) for h in box["own_handles"]]
    factory = access.resolve_checkpoint_storage_location(box["checkpoint_id"], box["reference"])
    stream = factory.create_checkpoint_state_output_stream(CheckpointedStateScope.EXCLUSIVE)
    stream.write(box["new_state"])
    out["new_handle"] = stream.close_and_get_handle()
    stream = access.create_task_owned_state_stream()
    stream.write(box["new_state"])
    out["task_owned"] = stream.close_and_get_handle()
    sys.stdout.buffer.write(pickle.dumps(out))
    """
)


@pytest.mark.clause("SER-4")
@pytest.mark.backend_traits(cross_process=True)
@pytest.mark.parametrize("how", sorted(PICKLERS))
def test_objects_work_in_a_fresh_process(sandbox, target, how):
    """SER-4: storage, handles, references and completed locations work in a fresh process."""
    drv = JobDriver(sandbox, **file_options(target))
    drv.init_base()
    location = drv.location(3)
    factory = drv.worker(3, location.location_reference)
    blobs = [payload(4000, 1), payload(7, 2), payload(9000, 3)]
    handles = [
        write_state(factory, blobs[0], EXCLUSIVE),
        write_state(factory, blobs[1], EXCLUSIVE),
        write_state(factory, blobs[2], SHARED),
    ]
    completed = drv.finalize(location, b"metadata-of-3")
    next_location = drv.location(4)
    first = {"storage": drv.storage, "handles": handles}
    box = {
        "job_id": drv.job_id,
        "own_handles": handles,
        "completed": completed,
        "pointer": completed.external_pointer,
        "checkpoint_id": 4,
        "reference": next_location.location_reference,
        "new_state": payload(6000, seed=4),
    }
    proc = in_fresh_process(CHILD, PICKLERS[how](first), PICKLERS[how](box))
    msg = fail_message(
        "SER-4", f"{how} objects into a fresh process", sandbox, pointer=completed.external_pointer
    )
    assert proc.returncode == 0, (
        msg + "\nchild stderr:\n" + proc.stderr.decode(errors="replace")[-4000:]
    )
    out = pickle.loads(proc.stdout)
    assert out["handles"] == blobs, msg + "\nhandles read other bytes in the child"
    assert out["completed_metadata"] == b"metadata-of-3", msg + "\ncompleted location's metadata"
    assert out["completed_pointer"] == completed.external_pointer, msg
    assert out["resolved_metadata"] == b"metadata-of-3", msg + "\npointer resolved in the child"
    assert out["resolved_handles"] == blobs, msg + "\nresolve_handle in the child"
    assert read_handle(out["new_handle"]) == box["new_state"], msg + "\nstate written by the child"
    assert read_handle(out["task_owned"]) == box["new_state"], (
        msg + "\ntask-owned state of the child"
    )
    if file_path(out["new_handle"]) is not None:
        assert sandbox.exists(file_path(out["new_handle"])), msg


@pytest.mark.clause("SER-8")
@pytest.mark.backend_traits(object_store=True)
@pytest.mark.parametrize("writer", ["own-endpoint", "second-route"])
def test_each_storage_keeps_its_own_route(sandbox, target, backend, writer):
    """SER-8: with two storages reaching one bucket by different endpoints, the handles and
    completed checkpoints of each (as written and as resolved) read and dispose through the
    writer's endpoint, also when a storage with the other endpoint was made after it."""
    with second_route(backend) as route:
        routed = routed_options(backend, route)
        mine, theirs = (routed, {}) if writer == "second-route" else ({}, routed)
        inputs = {"writer": writer, "route": route.url}
        drv = JobDriver(sandbox, **mine, **file_options(target))
        drv.init_base()
        completed, written = drv.checkpoint(
            3, exclusive=[payload(3000, 1)], shared=[payload(2000, 2)], metadata=b"own route"
        )
        as_written, _ = drv.checkpoint(5, exclusive=[payload(1000, 3)], metadata=b"as written")
        with tagged("SER-8", "resolve the pointer through the writer's storage", **inputs):
            resolved = drv.storage.resolve_checkpoint(completed.external_pointer)
        early = _made_before_the_other(drv, target)
        # the other route is configured last: the most recent storage for the bucket
        other = sandbox.make_storage(**theirs, **file_options(target))
        other.create_checkpoint_storage(JobID.generate())
        expected = [
            (completed.metadata_handle, b"own route"),
            (resolved.metadata_handle, b"own route"),
        ]
        expected += written
        expected += [(resolved.resolve_handle(handle), blob) for handle, blob in written]
        with route.ledger.record() as via_route:
            for handle, blob in expected:
                with tagged("SER-8", "read a handle", sandbox, **inputs):
                    assert read_handle(handle) == blob, "the bytes differ"
        files = sum(1 for handle, _ in expected if file_path(handle) is not None)
        reads = via_route.count(operation="GetObject")
        msg = fail_message("SER-8", "which endpoint the reads took", sandbox, **inputs) + (
            f"\n{reads} GetObject through the second route for {files} file-backed handles"
            f"\n{via_route.summary()}"
        )
        if writer == "second-route":
            require(reads >= files, "SER-8", msg)
        else:
            require(len(via_route) == 0, "SER-8", msg)
        for how, location in (("as resolved", resolved), ("as written", as_written)):
            with (
                route.ledger.record() as disposal,
                tagged("SER-8", f"dispose_storage_location {how}", sandbox, **inputs),
            ):
                location.dispose_storage_location()
            deletes = disposal.count(operation=("DeleteObject", "DeleteObjects"))
            msg = fail_message(
                "SER-8", f"which endpoint the disposal of a checkpoint {how} took", sandbox,
                **inputs,
            ) + f"\n{disposal.summary()}"  # fmt: skip
            if writer == "second-route":
                require(deletes >= 1, "SER-8", msg)
            else:
                require(len(disposal) == 0, "SER-8", msg)
        _keeps_working_through_its_route(sandbox, target, backend, route, drv, writer, early)


def _made_before_the_other(drv, target) -> dict[str, Any]:
    """What the first storage makes before the other storage exists and uses only after it: a
    checkpoint's location and its stream factory, a location to abort, a savepoint location, a
    second access."""
    early: dict[str, Any] = {"location": drv.location(6), "aborted": drv.location(7)}
    early["factory"] = drv.worker(6, early["location"].location_reference)
    early["access"] = drv.storage.create_checkpoint_storage(JobID.generate())
    if "savepoints" in target.capabilities and drv.access.has_default_savepoint_location():
        early["savepoint"] = drv.access.initialize_location_for_savepoint(8, None)
    return early


def _use_what_was_made_before(drv, target, early: dict[str, Any]) -> list[Any]:
    """Abort, set up, write, duplicate, read and finalize through the objects of
    _made_before_the_other; returns the completed locations with their metadata (read and
    disposed of by the caller)."""
    early["aborted"].dispose_on_failure()
    early["access"].initialize_base_locations_for_checkpoint()
    factory = early["factory"]
    written = {
        drv.write(factory, payload(3000, 7), EXCLUSIVE): payload(3000, 7),
        drv.write(factory, payload(2000, 8), SHARED): payload(2000, 8),
    }
    if "fast-duplicate" in target.capabilities:
        for scope in (EXCLUSIVE, SHARED):
            handles = [h for h in written if factory.can_fast_duplicate(h, scope)]
            for source, copy in zip(handles, factory.duplicate(handles, scope), strict=True):
                assert read_handle(copy) == written[source], "a duplicate's bytes differ"
    metadata = b"made before the other storage"
    completed = [(drv.finalize(early["location"], metadata), metadata)]
    if "savepoint" in early:
        metadata = b"savepoint made before the other"
        completed.append((drv.finalize(early["savepoint"], metadata), metadata))
    return completed


def _keeps_working_through_its_route(sandbox, target, backend, route, drv, writer, early):
    """SER-8: after the other storage was made, everything the first one does (with objects it
    made before: a checkpoint's location, its stream factory, a location it aborts, a
    savepoint location, a second access; then a checkpoint's location, exclusive, shared and
    task-owned state, duplicates, a savepoint, disposing the aborted location, reading the
    completed ones' metadata and disposing of them) sends its requests through its own
    endpoint only."""
    inputs = {"writer": writer, "route": route.url}
    everywhere = backend.ledger.record() if backend.ledger is not None else None
    with (
        route.ledger.record() as via_route,
        everywhere or _no_recording() as seen,
        tagged("SER-8", "work on after the other storage was made", sandbox, **inputs),
    ):
        completed = _use_what_was_made_before(drv, target, early)
        location = drv.location(4)
        factory = drv.worker(4, location.location_reference)
        written = [
            drv.write(factory, payload(3000, 4), EXCLUSIVE),
            drv.write(factory, payload(2000, 5), SHARED),
        ]
        drv.task_owned(payload(1000, 6))
        if "fast-duplicate" in target.capabilities:
            toolset = drv.access.create_task_owned_checkpoint_state_toolset()
            toolset.duplicate([h for h in written if toolset.can_fast_duplicate(h)])
        if "savepoints" in target.capabilities and drv.access.has_default_savepoint_location():
            savepoint = drv.access.initialize_location_for_savepoint(9, None)
            drv.finalize(savepoint, b"savepoint through the first storage's route")
        location.dispose_on_failure()
        for done, metadata in completed:
            assert read_handle(done.metadata_handle) == metadata, "the metadata's bytes differ"
            done.dispose_storage_location()
    msg = fail_message("SER-8", "which endpoint the first storage's work took", sandbox, **inputs)
    msg += f"\nthrough the second route:\n{via_route.summary()}"
    if writer == "own-endpoint":
        require(len(via_route) == 0, "SER-8", msg)
    elif seen is not None:
        msg += f"\nat the server:\n{seen.summary()}"
        require(len(via_route) == len(seen), "SER-8", msg)


@contextlib.contextmanager
def _no_recording():
    yield None


#: The regions of the two storages of the case whose routes differ by region only.
REGIONS = ("us-east-1", "eu-west-1")


@pytest.mark.clause("SER-8")
@pytest.mark.backend_traits(object_store=True, any_credentials=True)
def test_each_storage_keeps_its_own_region(sandbox, target, backend, monkeypatch):
    """SER-8: two storages whose storage_options name no endpoint (AWS_ENDPOINT_URL_S3) and
    differ by region only reach one bucket; the first one's checkpoint, the second one's made
    after it, reading the first one's handles and completed checkpoint (as written and as
    resolved from its pointer through it), then the second's, and disposing of each are signed
    for the region of the storage that wrote them."""
    if backend.scheme != "s3":
        pytest.skip(f"{S3_ENDPOINT_VARIABLE} routes S3 clients only, not {backend.scheme}")
    shared = endpointless_options(backend, own_key=True)
    client_kwargs = shared.pop("client_kwargs", {})
    with second_route(backend) as route:
        monkeypatch.setenv(S3_ENDPOINT_VARIABLE, route.url)
        inputs = {S3_ENDPOINT_VARIABLE: route.url, "regions": REGIONS}
        checkpoints = []
        for n, (region, which) in enumerate(zip(REGIONS, ("first", "second"), strict=True)):
            regional = {**shared, "client_kwargs": {**client_kwargs, "region_name": region}}
            metadata = which.encode()
            with route.ledger.record() as writing:
                drv = JobDriver(sandbox, storage_options=regional, **file_options(target))
                drv.init_base()
                completed, written = drv.checkpoint(
                    3 + n,
                    exclusive=[payload(3000, 1 + 2 * n)],
                    shared=[payload(2000, 2 + 2 * n)],
                    metadata=metadata,
                )
            _signed_for(region, writing, f"the {which} storage's checkpoint", sandbox, **inputs)
            checkpoints.append((region, drv.storage, completed, written, metadata, which))
        for region, storage, checkpoint, handles, metadata, which in checkpoints:
            with route.ledger.record() as reading:
                _read_and_dispose(storage, checkpoint, handles, metadata, sandbox, **inputs)
            _signed_for(
                region, reading, f"reading the {which} storage's checkpoint", sandbox, **inputs
            )
        monkeypatch.delenv(S3_ENDPOINT_VARIABLE)


def _read_and_dispose(storage, completed, written, metadata, sandbox, **inputs) -> None:
    """SER-8: read a checkpoint's handles and metadata as written, then as resolved from its
    pointer through ``storage``, then dispose of the resolved checkpoint (the handles as
    written first: before the storage does anything else after the other storage was made)."""
    with tagged("SER-8", "read and dispose of a checkpoint", sandbox, **inputs):
        for handle, blob in [(completed.metadata_handle, metadata), *written]:
            assert read_handle(handle) == blob, "the bytes differ"
        resolved = storage.resolve_checkpoint(completed.external_pointer)
        resolved_handles = [(resolved.resolve_handle(h), blob) for h, blob in written]
        for handle, blob in [(resolved.metadata_handle, metadata), *resolved_handles]:
            assert read_handle(handle) == blob, "the bytes differ"
        resolved.dispose_storage_location()


def _signed_for(region: str, seen: Any, step: str, sandbox: Any, **inputs: Any) -> None:
    """SER-8: ``step`` sent requests through the route, every one signed for ``region``."""
    wrong = [request for request in seen.requests if request.region != region]
    msg = fail_message("SER-8", f"which region {step} signed for", sandbox, **inputs)
    msg += f"\n{len(wrong)} of {len(seen)} request(s) not signed for {region}:"
    msg += "".join(f"\n  {request} signed for {request.region}" for request in wrong[:30])
    msg += f"\nthrough the route:\n{seen.summary()}"
    require(len(seen) > 0 and not wrong, "SER-8", msg)


# --------------------------------------------------------------------------- in another process

#: A fresh process that unpickles the storages given (in that order), then reads the handles
#: and the completed location's metadata, and disposes of the location if asked.
READER = textwrap.dedent(
    """
    first, rest = pickle.load(sys.stdin.buffer)
    pickle.loads(first)  # the storages, configured in this process before anything is read
    box = pickle.loads(rest)
    out = [read(h) for h in box["handles"]] + [read(box["completed"].metadata_handle)]
    if box["dispose"]:
        box["completed"].dispose_storage_location()
    sys.stdout.buffer.write(pickle.dumps(out))
    """
)


def _read_elsewhere(
    storages: list[Any],
    handles: list[Any],
    completed: Any,
    dispose: bool,
    environ: dict[str, str] | None = None,
) -> Any:
    """Run :data:`READER` in a fresh process (the finished process)."""
    box = {"handles": handles, "completed": completed, "dispose": dispose}
    return in_fresh_process(READER, pickle.dumps(storages), pickle.dumps(box), environ)


def _written_through_own_endpoint(sandbox, target) -> tuple[Any, Any, list[Any], list[bytes]]:
    """A storage on the backend's own endpoint and a completed checkpoint it wrote."""
    drv = JobDriver(sandbox, **file_options(target))
    drv.init_base()
    completed, written = drv.checkpoint(
        3, exclusive=[payload(3000, 1)], shared=[payload(2000, 2)], metadata=b"elsewhere"
    )
    handles = [h for h, _ in written]
    return drv, completed, handles, [b for _, b in written] + [b"elsewhere"]


@pytest.mark.clause("SPK-5")
@pytest.mark.backend_traits(object_store=True, cross_process=True)
def test_process_wide_configuration_in_a_plain_process(sandbox, target, backend, ledger):
    """SPK-5: a plain fresh process that unpickled no storage reads the handles and the
    completed location's metadata through the route that fsspec's and botocore's variables
    name, signed with the key they name where the server accepts any."""
    _, completed, handles, blobs = _written_through_own_endpoint(sandbox, target)
    with second_route(backend) as route:
        environ, key = process_wide_configuration(backend, route.url)
        with route.ledger.record() as via_route, ledger.record() as at_server:
            proc = _read_elsewhere([], handles, completed, dispose=False, environ=environ)
    msg = fail_message(
        "SPK-5",
        "read in a plain process without a storage",
        sandbox,
        route=route.url,
        variables=sorted(environ),
        key=key,
    )
    assert proc.returncode == 0, msg + "\n" + proc.stderr.decode(errors="replace")[-3000:]
    assert pickle.loads(proc.stdout) == blobs, msg + "\nthe bytes differ"
    files = [h for h in [*handles, completed.metadata_handle] if file_path(h) is not None]
    check_reads_took_route("SPK-5", sandbox, via_route, at_server, len(files), key, route=route.url)


@pytest.mark.clause("SER-4")
@pytest.mark.requires("savepoints")
@pytest.mark.backend_traits(cross_process=True)
def test_savepoint_in_another_bucket_reads_in_a_fresh_process(sandbox, target, backend):
    """SER-4: a fresh process that unpickled only the storage (its directories in one bucket)
    and the handles reads the handles and the completed location's metadata of a savepoint
    written to a target in another bucket of the same store."""
    with second_bucket(backend) as bucket:
        drv = JobDriver(sandbox, **file_options(target))
        savepoint_dir = join(bucket, "savepoints")
        location = drv.access.initialize_location_for_savepoint(7, savepoint_dir)
        factory = drv.worker(7, location.location_reference)
        blobs = [payload(3000, 1), payload(2000, 2)]
        handles = [
            write_state(factory, blobs[0], EXCLUSIVE),
            write_state(factory, blobs[1], SHARED),
        ]
        completed = drv.finalize(location, b"savepoint in another bucket")
        proc = _read_elsewhere([drv.storage], handles, completed, dispose=False)
    msg = fail_message(
        "SER-4",
        "read a savepoint in another bucket in a process with the storage",
        sandbox,
        target=savepoint_dir,
        pointer=completed.external_pointer,
        handles=handles,
    )
    assert proc.returncode == 0, msg + "\n" + proc.stderr.decode(errors="replace")[-3000:]
    assert pickle.loads(proc.stdout) == [*blobs, b"savepoint in another bucket"], (
        msg + "\nthe bytes differ"
    )


@pytest.mark.clause("SER-8")
@pytest.mark.backend_traits(object_store=True, cross_process=True)
def test_own_route_in_another_process(sandbox, target, backend):
    """SER-8: a fresh process that unpickled both storages (the other route's last) reads the
    first storage's handles and completed location through the first storage's endpoint
    only."""
    with second_route(backend) as route:
        drv, completed, handles, blobs = _written_through_own_endpoint(sandbox, target)
        other = sandbox.make_storage(**routed_options(backend, route), **file_options(target))
        with route.ledger.record() as via_route:
            proc = _read_elsewhere([drv.storage, other], handles, completed, dispose=False)
        msg = fail_message("SER-8", "read in a process with both storages", sandbox)
        assert proc.returncode == 0, msg + "\n" + proc.stderr.decode(errors="replace")[-3000:]
        assert pickle.loads(proc.stdout) == blobs, msg + "\nthe bytes differ"
        require(
            len(via_route) == 0,
            "SER-8",
            msg + f"\nrequests through the other storage's route:\n{via_route.summary()}",
        )


@pytest.mark.clause("SPK-4")
@pytest.mark.backend_traits(object_store=True, cross_process=True)
def test_reader_configuration_in_another_process(sandbox, target, backend):
    """SPK-4: a fresh process (no Spark) whose only storage for the bucket reaches it through
    another endpoint reads the handles and disposes of the completed checkpoint through it."""
    with second_route(backend) as route:
        _, completed, handles, blobs = _written_through_own_endpoint(sandbox, target)
        reader = sandbox.make_storage(**routed_options(backend, route), **file_options(target))
        with route.ledger.record() as via_route:
            proc = _read_elsewhere([reader], handles, completed, dispose=True)
        msg = fail_message(
            "SPK-4", "read and dispose in a process with the reader's storage", sandbox
        )
        assert proc.returncode == 0, msg + "\n" + proc.stderr.decode(errors="replace")[-3000:]
        assert pickle.loads(proc.stdout) == blobs, msg + "\nthe bytes differ"
        files = sum(1 for h in handles if file_path(h) is not None) + 1
        summary = f"\nthrough the reader's route:\n{via_route.summary()}"
        require(via_route.count(operation="GetObject") >= files, "SPK-4", msg + summary)
        deletes = via_route.count(operation=("DeleteObject", "DeleteObjects"))
        require(deletes >= 1, "SPK-4", msg + summary)
