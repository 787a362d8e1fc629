"""BAD: hostile pointers, references and savepoint targets; bad input changes nothing;
confined disposal.

Hostile pointers are built below the test's root from a job's two checkpoints, so the suite
knows what each one may resolve to. What must stay is compared on the backend itself: a raw
listing of the test's root (and of the working directory, where relative paths land) with
every file's size and SHA-256, before and after.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ckptconform.suite._bad_inputs import (
    BAD_SAVEPOINT_TARGETS,
    ESCAPES,
    FREE_POINTERS,
    MUST_REFUSE,
    PointerCase,
    dot_segments,
    dotted_authorities,
    expectation,
    file_url_with_host,
    fixed_cases,
    hostile_reference_bytes,
    hostile_references,
    normalised,
    pointer_suffixes,
    relative_pointer_cases,
    show,
    traversal_targets,
)
from ckptconform.suite._bad_world import (
    POINTER_ERRORS,
    World,
    errno_disagreement,
    report,
    world_in,
)
from ckptconform.suite._driver import (
    EXCLUSIVE,
    SHARED,
    JobDriver,
    fail_message,
    file_options,
    file_path,
    join,
    parent,
    payload,
    put_file,
    read_handle,
    same_location,
    tagged,
)
from ckptconform.suite._strategies import capped
from ckptstore.api import CheckpointStorageLocationReference


@pytest.fixture
def world(sandbox: Any, target: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    """A World; relative paths land in an empty working directory that the tests watch."""
    return world_in(sandbox, target, tmp_path, monkeypatch)


# --------------------------------------------------------------------------- BAD-4: pointers


@dataclass(frozen=True)
class PointerCheck:
    """One hostile pointer: its text, why it is there, and what it may resolve to."""

    pointer: str
    why: str
    expect: str | None  # a location name, None (must be refused) or ESCAPES (anything typed)


def _pointer_checks(world: World) -> list[PointerCheck]:
    checks = [PointerCheck(p, "names nothing", None) for p in FREE_POINTERS]
    with_host = file_url_with_host(world.completed.external_pointer)
    if with_host is not None:
        why = "a file URL whose host spells chk-1's first directory"
        checks.append(PointerCheck(with_host, why, None))
    located = world.known_locations()
    if located is not None:
        known = {normalised(segs): name.split(" ")[0] for name, segs in located.items()}
        for case in relative_pointer_cases(located["chk-1"], located["chk-2"], known):
            checks.append(PointerCheck(case.pointer(world.sandbox.root), case.why, case.expect))
    return checks


def _check_pointer(world: World, resolver: Any, via: str, check: PointerCheck) -> str | None:
    """None when the outcome is allowed, else a line for the failure message."""
    where = f"  {via}.resolve_checkpoint({show(check.pointer, 120)}) [{check.why}]"
    try:
        location = resolver.resolve_checkpoint(check.pointer)
    except POINTER_ERRORS:
        return None
    except Exception as exc:
        return f"{where}: raised {type(exc).__name__}: {show(str(exc), 160)}"
    if check.expect == ESCAPES:
        return None
    try:
        return _check_resolved(world, location, check.expect, where)
    except Exception as exc:
        return f"{where}: resolved, but inspecting the location raised {type(exc).__name__}: {exc}"


def _check_resolved(world: World, location: Any, expect: str | None, where: str) -> str | None:
    pointer = location.external_pointer
    if expect is None:
        return f"{where}: resolved to {pointer!r}, but its normalised path names no checkpoint"
    expected = world.by_name(expect)
    if dot_segments(pointer):
        return f"{where}: external_pointer {pointer!r} keeps {dot_segments(pointer)}"
    if not same_location(world.sandbox, pointer, expected.external_pointer):
        return f"{where}: resolved to {pointer!r}, not {expect} ({expected.external_pointer})"
    if read_handle(location.metadata_handle) != world.metadata[expect]:
        return f"{where}: resolved to {pointer!r}, but its metadata is not {expect}'s"
    return None


def _resolvers(world: World) -> list[tuple[str, Any]]:
    return [("storage", world.storage), ("access", world.access)]


@pytest.mark.clause("BAD-4")
def test_hostile_pointers(world):
    """BAD-4: hostile pointers are refused with typed errors or resolve as normalised."""
    checks = _pointer_checks(world)
    failures = [
        line
        for check in checks
        for via, resolver in _resolvers(world)
        if (line := _check_pointer(world, resolver, via, check)) is not None
    ]
    assert not failures, report(
        "BAD-4", "hostile-pointer corpus", failures, 2 * len(checks), root=world.sandbox.root
    )


@pytest.mark.clause("BAD-4")
@pytest.mark.backend_traits(object_store=True, ledger=True)
def test_dot_buckets_send_no_request(world, ledger):
    """BAD-4: chk-1's pointer with '.' or '..' put before its bucket (s3://../<bucket>/...) is
    refused with a typed error before any request reaches the server."""
    pointers = dotted_authorities(world.completed.external_pointer)
    if not pointers:
        pytest.skip(f"chk-1's pointer names no bucket: {world.completed.external_pointer!r}")
    failures = []
    for pointer in pointers:
        for via, resolver in _resolvers(world):
            where = f"  {via}.resolve_checkpoint({pointer!r})"
            with ledger.record() as rec:
                try:
                    location = resolver.resolve_checkpoint(pointer)
                except POINTER_ERRORS as exc:
                    outcome = f"raised {type(exc).__name__}"
                except Exception as exc:
                    failures.append(f"{where}: raised {type(exc).__name__}: {show(str(exc), 160)}")
                    continue
                else:
                    outcome = f"resolved to {location.external_pointer!r}"
                    failures.append(
                        f"{where}: {outcome}, but '{pointer.split('/')[2]}' is no bucket"
                    )
            if len(rec):
                failures.append(f"{where}: {outcome} after sending {rec.summary(5)}")
    assert not failures, report(
        "BAD-4", "pointers with '.' or '..' as their bucket", failures, 2 * len(pointers)
    )


@pytest.mark.clause("BAD-4")
@capped(30)
@given(start=st.sampled_from(["chk-1", "chk-2", "chk-1 metadata"]), suffix=pointer_suffixes())
def test_hostile_pointer_sample(world, start, suffix):
    """BAD-4: pointers built from '.', '..', empty, encoded and odd segments (hypothesis)."""
    located = world.known_locations()
    if located is None or start not in located:
        pytest.skip("the target's checkpoints do not lie below the test's root")
    known = {normalised(segs): name.split(" ")[0] for name, segs in located.items()}
    segments = (*located[start], *suffix)
    case = PointerCase(segments, expectation(segments, known), f"{start} + {list(suffix)!r}")
    check = PointerCheck(case.pointer(world.sandbox.root), case.why, case.expect)
    failures = [
        line
        for via, resolver in _resolvers(world)
        if (line := _check_pointer(world, resolver, via, check)) is not None
    ]
    assert not failures, report("BAD-4", "hostile-pointer sample", failures, 2)


@pytest.mark.clause("BAD-4")
def test_hostile_references(world):
    """BAD-4: references whose bytes are no usable path get typed errors (or are ignored);
    a one-byte reference, shorter than the magic number, can be made."""
    failures = []
    references = hostile_reference_bytes()
    for label, data in references:
        try:
            reference = CheckpointStorageLocationReference(data)
        except Exception as exc:
            failures.append(
                f"  CheckpointStorageLocationReference(<{label}>): raised "
                f"{type(exc).__name__}: {show(str(exc), 160)} (Flink's takes any non-empty array)"
            )
            continue
        try:
            world.access.resolve_checkpoint_storage_location(3, reference)
        except POINTER_ERRORS:
            continue
        except Exception as exc:
            failures.append(
                f"  resolve_checkpoint_storage_location(3, <{label}>): raised "
                f"{type(exc).__name__}: {show(str(exc), 160)}"
            )
    assert not failures, report("BAD-4", "hostile references", failures, len(references))


def _finalize(location: Any) -> Any:
    stream = location.create_metadata_output_stream()
    try:
        stream.write(b"savepoint")
        return stream.close_and_finalize_checkpoint()
    finally:
        stream.close()


@pytest.mark.clause("BAD-5")
@pytest.mark.requires("savepoints")
def test_hostile_savepoint_targets(world):
    """BAD-5: bad savepoint targets are refused; targets with '..' are normalised."""
    sandbox, access = world.sandbox, world.access
    failures = []
    for template in BAD_SAVEPOINT_TARGETS:
        target_dir = template.replace("{root}", sandbox.root)
        call = f"  initialize_location_for_savepoint(1, {show(target_dir, 100)})"
        try:
            location = access.initialize_location_for_savepoint(1, target_dir)
            completed = _finalize(location)
        except POINTER_ERRORS:
            continue
        except Exception as exc:
            failures.append(f"{call}: raised {type(exc).__name__}: {show(str(exc), 160)}")
            continue
        failures.append(f"{call}: finalized a savepoint at {completed.external_pointer!r}")
    for segments, norm, absent, why in traversal_targets():
        target_dir = "/".join([sandbox.root, *segments])
        call = f"  initialize_location_for_savepoint(1, {target_dir!r}) [{why}]"
        with tagged("BAD-5", "savepoint at a target with '.' or '..'", target=target_dir):
            try:
                completed = _finalize(access.initialize_location_for_savepoint(1, target_dir))
            except POINTER_ERRORS:
                continue  # refusing a target with '..' is allowed
        pointer = completed.external_pointer
        holder = parent(pointer)
        if dot_segments(pointer):
            failures.append(f"{call}: external_pointer {pointer!r} keeps {dot_segments(pointer)}")
        elif not same_location(sandbox, holder, "/".join([sandbox.root, *norm])):
            failures.append(f"{call}: savepoint at {pointer!r}, not below {'/'.join(norm)}")
        for name in absent:
            if sandbox.exists(join(sandbox.root, name)):
                failures.append(f"{call}: created {name!r}, a directory the target only passes")
    total = len(BAD_SAVEPOINT_TARGETS) + len(traversal_targets())
    assert not failures, report("BAD-5", "hostile savepoint targets", failures, total, "targets")


# --------------------------------------------------------------------------- BAD-6: nothing changes


def snapshot(sandbox: Any, cwd: Path | None = None) -> dict[str, str]:
    """Every file (size and SHA-256) and directory below the root and ``cwd``, read raw."""
    raw = sandbox.backend.raw
    base = sandbox.raw_path(sandbox.root)
    tree: dict[str, str] = {}
    try:
        found = raw.find(base, withdirs=True, detail=True)
    except FileNotFoundError:
        found = {}
    for path, info in found.items():
        if info.get("type") == "directory":
            tree[str(path).rstrip("/")] = "directory"
        else:
            data = bytes(raw.cat_file(path))
            tree[str(path)] = f"{len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()[:16]}"
    if cwd is not None:
        for dirpath, dirnames, filenames in os.walk(cwd):
            for name in dirnames:
                tree[f"cwd:{os.path.join(dirpath, name)}"] = "directory"
            for name in filenames:
                data = Path(dirpath, name).read_bytes()
                tree[f"cwd:{os.path.join(dirpath, name)}"] = (
                    f"{len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()[:16]}"
                )
    return tree


def diff(before: dict[str, str], after: dict[str, str]) -> str:
    lost = sorted(set(before) - set(after))
    left = sorted(set(after) - set(before))
    changed = sorted(k for k in before.keys() & after.keys() if before[k] != after[k])
    parts = []
    for label, paths in (("lost", lost), ("left behind", left), ("changed", changed)):
        if paths:
            parts.append(f"{label}: " + ", ".join(paths[:20]))
    return "; ".join(parts)


def _ignore(call: Callable[[], Any]) -> None:
    # which errors are raised is BAD-1's and BAD-4's business; here only the data counts
    with contextlib.suppress(Exception):
        call()


def _round_trip(world: World) -> None:
    """The same storage, access, open location and factory still do a checkpoint's work."""
    drv, sandbox = world.driver, world.sandbox
    blobs = {
        "exclusive": payload(3000, 21),
        "shared": payload(3000, 22),
        "owned": payload(3000, 23),
    }
    with tagged("BAD-6", "write state through location 3's factory after bad input", sandbox):
        exclusive = drv.write(world.factory, blobs["exclusive"], EXCLUSIVE)
        shared = drv.write(world.factory, blobs["shared"], SHARED)
        owned = drv.task_owned(blobs["owned"])
    with tagged("BAD-6", "finalize location 3 after bad input", sandbox):
        completed = drv.finalize(world.location, b"after bad input")
    for via, storage in (("storage", world.storage), ("fresh storage", drv.fresh_storage())):
        with tagged("BAD-6", "resolve and read checkpoint 3", sandbox, via=via):
            resolved = storage.resolve_checkpoint(completed.external_pointer)
            read = {
                "metadata": read_handle(resolved.metadata_handle),
                "exclusive": read_handle(resolved.resolve_handle(exclusive)),
                "shared": read_handle(resolved.resolve_handle(shared)),
                "owned": read_handle(owned),
            }
        expected = {**blobs, "metadata": b"after bad input"}
        assert read == expected, fail_message(
            "BAD-6", "round trip after bad input", sandbox, via=via
        )
    with tagged("BAD-6", "a new checkpoint after bad input", sandbox):
        fourth, written = drv.checkpoint(4, exclusive=[payload(2000, 24)], metadata=b"chk-4")
        resolved = world.storage.resolve_checkpoint(fourth.external_pointer)
        assert read_handle(resolved.resolve_handle(written[0][0])) == payload(2000, 24)
        resolved.dispose_storage_location()
        completed.dispose_storage_location()


@pytest.mark.clause("BAD-6")
def test_bad_input_changes_nothing(world):
    """BAD-6: after the corpus the backend holds the same bytes, and the storage still works."""
    sandbox = world.sandbox
    before = snapshot(sandbox, world.cwd)
    cases = fixed_cases(world, world.target.capabilities, MUST_REFUSE)
    for bad in cases:
        _ignore(lambda b=bad: b.operation.call(world, b.value))
    checks = _pointer_checks(world)
    for check in checks:
        for _, resolver in _resolvers(world):
            _ignore(lambda r=resolver, c=check: r.resolve_checkpoint(c.pointer))
    for _, reference in hostile_references():
        _ignore(lambda r=reference: world.access.resolve_checkpoint_storage_location(3, r))
    after = snapshot(sandbox, world.cwd)
    assert after == before, (
        fail_message(
            "BAD-6",
            "bad-input corpus",
            sandbox,
            calls=len(cases) + 2 * len(checks) + len(hostile_references()),
        )
        + f"\n{diff(before, after)}"
    )
    _round_trip(world)


# --------------------------------------------------------------------------- BAD-7: disposal


def _victims(sandbox: Any, drv: JobDriver) -> dict[str, bytes]:
    """Someone else's files next to the checkpoints, written raw."""
    files = {
        join(sandbox.root, "victim", "thesis.tex"): b"someone else's thesis",
        join(sandbox.root, "victim", "_metadata"): b"not a checkpoint's metadata",
        join(sandbox.root, "victim", "data.csv"): b"a,b\n1,2\n",
        join(drv.job_dir, "notes.txt"): b"notes next to the checkpoints",
        join(sandbox.checkpoint_dir, "readme.txt"): b"a readme in the base directory",
    }
    for url, data in files.items():
        put_file(sandbox, url, data)
    return files


#: Directories a disposal may delete (the file-layout names of checkpoints and savepoints).
_DISPOSABLE = re.compile(r"^(chk-\d+|savepoint-[0-9a-f]{6}-[0-9a-f]+)$")


def _damage_outside_checkpoints(sandbox: Any, before: dict[str, str], after: dict[str, str]) -> str:
    """What existed before and is lost or changed, outside chk-<n> and savepoint directories."""
    root = sandbox.raw_path(sandbox.root).rstrip("/")
    damaged = []
    for path, entry in sorted(before.items()):
        if after.get(path) == entry:
            continue
        segments = path[len(root) + 1 :].split("/") if path.startswith(root + "/") else []
        if not any(_DISPOSABLE.match(segment) for segment in segments):
            damaged.append(f"{path} ({'changed' if path in after else 'lost'})")
    return ", ".join(damaged[:20])


@pytest.mark.clause("BAD-7")
def test_disposal_deletes_only_checkpoint_directories(sandbox, target):
    """BAD-7 (SHOULD): disposing what a non-checkpoint pointer resolved to deletes nothing."""
    drv = JobDriver(sandbox, **file_options(target))
    drv.init_base()
    completed, written = drv.checkpoint(
        1, exclusive=[payload(3000, 31)], shared=[payload(3000, 32)], metadata=b"chk-1"
    )
    owned = drv.task_owned(payload(3000, 33))
    _victims(sandbox, drv)
    victim = join(sandbox.root, "victim")
    pointers = [
        ("a directory with a _metadata file, not named chk-<n> or savepoint-...", victim),
        ("that directory's _metadata", join(victim, "_metadata")),
        ("another file in that directory", join(victim, "thesis.tex")),
        ("'..' from a checkpoint into that directory",
         join(completed.external_pointer, "..", "..", "..", "victim", "data.csv")),
        ("a file in the job directory", join(drv.job_dir, "notes.txt")),
        ("a file in the checkpoint base directory", join(sandbox.checkpoint_dir, "readme.txt")),
        ("the job directory", drv.job_dir),
        ("the checkpoint base directory", sandbox.checkpoint_dir),
        ("a shared state file", file_path(written[1][0])),
        ("a task-owned state file", file_path(owned)),
    ]  # fmt: skip
    failures = []
    for label, pointer in pointers:
        if pointer is None:
            continue  # inline state names no file
        before = snapshot(sandbox)
        try:
            location = drv.fresh_storage().resolve_checkpoint(pointer)
        except Exception:
            continue  # refusing the pointer deletes nothing (errors are BAD-4's)
        with contextlib.suppress(Exception):  # refusing the disposal is the other way to pass
            location.dispose_storage_location()
        damaged = _damage_outside_checkpoints(sandbox, before, snapshot(sandbox))
        if damaged:
            failures.append(f"  dispose_storage_location of {pointer} [{label}]: {damaged}")
    if "savepoints" in target.capabilities:
        before = snapshot(sandbox)
        with tagged("BAD-7", "a savepoint below an existing directory", sandbox, target=victim):
            location = drv.access.initialize_location_for_savepoint(7, victim)
            factory = drv.worker(7, location.location_reference)
            drv.write(factory, payload(3000, 34))
        with contextlib.suppress(Exception):
            location.dispose_on_failure()
        damaged = _damage_outside_checkpoints(sandbox, before, snapshot(sandbox))
        if damaged:
            failures.append(f"  dispose_on_failure of a savepoint below {victim}: {damaged}")
    assert not failures, report(
        "BAD-7", "disposal of hostile locations", failures, len(pointers), "pointers"
    )


# --------------------------------------------------------------------------- BAD-14: pointers


@pytest.mark.clause("BAD-14")
def test_refused_pointers_carry_an_agreeing_errno(world):
    """BAD-14: every OSError that resolve_checkpoint raises for the fixed hostile pointers
    (and for a checkpoint directory that does not exist) carries an errno Python's OSError
    maps to its class."""
    pointers = [check.pointer for check in _pointer_checks(world)]
    pointers.append(join(world.sandbox.root, "no-such-checkpoint", "chk-1"))
    findings = []
    for pointer in pointers:
        for via, resolver in _resolvers(world):
            try:
                resolver.resolve_checkpoint(pointer)
            except OSError as exc:
                if (why := errno_disagreement(exc)) is not None:
                    findings.append(f"  {via}.resolve_checkpoint({show(pointer, 120)}): {why}: "
                                    f"{type(exc).__name__}: {show(str(exc), 160)}")  # fmt: skip
            except Exception:
                continue  # other refusals are BAD-4's
    assert not findings, report(
        "BAD-14", "OSErrors of refused pointers", findings, 2 * len(pointers)
    )
