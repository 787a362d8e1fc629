"""A bad-input corpus against the reference's public constructors and methods (issue 10).

Every argument of every public method gets bad values: a fixed corpus (wrong types, ``None``
where it is not allowed, out-of-range numbers, pointers with traversal, odd schemes, encodings,
control characters, huge and empty strings, non-UTF-8 bytes, references and handles in the
wrong places, foreign and hostile handles) and hypothesis-generated ones. For each call:

* the outcome is a typed error: an instance of one of ``ckptstore.errors``' classes and of
  the built-in the contract names (``TypeError`` for ``None``, ``ValueError`` for another bad
  argument, ``OSError`` for a pointer that names nothing usable), never another exception;
* no file is lost and none is left behind (the whole test tree is compared before and after,
  bytes included), and a victim directory next to the checkpoints is never touched;
* the storage still works afterwards (a full checkpoint round trip).

The fixed corpus alone holds at least 2,000 bad inputs; each test checks every call it makes,
so the tests hold in any order and on any worker.
"""

from __future__ import annotations

import collections
import contextlib
import datetime
import decimal
import fractions
import hashlib
import math
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import fsspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ckptstore import FileSystemCheckpointStorage, JobManagerCheckpointStorage
from ckptstore.api import (
    NON_ADDRESSABLE_POINTER,
    REFERENCE_MAGIC_NUMBER,
    ByteStreamStateHandle,
    CheckpointedStateScope,
    CheckpointStorageLocationReference,
    JobID,
    decode_path_from_reference,
    encode_path_as_reference,
)
from ckptstore.errors import (
    CheckpointStorageError,
    DisposalRefusedError,
    MissingArgumentError,
)
from ckptstore.filesystem.entropy import validate_entropy_options
from ckptstore.filesystem.handles import FileStateHandle, RelativeFileStateHandle
from ckptstore.filesystem.locations import FsCheckpointStreamFactory
from ckptstore.filesystem.metadata import FsCompletedCheckpointStorageLocation
from ckptstore.filesystem.streams import FsCheckpointStateOutputStream
from ckptstore.paths import parse_storage_path
from ckptstore.validation import (
    JAVA_INT_MAX,
    JAVA_LONG_MAX,
    MAX_WRITE_BUFFER_SIZE,
    require_file_name,
    require_handle,
    require_handles,
    require_storage_options,
    require_url_text,
)

EXCLUSIVE = CheckpointedStateScope.EXCLUSIVE
SHARED = CheckpointedStateScope.SHARED
DEFAULT_REF = CheckpointStorageLocationReference.default()

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


# --------------------------------------------------------------------------- the world


@dataclass
class World:
    """Storages on the local disk and memory, a completed checkpoint, a savepoint, shared and
    task-owned state, and a victim directory of someone else's files."""

    tmp: Path
    memory_root: str
    local: Path = field(init=False)
    victim: Path = field(init=False)
    job: JobID = field(default_factory=JobID.generate)

    def __post_init__(self) -> None:
        self.local = self.tmp / "root"
        self.victim = self.local / "victim"
        self.victim.mkdir(parents=True)
        for name in ("thesis.tex", "_metadata", "data.csv"):
            (self.victim / name).write_bytes(b"someone else's " + name.encode())
        self.fs = FileSystemCheckpointStorage(
            str(self.local / "ckpt"),
            0,
            savepoint_path=str(self.local / "sp"),
            allowed_schemes=["memory"],
        )
        self.jm = JobManagerCheckpointStorage(
            str(self.local / "jm"), 100, savepoint_path=str(self.local / "jmsp")
        )
        self.mem = FileSystemCheckpointStorage(f"{self.memory_root}/ckpt", 0)
        self.access = self.fs.create_checkpoint_storage(self.job)
        self.access.initialize_base_locations_for_checkpoint()
        self.location = self.access.initialize_location_for_checkpoint(1)
        self.factory = self.access.resolve_checkpoint_storage_location(1, DEFAULT_REF)
        stream = self.factory.create_checkpoint_state_output_stream(SHARED)
        stream.write(b"shared state " * 4)
        self.shared = stream.close_and_get_handle()
        stream = self.factory.create_checkpoint_state_output_stream(EXCLUSIVE)
        stream.write(b"exclusive state " * 4)
        self.exclusive = stream.close_and_get_handle()
        with self.location.create_metadata_output_stream() as out:
            out.write(b"metadata of chk-1")
            self.completed = out.close_and_finalize_checkpoint()
        self.toolset = self.access.create_task_owned_checkpoint_state_toolset()
        self.jm_access = self.jm.create_checkpoint_storage(self.job)
        self.jm_factory = self.jm_access.resolve_checkpoint_storage_location(1, DEFAULT_REF)
        self.savepoint = self.access.initialize_location_for_savepoint(5)
        self.open_location = self.access.initialize_location_for_checkpoint(3)

    def snapshot(self) -> dict[str, str]:
        """Every file and directory of the test tree and the memory root, with a digest."""
        tree: dict[str, str] = {}
        for path in sorted(self.tmp.rglob("*")):
            tree[str(path)] = (
                hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
            )
        memory = fsspec.filesystem("memory")
        prefix = self.memory_root.removeprefix("memory://")
        for path in sorted(memory.find(prefix, withdirs=True)):
            tree[f"memory:{path}"] = (
                hashlib.sha256(memory.cat_file(path)).hexdigest() if memory.isfile(path) else "dir"
            )
        return tree

    def round_trip(self) -> None:
        """The storage still works: write, finalize, resolve, read, dispose."""
        for storage in (self.fs, self.mem):
            access = storage.create_checkpoint_storage(JobID.generate())
            access.initialize_base_locations_for_checkpoint()
            location = access.initialize_location_for_checkpoint(7)
            stream = location.create_checkpoint_state_output_stream(EXCLUSIVE)
            stream.write(b"still working " * 3)
            handle = stream.close_and_get_handle()
            with location.create_metadata_output_stream() as out:
                out.write(b"meta")
                completed = out.close_and_finalize_checkpoint()
            resolved = storage.resolve_checkpoint(completed.external_pointer)
            assert resolved.external_pointer == completed.external_pointer
            with resolved.resolve_handle(handle).open_input_stream() as data:
                assert data.read() == b"still working " * 3
            resolved.dispose_storage_location()


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    # relative pointers resolve against an empty working directory
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    memory_root = f"memory:///corpus-{uuid.uuid4().hex}"
    made = World(tmp_path, memory_root)
    yield made
    with contextlib.suppress(FileNotFoundError):
        fsspec.filesystem("memory").rm(memory_root.removeprefix("memory://"), recursive=True)


# --------------------------------------------------------------------------- targets


@dataclass(frozen=True)
class Target:
    """One argument of one public method: ``call(value)`` with every other argument good."""

    name: str
    call: Callable[[World, Any], Any]
    #: values that are legal for this argument (they are left out of the corpus)
    legal: Callable[[Any], bool] = lambda value: False
    #: built-ins a typed error may have besides TypeError/ValueError (OSError for pointers)
    io: bool = False
    #: a call that succeeds must be followed by this check (e.g. disposal refused)
    after: Callable[[World, Any], None] | None = None
    #: which strings are bad here: "any" (every string of the generic corpus), "pointer"
    #: (read-only resolution: every string in BAD_POINTERS), "path" (the argument names a
    #: place to write: only strings that cannot name a location, PATH_BAD)
    strings: str = "any"


def _int_in(low: int, high: int) -> Callable[[Any], bool]:
    def legal(value: Any) -> bool:
        if isinstance(value, bool):
            return False
        try:
            number = value.__index__()
        except (AttributeError, TypeError):
            return False
        return bool(low <= number <= high)

    return legal


def _legal_options(value: Any) -> bool:
    """Unknown fsspec options are legal (fsspec passes them on); the checked ones are not."""
    try:
        require_storage_options(value)
    except (TypeError, ValueError):
        return False
    return True


def _legal_entropy_key(value: Any) -> bool:
    try:
        validate_entropy_options(value, 4)
    except (TypeError, ValueError):
        return False
    return True


def _oracle(check: Callable[[Any], Any]) -> Callable[[Any], bool]:
    """A ``legal`` predicate from a validation function: legal if it passes."""

    def legal(value: Any) -> bool:
        try:
            check(value)
        except (TypeError, ValueError):
            return False
        return True

    return legal


def _handle_with_name(value: Any) -> None:
    require_handle(value)
    relative = getattr(value, "relative_path", None)
    if relative is not None:
        require_file_name(relative)


def _is_job(value: Any) -> bool:
    return isinstance(value, JobID)


def _is_bytes(value: Any) -> bool:
    return isinstance(value, bytes | bytearray | memoryview)


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool)


def _is_scope(value: Any) -> bool:
    return isinstance(value, CheckpointedStateScope)


def _is_duration(value: Any) -> bool:
    if isinstance(value, datetime.timedelta):
        return value >= datetime.timedelta(0)
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )


def _stream_write(world: World, kind: str, value: Any) -> None:
    streams = {
        "state": lambda: world.factory.create_checkpoint_state_output_stream(EXCLUSIVE),
        "task-owned": world.access.create_task_owned_state_stream,
        "metadata": world.open_location.create_metadata_output_stream,
        "memory": lambda: world.jm_factory.create_checkpoint_state_output_stream(SHARED),
    }
    with streams[kind]() as stream:
        stream.write(value)


def _dispose_refused(world: World, location: Any) -> None:
    """A location from a hostile pointer or reference: disposal must delete nothing."""
    for dispose in ("dispose_storage_location", "dispose_on_failure"):
        method = getattr(location, dispose, None)
        if method is None:
            continue
        with pytest.raises(DisposalRefusedError):
            method()


def _hostile_relative(relative_path: Any) -> Any:
    """A relative handle as an unpickled ``_metadata`` could hold it (no __post_init__)."""
    handle = object.__new__(RelativeFileStateHandle)
    object.__setattr__(handle, "file_path", "file:///tmp/x")
    object.__setattr__(handle, "state_size", 3)
    object.__setattr__(handle, "fs_token", None)
    object.__setattr__(handle, "relative_path", relative_path)
    return handle


# The tables below keep one entry per line or two: the formatter leaves them alone.
# fmt: off
TARGETS: list[Target] = [
    # -- constructors
    Target("FileSystemCheckpointStorage(checkpoint_path)",
           lambda w, v: FileSystemCheckpointStorage(v), strings="path"),
    Target("FileSystemCheckpointStorage(threshold)",
           lambda w, v: FileSystemCheckpointStorage(str(w.local / "c"), v),
           legal=lambda v: v is None or _int_in(-1, 2**20)(v)),
    Target("FileSystemCheckpointStorage(write_buffer_size)",
           lambda w, v: FileSystemCheckpointStorage(str(w.local / "c"), 0, v),
           legal=_int_in(-1, MAX_WRITE_BUFFER_SIZE)),
    Target("FileSystemCheckpointStorage(savepoint_path)",
           lambda w, v: FileSystemCheckpointStorage(str(w.local / "c"), savepoint_path=v),
           legal=lambda v: v is None, strings="path"),
    Target("FileSystemCheckpointStorage(create_subdir)",
           lambda w, v: FileSystemCheckpointStorage(str(w.local / "c"), create_subdir=v),
           legal=_is_bool),
    Target("FileSystemCheckpointStorage(storage_options)",
           lambda w, v: FileSystemCheckpointStorage("s3://b/c", storage_options=v),
           legal=_legal_options),
    Target("FileSystemCheckpointStorage(entropy_key)",
           lambda w, v: FileSystemCheckpointStorage(f"{w.memory_root}/_e_/c", entropy_key=v),
           legal=_legal_entropy_key),
    Target("FileSystemCheckpointStorage(entropy_length)",
           lambda w, v: FileSystemCheckpointStorage(
               f"{w.memory_root}/_e_/c", entropy_key="_e_", entropy_length=v),
           legal=_int_in(1, 64)),
    Target("FileSystemCheckpointStorage(allowed_schemes)",
           lambda w, v: FileSystemCheckpointStorage(str(w.local / "c"), allowed_schemes=v),
           legal=lambda v: v is None or v in ((), [], set(), frozenset())),
    Target("JobManagerCheckpointStorage(checkpoint_path)",
           lambda w, v: JobManagerCheckpointStorage(v), legal=lambda v: v is None,
           strings="path"),
    Target("JobManagerCheckpointStorage(max_state_size)",
           lambda w, v: JobManagerCheckpointStorage(None, v),
           legal=lambda v: v is None or _int_in(1, JAVA_INT_MAX)(v)),
    Target("JobManagerCheckpointStorage(savepoint_path)",
           lambda w, v: JobManagerCheckpointStorage(savepoint_path=v), legal=lambda v: v is None,
           strings="path"),
    Target("JobManagerCheckpointStorage(storage_options)",
           lambda w, v: JobManagerCheckpointStorage(storage_options=v),
           legal=_legal_options),
    Target("JobManagerCheckpointStorage(allowed_schemes)",
           lambda w, v: JobManagerCheckpointStorage(allowed_schemes=v),
           legal=lambda v: v is None or v in ((), [], set(), frozenset())),
    # -- storages
    Target("create_checkpoint_storage(job_id)", lambda w, v: w.fs.create_checkpoint_storage(v),
           legal=_is_job),
    Target("jm.create_checkpoint_storage(job_id)",
           lambda w, v: w.jm.create_checkpoint_storage(v), legal=_is_job),
    Target("resolve_checkpoint(pointer)", lambda w, v: w.fs.resolve_checkpoint(v), io=True,
           after=_dispose_refused, strings="pointer"),
    Target("jm.resolve_checkpoint(pointer)", lambda w, v: w.jm.resolve_checkpoint(v), io=True,
           after=_dispose_refused, strings="pointer"),
    Target("access.resolve_checkpoint(pointer)", lambda w, v: w.access.resolve_checkpoint(v),
           io=True, after=_dispose_refused, strings="pointer"),
    Target("find_leftovers(older_than)",
           lambda w, v: w.fs.find_leftovers(w.job, older_than=v), legal=_is_duration),
    Target("clean_leftovers(job_id)", lambda w, v: w.fs.clean_leftovers(v), legal=_is_job),
    Target("clean_leftovers(dry_run)",
           lambda w, v: w.fs.clean_leftovers(w.job, dry_run=v), legal=_is_bool),
    # -- accesses
    Target("initialize_location_for_checkpoint(id)",
           lambda w, v: w.access.initialize_location_for_checkpoint(v),
           legal=_int_in(0, JAVA_LONG_MAX)),
    Target("jm.initialize_location_for_checkpoint(id)",
           lambda w, v: w.jm_access.initialize_location_for_checkpoint(v),
           legal=_int_in(0, JAVA_LONG_MAX)),
    Target("initialize_location_for_savepoint(id)",
           lambda w, v: w.access.initialize_location_for_savepoint(v),
           legal=_int_in(0, JAVA_LONG_MAX)),
    Target("initialize_location_for_savepoint(1, target)",
           lambda w, v: w.access.initialize_location_for_savepoint(1, v),
           legal=lambda v: v is None, io=True, strings="path"),
    Target("jm.initialize_location_for_savepoint(1, target)",
           lambda w, v: w.jm_access.initialize_location_for_savepoint(1, v),
           legal=lambda v: v is None, io=True, strings="path"),
    Target("resolve_checkpoint_storage_location(id, default)",
           lambda w, v: w.access.resolve_checkpoint_storage_location(v, DEFAULT_REF),
           legal=_int_in(0, JAVA_LONG_MAX)),
    Target("resolve_checkpoint_storage_location(1, reference)",
           lambda w, v: w.access.resolve_checkpoint_storage_location(1, v), io=True,
           after=_dispose_refused, legal=lambda v: v is DEFAULT_REF),
    Target("jm.resolve_checkpoint_storage_location(1, reference)",
           lambda w, v: w.jm_access.resolve_checkpoint_storage_location(1, v),
           legal=lambda v: isinstance(v, CheckpointStorageLocationReference)),
    # -- factories, toolsets, streams, completed locations
    Target("create_checkpoint_state_output_stream(scope)",
           lambda w, v: w.factory.create_checkpoint_state_output_stream(v), legal=_is_scope),
    Target("jm create_checkpoint_state_output_stream(scope)",
           lambda w, v: w.jm_factory.create_checkpoint_state_output_stream(v), legal=_is_scope),
    Target("can_fast_duplicate(handle, SHARED)",
           lambda w, v: w.factory.can_fast_duplicate(v, SHARED), legal=_oracle(require_handle)),
    Target("can_fast_duplicate(shared handle, scope)",
           lambda w, v: w.factory.can_fast_duplicate(w.shared, v), legal=_is_scope),
    Target("duplicate(handles, SHARED)", lambda w, v: w.factory.duplicate(v, SHARED),
           legal=lambda v: _oracle(require_handles)(v) and len(v) == 0),
    Target("duplicate([shared handle], scope)",
           lambda w, v: w.factory.duplicate([w.shared], v), legal=_is_scope),
    Target("toolset.can_fast_duplicate(handle)", lambda w, v: w.toolset.can_fast_duplicate(v),
           legal=_oracle(require_handle)),
    Target("toolset.duplicate(handles)", lambda w, v: w.toolset.duplicate(v),
           legal=lambda v: _oracle(require_handles)(v) and len(v) == 0, io=True),
    Target("state stream write(data)", lambda w, v: _stream_write(w, "state", v),
           legal=_is_bytes),
    Target("task-owned stream write(data)", lambda w, v: _stream_write(w, "task-owned", v),
           legal=_is_bytes),
    Target("metadata stream write(data)", lambda w, v: _stream_write(w, "metadata", v),
           legal=_is_bytes),
    Target("memory stream write(data)", lambda w, v: _stream_write(w, "memory", v),
           legal=_is_bytes),
    Target("completed.resolve_handle(handle)", lambda w, v: w.completed.resolve_handle(v),
           legal=_oracle(_handle_with_name)),
    # -- value types of the contract
    Target("JobID.from_hex(text)", lambda w, v: JobID.from_hex(v)),
    Target("CheckpointStorageLocationReference(bytes)",
           lambda w, v: CheckpointStorageLocationReference(v),
           legal=lambda v: _is_bytes(v) and len(v) > 0),
    Target("decode_path_from_reference(reference)", lambda w, v: decode_path_from_reference(v)),
    Target("encode_path_as_reference(path)", lambda w, v: encode_path_as_reference(v),
           legal=lambda v: isinstance(v, str) and v != "" and _utf8(v)),
    # a handle is a value: one on a scheme this process cannot open is legal (reads fail)
    Target("FileStateHandle(path, 3)", lambda w, v: FileStateHandle(v, 3), strings="path",
           legal=_oracle(lambda v: parse_storage_path(require_url_text(v, "path")))),
    Target("FileStateHandle('/x', size)", lambda w, v: FileStateHandle("/x", v),
           legal=_int_in(-1, JAVA_LONG_MAX)),
    Target("ByteStreamStateHandle('n', data)", lambda w, v: ByteStreamStateHandle("n", v),
           legal=lambda v: isinstance(v, bytes | bytearray | memoryview)),
    # -- the public building blocks
    Target("FsCheckpointStreamFactory(threshold)",
           lambda w, v: FsCheckpointStreamFactory(
               str(w.local / "x"), str(w.local / "y"), file_state_threshold=v,
               write_buffer_size=0),
           legal=_int_in(0, 2**20)),
    Target("FsCheckpointStateOutputStream(buffer_size)",
           lambda w, v: FsCheckpointStateOutputStream(
               str(w.local / "x"), buffer_size=v, threshold=0),
           legal=_int_in(0, MAX_WRITE_BUFFER_SIZE)),
    Target("FsCompletedCheckpointStorageLocation(metadata_handle)",
           lambda w, v: FsCompletedCheckpointStorageLocation(
               str(w.local / "chk-9"), v, str(w.local / "chk-9")),
           legal=lambda v: isinstance(v, FileStateHandle)),
]
TARGETS_BY_NAME = {target.name: target for target in TARGETS}

#: read-only pointer targets: every string that names no checkpoint is bad for them
POINTER_TARGETS = [t for t in TARGETS if t.strings == "pointer"]


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class _Index:
    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value


class _Hostile:
    """A handle-shaped object whose every attribute access fails."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"hostile attribute {name}")


class _Foreign:
    """A handle from another implementation with a non-string file path."""

    state_size = 3
    file_path = 12345

    def open_input_stream(self) -> Any:
        raise AssertionError("never read")

    def as_bytes_if_in_memory(self) -> None:
        return None

    def discard_state(self) -> None:
        raise AssertionError("never discarded")


FIXED_VALUES: list[Any] = [
    None, True, False, 0, -1, -2, 1.5, float("nan"), float("inf"), -0.0,
    2**31, 2**40, JAVA_LONG_MAX + 1, -(2**63) - 1, 2**1000, complex(1, 1),
    decimal.Decimal("1"), fractions.Fraction(1, 2), _Index(-5), _Index(2**64),
    "", " ", "\t", "x", "no", "-1", "1", "0x10", "None", "true", "é", "日本語", "🙂",
    "\u202e\u0644", "\u200b", "\udcff", "a\x00b", "line\nbreak", "x" * 5000,
    b"", b"abc", b"\xff\xfe", bytearray(b"x"), memoryview(b"xy"),
    [], [None], [1, 2], (), (None,), {}, {"a": 1}, {1: 2}, set(), frozenset({"x"}),
    object(), _Hostile(), _Foreign(), Ellipsis, type, len, lambda: 0,
    datetime.datetime(2026, 1, 1), datetime.timedelta(seconds=-1), Path("/"),
    JobID.from_hex("0" * 32), DEFAULT_REF, CheckpointStorageLocationReference(b"\x00\x01"),
    EXCLUSIVE, SHARED, ByteStreamStateHandle("inline", b"x"),
    _hostile_relative("../../../etc/passwd"), _hostile_relative("a/b"),
    _hostile_relative(""), _hostile_relative(None), _hostile_relative(5),
    [ByteStreamStateHandle("inline", b"x")], [_Foreign()], [_Hostile()], ["/etc/passwd"],
]

BAD_POINTERS: list[str] = [
    "", " ", "/..", "/a/../../..", "../../../../../../etc", "file://remotehost/x",
    "file:///../../x", "s3n://bucket/chk-1", "http://example.invalid/x", "nosuchscheme://a/b",
    "nosuchscheme:/a", "s3://../x", "s3://bad bucket/x", "s3://user:pass@bucket/x",
    "memory:///../x", "memory:///nowhere/chk-1", NON_ADDRESSABLE_POINTER,
    "this-is_not/a#filepath.at.all", "a\x00b", "/tmp/\nforged", "\udcff", "/" + "y" * 5000,
    "file:", "s3:", "s3://", "C:\\Windows\\x", "~/chk-1", "%2e%2e/%2e%2e/etc",
    "chk-1/../chk-1", "./_metadata", "\\\\server\\share\\chk-1", "data:text/plain,hi",
    "zip://x::file:///tmp/a.zip", "simplecache::s3://b/x", "s3://b/x?versionId=1",
    "/dev/null/chk-1", "\u0130stanbul/chk-1", "cafe\u0301/chk-1",
]


#: strings that cannot name a location at all (safe to pass where a path is written to)
PATH_BAD: list[str] = [
    "", " ", "/..", "/a/../../..", "file:///../../x", "file://remotehost/x", "s3n://bucket/x",
    "nosuchscheme://a/b", "s3://../x", "s3://bad bucket/x", "s3://user:pass@bucket/x",
    "memory:///../x", "a\x00b", "/tmp/\nforged", "\udcff", "/" + "y" * 5000, "s3:", "s3://",
    "file:", "http://", "x\x7fy",
]
# fmt: on


def _hostile_references() -> list[CheckpointStorageLocationReference]:
    refs = [CheckpointStorageLocationReference(b"x" * n) for n in (1, 4, 5, 100)]
    refs.append(CheckpointStorageLocationReference(REFERENCE_MAGIC_NUMBER + b"\xff\xfe"))
    for path in ("/..", "s3n://b/x", "nosuch://a/b", "\x00", "file://remote/x"):
        refs.append(CheckpointStorageLocationReference(REFERENCE_MAGIC_NUMBER + path.encode()))
    return refs


# --------------------------------------------------------------------------- the check


def _check(world: World, target: Target, value: Any) -> str:
    """Call ``target`` with ``value``; return the outcome, or ``FAIL: ...`` if it is wrong."""
    caught: CheckpointStorageError | None = None
    try:
        result = target.call(world, value)
    except CheckpointStorageError as error:
        caught = error
    except Exception as error:  # the point: no other exception may escape
        return f"FAIL: {target.name}({value!r:.80}) raised {type(error).__name__}: {error!r:.200}"
    if caught is not None:
        expected: tuple[type[BaseException], ...] = (TypeError, ValueError)
        if target.io:
            expected = (*expected, OSError)
        if not isinstance(caught, expected):
            return f"FAIL: {target.name}({value!r:.80}) raised {caught!r:.200} (built-in)"
        if value is None and not isinstance(caught, MissingArgumentError | OSError):
            return f"FAIL: {target.name}(None) raised {caught!r:.200}, not a TypeError"
        return type(caught).__name__
    if target.after is None:
        return f"FAIL: {target.name}({value!r:.80}) accepted a bad value: {result!r:.100}"
    try:
        target.after(world, result)
    except BaseException as error:
        return f"FAIL: {target.name}({value!r:.80}) then: {error!r:.200}"
    return "accepted, then disposal refused"


def _run(world: World, cases: list[tuple[Target, Any]]) -> collections.Counter[str]:
    before = world.snapshot()
    outcomes: collections.Counter[str] = collections.Counter()
    failures: list[str] = []
    for target, value in cases:
        outcome = _check(world, target, value)
        if outcome.startswith("FAIL"):
            failures.append(outcome)
        else:
            outcomes[outcome] += 1
    after = world.snapshot()
    assert not failures, "\n".join(failures[:40]) + f"\n... {len(failures)} failures"
    assert after == before, {
        "lost": sorted(set(before) - set(after)),
        "left": sorted(set(after) - set(before)),
        "changed": sorted(k for k in before.keys() & after.keys() if before[k] != after[k]),
    }
    return outcomes


def _fixed_cases() -> list[tuple[Target, Any]]:
    cases: list[tuple[Target, Any]] = []
    for target in TARGETS:
        for value in FIXED_VALUES:
            if target.strings != "any" and isinstance(value, str | Path):
                continue  # strings for pointers and paths come from their own lists
            with contextlib.suppress(Exception):
                if target.legal(value):
                    continue
            cases.append((target, value))
        if target.strings == "pointer":
            cases.extend((target, pointer) for pointer in BAD_POINTERS)
        elif target.strings == "path":
            cases.extend((target, path) for path in PATH_BAD if not target.legal(path))
    reference_target = TARGETS_BY_NAME["resolve_checkpoint_storage_location(1, reference)"]
    cases.extend((reference_target, ref) for ref in _hostile_references())
    return cases


def test_fixed_corpus(world: World) -> None:
    cases = _fixed_cases()
    assert len(cases) >= 2000
    _run(world, cases)
    world.round_trip()


def test_hostile_pointers_to_existing_files_dispose_nothing(world: World) -> None:
    """Pointers that do resolve (any file is a metadata file, PTR7) but name no checkpoint:
    disposal refuses; the victim's files and the real checkpoint stay."""
    pointers = [
        str(world.victim),
        str(world.victim / "thesis.tex"),
        str(world.victim / "_metadata"),
        f"{world.victim}/../victim/./data.csv",
        str(
            world.local
            / "ckpt"
            / str(world.job)
            / "shared"
            / world.shared.file_path.rsplit(  # type: ignore[union-attr]
                "/", 1
            )[1]
        ),
    ]
    target = TARGETS_BY_NAME["resolve_checkpoint(pointer)"]
    _run(world, [(target, pointer) for pointer in pointers])
    world.round_trip()


# --------------------------------------------------------------------------- hypothesis

_ANY_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=40)
_SEGMENTS = st.lists(
    st.one_of(
        st.sampled_from(["..", ".", "", "chk-1", "_metadata", "%2e%2e", "\\", "~"]), _ANY_TEXT
    ),
    max_size=8,
)
_SCHEMES = st.one_of(
    st.sampled_from(
        [
            "",
            "file:",
            "file://",
            "file:///",
            "local://",
            "memory://",
            "s3://",
            "s3n://",
            "s3a://",
            "gs://",
            "http://",
            "zip://",
            "nosuch://",
            "FILE:",
            "data:",
            "reference://",
        ]
    ),
    _ANY_TEXT.map(lambda text: text + "://"),
)


@st.composite
def _pointers(draw: Any) -> str:
    scheme = draw(_SCHEMES)
    segments = draw(_SEGMENTS)
    separator = draw(st.sampled_from(["/", "\\", "//"]))
    return scheme + separator.join(segments)


def _bad_numbers() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.integers(max_value=-2),
        st.integers(min_value=2**63),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=10),
        st.binary(max_size=10),
        st.booleans(),
        st.none(),
        st.lists(st.integers(), max_size=3),
        st.decimals(allow_nan=True),
    )


@SETTINGS
@given(pointer=st.one_of(_pointers(), _ANY_TEXT, st.binary(max_size=30)))
def test_hypothesis_pointers(world: World, pointer: Any) -> None:
    """Random pointers: typed errors only (or, for an existing file, disposal refused)."""
    cases = [
        (target, pointer)
        for target in POINTER_TARGETS
        if "savepoint" not in target.name and "reference" not in target.name
    ]
    _run(world, cases)


@SETTINGS
@given(path=st.one_of(_pointers(), _ANY_TEXT))
def test_hypothesis_savepoint_targets_and_references(world: World, path: str) -> None:
    """Savepoint targets and references built from random paths: only unusable ones are
    sent (a usable path would legitimately create a savepoint directory there)."""
    reference = CheckpointStorageLocationReference(
        REFERENCE_MAGIC_NUMBER + path.encode("utf-8", "surrogatepass")
    )
    _run(
        world,
        [
            (TARGETS_BY_NAME["resolve_checkpoint_storage_location(1, reference)"], reference),
        ],
    )
    try:
        parsed = parse_storage_path(path)
    except (TypeError, ValueError):
        parsed = None
    if parsed is None or parsed.scheme not in ("file", "memory"):
        _run(
            world,
            [
                (TARGETS_BY_NAME["initialize_location_for_savepoint(1, target)"], path),
                (TARGETS_BY_NAME["jm.initialize_location_for_savepoint(1, target)"], path),
            ],
        )


@SETTINGS
@given(value=_bad_numbers())
def test_hypothesis_ids_and_sizes(world: World, value: Any) -> None:
    names = [
        "initialize_location_for_checkpoint(id)",
        "jm.initialize_location_for_checkpoint(id)",
        "initialize_location_for_savepoint(id)",
        "resolve_checkpoint_storage_location(id, default)",
        "FileSystemCheckpointStorage(threshold)",
        "FileSystemCheckpointStorage(write_buffer_size)",
        "JobManagerCheckpointStorage(max_state_size)",
        "FileStateHandle('/x', size)",
        "FileSystemCheckpointStorage(entropy_length)",
        "find_leftovers(older_than)",
    ]
    cases = [(TARGETS_BY_NAME[n], value) for n in names if not TARGETS_BY_NAME[n].legal(value)]
    _run(world, cases)


_JSONISH = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


@SETTINGS
@given(
    options=st.one_of(
        st.fixed_dictionaries({"retries": _bad_numbers()}),
        st.fixed_dictionaries(
            {
                "config_kwargs": st.fixed_dictionaries(
                    {
                        "connect_timeout": st.one_of(
                            st.floats(max_value=0.05),
                            st.floats(min_value=121),
                            st.text(max_size=3),
                            st.none(),
                        )
                    }
                )
            }
        ),
        st.fixed_dictionaries(
            {
                "config_kwargs": st.fixed_dictionaries(
                    {
                        "retries": st.fixed_dictionaries(
                            {
                                "max_attempts": st.one_of(
                                    st.integers(max_value=-1),
                                    st.integers(min_value=11),
                                    st.text(max_size=3),
                                )
                            }
                        )
                    }
                )
            }
        ),
        st.fixed_dictionaries(
            {
                "endpoint_url": st.one_of(
                    _ANY_TEXT.filter(lambda t: "://" not in t), st.integers(), st.binary(max_size=5)
                )
            }
        ),
        st.dictionaries(st.integers(), _JSONISH, min_size=1, max_size=3),
        _JSONISH.filter(lambda v: not isinstance(v, dict)),
    ),
    schemes=st.one_of(
        st.lists(
            st.one_of(
                st.none(),
                st.integers(),
                st.binary(max_size=4),
                st.text(max_size=6).filter(lambda t: not t.strip().isalpha()),
            ),
            min_size=1,
            max_size=3,
        ),
        st.integers(),
    ),
)
def test_hypothesis_configuration(world: World, options: Any, schemes: Any) -> None:
    cases = [
        (TARGETS_BY_NAME["FileSystemCheckpointStorage(storage_options)"], options),
        (TARGETS_BY_NAME["JobManagerCheckpointStorage(storage_options)"], options),
        (TARGETS_BY_NAME["FileSystemCheckpointStorage(allowed_schemes)"], schemes),
        (TARGETS_BY_NAME["JobManagerCheckpointStorage(allowed_schemes)"], schemes),
    ]
    _run(world, [(t, v) for t, v in cases if not t.legal(v)])


@SETTINGS
@given(
    data=st.one_of(
        st.text(max_size=20),
        st.integers(),
        st.none(),
        st.lists(st.integers(0, 255)),
        st.floats(),
        st.dictionaries(st.text(max_size=3), st.integers()),
    ),
    scope=st.one_of(st.text(max_size=10), st.integers(), st.none(), st.booleans()),
    relative=st.one_of(
        st.sampled_from(["..", ".", "", "a/b", "../x", "a\\b", "x\x00"]),
        st.text(max_size=10).map(lambda t: "../" + t),
        st.integers(),
    ),
    job=st.one_of(st.text(max_size=40), st.binary(max_size=16), st.integers()),
)
def test_hypothesis_streams_handles_and_ids(
    world: World, data: Any, scope: Any, relative: Any, job: Any
) -> None:
    cases = [
        (TARGETS_BY_NAME["state stream write(data)"], data),
        (TARGETS_BY_NAME["metadata stream write(data)"], data),
        (TARGETS_BY_NAME["memory stream write(data)"], data),
        (TARGETS_BY_NAME["create_checkpoint_state_output_stream(scope)"], scope),
        (TARGETS_BY_NAME["duplicate([shared handle], scope)"], scope),
        (TARGETS_BY_NAME["completed.resolve_handle(handle)"], _hostile_relative(relative)),
        (TARGETS_BY_NAME["toolset.duplicate(handles)"], [_hostile_relative(relative)]),
    ]
    if not (
        isinstance(job, str) and len(job) == 32 and all(c in "0123456789abcdefABCDEF" for c in job)
    ):
        cases.append((TARGETS_BY_NAME["create_checkpoint_storage(job_id)"], job))
    _run(world, [(t, v) for t, v in cases if not t.legal(v)])
