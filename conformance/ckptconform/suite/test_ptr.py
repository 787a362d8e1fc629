"""PTR: external pointers and their resolution (seed 001; Flink PTR1-PTR10, T-BASE1-3).

Error types are the contract's built-ins (subclasses accepted): None -> TypeError,
'' -> ValueError, missing -> FileNotFoundError, garbage or unknown scheme -> OSError.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import given

from ckptconform.suite._bad_inputs import relative_segments
from ckptconform.suite._driver import (
    CHECKPOINT_DIRS,
    JobDriver,
    driver_with,
    expect_error,
    fail_message,
    file_options,
    file_path,
    join,
    payload,
    put_file,
    read_handle,
    require,
    same_location,
    tagged,
)
from ckptconform.suite._layout import (
    FLINK_CHECKPOINT_BASE,
    FLINK_COMPLETED,
    FLINK_IN_FLIGHT,
    FLINK_JOB_ID,
    FLINK_SAVEPOINT,
    FLINK_SAVEPOINT_BASE,
    extract_flink_trees,
)
from ckptconform.suite._strategies import capped, checkpoint_ids, pointer_spellings
from ckptstore.api import NON_ADDRESSABLE_POINTER


def spell(completed, spelling: str) -> str | None:
    """A pointer to ``completed`` in one spelling (None: the spelling does not apply)."""
    if spelling == "dir":
        return completed.external_pointer
    if spelling == "dir/":
        return completed.external_pointer.rstrip("/") + "/"
    if spelling == "dir//":
        return doubled_slash(completed.external_pointer)
    return file_path(completed.metadata_handle)


def doubled_slash(pointer: str) -> str:
    """``pointer`` with the '/' before its last segment doubled (``.../job//chk-3``)."""
    head, _, last = pointer.rstrip("/").rpartition("/")
    return f"{head}//{last}"


def _resolves_to(sandbox, clause, stable, storage, pointer, expected_pointer, metadata, **inputs):
    """Resolve and compare; ``clause`` is blamed, ``stable`` for a changed plain pointer."""
    msg = fail_message(clause, "resolve_checkpoint", sandbox, pointer=pointer, **inputs)
    with tagged(clause, "resolve_checkpoint", sandbox, pointer=pointer, **inputs):
        loc = storage.resolve_checkpoint(pointer)
    stable = stable if pointer == expected_pointer else clause
    require(
        loc.external_pointer == expected_pointer,
        stable,
        fail_message(stable, "resolve_checkpoint", sandbox, pointer=pointer, **inputs)
        + f"\nexternal_pointer {loc.external_pointer!r} != {expected_pointer!r}",
    )
    with tagged(clause, "read the resolved metadata", sandbox, pointer=pointer, **inputs):
        got = read_handle(loc.metadata_handle)
        size = loc.metadata_handle.state_size
    require(got == metadata, clause, msg + "\nmetadata bytes differ")
    require(
        size in (len(metadata), -1),
        clause,
        msg + f"\nthe metadata handle's state_size is {size}, not {len(metadata)} (or -1)",
    )
    return loc


def _resolves_everywhere(sandbox, clause, stable, drv, pointer, completed, metadata, **inputs):
    """``pointer`` resolves to ``completed`` through the storage, its access and fresh ones
    (``stable`` is blamed when the plain pointer comes back changed, see ``_resolves_to``)."""
    for label, resolver in (
        ("storage", drv.storage),
        ("access", drv.access),
        ("fresh storage", drv.fresh_storage()),
        ("fresh access", drv.fresh_storage().create_checkpoint_storage(drv.job_id)),
    ):
        _resolves_to(
            sandbox,
            clause,
            stable,
            resolver,
            pointer,
            completed.external_pointer,
            metadata,
            via=label,
            **inputs,
        )


@pytest.mark.clause("PTR-1", "PTR-2", "PTR-3")
@capped(10)
@given(checkpoint_id=checkpoint_ids, spelling=pointer_spellings)
def test_pointer_resolves_in_every_spelling(sandbox, target, checkpoint_id, spelling):
    """PTR-1: the external_pointer resolves through the storage, its accesses and a fresh
    storage to the metadata bytes; PTR-2: so do the directory with a trailing or a doubled '/'
    and the metadata file; PTR-3: the resolved external_pointer is the same string."""
    drv = JobDriver(sandbox, **file_options(target))
    drv.init_base()
    metadata = payload(3000, seed=checkpoint_id % 251)
    completed, _ = drv.checkpoint(checkpoint_id, exclusive=[payload(500)], metadata=metadata)
    pointer = spell(completed, spelling)
    if pointer is None:
        pointer = completed.external_pointer
    clause = "PTR-1" if spelling == "dir" else "PTR-2"
    _resolves_everywhere(
        sandbox,
        clause,
        "PTR-3",
        drv,
        pointer,
        completed,
        metadata,
        spelling=spelling,
        id=checkpoint_id,
    )


def other_s3_spelling(pointer: str) -> str:
    """``pointer`` with its scheme spelt the other way: ``s3://`` as ``s3a://`` and back."""
    scheme, _, rest = pointer.partition("://")
    return f"{'s3' if scheme.lower() == 's3a' else 's3a'}://{rest}"


@pytest.mark.clause("PTR-2")
def test_s3a_spelling(sandbox, target):
    """PTR-2: on S3, the checkpoint directory spelt with s3a:// in place of s3:// reads the
    same metadata bytes through the storage and a fresh storage."""
    if sandbox.backend.scheme != "s3":
        pytest.skip(f"the s3a:// spelling applies to S3, not {sandbox.backend.name}")
    drv = JobDriver(sandbox, **file_options(target))
    drv.init_base()
    metadata = payload(1200, seed=9)
    completed, _ = drv.checkpoint(12, metadata=metadata)
    pointer = other_s3_spelling(completed.external_pointer)
    for label, storage in (("storage", drv.storage), ("fresh storage", drv.fresh_storage())):
        msg = fail_message("PTR-2", "resolve_checkpoint", sandbox, pointer=pointer, via=label)
        with tagged("PTR-2", "resolve_checkpoint", sandbox, pointer=pointer, via=label):
            loc = storage.resolve_checkpoint(pointer)
            got = read_handle(loc.metadata_handle)
        require(got == metadata, "PTR-2", msg + "\nmetadata bytes differ")


@pytest.mark.clause("PTR-1", "PTR-3")
def test_savepoints_on_the_local_file_system(sandbox, target, tmp_path):
    """PTR-1: a storage whose checkpoint directory is on the backend under test and whose
    default savepoint directory is a local directory resolves the pointers of both its
    checkpoints and its savepoints; PTR-3: to the same external_pointer."""
    if sandbox.backend.scheme == "file":
        pytest.skip("the checkpoints lie on the local file system too")
    if "savepoints" not in target.capabilities or "file" not in (target.schemes or {"file"}):
        pytest.skip("the target takes no savepoints to the local file system")
    drv = JobDriver(sandbox, savepoint_dir=tmp_path.as_uri(), **file_options(target))
    drv.init_base()
    checkpoint, _ = drv.checkpoint(5, metadata=b"checkpoint on the backend")
    location = drv.access.initialize_location_for_savepoint(6, None)
    savepoint = drv.finalize(location, b"savepoint on the local file system")
    for completed, metadata in (
        (checkpoint, b"checkpoint on the backend"),
        (savepoint, b"savepoint on the local file system"),
    ):
        _resolves_everywhere(
            sandbox,
            "PTR-1",
            "PTR-3",
            drv,
            completed.external_pointer,
            completed,
            metadata,
            savepoint_dir=drv.savepoint_dir,
        )


@pytest.mark.clause("PTR-4")
def test_other_jobs_and_places(sandbox, target):
    """PTR-4: pointers of another job and outside the own checkpoint directory resolve; two
    jobs using the same checkpoint id do not interfere."""
    one = JobDriver(sandbox, **file_options(target))
    two = JobDriver(sandbox, **file_options(target))
    for drv in (one, two):
        drv.init_base()
    c1, w1 = one.checkpoint(177, exclusive=[payload(900, 1)], metadata=b"job one")
    c2, w2 = two.checkpoint(177, exclusive=[payload(900, 2)], metadata=b"job two")
    assert c1.external_pointer != c2.external_pointer, fail_message(
        "PTR-4", "same checkpoint id, two jobs", sandbox, one=c1.external_pointer
    )
    elsewhere = sandbox.make_storage(
        checkpoint_dir=join(sandbox.root, "elsewhere"), **file_options(target)
    )
    storages = [
        ("job one", one.storage),
        ("job two", two.storage),
        ("other checkpoint dir", elsewhere),
    ]
    if "in-memory-checkpoints" in target.capabilities and sandbox.backend.scheme == "file":
        bare = sandbox.make_storage(checkpoint_dir=None, savepoint_dir=None, **file_options(target))
        storages.append(("a storage without directories", bare))
    for completed, written, meta in ((c1, w1, b"job one"), (c2, w2, b"job two")):
        for label, storage in storages:
            loc = _resolves_to(
                sandbox,
                "PTR-4",
                "PTR-4",
                storage,
                completed.external_pointer,
                completed.external_pointer,
                meta,
                via=label,
            )
            for handle, blob in written:
                assert read_handle(loc.resolve_handle(handle)) == blob, fail_message(
                    "PTR-4", "resolve_handle", sandbox, via=label
                )


@pytest.mark.clause("PTR-4")
def test_storages_with_one_directory(sandbox, target):
    """PTR-4: a storage made with a checkpoint directory and no savepoint directory resolves
    its checkpoints' pointers, through itself and another instance of the same configuration;
    where in-memory-checkpoints and savepoints are claimed, so does a storage made with a
    savepoint directory and no checkpoint directory for its savepoints' pointers."""
    checkpoints = JobDriver(sandbox, savepoint_dir=None, **file_options(target))
    checkpoints.init_base()
    completed, _ = checkpoints.checkpoint(8, metadata=b"no savepoint directory")
    cases = [(checkpoints, completed, b"no savepoint directory", "checkpoint_dir only")]
    if {"in-memory-checkpoints", "savepoints"} <= set(target.capabilities):
        savepoints = JobDriver(sandbox, checkpoint_dir=None, **file_options(target))
        location = savepoints.access.initialize_location_for_savepoint(9, None)
        savepoint = savepoints.finalize(location, b"no checkpoint directory")
        cases.append((savepoints, savepoint, b"no checkpoint directory", "savepoint_dir only"))
    for drv, done, metadata, made in cases:
        for label, storage in (("storage", drv.storage), ("fresh storage", drv.fresh_storage())):
            _resolves_to(
                sandbox,
                "PTR-4",
                "PTR-4",
                storage,
                done.external_pointer,
                done.external_pointer,
                metadata,
                made_with=made,
                via=label,
            )


@pytest.mark.clause("PTR-5")
def test_missing_arguments(sandbox, target):
    """PTR-5: resolve_checkpoint(None) raises TypeError, resolve_checkpoint('') ValueError."""
    drv = JobDriver(sandbox, **file_options(target))
    for label, resolver in (("storage", drv.storage), ("access", drv.access)):
        expect_error(
            TypeError,
            "PTR-5",
            f"{label}.resolve_checkpoint",
            lambda r=resolver: r.resolve_checkpoint(None),
            pointer=None,
        )
        expect_error(
            ValueError,
            "PTR-5",
            f"{label}.resolve_checkpoint",
            lambda r=resolver: r.resolve_checkpoint(""),
            pointer="",
        )


@pytest.mark.clause("PTR-6")
@pytest.mark.parametrize("where", ["below-checkpoints", "new-root", "metadata-file"])
def test_missing_checkpoint(sandbox, target, where):
    """PTR-6: a pointer to a path that does not exist raises FileNotFoundError."""
    drv = JobDriver(sandbox, **file_options(target))
    pointer = {
        "below-checkpoints": join(sandbox.checkpoint_dir, str(drv.job_id), "chk-404"),
        "new-root": join(sandbox.root, "never", "written"),
        "metadata-file": join(sandbox.checkpoint_dir, "nothing", "_metadata"),
    }[where]
    for storage in (drv.storage, drv.fresh_storage()):
        expect_error(
            FileNotFoundError,
            "PTR-6",
            "resolve_checkpoint",
            lambda s=storage: s.resolve_checkpoint(pointer),
            sandbox,
            pointer=pointer,
        )


@pytest.mark.clause("PTR-7")
def test_no_metadata_no_checkpoint(sandbox, target):
    """PTR-7: a checkpoint directory whose _metadata is missing does not resolve."""
    drv = JobDriver(sandbox, **file_options(target))
    drv.init_base()
    completed, _ = drv.checkpoint(8, exclusive=[payload(5000)], shared=[payload(10)])
    metadata_file = file_path(completed.metadata_handle)
    if metadata_file is None:  # the clause says nothing of metadata handles: nothing to delete
        pytest.skip("the metadata handle names no file: the suite cannot remove _metadata")
    sandbox.backend.raw.rm(sandbox.raw_path(metadata_file))
    for spelling in ("dir", "dir/"):
        pointer = spell(completed, spelling)
        expect_error(
            FileNotFoundError,
            "PTR-7",
            "resolve_checkpoint (no _metadata)",
            lambda p=pointer: drv.fresh_storage().resolve_checkpoint(p),
            sandbox,
            pointer=pointer,
        )
    if "file-layout" in target.capabilities:
        # an in-flight checkpoint: state written, metadata never
        location = drv.location(9)
        factory = drv.worker(9, location.location_reference)
        drv.write(factory, payload(5000))
        expect_error(
            FileNotFoundError,
            "PTR-7",
            "resolve_checkpoint (in flight)",
            lambda: drv.storage.resolve_checkpoint(drv.chk_dir(9)),
            sandbox,
            pointer=drv.chk_dir(9),
        )


@pytest.mark.clause("PTR-7")
def test_a_directory_named_metadata(sandbox, target):
    """PTR-7: a directory named _metadata is looked up for the _metadata inside it; without
    one it does not resolve."""
    drv = JobDriver(sandbox, **file_options(target))
    drv.init_base()
    completed, _ = drv.checkpoint(3, metadata=b"inner metadata")
    original = file_path(completed.metadata_handle)
    if original is None:  # the clause says nothing of metadata handles: nothing to copy
        pytest.skip("the metadata handle names no file: the suite cannot copy _metadata")
    named = join(sandbox.root, "named", "_metadata")
    empty = join(sandbox.root, "empty", "_metadata")
    put_file(sandbox, join(named, "_metadata"), sandbox.read(original))
    put_file(sandbox, join(empty, "other"), b"not metadata")
    with tagged(
        "PTR-7", "resolve_checkpoint (a directory named _metadata)", sandbox, pointer=named
    ):
        loc = drv.fresh_storage().resolve_checkpoint(named)
    assert read_handle(loc.metadata_handle) == b"inner metadata", fail_message(
        "PTR-7", "resolve_checkpoint (a directory named _metadata)", sandbox, pointer=named
    )
    expect_error(
        FileNotFoundError,
        "PTR-7",
        "resolve_checkpoint (a directory named _metadata, none inside)",
        lambda: drv.fresh_storage().resolve_checkpoint(empty),
        sandbox,
        pointer=empty,
    )


BAD_POINTERS = [
    "this-is_not/a#filepath.at.all",
    "nosuchscheme-ckpt://bucket/path/chk-1",
    "nosuchscheme-ckpt:/path/chk-1",
]


@pytest.mark.clause("PTR-8")
@pytest.mark.parametrize("pointer", BAD_POINTERS)
def test_invalid_pointers(sandbox, target, pointer):
    """PTR-8: garbage and unknown schemes raise OSError."""
    drv = JobDriver(sandbox, **file_options(target))
    expect_error(
        OSError,
        "PTR-8",
        "resolve_checkpoint",
        lambda: drv.storage.resolve_checkpoint(pointer),
        pointer=pointer,
    )


@pytest.mark.clause("PTR-8")
def test_non_addressable_pointer(sandbox, target):
    """PTR-8: the JobManager's non-addressable pointer raises FileNotFoundError."""
    drv = JobDriver(sandbox, **file_options(target))
    expect_error(
        FileNotFoundError,
        "PTR-8",
        "resolve_checkpoint",
        lambda: drv.storage.resolve_checkpoint(NON_ADDRESSABLE_POINTER),
        pointer=NON_ADDRESSABLE_POINTER,
    )


@pytest.mark.clause("PTR-9")
def test_any_metadata_file_name(sandbox, target):
    """PTR-9: a pointer naming a file is taken as the metadata file, whatever its name."""
    drv = JobDriver(sandbox, **file_options(target))
    drv.init_base()
    completed, _ = drv.checkpoint(2, metadata=b"renamed metadata")
    original = file_path(completed.metadata_handle)
    renamed = join(completed.external_pointer, "copy-of-metadata")
    sandbox.backend.raw.pipe_file(sandbox.raw_path(renamed), sandbox.read(original))
    loc = drv.fresh_storage().resolve_checkpoint(renamed)
    assert read_handle(loc.metadata_handle) == b"renamed metadata", fail_message(
        "PTR-9", "resolve_checkpoint", sandbox, pointer=renamed
    )


def upload_tree(sandbox, local_dir: str, url: str) -> None:
    """Copy a local directory tree onto the backend (raw, bypassing the implementation)."""
    raw = sandbox.backend.raw
    for root, _dirs, files in os.walk(local_dir):
        rel = os.path.relpath(root, local_dir)
        target_dir = url if rel == "." else join(url, rel.replace(os.sep, "/"))
        if not sandbox.backend.object_store:
            raw.makedirs(sandbox.raw_path(target_dir), exist_ok=True)
        for name in files:
            with open(os.path.join(root, name), "rb") as fh:
                raw.pipe_file(sandbox.raw_path(join(target_dir, name)), fh.read())


@pytest.mark.clause("PTR-10", "PTR-2")
def test_flink_written_checkpoints_resolve(sandbox, target, tmp_path):
    """PTR-10: pointers into the checkpoint and savepoint directories Apache Flink 2.3.0 wrote
    resolve to their _metadata bytes, Flink's in-flight chk-13 does not; PTR-2: the directory
    with a trailing '/' or a doubled '/' resolves to the same."""
    local = extract_flink_trees(str(tmp_path))
    url = join(sandbox.root, "flink")
    upload_tree(sandbox, local, url)
    storage = sandbox.make_storage(**file_options(target))
    job = join(url, FLINK_CHECKPOINT_BASE, FLINK_JOB_ID)
    rels = [f"{FLINK_CHECKPOINT_BASE}/{FLINK_JOB_ID}/chk-{n}" for n in FLINK_COMPLETED]
    rels.append(f"{FLINK_SAVEPOINT_BASE}/{FLINK_SAVEPOINT}")
    for rel in rels:
        directory = join(url, rel)
        with open(os.path.join(local, *rel.split("/"), "_metadata"), "rb") as fh:
            expected = fh.read()
        with tagged("PTR-10", "read Flink's _metadata from the fixture"):
            assert expected[:4] == bytes.fromhex("4960672d")  # Flink's metadata magic number
        spellings = (directory, join(directory, "_metadata"), directory + "/")
        for pointer in (*spellings, doubled_slash(directory)):
            # the plain spellings are PTR-10's; the trailing '/' and the doubled '/' PTR-2's
            clause = "PTR-2" if pointer not in spellings[:2] else "PTR-10"
            with tagged(clause, "resolve_checkpoint (Flink tree)", sandbox, pointer=pointer):
                loc = storage.resolve_checkpoint(pointer)
                assert read_handle(loc.metadata_handle) == expected, "metadata bytes differ"
                assert same_location(sandbox, loc.external_pointer, directory), (
                    f"external_pointer {loc.external_pointer}"
                )
    in_flight = join(job, f"chk-{FLINK_IN_FLIGHT}")
    for pointer in (in_flight, in_flight + "/"):
        expect_error(
            FileNotFoundError,
            "PTR-10",
            "resolve_checkpoint (Flink's in-flight chk-13)",
            lambda p=pointer: storage.resolve_checkpoint(p),
            sandbox,
            pointer=pointer,
        )


def _resolves_local_spellings(clause, sandbox, target, backend, spellings) -> None:
    if backend.scheme != "file":
        pytest.skip(f"local path spellings apply to the local file system, not {backend.name}")
    drv = JobDriver(sandbox, **file_options(target))
    drv.init_base()
    completed, _ = drv.checkpoint(4, metadata=b"local spellings")
    path = "/" + sandbox.raw_path(completed.external_pointer).lstrip("/")
    for pointer in spellings(path):
        with tagged(clause, "resolve_checkpoint", sandbox, pointer=pointer):
            loc = drv.fresh_storage().resolve_checkpoint(pointer)
            assert read_handle(loc.metadata_handle) == b"local spellings", "metadata bytes differ"


@pytest.mark.clause("PTR-11")
def test_local_path_spellings(sandbox, target, backend):
    """PTR-11: on the local file system /abs/dir, file:/abs/dir and file:///abs/dir name the
    same checkpoint."""
    _resolves_local_spellings(
        "PTR-11", sandbox, target, backend, lambda p: (p, "file:" + p, "file://" + p)
    )


@pytest.mark.clause("PTR-2")
def test_local_path_with_trailing_slash(sandbox, target, backend):
    """PTR-2: on the local file system a bare path with a trailing '/' resolves too."""
    _resolves_local_spellings("PTR-2", sandbox, target, backend, lambda p: (p + "/",))


def flink_path_spellings(pointer: str) -> dict[str, str]:
    """``pointer`` (a directory) spelt with '.', '..' and '\\' segments Flink's Path resolves."""
    directory = pointer.rstrip("/")
    head, _, last = directory.rpartition("/")
    return {
        "dot": f"{directory}/.",
        "dot-inside": f"{head}/./{last}",
        "up-and-back": f"{directory}/../{last}",
        "backslash": f"{head}\\{last}",
    }


def up_from_first_directory(pointer: str) -> str | None:
    """``pointer`` with a '..' out of its path's first directory and back into it:
    ``s3://bucket/a/b`` as ``s3://bucket/a/../a/b``, ``memory:///a/b`` (a URL that names no
    host: its path starts at the first segment) as ``memory:///a/../a/b``, ``/a/b`` as
    ``/a/../a/b``; None when the path has less than two segments."""
    scheme, colon, rest = pointer.partition(":")
    if not colon or "/" in scheme:  # a plain path
        scheme, colon, rest = "", "", pointer
    prefix, path = f"{scheme}{colon}", rest
    if rest.startswith("//"):
        authority, _, below = rest[2:].partition("/")
        prefix, path = f"{prefix}//{authority}", f"/{below}"
    first, _, below = path[1:].partition("/") if path.startswith("/") else ("", "", "")
    if not first or not below:
        return None
    return f"{prefix}/{first}/../{first}/{below}"


@pytest.mark.clause("PTR-13")
@capped(4)
@given(checkpoint_id=checkpoint_ids)
def test_flink_path_normalisation(sandbox, target, checkpoint_id):
    """PTR-13: '.' segments, a '..' that climbs back into the directory or into the path's
    first directory and a '\\' for a '/' resolve to the same external_pointer and metadata
    bytes."""
    drv = JobDriver(sandbox, **file_options(target))
    drv.init_base()
    metadata = payload(700, seed=checkpoint_id % 251)
    completed, _ = drv.checkpoint(checkpoint_id, metadata=metadata)
    spellings = flink_path_spellings(completed.external_pointer)
    # out of the first directory and back, spelt from the test's root as the suite spells it
    # (memory:///<first>/...: its first segment is a directory, where a host could stand)
    below = relative_segments(sandbox, completed.external_pointer)
    first_up_and_back = up_from_first_directory(join(sandbox.root, *below)) if below else None
    if first_up_and_back is not None:
        spellings["first-up-and-back"] = first_up_and_back
    for spelling, pointer in spellings.items():
        _resolves_everywhere(
            sandbox,
            "PTR-13",
            "PTR-13",
            drv,
            pointer,
            completed,
            metadata,
            spelling=spelling,
            id=checkpoint_id,
        )


@pytest.mark.clause("PTR-12")
@pytest.mark.parametrize("checkpoint_dir", CHECKPOINT_DIRS)
def test_highly_available_storage(sandbox, target, checkpoint_dir):
    """PTR-12: supports_highly_available_storage() is true when completed checkpoints are
    externally addressable and false when their pointer is
    '<checkpoint-not-externally-addressable>'."""
    drv = driver_with(sandbox, target, checkpoint_dir)
    drv.init_base()
    completed, _ = drv.checkpoint(1, metadata=b"ha")
    pointer = completed.external_pointer
    addressable = pointer != NON_ADDRESSABLE_POINTER
    if addressable:
        with tagged("PTR-12", "resolve the pointer through a fresh storage", sandbox):
            assert (
                read_handle(drv.fresh_storage().resolve_checkpoint(pointer).metadata_handle)
                == b"ha"
            )
    with tagged("PTR-12", "supports_highly_available_storage", sandbox, pointer=pointer):
        answer = drv.access.supports_highly_available_storage()
    require(
        answer is addressable,
        "PTR-12",
        fail_message("PTR-12", "supports_highly_available_storage", sandbox, pointer=pointer)
        + f"\nanswered {answer!r}, but the checkpoints are "
        + ("" if addressable else "not ")
        + "externally addressable",
    )
