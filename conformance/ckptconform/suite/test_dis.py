"""DIS: disposal of checkpoints and state (Flink MD6, MD7, H2, T-CCL1; pain points P4, P8).

What must be gone is checked on the backend through raw access; what must stay is checked by
reading it back through its handle.
"""

from __future__ import annotations

import hashlib

import pytest

from ckptconform.suite._driver import (
    EXCLUSIVE,
    SHARED,
    JobDriver,
    call_outcome,
    expect_error,
    fail_message,
    file_options,
    file_path,
    files_below,
    is_dir,
    join,
    parent,
    payload,
    put_file,
    read_handle,
    write_state,
)
from ckptstore.api import JobID


def _discard_own_state(completed, written) -> None:
    """Discard a completed checkpoint's exclusive state and metadata, as Flink does before it
    disposes the location (MD6): recursive removal of what is left is DIS-2's alone."""
    for handle, _ in written:
        handle.discard_state()
    completed.metadata_handle.discard_state()


def _gone(sandbox, handles) -> list[str]:
    """Files of ``handles`` that still exist."""
    return [file_path(h) for h in handles if file_path(h) and sandbox.exists(file_path(h))]


@pytest.mark.clause("DIS-1")
def test_aborted_checkpoints_are_removed(sandbox, target):
    """DIS-1: dispose_on_failure() removes exclusive state; shared-scope state survives."""
    drv = JobDriver(sandbox, **file_options(target))
    drv.init_base()
    location = drv.location(3)
    factory = drv.worker(3, location.location_reference)
    exclusive = [write_state(factory, payload(n, n), EXCLUSIVE) for n in (10, 5000, 70_000)]
    shared = [
        (write_state(factory, payload(n, n + 1), SHARED), payload(n, n + 1)) for n in (10, 5000)
    ]
    location.dispose_on_failure()
    msg = fail_message("DIS-1", "dispose_on_failure", sandbox)
    assert _gone(sandbox, exclusive) == [], msg + "\nexclusive state files remain"
    for handle, blob in shared:
        assert read_handle(handle) == blob, msg + "\nshared state was removed"
    if "file-layout" in target.capabilities:
        assert files_below(sandbox, drv.chk_dir(3)) == [], msg + "\nchk-3 still holds files"


@pytest.mark.clause("DIS-1")
def test_aborted_savepoints_are_removed(sandbox, target):
    """DIS-1: dispose_on_failure() of a savepoint's location removes its exclusive state."""
    if "savepoints" not in target.capabilities:
        pytest.skip("the target does not claim savepoints: no savepoint location to abort")
    drv = JobDriver(sandbox, **file_options(target))
    drv.init_base()
    location = drv.access.initialize_location_for_savepoint(5, None)
    factory = drv.worker(5, location.location_reference)
    exclusive = [write_state(factory, payload(n, n), EXCLUSIVE) for n in (10, 5000, 70_000)]
    directories = {file_path(h).rsplit("/", 1)[0] for h in exclusive if file_path(h)}
    location.dispose_on_failure()
    msg = fail_message("DIS-1", "dispose_on_failure of a savepoint location", sandbox)
    assert _gone(sandbox, exclusive) == [], msg + "\nexclusive state files remain"
    if "file-layout" in target.capabilities:
        for directory in directories:
            assert files_below(sandbox, directory) == [], msg + f"\n{directory} holds files"


@pytest.mark.clause("DIS-2")
@pytest.mark.parametrize("via", ["finalized", "resolved"])
def test_completed_checkpoints_are_removed(sandbox, target, via):
    """DIS-2: dispose_storage_location removes the checkpoint directory, recursively."""
    drv = JobDriver(sandbox, **file_options(target))
    drv.init_base()
    completed, written = drv.checkpoint(4, exclusive=[payload(100), payload(40_000, 2)])
    pointer = completed.external_pointer
    nested = join(pointer, "nested", "extra-file")
    if not sandbox.backend.object_store:
        sandbox.backend.raw.makedirs(sandbox.raw_path(join(pointer, "nested")), exist_ok=True)
    sandbox.backend.raw.pipe_file(sandbox.raw_path(nested), b"left by a tool")
    location = completed if via == "finalized" else drv.fresh_storage().resolve_checkpoint(pointer)
    location.dispose_storage_location()
    msg = fail_message("DIS-2", "dispose_storage_location", sandbox, via=via, pointer=pointer)
    assert files_below(sandbox, pointer) == [], msg + "\nfiles remain in the checkpoint directory"
    assert _gone(sandbox, [h for h, _ in written] + [completed.metadata_handle]) == [], msg
    if not sandbox.backend.object_store:
        assert not sandbox.exists(pointer), msg + "\nthe checkpoint directory remains"
    expect_error(
        FileNotFoundError,
        "DIS-2",
        "resolve_checkpoint after dispose",
        lambda: drv.fresh_storage().resolve_checkpoint(pointer),
        sandbox,
        pointer=pointer,
    )


def _top_of_bucket(sandbox, first: str) -> str:
    """A checkpoint directory at the top level of the sandbox's bucket whose name starts with
    ``first`` (skips on backends other than S3)."""
    if sandbox.backend.scheme != "s3":
        pytest.skip(f"a bucket's top level applies to S3, not {sandbox.backend.name}")
    bucket = sandbox.root.split("/")[2]
    return f"s3://{bucket}/{first}{sandbox.root.rstrip('/').rsplit('/', 1)[1]}"


@pytest.mark.clause("DIS-1")
@pytest.mark.parametrize("first", ["X", " "], ids=["letter-X", "space"])
def test_aborted_at_the_top_of_a_bucket(sandbox, target, first):
    """DIS-1: on S3, with a checkpoint directory at the bucket's top level whose name starts
    with an 'X' or a space, dispose_on_failure() removes the aborted checkpoint's exclusive
    state."""
    checkpoint_dir = _top_of_bucket(sandbox, first)
    try:
        drv = JobDriver(sandbox, checkpoint_dir=checkpoint_dir, **file_options(target))
        drv.init_base()
        aborted = drv.location(3)
        exclusive = [write_state(drv.worker(3, aborted.location_reference), payload(5000, 3))]
        aborted.dispose_on_failure()
        msg = fail_message("DIS-1", "dispose_on_failure", sandbox, checkpoint_dir=checkpoint_dir)
        assert _gone(sandbox, exclusive) == [], msg + "\nexclusive state files remain"
        if "file-layout" in target.capabilities:
            assert files_below(sandbox, drv.chk_dir(3)) == [], msg + "\nchk-3 still holds files"
    finally:
        sandbox.backend.remove(checkpoint_dir)


@pytest.mark.clause("DIS-2")
@pytest.mark.parametrize("first", ["X", " "], ids=["letter-X", "space"])
def test_completed_at_the_top_of_a_bucket(sandbox, target, first):
    """DIS-2: on S3, with a checkpoint directory at the bucket's top level whose name starts
    with an 'X' or a space, dispose_storage_location() removes the checkpoint's directory
    recursively."""
    checkpoint_dir = _top_of_bucket(sandbox, first)
    try:
        drv = JobDriver(sandbox, checkpoint_dir=checkpoint_dir, **file_options(target))
        drv.init_base()
        completed, _ = drv.checkpoint(4, exclusive=[payload(5000, 4)])
        pointer = completed.external_pointer
        completed.dispose_storage_location()
        left = files_below(sandbox, pointer)
        assert left == [], fail_message(
            "DIS-2", "dispose_storage_location", sandbox, pointer=pointer
        ) + (f"\nfiles remain in the checkpoint directory: {left}")
    finally:
        sandbox.backend.remove(checkpoint_dir)


@pytest.mark.clause("DIS-3")
def test_disposal_is_confined(sandbox, target):
    """DIS-3: disposing one checkpoint never removes shared, task-owned or another's data."""
    drv = JobDriver(sandbox, **file_options(target))
    drv.init_base()
    one, w1 = drv.checkpoint(
        1, exclusive=[payload(3000, 1)], shared=[payload(3000, 2)], metadata=b"one"
    )
    two, w2 = drv.checkpoint(
        2, exclusive=[payload(3000, 3)], shared=[payload(3000, 4)], metadata=b"two"
    )
    owned = drv.task_owned(payload(3000, 5))
    aborted = drv.location(3)
    drv.write(drv.worker(3, aborted.location_reference), payload(3000, 6))
    _discard_own_state(one, w1[:1])
    one.dispose_storage_location()
    aborted.dispose_on_failure()
    msg = fail_message("DIS-3", "dispose checkpoint 1, abort checkpoint 3", sandbox)
    loc = drv.fresh_storage().resolve_checkpoint(two.external_pointer)
    assert read_handle(loc.metadata_handle) == b"two", msg + "\ncheckpoint 2 was damaged"
    for handle, blob in [*w2, w1[1]]:  # checkpoint 2's state and checkpoint 1's shared state
        assert read_handle(loc.resolve_handle(handle)) == blob, msg + f"\n{handle!r} was damaged"
    assert read_handle(owned) == payload(3000, 5), msg + "\ntask-owned state was damaged"


@pytest.mark.clause("DIS-4")
def test_deleting_what_is_gone(sandbox, target):
    """DIS-4: discard of a missing file and a second dispose do not raise."""
    drv = JobDriver(sandbox, **file_options(target))
    drv.init_base()
    completed, written = drv.checkpoint(5, exclusive=[payload(5000)], shared=[payload(5000, 1)])
    for handle, _ in written:
        handle.discard_state()
        handle.discard_state()
    owned = drv.task_owned(payload(5000))
    if file_path(owned):
        sandbox.backend.raw.rm(sandbox.raw_path(file_path(owned)))
    owned.discard_state()
    completed.metadata_handle.discard_state()  # Flink's order (MD6): handles, then the directory
    completed.dispose_storage_location()
    completed.dispose_storage_location()
    aborted = drv.location(6)
    aborted.dispose_on_failure()
    aborted.dispose_on_failure()


@pytest.mark.clause("DIS-4")
def test_keys_reported_gone_after_deletion(sandbox, target, ledger):
    """DIS-4: where the server deletes the keys of each DeleteObjects and then reports every
    one as NoSuchKey, dispose_on_failure of a location in progress and
    dispose_storage_location of a completed checkpoint raise nothing and leave no object in
    their directories."""
    drv = JobDriver(sandbox, **file_options(target))
    drv.init_base()
    completed, written = drv.checkpoint(7, exclusive=[payload(5000, 7), payload(5000, 8)])
    aborted = drv.location(8)
    factory = drv.worker(8, aborted.location_reference)
    pending = [drv.write(factory, payload(5000, seed)) for seed in (9, 10)]
    handles = [*(h for h, _ in written), *pending, completed.metadata_handle]
    directories = sorted({parent(str(file_path(h))) for h in handles if file_path(h)})
    reported = ledger.inject(per_key=True, after_commit=True, code="NoSuchKey", times=None)
    try:
        with ledger.record() as rec:
            outcomes = {
                "dispose_on_failure": call_outcome(aborted.dispose_on_failure),
                "dispose_storage_location": call_outcome(completed.dispose_storage_location),
            }
    finally:
        ledger.clear_faults()
    left = [f for d in directories for f in files_below(sandbox, d)]
    msg = fail_message(
        "DIS-4", "dispose while DeleteObjects reports every deleted key as NoSuchKey", sandbox
    )
    msg += "".join(f"\n{name}: {what}" for name, what in outcomes.items())
    msg += f"\nobjects left: {left}\nDeleteObjects answered NoSuchKey: {reported.hits}"
    msg += f"\n{rec.summary()}"
    assert all(what == "returned" for what in outcomes.values()), msg
    assert not left, msg


@pytest.mark.clause("DIS-5")
@pytest.mark.parametrize("scope", [EXCLUSIVE, SHARED, "task-owned"])
def test_discard_deletes_only_its_own_file(sandbox, target, scope):
    """DIS-5: discard_state removes its file only; neighbours and the directory survive."""
    drv = JobDriver(sandbox, **file_options(target))
    drv.init_base()
    factory = drv.worker(1, drv.location(1).location_reference)
    blobs = [payload(3000, 1), payload(3000, 2)]
    if scope == "task-owned":
        handles = [drv.task_owned(b) for b in blobs]
    else:
        handles = [write_state(factory, b, scope) for b in blobs]
    handles[0].discard_state()
    msg = fail_message("DIS-5", "discard_state", sandbox, scope=scope, handle=handles[0])
    assert _gone(sandbox, handles[:1]) == [], msg + "\nthe discarded file remains"
    assert read_handle(handles[1]) == blobs[1], msg + "\nthe neighbour was removed"
    path = file_path(handles[0])
    if path and not sandbox.backend.object_store:
        holder = parent(path)
        assert is_dir(sandbox, holder), msg + f"\nthe directory {holder} was removed"
        handles[1].discard_state()
        assert is_dir(sandbox, holder), msg + f"\nthe directory {holder} was removed (now empty)"


@pytest.mark.clause("DIS-6")
@pytest.mark.parametrize("removal", ["discard_state", "dispose_on_failure"])
def test_removed_state_reads_as_missing(sandbox, target, removal):
    """DIS-6: a file-backed handle whose file was discarded, or whose location was disposed on
    failure, raises FileNotFoundError when opened and read."""
    drv = JobDriver(sandbox, **file_options(target))
    drv.init_base()
    location = drv.location(1)
    handle = write_state(drv.worker(1, location.location_reference), payload(3000), EXCLUSIVE)
    if removal == "discard_state":
        handle.discard_state()
    else:
        location.dispose_on_failure()
    if file_path(handle) is None:  # inline state lives in the handle: nothing was removed
        assert read_handle(handle) == payload(3000), fail_message(
            "DIS-6", f"read an inline handle after {removal}", sandbox, handle=handle
        )
        return
    expect_error(
        FileNotFoundError,
        "DIS-6",
        f"open and read the handle after {removal}",
        lambda: read_handle(handle),
        sandbox,
        handle=handle,
    )


#: Directory names next to "victim" that a store's client may read as "victim" or a pattern
#: matching it: s3fs's version suffix (s3fs cuts the key there) and fsspec's glob patterns.
_CLIENT_SPELLINGS = ("victim?versionId=", "vic*", "victi?", "[v]ictim")
#: What a step may raise: a refusal of the spelling (or an I/O error of the store).
_REFUSALS = (ValueError, OSError)


def _victim_tree(sandbox, victim: str) -> dict[str, str]:
    """Every file below ``victim`` with its SHA-256, read raw."""
    raw = sandbox.backend.raw
    return {
        p: hashlib.sha256(bytes(raw.cat_file(p))).hexdigest() for p in files_below(sandbox, victim)
    }


def _plant_victim(sandbox, job_id: JobID) -> str:
    """Someone else's directory "victim" below the root, holding what the hostile spellings
    would reach: the same job's chk-1 and chk-2, a chk-5 and a file of its own."""
    victim = join(sandbox.root, "victim")
    for relative in (f"{job_id}/chk-1/state", f"{job_id}/chk-2/state", "chk-5/_metadata",
                     "chk-5/state", "thesis.tex"):  # fmt: skip
        put_file(sandbox, join(victim, relative), b"someone else's " + relative.encode())
    return victim


def _through_checkpoint_directory(sandbox, target, hostile: str, job_id: JobID) -> None:
    drv = JobDriver(sandbox, checkpoint_dir=hostile, job_id=job_id, **file_options(target))
    drv.init_base()
    aborted = drv.location(1)
    drv.write(drv.worker(1, aborted.location_reference), payload(3000, 71))
    aborted.dispose_on_failure()
    completed, _ = drv.checkpoint(2, exclusive=[payload(3000, 72)])
    completed.dispose_storage_location()


def _through_savepoint_target(sandbox, target, hostile: str, job_id: JobID) -> None:
    drv = JobDriver(sandbox, job_id=job_id, **file_options(target))
    aborted = drv.access.initialize_location_for_savepoint(3, hostile)
    drv.write(drv.worker(3, aborted.location_reference), payload(3000, 73))
    aborted.dispose_on_failure()
    location = drv.access.initialize_location_for_savepoint(4, hostile)
    drv.write(drv.worker(4, location.location_reference), payload(3000, 74))
    drv.finalize(location, b"savepoint 4").dispose_storage_location()


def _through_pointer(sandbox, target, hostile: str, job_id: JobID) -> None:
    # a _metadata at the spelling itself (on S3, s3fs may write it to the key it cuts to)
    put_file(sandbox, join(hostile, "chk-5", "_metadata"), b"planted")
    storage = sandbox.make_storage(**file_options(target))
    storage.resolve_checkpoint(join(hostile, "chk-5")).dispose_storage_location()


_ROUTES = {
    "checkpoint directory": _through_checkpoint_directory,
    "savepoint target": _through_savepoint_target,
    "pointer": _through_pointer,
}


@pytest.mark.clause("DIS-7")
@pytest.mark.parametrize(
    "route",
    [
        "checkpoint directory",
        pytest.param("savepoint target", marks=pytest.mark.requires("savepoints")),
        "pointer",
    ],
)
def test_disposal_stays_below_its_directory_whatever_the_spelling(sandbox, target, route):
    """DIS-7: with a checkpoint directory, savepoint target or pointer holding
    '?versionId=', '*', '?' or '[' next to another directory, disposing deletes and changes
    nothing of that directory; a refusal is an OSError or ValueError."""
    job_id = JobID.generate()
    failures = []
    for spelling in _CLIENT_SPELLINGS:
        hostile = join(sandbox.root, spelling)
        victim = _plant_victim(sandbox, job_id)  # again: what an earlier spelling deleted
        before = _victim_tree(sandbox, victim)
        try:
            _ROUTES[route](sandbox, target, hostile, job_id)
            outcome = "returned"
        except _REFUSALS as exc:
            outcome = f"refused: {type(exc).__name__}: {exc!s:.160}"
        except Exception as exc:  # the clause wants OSError or ValueError
            failures.append(f"  {spelling!r}: raised {type(exc).__name__}: {exc!s:.200}")
            outcome = "failed"
        after = _victim_tree(sandbox, victim)
        damaged = sorted(p for p in before if after.get(p) != before[p])
        if damaged:
            failures.append(f"  {spelling!r} ({outcome}): lost or changed {damaged[:6]}")
    assert not failures, (
        fail_message("DIS-7", f"dispose through a hostile {route}", sandbox)
        + "\n"
        + "\n".join(failures)
    )
