"""LAY: Flink's path layout (seed 001; Flink L1-L7). Capability: file-layout (LAY-8: entropy).

The layout is checked by a pure function (``_layout``) over relative paths: file keys on object
stores (directories do not exist there), files and directories elsewhere. The same function
accepts the trees Apache Flink 2.3.0 wrote (the packaged fixture), which keeps it honest.
"""

from __future__ import annotations

import contextlib
import os
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from hypothesis import example, given

from ckptconform.suite._driver import (
    EXCLUSIVE,
    SHARED,
    JobDriver,
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
    rel_paths,
    require,
    routed_options,
    same_location,
    second_bucket,
    second_route,
    tagged,
    write_state,
)
from ckptconform.suite._layout import (
    FLINK_CHECKPOINT_BASE,
    FLINK_COMPLETED,
    FLINK_IN_FLIGHT,
    FLINK_JOB_ID,
    FLINK_SAVEPOINT,
    FLINK_SAVEPOINT_BASE,
    check_checkpoint_tree,
    check_savepoint_tree,
    extract_flink_trees,
)
from ckptconform.suite._strategies import capped, checkpoint_ids


def _walk(base: str) -> tuple[list[str], list[str]]:
    files, dirs = [], []
    for root, dirnames, filenames in os.walk(base):
        dirs += [os.path.relpath(os.path.join(root, d), base) for d in dirnames]
        files += [os.path.relpath(os.path.join(root, f), base) for f in filenames]
    return files, dirs


@pytest.mark.clause("LAY-1", "LAY-2", "LAY-3", "LAY-4", "LAY-5")
def test_layout_checker_accepts_flink_trees(tmp_path):
    """LAY-1, LAY-2, LAY-3, LAY-4, LAY-5: the job directory, chk-<n>, shared/, files directly in
    their directory and _metadata as Flink wrote them: the suite's checker of these clauses
    accepts the trees of Apache Flink (and rejects junk)."""
    root = extract_flink_trees(str(tmp_path))
    tree = check_checkpoint_tree(*_walk(os.path.join(root, FLINK_CHECKPOINT_BASE)))
    with tagged("LAY-1", "check Flink's checkpoint tree", problems=tree.problems):
        assert tree.problems == []
    job = tree.jobs[FLINK_JOB_ID]
    require(
        job.completed() == list(FLINK_COMPLETED), "LAY-5", f"[LAY-5] completed: {job.completed()}"
    )
    require(FLINK_IN_FLIGHT in job.checkpoints, "LAY-2", "[LAY-2] chk-13 (in flight) is missing")
    sp = check_savepoint_tree(*_walk(os.path.join(root, FLINK_SAVEPOINT_BASE)), job_id=FLINK_JOB_ID)
    with tagged("LAY-1", "check Flink's savepoint tree", problems=sp.problems):
        assert sp.problems == []
        assert list(sp.savepoints) == [FLINK_SAVEPOINT]
    # the checker is not a rubber stamp
    bad = check_checkpoint_tree(
        [
            f"{FLINK_JOB_ID}/chk-007/x",
            "ABC/chk-1/_metadata",
            f"{FLINK_JOB_ID}/chk-1/sub/x",
            f"{FLINK_JOB_ID}/other/x",
        ]
    )
    bad_sp = check_savepoint_tree(["savepoint-28035f-1A44b3786f30/_metadata", "savepoint-x/y/z"])
    with tagged("LAY-1", "check junk trees (the checker must reject them)"):
        assert len(bad.problems) == 4, bad.problems
        assert len(bad_sp.problems) >= 2, bad_sp.problems


def _blame(problems: list[str]) -> str:
    """The clause a layout problem breaks: depth (LAY-4), directory names (LAY-2), job (LAY-1)."""
    text = " ".join(problems)
    if "depth" in text or "a directory below" in text:
        return "LAY-4"
    return "LAY-2" if "is not chk-<n>" in text else "LAY-1"


@pytest.mark.clause("LAY-1", "LAY-2", "LAY-3", "LAY-4", "LAY-5", "TOW-2")
@pytest.mark.options("inline_threshold")
@capped(6)
@given(checkpoint_id=checkpoint_ids)
@example(checkpoint_id=2**63 - 1)  # the largest Java long
def test_checkpoint_layout(sandbox, checkpoint_id):
    """LAY-1: a job's data lies below <checkpoint_dir>/<job id>/; LAY-2: exclusive state and
    _metadata in chk-<n>; LAY-3: shared-scope state in shared/; LAY-4: state files directly in
    their directory; LAY-5: the metadata file _metadata and the pointer names its directory;
    TOW-2: task-owned state files in taskowned/."""
    base = join(sandbox.checkpoint_dir, f"lay-{uuid.uuid4().hex[:12]}")  # one per example
    drv = JobDriver(sandbox, checkpoint_dir=base, inline_threshold=0)
    drv.init_base()
    completed, written = drv.checkpoint(
        checkpoint_id, exclusive=[payload(100, 1), payload(200, 2)], shared=[payload(300, 3)]
    )
    task_owned = drv.task_owned(payload(400, 4))
    files, dirs = rel_paths(sandbox, base)
    tree = check_checkpoint_tree(files, dirs)
    job, chk = str(drv.job_id), f"chk-{checkpoint_id}"
    msg = fail_message(
        "LAY-1",
        "checkpoint + task-owned state",
        sandbox,
        checkpoint_id=checkpoint_id,
        job=job,
        files=files,
        dirs=dirs,
    )
    blamed = _blame(tree.problems)
    require(
        tree.problems == [],
        blamed,
        msg.replace("[LAY-1]", f"[{blamed}]") + f"\nproblems: {tree.problems}",
    )
    require(list(tree.jobs) == [job], "LAY-1", msg.replace("[LAY-1]", "[LAY-1] job dir"))
    entry = tree.jobs[job]
    # where each kind of state went, before what chk-<n> holds (a misplaced file shows there too)
    require(
        entry.shared == [os.path.basename(file_path(written[2][0]))],
        "LAY-3",
        msg.replace("[LAY-1]", "[LAY-3] shared state in shared/") + f"\nshared/: {entry.shared}",
    )
    require(
        entry.taskowned == [os.path.basename(file_path(task_owned))],
        "TOW-2",
        msg.replace("[LAY-1]", "[TOW-2] task-owned state in taskowned/")
        + f"\ntaskowned/: {entry.taskowned}",
    )
    require(
        entry.completed() == [checkpoint_id],
        "LAY-5",
        msg.replace("[LAY-1]", "[LAY-5] _metadata") + f"\ncompleted: {entry.completed()}",
    )
    excl = [os.path.basename(file_path(h)) for h, d in written[:2]]
    held = sorted(entry.checkpoints[checkpoint_id])
    require(
        set(held) >= {"_metadata", *excl},  # that nothing else is there is LAY-7's
        "LAY-2",
        msg.replace("[LAY-1]", "[LAY-2] exclusive state + _metadata in chk-<n>")
        + f"\n{chk}/: {held}",
    )
    require(
        same_location(sandbox, completed.external_pointer, join(base, job, chk)),
        "LAY-5",
        msg.replace("[LAY-1]", f"[LAY-5] pointer {completed.external_pointer}"),
    )
    require(
        same_location(
            sandbox, file_path(completed.metadata_handle), join(base, job, chk, "_metadata")
        ),
        "LAY-5",
        msg.replace("[LAY-1]", f"[LAY-5] metadata handle {completed.metadata_handle!r}"),
    )


@pytest.mark.clause("LAY-6")
@pytest.mark.backend_traits(object_store=False)
def test_coordinator_creates_directories(sandbox):
    """LAY-6: on directory file systems the coordinator creates shared/, taskowned/ and chk-<n>."""
    drv = JobDriver(sandbox)
    drv.init_base()
    for name in ("shared", "taskowned"):
        assert is_dir(sandbox, join(drv.job_dir, name)), fail_message(
            "LAY-6", "initialize_base_locations_for_checkpoint", sandbox, missing=name
        )
    drv.location(17)
    assert is_dir(sandbox, drv.chk_dir(17)), fail_message(
        "LAY-6", "initialize_location_for_checkpoint(17)", sandbox, missing="chk-17"
    )


@pytest.mark.clause("LAY-6")
@pytest.mark.backend_traits(object_store=False)
@pytest.mark.parametrize("where", ["the-file", "below-the-file"])
def test_directories_that_cannot_be_created(sandbox, where):
    """LAY-6: with the checkpoint directory an existing file, or below one, where no directory
    can be created, initialize_base_locations_for_checkpoint and
    initialize_location_for_checkpoint(n) raise OSError and leave the file as it was."""
    blocker = join(sandbox.root, "not-a-directory")
    content = b"a file, not a directory"
    put_file(sandbox, blocker, content)
    checkpoint_dir = blocker if where == "the-file" else join(blocker, "checkpoints")
    drv = JobDriver(sandbox, checkpoint_dir=checkpoint_dir)
    expect_error(
        OSError,
        "LAY-6",
        "initialize_base_locations_for_checkpoint below a file",
        drv.init_base,
        sandbox,
        checkpoint_dir=checkpoint_dir,
    )
    expect_error(
        OSError,
        "LAY-6",
        "initialize_location_for_checkpoint(1) below a file",
        lambda: drv.location(1),
        sandbox,
        checkpoint_dir=checkpoint_dir,
    )
    with tagged("LAY-6", "read the file after the attempts", sandbox, file=blocker):
        assert sandbox.read(blocker) == content, "the file changed"


@pytest.mark.clause("LAY-7")
@pytest.mark.options("inline_threshold")
@pytest.mark.parametrize("threshold", [0, 100])
def test_no_leftovers_after_finalization(sandbox, threshold):
    """LAY-7: chk-<n> holds exactly _metadata and the exclusive files whose handles were taken."""
    drv = JobDriver(sandbox, inline_threshold=threshold)
    drv.init_base()
    location = drv.location(5)
    factory = drv.worker(5, location.location_reference)
    kept = [write_state(factory, payload(n, n), EXCLUSIVE) for n in (50, 500, 5000)]
    dropped = factory.create_checkpoint_state_output_stream(EXCLUSIVE)
    dropped.write(payload(50_000))
    dropped.close()
    abandoned = location.create_metadata_output_stream()
    abandoned.write(b"abandoned")
    abandoned.close()
    drv.finalize(location, payload(3000, seed=5))
    expected = sorted(
        ["_metadata"] + [os.path.basename(file_path(h)) for h in kept if file_path(h)]
    )
    files, _ = rel_paths(sandbox, drv.chk_dir(5))
    assert sorted(files) == expected, fail_message(
        "LAY-7",
        "files in chk-5 after finalization",
        sandbox,
        threshold=threshold,
        expected=expected,
        found=files,
    )


@pytest.mark.clause("LAY-7")
@pytest.mark.options("inline_threshold")
@pytest.mark.backend_traits(object_store=True)
def test_no_leftovers_of_a_first_setup(sandbox, backend):
    """LAY-7: the first job on an endpoint (a fresh route to the object store) leaves nothing
    below its checkpoint directory but chk-<n>'s files, whatever its setup wrote there."""
    with second_route(backend) as route:
        drv = JobDriver(sandbox, inline_threshold=0, **routed_options(backend, route))
        drv.init_base()
        location = drv.location(5)
        factory = drv.worker(5, location.location_reference)
        kept = write_state(factory, payload(500, 5), EXCLUSIVE)
        drv.finalize(location, payload(300, seed=5))
    chk = f"{drv.job_id}/chk-5"
    state = [f"{chk}/{os.path.basename(file_path(kept))}"] if file_path(kept) else []
    expected = sorted([f"{chk}/_metadata", *state])
    files, _ = rel_paths(sandbox, drv.checkpoint_dir)
    assert files == expected, fail_message(
        "LAY-7",
        "files below the checkpoint directory after the first setup on an endpoint",
        sandbox,
        route=route.url,
        expected=expected,
        found=files,
    )


@dataclass(frozen=True)
class EntropyCase:
    """One checkpoint path of LAY-8: ``<root>/<segment>/<below>``, the key in ``segment``."""

    segment: str  # the part of the path that holds the key (once or more)
    length: int
    key: str = "_entropy_"
    below: str = "checkpoints"  # the rest of the checkpoint path ("": none)
    #: a bucket of the test's own whose name starts so (None: the sandbox's root in the
    #: backend's bucket)
    bucket: str | None = None
    create_subdir: bool = True
    #: whether the storage has a default savepoint directory (the sandbox's)
    savepoints: bool = True


#: LAY-8's checkpoint paths: the key a whole segment, inside one, twice; alone below a bucket of
#: its own (the pointer then names the bucket's chk-<n>); in the bucket's name as well.
ENTROPY_CASES = (
    pytest.param(EntropyCase("_entropy_", 4), id="whole-segment"),
    pytest.param(EntropyCase("ent-_entropy_-x", 1), id="inside-a-segment"),
    pytest.param(EntropyCase("_entropy_/cp/_entropy_", 2), id="twice"),
    pytest.param(
        EntropyCase("_entropy_", 4, below="", bucket="ckpt-", create_subdir=False),
        id="alone-below-a-bucket",
        marks=pytest.mark.requires("flat-layout"),
    ),
    pytest.param(
        EntropyCase("entkey", 3, key="entkey", below="cp", bucket="ckpt-entkey-"),
        id="key-in-the-bucket-name",
    ),
    pytest.param(EntropyCase("_entropy_", 4, savepoints=False), id="no-savepoint-directory"),
)


@contextlib.contextmanager
def _entropy_root(sandbox, backend, case: EntropyCase) -> Iterator[str]:
    """The URL the case's checkpoint path starts from: a fresh bucket, or the sandbox's root."""
    if case.bucket is None:
        yield sandbox.root
    else:
        with second_bucket(backend, case.bucket) as bucket:
            yield bucket


@pytest.mark.clause("LAY-8")
@pytest.mark.options("inline_threshold")
@pytest.mark.backend_traits(object_store=True)
@pytest.mark.parametrize("case", ENTROPY_CASES)
def test_entropy_never_reaches_the_store(sandbox, target, backend, case):
    """LAY-8: with an entropy key (a whole segment of the path, inside one, twice, alone below
    a bucket with create_subdir=False, also in the bucket's name, or in a storage without a
    default savepoint directory), no written path has the
    key where it was first (nor, where a ledger counts them, any request); the pointer has it
    removed; the bucket stays as named; both disposals work with it."""
    with _entropy_root(sandbox, backend, case) as root:
        _check_entropy(sandbox, target, backend, case, root)


def _check_entropy(sandbox, target, backend, case: EntropyCase, root: str) -> None:
    """LAY-8 for one case whose checkpoint path starts at ``root``."""
    key, length, segment = case.key, case.length, case.segment
    below = [case.below] if case.below else []
    base = join(root, segment, *below)
    literal = segment.count(key) - 1  # only the first occurrence is the entropy's (E3)
    flat = {} if case.create_subdir else {"create_subdir": False}  # needs flat-layout
    if not case.savepoints:
        flat["savepoint_dir"] = None
    inputs = {"key": key, "checkpoint_dir": base, "entropy_length": length, **flat}
    ledger = backend.ledger
    with (
        ledger.record() if ledger is not None else contextlib.nullcontext() as requests,
        tagged("LAY-8", "checkpoint with entropy key", sandbox, **inputs),
    ):
        drv = JobDriver(
            sandbox,
            checkpoint_dir=base,
            inline_threshold=0,
            entropy_key=key,
            entropy_length=length,
            **flat,
        )
        drv.init_base()
        completed, written = drv.checkpoint(
            3, exclusive=[payload(100, 1)], shared=[payload(200, 2)], metadata=b"entropy"
        )
        task_owned = drv.task_owned(payload(300, 3))
        aborted = drv.location(4)
        copies = []
        if "fast-duplicate" in target.capabilities:
            toolset = drv.access.create_task_owned_checkpoint_state_toolset()
            copies = toolset.duplicate([task_owned])
            factory = drv.worker(4, aborted.location_reference)
            copies += [c for s in (EXCLUSIVE, SHARED) for c in factory.duplicate([task_owned], s)]
    keyed = [] if requests is None else [r for r in requests.requests if key in (r.key or "")]
    top = sandbox.raw_path(root)
    files = files_below(sandbox, root)
    msg = fail_message(
        "LAY-8",
        "checkpoint with entropy key",
        sandbox,
        **inputs,
        pointer=completed.external_pointer,
        files=files,
    )
    assert files, msg + "\nnothing was written"
    # the key counted below the root only: a bucket's name may hold it too
    below_root = [f.removeprefix(top) for f in files]
    assert not [f for f in below_root if f.count(key) > literal], (
        msg + "\na written path has the key"
    )
    keyed = [r for r in keyed if (r.key or "").count(key) > literal]
    assert not keyed, msg + "\nrequests naming the key:\n" + "\n".join(map(str, keyed[:10]))
    pointer = completed.external_pointer
    assert pointer.removeprefix(root).count(key) == literal, msg + "\nthe pointer has the key"
    # the first occurrence removed, and a segment left empty goes away (Flink E3)
    removed = [part for part in segment.replace(key, "", 1).split("/") if part]
    job = [str(drv.job_id)] if case.create_subdir else []
    without = join(root, *removed, *below, *job, "chk-3")
    assert same_location(sandbox, pointer, without), msg + f"\nexpected the pointer {without}"
    prefix, _, suffix = segment.partition(key)
    entropy = re.escape(prefix) + "[0-9A-Za-z]{" + str(length) + "}" + re.escape(suffix)
    rest = "".join(f"/{part}" for part in below) + "/"
    for handle in [*(h for h, _ in written), task_owned, *copies]:
        path = sandbox.raw_path(file_path(handle))
        assert re.match(re.escape(top) + f"/{entropy}{re.escape(rest)}", path), (
            msg + f"\ndata file {path} has no {length} random characters where the key was"
        )
    resolved = drv.fresh_storage().resolve_checkpoint(pointer)
    assert read_handle(resolved.metadata_handle) == b"entropy", msg
    for handle, blob in written:
        assert read_handle(resolved.resolve_handle(handle)) == blob, msg
    for copy in copies:
        assert read_handle(copy) == payload(300, 3), msg + "\na duplicate does not read its bytes"
    literal_chk = join(base, *job, "chk-3")
    assert files_below(sandbox, literal_chk) == [], msg + "\nfiles at the literal-key path"
    with tagged("LAY-8", "dispose_on_failure of a checkpoint location with the key", sandbox):
        aborted.dispose_on_failure()
    with tagged("LAY-8", "dispose_storage_location of a checkpoint with the key", sandbox):
        completed.dispose_storage_location()
    expect_error(
        FileNotFoundError,
        "LAY-8",
        "resolve the pointer of a disposed checkpoint with the key",
        lambda: drv.fresh_storage().resolve_checkpoint(pointer),
        sandbox,
        pointer=pointer,
    )


@pytest.mark.clause("LAY-10")
@pytest.mark.parametrize("create_subdir", [False, True])
def test_flat_layout_without_job_directory(sandbox, target, create_subdir):
    """LAY-10: with create_subdir=False chk-<n>/, shared/ and taskowned/ lie directly in the
    checkpoint directory and the pointer names <checkpoint_dir>/chk-<n>; with True they lie in
    <checkpoint_dir>/<job id>/."""
    base = join(sandbox.checkpoint_dir, f"flat-{uuid.uuid4().hex[:12]}")
    drv = JobDriver(
        sandbox, checkpoint_dir=base, create_subdir=create_subdir, **file_options(target)
    )
    drv.init_base()
    completed, written = drv.checkpoint(
        5, exclusive=[payload(100, 1)], shared=[payload(200, 2)], metadata=b"flat layout"
    )
    task_owned = drv.task_owned(payload(300, 3))
    job_dir = join(base, str(drv.job_id)) if create_subdir else base
    expected = {
        "external pointer": (completed.external_pointer, join(job_dir, "chk-5")),
        "_metadata": (file_path(completed.metadata_handle), join(job_dir, "chk-5", "_metadata")),
        "exclusive state's directory": (parent(file_path(written[0][0])), join(job_dir, "chk-5")),
        "shared state's directory": (parent(file_path(written[1][0])), join(job_dir, "shared")),
        "task-owned state's directory": (
            parent(file_path(task_owned)),
            join(job_dir, "taskowned"),
        ),
    }
    for what, (got, want) in expected.items():
        require(
            same_location(sandbox, got, want),
            "LAY-10",
            fail_message("LAY-10", what, sandbox, create_subdir=create_subdir, base=base)
            + f"\n{what}: {got}, expected {want}",
        )
    with tagged("LAY-10", "resolve the pointer", sandbox, create_subdir=create_subdir):
        resolved = drv.fresh_storage().resolve_checkpoint(completed.external_pointer)
        assert read_handle(resolved.metadata_handle) == b"flat layout", "metadata bytes differ"


#: Entropy keys with a character of Flink's forbidden class (E2).
FORBIDDEN_ENTROPY_KEYS = ("_entropy#", "_en{tropy}_", "_entropy_%", 'quo"te', "back\\slash", "a|b")


@pytest.mark.clause("LAY-9")
@pytest.mark.backend_traits(object_store=True)
def test_invalid_entropy_options_are_refused(sandbox):
    """LAY-9: entropy keys with characters Flink forbids, an empty entropy key, and entropy
    lengths of 0 or less or no integer, are refused with ValueError (TypeError for a length of
    another type) before the job's base locations are made."""
    cases = [(key, 4, ValueError) for key in FORBIDDEN_ENTROPY_KEYS]
    # beyond Flink, which takes '' and then fails to create every data file: the empty key
    # matches at the start of every path, so no checkpoint could ever write its state
    cases += [("", 4, ValueError)]
    cases += [("_entropy_", length, ValueError) for length in (0, -1)]
    cases += [("_entropy_", length, (TypeError, ValueError)) for length in ("4", 2.5)]
    for key, length, errors in cases:
        base = join(sandbox.root, key or "empty-key", "checkpoints")

        def make(key: str = key, length: object = length, base: str = base) -> None:
            drv = JobDriver(sandbox, checkpoint_dir=base, entropy_key=key, entropy_length=length)
            drv.init_base()

        expect_error(
            errors,
            "LAY-9",
            "make a storage with entropy options, create an access, initialize its base",
            make,
            sandbox,
            entropy_key=key,
            entropy_length=length,
        )
