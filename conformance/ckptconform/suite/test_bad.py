"""BAD: bad arguments, hostile pointers, confined disposal and redacted secrets.

Every public method of the contract gets bad arguments from the corpus of ``_bad_inputs``
(a fixed corpus plus a small hypothesis sample) with every other argument valid; the clauses
name the built-in errors (TypeError, ValueError, OSError; subclasses accepted) and nothing else
may escape. Hostile pointers are built below the test's root from a job's two checkpoints, so
the suite knows what each one may resolve to. What must stay is compared on the backend itself:
a raw listing of the test's root (and of the working directory, where relative paths land) with
every file's size and SHA-256, before and after.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import math
import os
import re
import secrets
import string
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ckptconform.backends.base import random_name
from ckptconform.sandbox import UNCONDITIONAL_METADATA
from ckptconform.suite._bad_inputs import (
    BAD_SAVEPOINT_TARGETS,
    ESCAPES,
    FREE_POINTERS,
    MUST_REFUSE,
    NEGATIVE,
    NONE,
    NULL_OK,
    OPERATIONS,
    RANGE,
    TYPE,
    Bad,
    PointerCase,
    bad_values,
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
    relative_segments,
    show,
    traversal_targets,
)
from ckptconform.suite._driver import (
    DEFAULT_REF,
    EXCLUSIVE,
    S3_ENDPOINT_VARIABLE,
    SHARED,
    JobDriver,
    closed_port,
    endpointless_options,
    expect_error,
    fail_message,
    file_options,
    file_path,
    join,
    parent,
    payload,
    put_file,
    read_handle,
    require,
    same_location,
    tagged,
    unconditional_route,
    within,
    write_state,
)
from ckptconform.suite._strategies import capped
from ckptstore.api import CheckpointStorageLocationReference, JobID

#: Errors the contract names for bad arguments, and for pointers (which may also be I/O).
ARGUMENT_ERRORS = (TypeError, ValueError)
POINTER_ERRORS = (TypeError, ValueError, OSError)


# --------------------------------------------------------------------------- the world


class World:
    """What the corpus calls need, built through the contract on one sandbox.

    A job with two completed checkpoints (1 and 2, with exclusive and shared state), an open
    checkpoint location 3 with its worker factory, the task-owned toolset, and a savepoint
    target below the root that must never be created by a refused call.
    """

    def __init__(self, sandbox: Any, target: Any, cwd: Path) -> None:
        self.sandbox = sandbox
        self.target = target
        self.cwd = cwd
        self.driver = drv = JobDriver(sandbox, **file_options(target))
        drv.init_base()
        self.completed, written = drv.checkpoint(
            1, exclusive=[payload(3000, 11)], shared=[payload(3000, 12)], metadata=b"bad chk-1"
        )
        self.second, _ = drv.checkpoint(2, exclusive=[payload(3000, 13)], metadata=b"bad chk-2")
        self.metadata = {"chk-1": b"bad chk-1", "chk-2": b"bad chk-2"}
        self.handle, self.shared_handle = written[0][0], written[1][0]
        self.storage = drv.storage
        self.access = drv.access
        self.location = drv.location(3)
        self.factory = drv.worker(3, self.location.location_reference)
        self.toolset = drv.access.create_task_owned_checkpoint_state_toolset()
        self.savepoint_target = join(sandbox.root, "savepoint-target")

    def by_name(self, name: str) -> Any:
        return {"chk-1": self.completed, "chk-2": self.second}[name]

    def known_locations(self) -> dict[str, tuple[str, ...]] | None:
        """Segments below the root of each checkpoint's directory and metadata file, by name."""
        found: dict[str, tuple[str, ...]] = {}
        for name, completed in (("chk-1", self.completed), ("chk-2", self.second)):
            directory = relative_segments(self.sandbox, completed.external_pointer)
            if directory is None:
                return None
            found[name] = directory
            metadata = relative_segments(self.sandbox, file_path(completed.metadata_handle))
            if metadata is not None:
                found[f"{name} metadata"] = metadata
        return found


@pytest.fixture
def world(sandbox: Any, target: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    """A World; relative paths land in an empty working directory that the tests watch."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return World(sandbox, target, cwd)


# --------------------------------------------------------------------------- outcomes


@dataclass
class Outcome:
    """What one bad call did: the error it raised, or what it returned."""

    bad: Bad
    error: BaseException | None = None
    result: Any = None

    def refused(self, *errors: type[BaseException]) -> bool:
        """Raised one of ``errors`` (or answered what the operation may answer instead)."""
        if self.error is None:
            may_return = self.bad.operation.may_return
            return may_return is not None and may_return(self.result)
        return isinstance(self.error, errors)

    def got(self) -> str:
        if self.error is None:
            return f"returned {show(self.result, 80)}"
        return f"raised {type(self.error).__name__}: {show(str(self.error), 160)}"

    def line(self) -> str:
        return f"  {self.bad.describe()}: {self.got()}"


def attempt(bad: Bad, world: World) -> Outcome:
    try:
        result = bad.operation.call(world, bad.value)
    except Exception as exc:  # the point: which exception escapes
        return Outcome(bad, error=exc)
    return Outcome(bad, result=result)


def corpus(world: World, kinds: Iterable[str]) -> list[Outcome]:
    cases = fixed_cases(world, world.target.capabilities, tuple(kinds))
    return [attempt(bad, world) for bad in cases]


def report(
    clause: str, what: str, failures: list[str], total: int, unit: str = "call(s)", **inputs: Any
) -> str:
    shown = failures[:40]
    more = f"\n  ... and {len(failures) - len(shown)} more" if len(failures) > len(shown) else ""
    return (
        fail_message(clause, what, **inputs)
        + f"\n{len(failures)} finding(s) in {total} {unit}:\n"
        + "\n".join(shown)
        + more
    )


# --------------------------------------------------------------------------- BAD-1..3: arguments


@pytest.mark.clause("BAD-1")
def test_bad_arguments_raise_typed_errors(world):
    """BAD-1: every bad argument of the fixed corpus raises TypeError or ValueError."""
    outcomes = corpus(world, MUST_REFUSE)
    failures = [o.line() for o in outcomes if not o.refused(*ARGUMENT_ERRORS)]
    assert not failures, report(
        "BAD-1", "bad-argument corpus", failures, len(outcomes), expected="TypeError or ValueError"
    )


@pytest.mark.clause("BAD-2")
def test_none_and_out_of_range_ids(world):
    """BAD-2: None raises TypeError; ids outside their range raise ValueError."""
    outcomes = corpus(world, (NONE, RANGE))
    failures = [
        o.line() + f" (expected {'TypeError' if o.bad.kind == NONE else 'ValueError'})"
        for o in outcomes
        if not o.refused(TypeError if o.bad.kind == NONE else ValueError)
    ]
    assert not failures, report("BAD-2", "None and out-of-range corpus", failures, len(outcomes))


#: BAD-3: the error each stricter-than-Flink kind should raise.
STRICT = {TYPE: TypeError, NEGATIVE: ValueError, NULL_OK: TypeError}


@pytest.mark.clause("BAD-3")
def test_stricter_than_flink(world):
    """BAD-3 (SHOULD): wrong types raise TypeError; negative ids and None scopes are refused."""
    outcomes = corpus(world, tuple(STRICT))
    failures = [
        o.line() + f" (expected {STRICT[o.bad.kind].__name__})"
        for o in outcomes
        if not o.refused(STRICT[o.bad.kind])
    ]
    assert not failures, report("BAD-3", "stricter-than-Flink corpus", failures, len(outcomes))


#: BAD-12: the words by which an error may name each argument of the corpus (the contract's
#: parameter name first), compared without case, spaces and underscores.
ARGUMENT_NAMES: dict[str, tuple[str, ...]] = {
    "job_id": ("job_id",),
    "pointer": ("external_pointer", "pointer"),
    "checkpoint_id": ("checkpoint_id",),
    "target": ("external_location_pointer", "target", "pointer"),
    "reference": ("reference",),
    "scope": ("scope",),
    "handle": ("handle",),
    "handles": ("handles", "handle"),
    "data": ("data",),
}


def _argument_names(outcome: Outcome) -> tuple[str, ...]:
    """How the error of ``outcome`` may name the argument its operation varies (the one of
    the operation's parameters that is a name, not a fixed value)."""
    name = outcome.bad.operation.name
    inside = name[name.rindex("(") + 1 : -1]
    return next(
        ARGUMENT_NAMES[part.strip()] for part in inside.split(",") if part.strip() in ARGUMENT_NAMES
    )


def _squeezed(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _names_its_argument(outcome: Outcome) -> bool:
    message = _squeezed(str(outcome.error))
    return any(_squeezed(name) in message for name in _argument_names(outcome))


@pytest.mark.clause("BAD-12")
def test_errors_name_the_bad_argument(world):
    """BAD-12 (SHOULD): each error of the fixed corpus names the argument that was bad."""
    outcomes = [o for o in corpus(world, MUST_REFUSE) if o.error is not None]
    failures = [
        o.line() + f" (expected a message naming {' or '.join(_argument_names(o))})"
        for o in outcomes
        if not _names_its_argument(o)
    ]
    assert not failures, report("BAD-12", "bad-argument corpus", failures, len(outcomes))


def _operations_for(target: Any) -> list[Any]:
    return [
        op for op in OPERATIONS if op.capability is None or op.capability in target.capabilities
    ]


@pytest.mark.clause("BAD-1")
@capped(40)
@given(data=st.data())
def test_bad_arguments_sample(world, data):
    """BAD-1: a hypothesis sample of bad arguments raises TypeError or ValueError."""
    operation = data.draw(st.sampled_from(_operations_for(world.target)), label="operation")
    value = data.draw(
        bad_values().filter(lambda v: operation.classify(v) in MUST_REFUSE), label="value"
    )
    bad = Bad(operation, value, str(operation.classify(value)), show(value))
    outcome = attempt(bad, world)
    assert outcome.refused(*ARGUMENT_ERRORS), report(
        "BAD-1", "bad-argument sample", [outcome.line()], 1, expected="TypeError or ValueError"
    )


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


# --------------------------------------------------------------------------- BAD-8: secrets


def _chain(error: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and all(current is not e for e in seen):
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


class SecretWatch:
    """Collects the text the implementation shows (reprs, strs, error messages) per step."""

    def __init__(self, secrets: Iterable[str]) -> None:
        self.secrets = [s for s in secrets if s]
        self.leaks: list[str] = []
        self.steps = 0

    def text(self, step: str, what: str, text: str) -> None:
        found = [s for s in self.secrets if s in text]
        if found:
            self.leaks.append(f"  {step}: {what} shows {found}: {show(text, 240)}")

    def obj(self, step: str, value: Any) -> None:
        for what, render in (("repr", repr), ("str", str)):
            try:
                text = render(value)
            except Exception as exc:
                self.leaks.append(f"  {step}: {what}() of {type(value).__name__} raised "
                                  f"{type(exc).__name__} instead of returning text")  # fmt: skip
                self.error(f"{step} ({what})", exc)
                continue
            self.text(step, f"{what}() of {type(value).__name__}", text)

    def error(self, step: str, error: BaseException) -> None:
        for link in _chain(error):
            self.text(step, f"error {type(link).__name__}", f"{link!s} {link!r}")

    def run(self, step: str, call: Callable[[], Any]) -> Any:
        """Call, and watch what comes back or what is raised (errors are allowed here)."""
        self.steps += 1
        try:
            result = call()
        except Exception as exc:
            self.error(step, exc)
            return None
        if result is not None:
            self.obj(step, result)
        return result


def _exercise(watch: SecretWatch, sandbox: Any, target: Any, storage: Any, reachable: bool) -> None:
    """Every kind of object and error of the contract, with the watch on."""
    watch.obj("the storage", storage)
    access = watch.run(
        "create_checkpoint_storage", lambda: storage.create_checkpoint_storage(JobID.generate())
    )
    if access is None:
        return
    watch.run(
        "initialize_base_locations_for_checkpoint", access.initialize_base_locations_for_checkpoint
    )
    location = watch.run(
        "initialize_location_for_checkpoint", lambda: access.initialize_location_for_checkpoint(1)
    )
    factory = watch.run(
        "resolve_checkpoint_storage_location",
        lambda: access.resolve_checkpoint_storage_location(1, DEFAULT_REF),
    )
    handles = []
    for scope_name, make in (
        ("exclusive", lambda: factory.create_checkpoint_state_output_stream(EXCLUSIVE)),
        ("shared", lambda: factory.create_checkpoint_state_output_stream(SHARED)),
        ("task-owned", access.create_task_owned_state_stream),
    ):
        if scope_name != "task-owned" and factory is None:
            continue
        for size in (10, 3000):
            stream = watch.run(f"a {scope_name} stream", make)
            if stream is None:
                continue
            watch.run(
                f"{scope_name} write({size} bytes)", lambda s=stream, n=size: s.write(payload(n))
            )
            handle = watch.run(f"{scope_name} close_and_get_handle", stream.close_and_get_handle)
            watch.run(f"{scope_name} close", stream.close)
            if handle is not None:
                handles.append(handle)
    watch.run("the task-owned toolset", access.create_task_owned_checkpoint_state_toolset)
    completed = None
    if location is not None:
        metadata = watch.run(
            "create_metadata_output_stream", location.create_metadata_output_stream
        )
        if metadata is not None:
            watch.run("metadata write", lambda: metadata.write(b"secret-free metadata"))
            completed = watch.run(
                "close_and_finalize_checkpoint", metadata.close_and_finalize_checkpoint
            )
            watch.run("metadata close", metadata.close)
    if completed is not None:
        watch.obj("metadata_handle", completed.metadata_handle)
        resolved = watch.run(
            "resolve_checkpoint", lambda: storage.resolve_checkpoint(completed.external_pointer)
        )
        for handle in handles:
            if resolved is not None:
                watch.run("resolve_handle", lambda h=handle: resolved.resolve_handle(h))
            watch.run("read a handle", lambda h=handle: read_handle(h))
    watch.run(
        "resolve_checkpoint of a missing checkpoint",
        lambda: storage.resolve_checkpoint(join(sandbox.checkpoint_dir, "missing", "chk-1")),
    )
    if "savepoints" in target.capabilities:
        watch.run(
            "initialize_location_for_savepoint",
            lambda: access.initialize_location_for_savepoint(2, join(sandbox.root, "sp-secret")),
        )
    if completed is not None and reachable:
        watch.run("dispose_storage_location", completed.dispose_storage_location)


class _Collected(logging.Handler):
    """Keeps every record it is handed."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextlib.contextmanager
def own_log_records(*owners: Any) -> Iterator[list[logging.LogRecord]]:
    """The records, at every level, of the loggers named under the top-level packages of
    ``owners``' classes (the target's and the storage's: the implementation's own loggers,
    not its client libraries')."""
    packages = dict.fromkeys(type(owner).__module__.split(".")[0] for owner in owners)
    collected = _Collected()
    loggers = [logging.getLogger(package) for package in packages]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.addHandler(collected)
        logger.setLevel(logging.DEBUG)
    try:
        yield collected.records
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.removeHandler(collected)
            logger.setLevel(level)


def _watch_records(watch: SecretWatch, records: list[logging.LogRecord]) -> None:
    for record in records:
        try:
            text = record.getMessage()
        except Exception:  # a broken format string: its parts are still shown by logging
            text = f"{record.msg} {record.args}"
        watch.text(f"log record of {record.name}", f"a {record.levelname} record", text)


#: How long the unreachable phase may take before its remaining steps are abandoned (bounding
#: the time of requests is SPK-6's and the REQ clauses' business, not this clause's).
UNREACHABLE_PHASE_SECONDS = 20.0


@pytest.mark.clause("BAD-8")
@pytest.mark.backend_traits(object_store=True)
def test_no_secret_is_shown(sandbox, target, backend):
    """BAD-8: reprs and error messages never show the configuration's secrets."""
    # an apostrophe may stand unencoded in userinfo (RFC 3986 sub-delims): patterns that
    # look for userinfo stop there, only the value itself finds the rest
    password = f"ckptconform-pass'word-{random_name(12)}"
    proxy_password = f"ckptconform-proxy-{random_name(12)}"
    secret = f"ckptconform-secret-{random_name(12)}"
    token = f"ckptconform-token-{random_name(12)}"
    query_token = f"ckptconform-query-token-{random_name(12)}"
    query_sig = f"ckptconform-query-sig-{random_name(12)}"
    # four characters, the shortest secret a redaction by value must still find
    short_password = f"{secrets.choice(string.digits)}'{random_name(2)}"
    # a password that holds another secret (the session token) and sorts before it: blanking
    # the token first would leave the rest of the password, this tail, in the text
    overlap_tail = f"-ckptconform-tail-{random_name(12)}"
    overlapping = f"{secrets.choice(string.digits)}'{token}{overlap_tail}"
    watch = SecretWatch(
        [password, proxy_password, secret, token, query_token, query_sig, short_password,
         overlapping, overlap_tail]
    )  # fmt: skip
    endpoint = f"127.0.0.1:{closed_port()}"
    proxy = f"http://ckptconform:{proxy_password}@127.0.0.1:{closed_port()}"
    base = dict(backend.storage_options)
    with_secrets = {
        **base,
        "key": f"ckptconform-key-{random_name(8)}",
        "secret": secret,
        "client_kwargs": {**base.get("client_kwargs", {}), "aws_session_token": token},
    }
    options = dict(file_options(target))
    if "retry-budget" in target.capabilities:
        options.update(retry_attempts=1, retry_seconds=5)  # refused requests end quickly
    unreachable = {
        **with_secrets,
        "endpoint_url": f"http://ckptconform:{password}@{endpoint}",
        "config_kwargs": {
            **base.get("config_kwargs", {}),
            "proxies": {"http": proxy, "https": proxy},
        },
    }
    phases = {
        "secrets in storage_options": unreachable,
        # the shape of presigned and SAS URLs: secrets in the endpoint's query string
        "secrets in the endpoint's query": {
            **with_secrets,
            "endpoint_url": f"http://{endpoint}/?X-Amz-Security-Token={query_token}"
            f"&sig={query_sig}",
        },
        # unsigned requests reach the socket, and the client's error quotes the whole URL
        "unsigned requests to an endpoint with userinfo": {
            **with_secrets,
            "anon": True,
            "endpoint_url": f"http://ckptconform:{short_password}@{endpoint}",
        },
        "unsigned requests to an endpoint whose password holds the session token": {
            **with_secrets,
            "anon": True,
            "endpoint_url": f"http://ckptconform:{overlapping}@{endpoint}",
        },
    }
    notes = []
    for phase, storage_options in phases.items():
        with tagged("BAD-8", f"make_storage with {phase}", endpoint=endpoint):
            storage = sandbox.make_storage(storage_options=storage_options, **options)
        with own_log_records(target, storage) as records:
            if not within(
                UNREACHABLE_PHASE_SECONDS,
                lambda made=storage: _exercise(watch, sandbox, target, made, False),
            ):
                notes.append(f"(steps with {phase} abandoned after "
                             f"{UNREACHABLE_PHASE_SECONDS:g} s)")  # fmt: skip
            _watch_records(watch, records)
    leaks = list(watch.leaks)
    if backend.accepts_any_credentials:
        reachable = with_secrets
    else:  # the server's own secret, where the suite has one (a key id is not a secret)
        reachable = base
        watch.secrets += [str(base[k]) for k in ("secret", "token") if base.get(k)]
        watch.secrets = [s for s in watch.secrets if s != str(base.get("key"))]
    watch.leaks = []
    with tagged("BAD-8", "make_storage with secrets on the backend's endpoint"):
        storage = sandbox.make_storage(storage_options=reachable, **options)
    with own_log_records(target, storage) as records:
        _exercise(watch, sandbox, target, storage, reachable=True)
        _watch_records(watch, records)
    leaks += watch.leaks
    assert not leaks, report(
        "BAD-8", "reprs and errors with secrets configured", leaks + notes, watch.steps, "steps",
        endpoint=endpoint,
    )  # fmt: skip


#: storage_options keys whose values are a backend's own secrets (BAD-8 on every leg)
BACKEND_SECRET_KEYS = ("password", "secret", "token")


@pytest.mark.clause("BAD-8")
def test_reprs_are_text_without_the_backends_secret(sandbox, target, backend):
    """BAD-8: on every backend, with the backend's own settings, reprs and errors of the
    contract's objects are text and show none of the backend's secrets."""
    watch = SecretWatch(
        str(value)
        for key, value in backend.storage_options.items()
        if any(part in key.lower() for part in BACKEND_SECRET_KEYS) and value
    )
    with tagged("BAD-8", "make_storage with the backend's settings"):
        storage = sandbox.make_storage(**file_options(target))
    with own_log_records(target, storage) as records:
        _exercise(watch, sandbox, target, storage, reachable=True)
        _watch_records(watch, records)
    assert not watch.leaks, report(
        "BAD-8", "reprs and errors with the backend's settings", watch.leaks, watch.steps,
        "steps",
    )  # fmt: skip


def _watch_formatted_records(watch: SecretWatch, records: list[logging.LogRecord]) -> None:
    """Like :func:`_watch_records`, but a record whose getMessage() raises is a finding: the
    handler that formats it would print a traceback in its place."""
    for record in records:
        try:
            text = record.getMessage()
        except Exception as exc:
            watch.leaks.append(f"  log record of {record.name}: getMessage() of a "
                               f"{record.levelname} record raised {type(exc).__name__}: "
                               f"{show(str(exc), 120)}")  # fmt: skip
            continue
        watch.text(f"log record of {record.name}", f"a {record.levelname} record", text)


def _recover_lost_answer_and_unlisted_uploads(drv: JobDriver, ledger: Any) -> None:
    """REQ-4's fault (the first PutObject of _metadata committed, its answer lost) at the
    finalization of checkpoint 1, then REQ-11's (ListMultipartUploads answered 501) at its
    disposal; both are recovered from, so both calls must succeed."""
    with tagged("BAD-8", "finalize while the answer to _metadata's PutObject is lost"):
        drv.init_base()
        location = drv.location(1)
        ledger.inject(
            "PutObject", drop_connection=True, after_commit=True, times=1, key_contains="_metadata"
        )
        try:
            completed = drv.finalize(location, b"metadata of a lost answer")
        finally:
            ledger.clear_faults()
    with tagged("BAD-8", "dispose while ListMultipartUploads is answered 501"):
        ledger.inject("ListMultipartUploads", status=501, code="NotImplemented", times=None)
        try:
            completed.dispose_storage_location()
        finally:
            ledger.clear_faults()


def _finalize_where_conditional_writes_are_ignored(
    sandbox: Any, target: Any, backend: Any, storage_options: dict[str, Any]
) -> None:
    """A checkpoint finalized through a second route to the server, one that the storage has
    not used yet, which ignores conditional writes (what MD-3 asks a storage to notice)."""
    with (
        unconditional_route(backend) as route,
        tagged("BAD-8", "finalize where conditional writes are ignored"),
    ):
        routed = {**storage_options, "endpoint_url": route.url}
        drv = JobDriver(
            sandbox,
            storage_options=routed,
            **file_options(target),
            **{UNCONDITIONAL_METADATA: True},
        )
        drv.init_base()
        drv.finalize(drv.location(2), b"metadata where conditional writes are ignored")


@pytest.mark.clause("BAD-8")
@pytest.mark.backend_traits(object_store=True, any_credentials=True, ledger=True)
def test_no_secret_in_the_records_of_recovered_faults(sandbox, target, backend, ledger):
    """BAD-8: with a secret key and session token in the storage options, the records of the
    implementation's own loggers, at every level, while it recovers from a lost answer, an
    unimplemented ListMultipartUploads and a server that ignores conditional writes, are
    formatted without error and show neither secret."""
    secret = f"ckptconform-secret-{random_name(12)}"
    token = f"ckptconform-token-{random_name(12)}"
    watch = SecretWatch([secret, token])
    base = dict(backend.storage_options)
    with_secrets = {
        **base,
        "key": f"ckptconform-key-{random_name(8)}",
        "secret": secret,
        "client_kwargs": {**base.get("client_kwargs", {}), "aws_session_token": token},
    }
    with tagged("BAD-8", "make_storage with a secret key and session token"):
        drv = JobDriver(sandbox, storage_options=with_secrets, **file_options(target))
    with own_log_records(target, drv.storage) as records:
        _recover_lost_answer_and_unlisted_uploads(drv, ledger)
        _finalize_where_conditional_writes_are_ignored(sandbox, target, backend, with_secrets)
        _watch_formatted_records(watch, records)
    levels = sorted({record.levelname for record in records})
    assert not watch.leaks, report(
        "BAD-8", "log records while faults are recovered from, with secrets configured",
        watch.leaks, len(records), f"record(s) of the implementation's own loggers {levels}",
    )  # fmt: skip


# --------------------------------------------------------------------------- BAD-9: retry budgets

#: BAD-9's budgets: the option, its value and the errors it must raise.
BAD_BUDGETS: tuple[tuple[str, Any, tuple[type[Exception], ...]], ...] = (
    ("retry_attempts", 0, (ValueError,)),
    ("retry_attempts", -1, (ValueError,)),
    ("retry_seconds", 0, (ValueError,)),
    ("retry_seconds", -1, (ValueError,)),
    ("retry_seconds", math.nan, (ValueError,)),
    ("retry_seconds", math.inf, (ValueError,)),
    ("retry_attempts", True, ARGUMENT_ERRORS),
    ("retry_attempts", 2.5, ARGUMENT_ERRORS),
    ("retry_attempts", "3", ARGUMENT_ERRORS),
    ("retry_seconds", True, ARGUMENT_ERRORS),
    ("retry_seconds", "5", ARGUMENT_ERRORS),
)


@pytest.mark.clause("BAD-9")
@pytest.mark.parametrize(
    ("option", "value", "errors"), BAD_BUDGETS, ids=[f"{o}={v!r}" for o, v, _ in BAD_BUDGETS]
)
def test_invalid_retry_budgets_are_refused(sandbox, target, option, value, errors):
    """BAD-9: a retry budget out of range or of the wrong type is refused by first use."""

    def use() -> Any:
        drv = JobDriver(sandbox, **{option: value}, **file_options(target))
        drv.init_base()
        return drv.write(drv.location(1), payload(3000))

    expect_error(
        errors, "BAD-9", "make_storage, the access and a first stream", use, sandbox,
        **{option: value},
    )  # fmt: skip


#: BAD-9's valid budget, accepted on every backend
VALID_BUDGET = {"retry_attempts": 2, "retry_seconds": 30}


@pytest.mark.clause("BAD-9")
def test_valid_retry_budget_is_accepted(sandbox, target):
    """BAD-9: a valid retry budget (retry_attempts 2, retry_seconds 30) is accepted on every
    backend: with it, 3000 bytes of state in a file read back and a checkpoint finalizes."""
    data, metadata = payload(3000, seed=9), b"metadata with a retry budget"
    with tagged("BAD-9", "state and a checkpoint with a valid retry budget", sandbox,
                **VALID_BUDGET):  # fmt: skip
        drv = JobDriver(sandbox, **VALID_BUDGET, **file_options(target))
        drv.init_base()
        location = drv.location(1)
        handle = drv.write(drv.worker(1, location.location_reference), data)
        assert read_handle(handle) == data, "the state read back other bytes"
        completed = drv.finalize(location, metadata)
        assert read_handle(completed.metadata_handle) == metadata, "_metadata reads other bytes"


# --------------------------------------------------------------------------- BAD-10, BAD-11

#: BAD-10's bound on each step through an endpoint that refuses connections (SPK-6's).
UNREACHABLE_STEP_SECONDS = 15.0
#: BAD-10's large state on object stores, and the part size (default_block_size) it gets
LARGE_STATE_BYTES = 12 * 1024 * 1024
LARGE_PART_BYTES = 5 * 1024 * 1024


@dataclass
class Step:
    """One call through an unreachable endpoint: what it returned or raised, and how long."""

    name: str
    seconds: float
    finished: bool
    must_fail: bool
    result: Any = None
    error: BaseException | None = None

    @property
    def ok(self) -> bool:
        return self.finished and self.error is None

    def said(self) -> str:
        return f"{type(self.error).__name__}: {show(str(self.error), 240)}"


class StoreRun:
    """Steps against a store that cannot serve them, each timed and bounded.

    The store is an endpoint that refuses connections (BAD-10, BAD-11) or a server that
    answers every request with an error (BAD-13). Each step either returns or raises; the
    tests judge the record: whether the failures are OSErrors naming the endpoint in time and
    whether the steps that need the store failed, and whether they are ConnectionErrors.
    """

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.steps: list[Step] = []

    def step(self, name: str, call: Callable[[], Any], *, must_fail: bool = False) -> Step:
        box: dict[str, Any] = {}

        def work() -> None:
            try:
                box["result"] = call()
            except Exception as exc:
                box["error"] = exc

        started = time.monotonic()
        finished = within(UNREACHABLE_STEP_SECONDS, work, "ckptconform-unreachable")
        seconds = time.monotonic() - started
        done = Step(name, seconds, finished, must_fail, box.get("result"), box.get("error"))
        self.steps.append(done)
        return done

    def untyped_or_unnamed(self) -> list[str]:
        """Steps that hung, returned where they must fail, or failed untyped, unnamed or late."""
        found = []
        for step in self.steps:
            if not step.finished:
                found.append(f"  {step.name}: still running after {step.seconds:.0f} s")
            elif step.error is None:
                if step.must_fail:
                    found.append(
                        f"  {step.name}: returned {show(step.result)}, although the store "
                        "served none of its requests"
                    )
            elif not isinstance(step.error, OSError):
                found.append(f"  {step.name}: not an OSError: {step.said()}")
            elif (unnamed := self.unnamed(str(step.error))) is not None:
                found.append(f"  {step.name}: {unnamed}: " + step.said())
            elif step.seconds > UNREACHABLE_STEP_SECONDS:
                found.append(f"  {step.name}: failed only after {step.seconds:.1f} s")
        return found

    def unnamed(self, message: str) -> str | None:
        """Why ``message`` does not name the endpoint (None: it does). A bracketed IPv6 host
        must be named with its brackets wherever its port is: a bare '::1:<port>' reads as
        another IPv6 address."""
        if self.endpoint not in message:
            return f"the message does not name the endpoint {self.endpoint}"
        host, _, port = self.endpoint.rpartition(":")
        if not host.startswith("["):
            return None
        for found in re.finditer(rf":{re.escape(port)}(?!\d)", message):
            if not message[: found.start()].endswith(host):
                spelt = message[max(0, found.start() - 24) : found.end()]
                return f"the message names port {port} as {spelt!r}, not as {self.endpoint}"
        return None

    def not_connection_errors(self) -> list[str]:
        """Steps that failed with an OSError that is no ConnectionError."""
        return [
            f"  {step.name}: an OSError, not a ConnectionError: {step.said()}"
            for step in self.steps
            if isinstance(step.error, OSError) and not isinstance(step.error, ConnectionError)
        ]


#: How BAD-10's endpoint is given: the backend's own way at 127.0.0.1 (an object store's
#: endpoint_url, an SFTP server's port), an object store's endpoint_url at [::1], or only
#: botocore's AWS_ENDPOINT_URL_S3 (storage_options that name no endpoint)
REFUSING_ROUTES = ("127.0.0.1", "ipv6", S3_ENDPOINT_VARIABLE)
#: BAD-11's endpoint whose host does not resolve (RFC 2606 reserves .invalid)
UNRESOLVABLE_ENDPOINT = "ckptconform.invalid:9000"


def _unreachable_run(
    sandbox: Any,
    target: Any,
    backend: Any,
    route: str = "127.0.0.1",
    monkeypatch: pytest.MonkeyPatch | None = None,
) -> StoreRun:
    """The steps on a storage whose endpoint cannot be reached, given as ``route`` (one of
    :data:`REFUSING_ROUTES`, through ``monkeypatch`` for the variable, or ``"unresolvable"``:
    an object store's endpoint_url at :data:`UNRESOLVABLE_ENDPOINT`); skips on backends that
    reach no server or cannot be given the endpoint that way."""
    port = closed_port()
    routed = backend.unreachable_options(port)
    if routed is None:
        pytest.skip(f"backend {backend.name} reaches no server: no endpoint can refuse it")
    endpoint = f"127.0.0.1:{port}"
    if route in ("ipv6", "unresolvable"):
        if not (backend.object_store and routed.get("endpoint_url")):
            pytest.skip(f"backend {backend.name} is no object store: no {route} endpoint_url")
        # the suite never listens on ::1; .invalid names no host anywhere
        endpoint = f"[::1]:{port}" if route == "ipv6" else UNRESOLVABLE_ENDPOINT
        scheme = urlsplit(str(routed["endpoint_url"])).scheme or "http"
        routed = {**routed, "endpoint_url": f"{scheme}://{endpoint}"}
    elif route == S3_ENDPOINT_VARIABLE:
        if backend.scheme != "s3":
            pytest.skip(f"{S3_ENDPOINT_VARIABLE} routes S3 clients only, not {backend.scheme}")
        if monkeypatch is None:
            raise TypeError(f"the {route} route sets a variable: it needs the monkeypatch")
        monkeypatch.setenv(S3_ENDPOINT_VARIABLE, f"http://{endpoint}")
        routed = endpointless_options(backend, own_key=True)
    options, writes_files = _store_run_options(target)
    large = backend.object_store and writes_files
    if large:  # s3fs's part size: a large state starts its multipart upload while written
        routed = {**routed, "default_block_size": LARGE_PART_BYTES}
    run = StoreRun(endpoint)
    dirs = {
        name: backend.unreachable_url(url, port)
        for name, url in (
            ("checkpoint_dir", sandbox.checkpoint_dir),
            ("savepoint_dir", sandbox.savepoint_dir),
        )
    }
    storage = run.step(
        "make_storage", lambda: sandbox.make_storage(storage_options=routed, **dirs, **options)
    )
    if storage.ok:
        pointer = join(dirs["checkpoint_dir"], random_name(8), "chk-1")
        _unreachable_steps(run, storage.result, pointer, writes_files, large)
    return run


def _store_run_options(target: Any) -> tuple[dict[str, Any], bool]:
    """make_storage's options for BAD-10's and BAD-13's steps (3000 bytes of state go to a file
    where there is a threshold), and whether closing a state stream must reach the store."""
    options = {"inline_threshold": 1024} if "inline-state" in target.capabilities else {}
    return options, bool({"inline-state", "file-layout"} & set(target.capabilities))


def _require_none(
    clause: str,
    findings: list[str],
    run: StoreRun,
    what: str = "steps through an unreachable endpoint",
) -> None:
    require(
        not findings,
        clause,
        report(clause, what, findings, len(run.steps), "steps", endpoint=run.endpoint),
    )  # fmt: skip


@pytest.mark.clause("BAD-10")
@pytest.mark.parametrize("route", REFUSING_ROUTES)
def test_unreachable_store_fails_fast_typed_and_named(sandbox, target, backend, route, monkeypatch):
    """BAD-10: through an endpoint that refuses connections, the steps that need the store
    raise an OSError naming the endpoint within 15 s; an IPv6 endpoint, an object store's
    endpoint_url at [::1], is named as [::1]:<port>; an S3 endpoint given only by
    AWS_ENDPOINT_URL_S3 (storage_options with keys only) as 127.0.0.1:<port>."""
    run = _unreachable_run(sandbox, target, backend, route, monkeypatch)
    _require_none("BAD-10", run.untyped_or_unnamed(), run)


@pytest.mark.clause("BAD-11")
def test_unreachable_store_is_a_connection_error(sandbox, target, backend):
    """BAD-11: an error caused by the refused connection is a ConnectionError."""
    run = _unreachable_run(sandbox, target, backend)
    _require_none("BAD-11", run.not_connection_errors(), run)


@pytest.mark.clause("BAD-11")
def test_an_unresolvable_store_is_a_connection_error(sandbox, target, backend):
    """BAD-11: through an object store's endpoint_url whose host does not resolve
    (ckptconform.invalid), the steps that need the store raise an OSError naming the
    endpoint within 15 s, and every error is a ConnectionError."""
    run = _unreachable_run(sandbox, target, backend, "unresolvable")
    _require_none("BAD-11", run.untyped_or_unnamed() + run.not_connection_errors(), run)


def _unreachable_steps(
    run: StoreRun, storage: Any, pointer: str, writes_files: bool, large: bool = False
) -> None:
    """BAD-10's steps after make_storage: a stream (and, with ``large``, one of 12 MiB), a
    finalization and ``pointer``."""
    access = run.step(
        "create_checkpoint_storage", lambda: storage.create_checkpoint_storage(JobID.generate())
    )
    if access.ok:
        # an access whose base locations failed still serves a location, as a worker's does
        run.step(
            "initialize_base_locations_for_checkpoint",
            access.result.initialize_base_locations_for_checkpoint,
        )
        location = run.step(
            "initialize_location_for_checkpoint(1)",
            lambda: access.result.initialize_location_for_checkpoint(1),
        )
        if location.ok:
            _state_and_metadata_steps(run, location.result, writes_files)
        if location.ok and large:
            stream = run.step(
                "create_checkpoint_state_output_stream(EXCLUSIVE) for 12 MiB",
                lambda: location.result.create_checkpoint_state_output_stream(EXCLUSIVE),
            )
            if stream.ok:
                _close_after_write(run, stream.result, "", True, payload(LARGE_STATE_BYTES))
    run.step("resolve_checkpoint", lambda: storage.resolve_checkpoint(pointer), must_fail=True)


def _state_and_metadata_steps(run: StoreRun, location: Any, writes_files: bool) -> None:
    """A state stream of the checkpoint's location and its _metadata stream, each written and
    closed for its result (the state stream's close must fail only where it writes a file)."""
    stream = run.step(
        "create_checkpoint_state_output_stream(EXCLUSIVE)",
        lambda: location.create_checkpoint_state_output_stream(EXCLUSIVE),
    )
    if stream.ok:
        _close_after_write(run, stream.result, "", writes_files)
    metadata = run.step("create_metadata_output_stream", location.create_metadata_output_stream)
    if metadata.ok:
        _close_after_write(run, metadata.result, "metadata ", True)


def _close_after_write(
    run: StoreRun, stream: Any, kind: str, must_fail: bool, data: bytes | None = None
) -> None:
    """Write into a state (or metadata) stream, close it for its result, then close() it."""
    if data is None:
        data = b"metadata" if kind else payload(3000)
    wrote = run.step(f"{kind}write({len(data)} bytes)", lambda: stream.write(data))
    if wrote.ok:
        closing = "close_and_finalize_checkpoint" if kind else "close_and_get_handle"
        run.step(closing, getattr(stream, closing), must_fail=must_fail)
    run.step(f"{kind}close()", stream.close)


# --------------------------------------------------------------------------- BAD-13


def host_and_port(url: str) -> str:
    """``host:port`` of an endpoint URL (just the host where the URL gives no port)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    return f"{host}:{parts.port}" if parts.port else host


@pytest.mark.clause("BAD-13")
@pytest.mark.parametrize("given_as", ["endpoint_url", "client_kwargs"])
def test_server_errors_name_the_endpoint(sandbox, target, backend, ledger, given_as):
    """BAD-13: while the server answers every request 403 AccessDenied, closing a stream,
    finalizing _metadata, reading a handle and resolve_checkpoint each raise an OSError whose
    message names the endpoint's host and port, given as endpoint_url or in client_kwargs."""
    run = _denied_run("BAD-13", sandbox, target, backend, ledger, given_as)
    _require_none(
        "BAD-13", run.untyped_or_unnamed(), run, "steps while every request is refused with 403"
    )


def _denied_run(
    clause: str,
    sandbox: Any,
    target: Any,
    backend: Any,
    ledger: Any,
    given_as: str = "endpoint_url",
) -> StoreRun:
    """BAD-13's steps while the server answers every request 403 AccessDenied (for
    ``clause``, which a failure before the fault blames), the endpoint given as s3fs's
    ``endpoint_url`` or as ``client_kwargs['endpoint_url']``."""
    url = str(backend.storage_options.get("endpoint_url", ""))
    options, writes_files = _store_run_options(target)
    if given_as == "client_kwargs":
        routed = {k: v for k, v in backend.storage_options.items() if k != "endpoint_url"}
        routed["client_kwargs"] = {**routed.get("client_kwargs", {}), "endpoint_url": url}
        options["storage_options"] = routed
    endpoint = host_and_port(url)
    with tagged(clause, "a completed checkpoint and a handle, before any fault", sandbox):
        drv = JobDriver(sandbox, **options)
        drv.init_base()
        completed, written = drv.checkpoint(2, exclusive=[payload(3000, 13)])
        location = drv.location(1)
    run = StoreRun(endpoint)
    ledger.inject(status=403, code="AccessDenied", message="Access Denied", times=None)
    try:
        _state_and_metadata_steps(run, location, writes_files)
        for handle, _ in written:
            run.step(
                "read a handle written before the fault",
                lambda h=handle: read_handle(h),
                must_fail=file_path(handle) is not None,
            )
        run.step(
            "resolve_checkpoint of a completed checkpoint",
            lambda: drv.storage.resolve_checkpoint(completed.external_pointer),
            must_fail=True,
        )
        _cleanup_steps(run, drv, target, location, completed, [h for h, _ in written])
    finally:
        ledger.clear_faults()
    return run


def _cleanup_steps(
    run: StoreRun, drv: JobDriver, target: Any, location: Any, completed: Any, handles: list[Any]
) -> None:
    """BAD-13's steps that copy or delete: duplicating a file-backed handle (where
    fast-duplicate is claimed), discarding it, and both disposals; each may succeed."""
    files = [h for h in handles if file_path(h) is not None]
    if files and "fast-duplicate" in target.capabilities:
        factory = drv.worker(1, location.location_reference)
        run.step(
            "duplicate a file-backed handle written before",
            lambda: factory.duplicate(files[:1], EXCLUSIVE),
        )
    for handle in files[:1]:
        run.step("discard_state of a file-backed handle written before", handle.discard_state)
    run.step("dispose_on_failure of the checkpoint's location", location.dispose_on_failure)
    run.step(
        "dispose_storage_location of a completed checkpoint", completed.dispose_storage_location
    )


# --------------------------------------------------------------------------- BAD-14

#: errnos of a connection that could not be made or was lost: a ConnectionError's (with
#: ConnectionRefusedError's, ConnectionResetError's, ConnectionAbortedError's and
#: BrokenPipeError's own) and those of timeouts and unreachable hosts and networks
CONNECTION_ERRNOS = frozenset(
    {
        errno.ECONNREFUSED,
        errno.ECONNRESET,
        errno.ECONNABORTED,
        errno.EPIPE,
        errno.ETIMEDOUT,
        errno.EHOSTUNREACH,
        errno.ENETUNREACH,
    }
)


def errno_disagreement(error: BaseException) -> str | None:
    """Why ``error``'s errno and class disagree (BAD-14), or ``None``.

    The class Python's ``OSError(errno, text)`` picks for the errno must be the error's own
    built-in class (the first one in its MRO); a ConnectionError, which no errno picks, needs
    one of :data:`CONNECTION_ERRNOS`.
    """
    if not isinstance(error, OSError):
        return None
    code = error.errno
    if not isinstance(code, int):
        return f"{type(error).__name__} has no errno ({code!r})"
    own = next(c for c in type(error).__mro__ if c.__module__ == "builtins")
    picked = type(OSError(code, "text"))
    agrees = code in CONNECTION_ERRNOS if own is ConnectionError else picked is own
    if agrees:
        return None
    name = errno.errorcode.get(code, str(code))
    return (
        f"{type(error).__name__} (a {own.__name__}) has errno {name}, which Python's OSError "
        f"makes a {picked.__name__}"
    )


def _errno_findings(run: StoreRun, wanted: Callable[[OSError], str | None]) -> list[str]:
    """The failed steps of ``run`` whose errno disagrees with their class or with ``wanted``."""
    found = []
    for step in run.steps:
        if not isinstance(step.error, OSError):
            continue
        why = errno_disagreement(step.error) or wanted(step.error)
        if why:
            found.append(f"  {step.name}: {why}: {step.said()}")
    return found


@pytest.mark.clause("BAD-14")
def test_a_removed_state_is_enoent(sandbox, target):
    """BAD-14: reading a file-backed handle whose file was discarded raises FileNotFoundError
    with errno ENOENT."""
    drv = JobDriver(sandbox, **file_options(target))
    drv.init_base()
    handle = write_state(drv.worker(1, drv.location(1).location_reference), payload(3000))
    if file_path(handle) is None:
        pytest.skip("the state is inline: there is no file to remove (DIS-6 reads it)")
    handle.discard_state()
    run = StoreRun("")
    run.step("open and read the handle after discard_state", lambda: read_handle(handle))
    findings = _errno_findings(
        run,
        lambda e: None if isinstance(e, FileNotFoundError) and e.errno == errno.ENOENT
        else "not a FileNotFoundError with errno ENOENT",
    )  # fmt: skip
    if not run.steps[0].error:
        findings.append("  the removed state was read without an error")
    _require_none("BAD-14", findings, run, "a read of a removed state")


@pytest.mark.clause("BAD-14")
@pytest.mark.requires("savepoints")
@pytest.mark.backend_traits(object_store=False)
@pytest.mark.parametrize("where", ["the-file", "below-the-file"])
def test_a_savepoint_target_at_a_file_keeps_errno_and_class(sandbox, target, where):
    """BAD-14: a savepoint target that is an existing file, or lies below one, raises OSErrors
    whose errno Python's OSError maps to their class (ENOTDIR only on a NotADirectoryError)."""
    drv = JobDriver(sandbox, **file_options(target))
    drv.init_base()
    blocker = join(sandbox.root, f"not-a-directory-{random_name(6)}")
    put_file(sandbox, blocker, b"a file, not a directory")
    target_dir = blocker if where == "the-file" else join(blocker, "savepoints")

    def savepoint() -> None:
        location = drv.access.initialize_location_for_savepoint(1, target_dir)
        drv.finalize(location, b"savepoint metadata")

    run = StoreRun("")
    run.step(f"a savepoint to {target_dir}", savepoint)
    _require_none("BAD-14", _errno_findings(run, lambda e: None), run, "a savepoint at a file")


@pytest.mark.clause("BAD-14")
def test_a_refused_connection_is_econnrefused(sandbox, target, backend):
    """BAD-14: through an endpoint that refuses connections every OSError carries errno
    ECONNREFUSED."""
    run = _unreachable_run(sandbox, target, backend)
    findings = _errno_findings(
        run, lambda e: None if e.errno == errno.ECONNREFUSED else "errno is not ECONNREFUSED"
    )
    _require_none("BAD-14", findings, run)


@pytest.mark.clause("BAD-14")
def test_a_denied_request_is_no_connection_error(sandbox, target, backend, ledger):
    """BAD-14: while the server answers every request 403 AccessDenied, no error is a
    ConnectionError or carries a connection's errno."""
    run = _denied_run("BAD-14", sandbox, target, backend, ledger)

    def connection_like(error: OSError) -> str | None:
        if isinstance(error, ConnectionError) or error.errno in CONNECTION_ERRNOS:
            return "a refused request reported as a failed connection"
        return None

    _require_none("BAD-14", _errno_findings(run, connection_like), run, "steps under 403")


# --------------------------------------------------------------------------- BAD-15, BAD-16

#: BAD-15's checkpoint directories: URLs this long (at most the 4096 characters below which
#: a storage must take a path), in segments of at most 200 characters, so that the paths made
#: below them pass Linux's PATH_MAX (4096 bytes) at different steps: the state files and the
#: temporary names of a publish (4030), the job's directories (4075).
LONG_CHECKPOINT_DIRS = (4030, 4075)
#: The longest segment of such a directory (NAME_MAX is 255).
LONG_SEGMENT = 200
#: BAD-15's steps that create directories or files (BAD-16 judges their errors).
CREATING_STEPS = (
    "initialize_base_locations_for_checkpoint",
    "initialize_location_for_checkpoint(1)",
    "close a stream of 3000 bytes",
    "finalize _metadata",
    "a savepoint at the default directory",
)


def long_directory(root: str, length: int) -> str:
    """``root`` with segments of at most :data:`LONG_SEGMENT` characters appended until the
    URL is ``length`` characters long."""
    url = root.rstrip("/")
    while len(url) < length:
        url = join(url, "d" * min(LONG_SEGMENT, length - len(url) - 1))
    return url


def _long_path_run(sandbox: Any, target: Any, length: int, endpoint: str = "") -> StoreRun:
    """BAD-15's steps with a checkpoint and savepoint directory ``length`` characters long
    (``endpoint``: the server the steps reach, which their errors name; "" for none).

    Each step runs whether or not the ones before it failed, with what they made: a
    storage refused at make_storage ends the run (refusing a path up front is allowed)."""
    directory = long_directory(join(sandbox.root, "long"), length)
    run = StoreRun(endpoint)
    made = run.step(
        "make_storage and create_checkpoint_storage",
        lambda: JobDriver(
            sandbox, checkpoint_dir=directory, savepoint_dir=directory, **file_options(target)
        ),
    )
    drv = made.result
    if drv is None:
        return run
    base, checkpoint, stream, metadata, savepoint_step = CREATING_STEPS
    run.step(base, drv.init_base)
    location = run.step(checkpoint, lambda: drv.location(1)).result
    if location is not None:
        factory = drv.worker(1, location.location_reference)
        run.step(stream, lambda: write_state(factory, payload(3000)))
        run.step(metadata, lambda: drv.finalize(location, b"long path"))

    def savepoint() -> Any:
        savepoint_location = drv.access.initialize_location_for_savepoint(2, None)
        return drv.finalize(savepoint_location, b"long path savepoint")

    run.step(savepoint_step, savepoint)
    pointer = drv.chk_dir(1)
    run.step(
        f"resolve_checkpoint of {show(pointer, 40)}",
        lambda: drv.fresh_storage().resolve_checkpoint(pointer),
    )
    return run


def _refused_creations(run: StoreRun) -> list[tuple[Step, OSError]]:
    """The steps of ``run`` that create directories or files and failed with an OSError other
    than FileNotFoundError (a missing file is ENOENT and names no refusal), with the error:
    what BAD-16's errno and BAD-13's naming judge."""
    return [
        (step, step.error)
        for step in run.steps
        if step.name in CREATING_STEPS
        and isinstance(step.error, OSError)
        and not isinstance(step.error, FileNotFoundError)
    ]


@pytest.mark.clause("BAD-15")
@pytest.mark.parametrize("length", LONG_CHECKPOINT_DIRS)
def test_paths_past_the_file_systems_limit(sandbox, target, length):
    """BAD-15: with checkpoint and savepoint directories so long that the paths made below
    them pass the file system's limit, every step succeeds or raises OSError or ValueError."""
    run = _long_path_run(sandbox, target, length)
    findings = [
        f"  {step.name}: neither an OSError nor a ValueError: {step.said()}"
        for step in run.steps
        if step.error is not None and not isinstance(step.error, OSError | ValueError)
    ]
    _require_none("BAD-15", findings, run, f"steps with a {length}-character checkpoint path")


@pytest.mark.clause("BAD-16")
@pytest.mark.backend_traits(object_store=False)
@pytest.mark.parametrize("length", LONG_CHECKPOINT_DIRS)
def test_a_name_too_long_keeps_its_errno(sandbox, target, backend, length):
    """BAD-16: on the local file system, with checkpoint paths past its limit, every OSError
    but a FileNotFoundError of the steps that create directories or files carries errno
    ENAMETOOLONG, the file system's own."""
    if backend.scheme != "file":
        pytest.skip(f"the {backend.name} leg is no local file system: its limits are its own")
    run = _long_path_run(sandbox, target, length)
    findings = [
        f"  {step.name}: errno {error.errno}, not ENAMETOOLONG: {step.said()}"
        for step, error in _refused_creations(run)
        if error.errno != errno.ENAMETOOLONG
    ]
    _require_none("BAD-16", findings, run, f"steps with a {length}-character checkpoint path")


def server_endpoint(backend: Any) -> str | None:
    """``host:port`` of the server a backend's storage_options reach (an endpoint_url, or an
    SFTP server's host and port); None for a store in this process or on this machine."""
    options = backend.storage_options
    if options.get("endpoint_url"):
        return host_and_port(str(options["endpoint_url"]))
    if options.get("host"):
        port = options.get("port")
        return f"{options['host']}:{port}" if port else str(options["host"])
    return None


@pytest.mark.clause("BAD-13")
@pytest.mark.parametrize("length", LONG_CHECKPOINT_DIRS)
def test_a_servers_refusal_of_a_long_path_names_it(sandbox, target, backend, length):
    """BAD-13: on backends that reach a server, with checkpoint paths past its limits, every
    OSError but a FileNotFoundError of the steps that create directories or files names the
    server's host and port."""
    endpoint = server_endpoint(backend)
    if endpoint is None:
        pytest.skip(f"the {backend.name} leg reaches no server: there is no endpoint to name")
    run = _long_path_run(sandbox, target, length, endpoint)
    findings = [
        f"  {step.name}: {unnamed}: {step.said()}"
        for step, error in _refused_creations(run)
        if (unnamed := run.unnamed(str(error))) is not None
    ]
    _require_none("BAD-13", findings, run, f"steps with a {length}-character checkpoint path")


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


# --------------------------------------------------------------------------- BAD-17: bounded time

#: Hostile texts by shape, ``n`` characters long: shapes on which a backtracking pattern (a
#: redaction, a URL parser) or a quadratic normalisation of '..' spends time squared in ``n``.
HOSTILE_TEXTS: dict[str, Callable[[int], str]] = {
    "letters and digits": lambda n: ("ab1" * n)[:n],
    "one letter, no '@'": lambda n: "x" * n,
    "'a:' repeated, then '@'": lambda n: "a:" * (n // 2) + "@",
    "'='": lambda n: "=" * n,
    "quoted items": lambda n: "'a':" * (n // 4),
    "a Bearer token": lambda n: "Bearer " + "a" * n,
    "'a://' repeated": lambda n: "a://" * (n // 4),
    "'x/' then '../' repeated": lambda n: "x/" * (n // 5) + "../" * (n // 5),
}
#: Seconds a call may take: the clause says one, the suite allows for slow machines.
HOSTILE_TEXT_SECONDS = 2.0
#: The first length tried; it doubles up to a megabyte. A quadratic implementation fails at a
#: small length, in seconds: a call that holds the GIL cannot be interrupted by a timer.
FIRST_HOSTILE_LENGTH = 16 * 1024
MEGABYTE = 1024 * 1024


@dataclass
class HostileTextCall:
    """A call that takes a path: pointers are only read, so they get every shape as it is; a
    savepoint target or checkpoint directory may be created, so it gets the shapes without
    '/' as one name below the test's root (an implementation that accepts it creates nothing
    elsewhere, and no tree too deep to remove)."""

    what: str
    call: Callable[[str], Any]
    creates: bool

    def text(self, sandbox: Any, hostile: str) -> str | None:
        if not self.creates:
            return hostile
        return None if "/" in hostile else f"{sandbox.root}/{hostile}"


def _hostile_text_calls(sandbox: Any, target: Any) -> list[HostileTextCall]:
    drv = JobDriver(sandbox, **file_options(target))

    def make_storage(text: str) -> Any:
        return sandbox.make_storage(checkpoint_dir=text).create_checkpoint_storage(JobID.generate())

    calls = [
        HostileTextCall("the storage's resolve_checkpoint", drv.storage.resolve_checkpoint, False),
        HostileTextCall("the access's resolve_checkpoint", drv.access.resolve_checkpoint, False),
        HostileTextCall("make_storage's checkpoint directory", make_storage, True),
    ]
    if "savepoints" in target.capabilities:
        calls.append(HostileTextCall(
            "initialize_location_for_savepoint's target",
            lambda text: drv.access.initialize_location_for_savepoint(1, text),
            True,
        ))  # fmt: skip
    return calls


def _answer(call: Callable[[str], Any], text: str) -> tuple[float, str]:
    """Seconds until ``call(text)`` answered (the bound past when it has not), and how."""
    outcome = ["no answer"]

    def work() -> None:
        try:
            call(text)
            outcome[0] = "returned"
        except (TypeError, ValueError, OSError) as exc:
            outcome[0] = f"refused: {type(exc).__name__}"
        except Exception as exc:  # the clause names the three built-in errors
            outcome[0] = f"raised {type(exc).__name__}: {show(str(exc), 160)}"

    start = time.monotonic()
    within(HOSTILE_TEXT_SECONDS, work, name="ckptconform-hostile-text")
    return time.monotonic() - start, outcome[0]


@pytest.mark.clause("BAD-17")
def test_hostile_text_of_any_length_is_answered_in_bounded_time(
    sandbox, target, tmp_path, monkeypatch
):
    """BAD-17: resolve_checkpoint of a storage and of an access, initialize_location_for_savepoint
    and make_storage, given hostile text up to 1 MB as a pointer, savepoint target or
    checkpoint directory, answer within 2 seconds with TypeError, ValueError or OSError, or
    accept a target or directory.

    Each shape starts at 16 KiB and doubles; the test stops at the first slow answer.
    """
    monkeypatch.chdir(tmp_path)  # relative pointers are read in an empty working directory
    calls = _hostile_text_calls(sandbox, target)
    for shape, make in HOSTILE_TEXTS.items():
        length = FIRST_HOSTILE_LENGTH
        while length <= MEGABYTE:
            for call in calls:
                text = call.text(sandbox, make(length))
                if text is None:
                    continue
                took, how = _answer(call.call, text)
                msg = fail_message(
                    "BAD-17", call.what, sandbox, text=f"{shape}, {len(text)} characters"
                )
                assert took <= HOSTILE_TEXT_SECONDS, msg + f"\nanswered after {took:.1f} s: {how}"
                answered = how.startswith("refused") or (call.creates and how == "returned")
                assert answered, msg + f"\nexpected TypeError, ValueError or OSError: {how}"
            length *= 2
