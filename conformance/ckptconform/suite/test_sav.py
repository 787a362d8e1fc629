"""SAV: savepoints (seed 001; Flink ACC7, ACC8, L5, T-BASE5, T-FSA1/2, H6). Capability: savepoints.

Savepoint metadata in these tests is Flink's format of the state handles, the handles themselves
pickled in it as a master state (``_driver.job_metadata``), as a caller that stores its handles
in ``_metadata`` would write it; restoring reads them back through a fresh storage.
"""

from __future__ import annotations

import pytest

from ckptconform.suite._driver import (
    EXCLUSIVE,
    SHARED,
    JobDriver,
    expect_error,
    fail_message,
    file_options,
    file_path,
    files_below,
    job_metadata,
    join,
    metadata_handles,
    move_tree,
    payload,
    put_file,
    read_handle,
    require,
    roundtrip,
    same_location,
    tagged,
    write_state,
)
from ckptconform.suite._layout import SAVEPOINT_RE


def _parent(url: str) -> str:
    return url.rstrip("/").rsplit("/", 1)[0]


def take_savepoint(
    drv: JobDriver,
    target_dir: str | None,
    scopes=(EXCLUSIVE, SHARED),
    checkpoint_id: int = 42,
    via_worker: bool = True,
):
    """Write one savepoint; return (completed, [(handle, bytes)])."""
    location = drv.access.initialize_location_for_savepoint(checkpoint_id, target_dir)
    factory = drv.worker(checkpoint_id, location.location_reference) if via_worker else location
    written, kinds = [], []
    for i, scope in enumerate(scopes):
        for size in (10, 30_000):
            blob = payload(size, seed=i * 10 + size)
            written.append((write_state(factory, blob, scope), blob))
            kinds.append(scope)
    states = [(scope.value, h) for scope, (h, _) in zip(kinds, written, strict=True)]
    completed = drv.finalize(location, job_metadata(checkpoint_id, states))
    return completed, written


def check_restore(sandbox, clause, storage, pointer, written, **inputs):
    """Resolve ``pointer`` and read back ``written``; any failure is ``clause``'s."""
    with tagged(clause, "restore savepoint", sandbox, pointer=pointer, **inputs):
        loc = storage.resolve_checkpoint(pointer)
        handles = metadata_handles(read_handle(loc.metadata_handle))
        assert len(handles) == len(written)
        for handle, (_, blob) in zip(handles, written, strict=True):
            assert read_handle(loc.resolve_handle(handle)) == blob, f"handle {handle!r}"
    return loc


@pytest.mark.clause("SAV-1")
@pytest.mark.parametrize(
    ("default", "given"),
    [(True, True), (False, True), (True, False)],  # neither: SAV-2
    ids=["default+target", "target-only", "default-only"],
)
def test_savepoint_target_matrix(sandbox, target, default, given):
    """SAV-1: the target wins over the default; else the default; directly below either."""
    options = dict(file_options(target))
    if not default:
        options["savepoint_dir"] = None
    drv = JobDriver(sandbox, **options)
    # a name ending in a letter: a target trimmed by characters (str.strip) instead of a '/'
    # loses it, and the savepoint lands next to the target
    target_dir = join(sandbox.root, "sp-target-X") if given else None
    completed, _ = take_savepoint(drv, target_dir)
    expected = target_dir if given else sandbox.savepoint_dir
    assert same_location(sandbox, _parent(completed.external_pointer), expected), fail_message(
        "SAV-1",
        "initialize_location_for_savepoint",
        sandbox,
        target=target_dir,
        default=sandbox.savepoint_dir if default else None,
        pointer=completed.external_pointer,
    )


@pytest.mark.clause("SAV-1", "PTR-3")
def test_savepoint_at_the_root(sandbox, target):
    """SAV-1: a savepoint whose target is the root of the memory file system (memory:///)
    lies directly below the root; PTR-3: its pointer resolves to the same external_pointer."""
    if sandbox.backend.scheme != "memory":
        pytest.skip(f"a root target applies to the memory file system, not {sandbox.backend.name}")
    drv = JobDriver(sandbox, **file_options(target))
    completed, _ = take_savepoint(drv, "memory:///", scopes=())
    pointer = completed.external_pointer
    below_root = bool(sandbox.raw_path(pointer).strip("/"))
    try:
        msg = fail_message("SAV-1", "initialize_location_for_savepoint", sandbox, pointer=pointer)
        require(below_root, "SAV-1", msg + "\nthe savepoint is the root itself")
        require(same_location(sandbox, _parent(pointer), "memory:///"), "SAV-1", msg)
        with tagged("PTR-3", "resolve_checkpoint", sandbox, pointer=pointer):
            resolved = drv.fresh_storage().resolve_checkpoint(pointer).external_pointer
        require(
            resolved == pointer,
            "PTR-3",
            fail_message("PTR-3", "resolve_checkpoint", sandbox, pointer=pointer)
            + f"\nexternal_pointer {resolved!r} != {pointer!r}",
        )
    finally:
        if below_root:  # never the whole file system
            sandbox.backend.remove(pointer)


@pytest.mark.clause("SAV-2")
def test_no_savepoint_location(sandbox, target):
    """SAV-2: has_default_savepoint_location() reflects the config; neither -> ValueError."""
    with_default = JobDriver(sandbox, **file_options(target))
    assert with_default.access.has_default_savepoint_location() is True, fail_message(
        "SAV-2", "has_default_savepoint_location", savepoint_dir=sandbox.savepoint_dir
    )
    without = JobDriver(sandbox, savepoint_dir=None, **file_options(target))
    assert without.access.has_default_savepoint_location() is False, fail_message(
        "SAV-2", "has_default_savepoint_location", savepoint_dir=None
    )
    expect_error(
        ValueError,
        "SAV-2",
        "initialize_location_for_savepoint(1, None)",
        lambda: without.access.initialize_location_for_savepoint(1, None),
        sandbox,
    )


@pytest.mark.clause("SAV-3")
@pytest.mark.parametrize("via_worker", [False, True], ids=["location", "worker"])
def test_self_contained_savepoints(sandbox, target, via_worker):
    """SAV-3: all of a savepoint's files lie in its one directory; it restores from there."""
    drv = JobDriver(sandbox, **file_options(target))
    completed, written = take_savepoint(drv, None, via_worker=via_worker)
    pointer = completed.external_pointer
    msg = fail_message("SAV-3", "savepoint files", sandbox, pointer=pointer)
    expected = sorted(
        sandbox.raw_path(p)
        for p in [file_path(completed.metadata_handle), *(file_path(h) for h, _ in written)]
        if p is not None
    )
    for path in expected:
        assert same_location(sandbox, _parent(path), pointer), msg + f"\n{path} is elsewhere"
    assert set(expected) <= set(files_below(sandbox, pointer)), msg
    check_restore(sandbox, "SAV-3", drv.fresh_storage(), pointer, written)


@pytest.mark.clause("SAV-4")
def test_savepoint_directory_names(sandbox):
    """SAV-4: savepoint-<job[0:6]>-<12 of [0-9a-f]>."""
    drv = JobDriver(sandbox)
    for target_dir in (None, join(sandbox.root, "elsewhere")):
        completed, _ = take_savepoint(drv, target_dir, scopes=())
        name = completed.external_pointer.rstrip("/").rsplit("/", 1)[1]
        match = SAVEPOINT_RE.fullmatch(name)
        msg = fail_message(
            "SAV-4", "savepoint directory name", sandbox, name=name, job=str(drv.job_id)
        )
        assert match, msg
        assert match.group(1) == str(drv.job_id)[:6], msg


@pytest.mark.clause("SAV-5")
def test_distinct_savepoints(sandbox, target):
    """SAV-5: savepoints taken one after the other get distinct directories."""
    drv = JobDriver(sandbox, **file_options(target))
    taken = [take_savepoint(drv, None, checkpoint_id=7) for _ in range(4)]
    pointers = [c.external_pointer for c, _ in taken]
    assert len(set(pointers)) == len(pointers), fail_message(
        "SAV-5", "four savepoints", sandbox, pointers=pointers
    )
    for completed, written in taken:
        check_restore(sandbox, "SAV-5", drv.storage, completed.external_pointer, written)


@pytest.mark.clause("SAV-6", "SER-1", "SER-3")
def test_workers_write_into_savepoints(sandbox, target):
    """SAV-6: resolve_checkpoint_storage_location with the savepoint's location_reference gives
    a worker a factory whose state restores with the savepoint; SER-1: the storage survives
    pickle; SER-3: the location reference survives pickling."""
    coordinator = JobDriver(sandbox, **file_options(target))
    location = coordinator.access.initialize_location_for_savepoint(9, None)
    reference = roundtrip(location.location_reference, "SER-3", "a savepoint's reference")
    worker = JobDriver(sandbox, storage=coordinator.pickled_storage(), job_id=coordinator.job_id)
    factory = worker.worker(9, reference)
    scopes = (EXCLUSIVE, EXCLUSIVE, SHARED)
    written = [
        (write_state(factory, payload(n, n), scope), payload(n, n))
        for n, scope in zip((20, 40_000, 50_000), scopes, strict=True)
    ]
    states = [(scope.value, h) for scope, (h, _) in zip(scopes, written, strict=True)]
    completed = coordinator.finalize(location, job_metadata(9, states))
    # where the worker's files lie is SAV-3's (its 'worker' case)
    check_restore(
        sandbox, "SAV-6", coordinator.fresh_storage(), completed.external_pointer, written
    )


#: SAV-7's storages: the sandbox's, and, on object stores as LAY-8, one whose checkpoint path
#: holds an entropy key (its savepoint goes to a directory without the key, so its handles
#: must stay relative: Flink E6)
SAVEPOINT_STORAGES = (
    pytest.param(None, id="plain"),
    pytest.param(
        "_entropy_",
        id="entropy-key-in-the-checkpoint-path",
        marks=[
            pytest.mark.requires("entropy-injection"),
            pytest.mark.backend_traits(object_store=True),
        ],
    ),
)


@pytest.mark.clause("SAV-7")
@pytest.mark.parametrize("entropy_key", SAVEPOINT_STORAGES)
def test_moved_savepoints_restore(sandbox, target, entropy_key):
    """SAV-7: a savepoint directory moved as a whole restores at its new place, also when
    the storage's checkpoint path holds an entropy key and the savepoint's directory does
    not."""
    options = dict(file_options(target))
    if entropy_key is not None:
        options.update(
            checkpoint_dir=join(sandbox.checkpoint_dir, entropy_key, "cp"),
            entropy_key=entropy_key,
            entropy_length=4,
        )
    drv = JobDriver(sandbox, **options)
    with tagged("SAV-7", "take a savepoint", sandbox, **options):
        completed, written = take_savepoint(drv, None, scopes=(EXCLUSIVE,))
    old = completed.external_pointer
    new = join(sandbox.root, "moved", old.rstrip("/").rsplit("/", 1)[1])
    move_tree(sandbox, old, new)
    loc = check_restore(sandbox, "SAV-7", drv.fresh_storage(), new, written, moved_from=old)
    assert same_location(sandbox, loc.external_pointer, new), fail_message(
        "SAV-7", "external_pointer after the move", sandbox, pointer=loc.external_pointer
    )


@pytest.mark.clause("SAV-8")
@pytest.mark.backend_traits(object_store=False)
@pytest.mark.parametrize("where", ["the-file", "below-the-file"])
def test_a_file_is_no_savepoint_target(sandbox, where):
    """SAV-8: a savepoint target that is an existing file, or lies below one, raises OSError
    and leaves the file as it was."""
    drv = JobDriver(sandbox)
    drv.init_base()
    blocker = join(sandbox.root, "not-a-directory")
    content = b"a file, not a directory"
    put_file(sandbox, blocker, content)
    target_dir = blocker if where == "the-file" else join(blocker, "savepoints")

    def savepoint() -> None:
        location = drv.access.initialize_location_for_savepoint(1, target_dir)
        drv.finalize(location, b"savepoint metadata")

    expect_error(OSError, "SAV-8", "savepoint to a file", savepoint, sandbox, target=target_dir)
    with tagged("SAV-8", "read the file after the attempt", sandbox, target=target_dir):
        assert sandbox.read(blocker) == content, "the file changed"
