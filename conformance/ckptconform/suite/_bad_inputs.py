"""The bad-input corpus of the BAD clauses, and hypothesis strategies that draw more of it.

Plain data, no I/O: which argument of which public method of the contract gets which bad
values, what kind of bad each value is (and so which built-in error the clauses demand), which
hostile pointers a test builds below its root and what each may resolve to, and strategies for
more of the same. ``suite/_bad_world.py`` builds the objects the calls need (a ``World``: a
job with two completed checkpoints, an open location, handles, a toolset), and the
``suite/test_bad_*.py`` modules check the outcomes.

Kinds of bad argument, and the clause that names the error (``ckptconform.clauses``):

* ``NONE``: ``None`` for a required argument: TypeError (BAD-2; Flink's NullPointerException);
* ``RANGE``: an integer outside the argument's range: ValueError (BAD-2);
* ``TYPE``: a value of the wrong type: TypeError or ValueError (BAD-1), TypeError (BAD-3);
* ``VALUE``: any other invalid value (``None`` as duplicate's scope, where Flink raises an
  IllegalArgumentException): TypeError or ValueError (BAD-1);
* ``NEGATIVE``: a negative id where Flink accepts one (savepoints, worker locations):
  ValueError (BAD-3 only; a storage that accepts it is not wrong by Flink's rules);
* ``NULL_OK``: ``None`` where Flink takes null: as a scope, which Flink takes as shared (stream
  creation, can_fast_duplicate), and as the location reference of
  resolve_checkpoint_storage_location, which Flink's JobManager storage ignores: TypeError
  (BAD-3 only).

Every value is classified by its operation's ``classify`` (one source of truth for the fixed
corpus and the hypothesis sample); ``None`` means the value is legal there and is left out.
"""

from __future__ import annotations

import array
import decimal
import posixpath
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from ckptstore.api import (
    REFERENCE_MAGIC_NUMBER,
    CheckpointedStateScope,
    CheckpointStorageLocationReference,
    JobID,
)

__all__ = [
    "BAD_SAVEPOINT_TARGETS",
    "ESCAPES",
    "FREE_POINTERS",
    "KINDS",
    "LONG_MAX",
    "LONG_MIN",
    "MAX_POINTER_LENGTH",
    "MUST_REFUSE",
    "NEGATIVE",
    "NONE",
    "NULL_OK",
    "OPERATIONS",
    "RANGE",
    "TYPE",
    "VALUE",
    "Bad",
    "Operation",
    "PointerCase",
    "bad_values",
    "dot_segments",
    "dotted_authorities",
    "escapes",
    "expectation",
    "file_url_with_host",
    "fixed_cases",
    "hostile_reference_bytes",
    "hostile_references",
    "looks_like_handle",
    "normalised",
    "operation",
    "pointer_suffixes",
    "relative_pointer_cases",
    "relative_segments",
    "show",
    "traversal_targets",
]

NONE = "none"
RANGE = "range"
TYPE = "type"
VALUE = "value"
NEGATIVE = "negative"
NULL_OK = "null-accepted-by-flink"
KINDS = (NONE, RANGE, TYPE, VALUE, NEGATIVE, NULL_OK)
#: The kinds every storage must refuse (BAD-1, BAD-2, BAD-6); the others are BAD-3's.
MUST_REFUSE = (NONE, RANGE, TYPE, VALUE)

#: Checkpoint and savepoint ids are Java longs (Flink's ``long checkpointId``).
LONG_MIN = -(2**63)
LONG_MAX = 2**63 - 1
#: Longer than PATH_MAX (4096) on Linux and S3's 1024-byte keys.
MAX_POINTER_LENGTH = 4096

EXCLUSIVE = CheckpointedStateScope.EXCLUSIVE
SHARED = CheckpointedStateScope.SHARED
DEFAULT_REF = CheckpointStorageLocationReference.default()
_SOME_JOB = JobID.from_hex("0123456789abcdef0123456789abcdef")


def show(value: Any, limit: int = 60) -> str:
    """A short printable form of a corpus value (never raises)."""
    try:
        text = repr(value)
    except Exception:
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else f"{text[: limit - 12]}...<{len(text)} chars>"


# --------------------------------------------------------------------------- classification


def looks_like_handle(value: Any) -> bool:
    """A state handle by the contract's protocol (duck-typed, like the implementations see it)."""
    return all(
        hasattr(value, name)
        for name in ("state_size", "open_input_stream", "as_bytes_if_in_memory", "discard_state")
    )


def _id_kind(negative: str) -> Callable[[Any], str | None]:
    """Classify a checkpoint/savepoint id; ``negative`` is the kind of -2**63..-1."""

    def classify(value: Any) -> str | None:
        if value is None:
            return NONE
        if isinstance(value, bool) or not isinstance(value, int):
            return TYPE
        if 0 <= value <= LONG_MAX:
            return None
        if LONG_MIN <= value < 0:
            return negative
        return RANGE

    return classify


def _job_kind(value: Any) -> str | None:
    if value is None:
        return NONE
    if isinstance(value, JobID):
        return None
    if isinstance(value, str):
        # a job id's hex spelling is accepted by some storages; any other string is not one
        hexdigits = set("0123456789abcdefABCDEF")
        return None if len(value) == 32 and set(value) <= hexdigits else VALUE
    return TYPE


def _text_kind(none_legal: bool) -> Callable[[Any], str | None]:
    """Pointers and savepoint targets: strings are legal here (hostile ones are BAD-4's)."""

    def classify(value: Any) -> str | None:
        if value is None:
            return None if none_legal else NONE
        return None if isinstance(value, str) else TYPE

    return classify


def _reference_kind(value: Any) -> str | None:
    if value is None:
        return NULL_OK  # Flink's JobManager storage ignores the reference (ACC9)
    return None if isinstance(value, CheckpointStorageLocationReference) else TYPE


def _scope_kind(none_kind: str | None) -> Callable[[Any], str | None]:
    """Scopes: the enum's members (and their own string values, which equal them) are legal."""

    def classify(value: Any) -> str | None:
        if value is None:
            return none_kind
        if isinstance(value, CheckpointedStateScope):
            return None
        if isinstance(value, str):
            return None if value in {s.value for s in CheckpointedStateScope} else VALUE
        return TYPE

    return classify


def _is_malformed_handle(value: Any) -> bool:
    """A handle by its methods whose attributes break the protocol: a state_size that is no
    int, or a file_path or relative_path that is no string (as one unpickled from a damaged
    _metadata may be)."""
    size = getattr(value, "state_size", None)
    return (
        isinstance(size, bool)
        or not isinstance(size, int)
        or any(
            getattr(value, name, None) is not None and not isinstance(getattr(value, name), str)
            for name in ("file_path", "relative_path")
        )
    )


def _handle_kind(value: Any) -> str | None:
    if value is None:
        return NONE
    if not looks_like_handle(value):
        return TYPE
    return VALUE if _is_malformed_handle(value) else None


def _handles_kind(value: Any) -> str | None:
    if value is None:
        return NONE
    if isinstance(value, list | tuple):
        if all(looks_like_handle(item) for item in value):
            return VALUE if any(_is_malformed_handle(item) for item in value) else None
        # Flink rejects null elements with an IllegalArgumentException, not an NPE
        return VALUE if any(item is None for item in value) else TYPE
    return TYPE


def _data_kind(value: Any) -> str | None:
    if value is None:
        return NONE
    return None if isinstance(value, bytes | bytearray | memoryview) else TYPE


# --------------------------------------------------------------------------- the fixed values


@dataclass(frozen=True)
class WorldValue:
    """A corpus value that needs the test's objects (e.g. a real handle inside a list)."""

    label: str
    make: Callable[[Any], Any]


class _Opaque:
    """An object of no expected type; its repr is stable for messages."""

    def __repr__(self) -> str:
        return "<opaque object>"


_OPAQUE = _Opaque()


class _Unprintable:
    """An object whose str() raises: a storage that formats a pointer before it checks the
    pointer's type fails with that error instead of a TypeError."""

    def __str__(self) -> str:
        raise RuntimeError("[BAD-1] str() of a pointer that is no string")

    def __repr__(self) -> str:
        return "<object whose str() raises>"


_UNPRINTABLE = _Unprintable()


class _MalformedHandle:
    """An object with the state handle's methods and a malformed attribute; the suite never
    lets it be read or discarded."""

    def __init__(self, **attributes: Any) -> None:
        self.__dict__.update(attributes)

    def open_input_stream(self) -> Any:
        raise AssertionError("[BAD-1] a malformed handle was read")

    def as_bytes_if_in_memory(self) -> None:
        return None

    def discard_state(self) -> None:
        raise AssertionError("[BAD-1] a malformed handle was discarded")

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={value!r}" for name, value in sorted(self.__dict__.items()))
        return f"MalformedHandle({shown})"


_MALFORMED_HANDLES: tuple[Any, ...] = (
    _MalformedHandle(state_size="3"),
    _MalformedHandle(state_size=None),
    _MalformedHandle(state_size=3, file_path=b"/etc/passwd"),
    _MalformedHandle(state_size=3, file_path="/x", relative_path=7),
)

_IDS: tuple[Any, ...] = (
    None, -1, LONG_MIN, LONG_MIN - 1, LONG_MAX + 1, 2**64, 2**100,
    "x", "1", "", 1.0, 1.5, float("nan"), float("inf"), True, False, b"1", [1],
    decimal.Decimal("1"), _OPAQUE,
)  # fmt: skip
_JOB_IDS: tuple[Any, ...] = (
    None, 123, 1.5, b"abc", bytes(3), _OPAQUE, ["x"], DEFAULT_REF,
    "zz" * 16, "abc", "", "0" * 33, "../../../etc", str(_SOME_JOB) + "/..",
)  # fmt: skip
_POINTER_TYPES: tuple[Any, ...] = (
    None,
    b"abc",
    bytearray(b"/x"),
    5,
    1.5,
    _OPAQUE,
    _UNPRINTABLE,
    ["/x"],
    DEFAULT_REF,
)
_TARGET_TYPES: tuple[Any, ...] = (b"/x", 5, 1.5, _OPAQUE, _UNPRINTABLE, ["/x"], DEFAULT_REF)
_REFERENCES: tuple[Any, ...] = (
    None, b"abc", "x", "(default)", 1, bytearray(b"x"), _OPAQUE, _SOME_JOB, EXCLUSIVE,
    REFERENCE_MAGIC_NUMBER + b"/tmp",
)  # fmt: skip
_SCOPES: tuple[Any, ...] = (
    None, "private", "EXCLUSIVE", "", b"exclusive", 0, 1, True, _OPAQUE, DEFAULT_REF, _SOME_JOB,
)  # fmt: skip
_HANDLES: tuple[Any, ...] = (
    None, "abc", b"abc", 1, _OPAQUE, {"file_path": "/etc/passwd", "state_size": 3}, DEFAULT_REF,
    WorldValue("[handle]", lambda w: [w.handle]), *_MALFORMED_HANDLES,
)  # fmt: skip
_HANDLE_LISTS: tuple[Any, ...] = (
    None, "abc", b"abc", 5, _OPAQUE, [None], ["x"], [b"abc"], {"a": 1},
    WorldValue("handle (not in a list)", lambda w: w.handle),
    WorldValue("[handle, 'x']", lambda w: [w.handle, "x"]),
    WorldValue("[handle, None]", lambda w: [w.handle, None]),
    WorldValue("[handle, malformed handle]", lambda w: [w.handle, _MALFORMED_HANDLES[2]]),
)  # fmt: skip
#: write() data: not bytes, bytearray or memoryview (an array.array has the buffer protocol,
#: and is still none of the three the contract names).
_DATA: tuple[Any, ...] = (
    None,
    "text",
    "",
    5,
    0,
    [1, 2],
    1.5,
    True,
    _OPAQUE,
    {"a": 1},
    array.array("B", b"abc"),
)


# --------------------------------------------------------------------------- operations


def _stream_write(make_stream: Callable[[Any], Any]) -> Callable[[Any, Any], Any]:
    """write(value) on a new stream, which is closed (discarded) whatever happens."""

    def call(world: Any, value: Any) -> Any:
        stream = make_stream(world)
        try:
            return stream.write(value)
        finally:
            stream.close()

    return call


def _returns_false(result: Any) -> bool:
    return result is False


@dataclass(frozen=True)
class Operation:
    """One argument of one public method: ``call(world, value)``, every other argument valid."""

    name: str
    call: Callable[[Any, Any], Any]
    classify: Callable[[Any], str | None]
    values: tuple[Any, ...]
    #: the capability the method belongs to (the operation is left out without it). duplicate()
    #: belongs to fast-duplicate: a caller duplicates only what can_fast_duplicate() accepted,
    #: and a storage without it refuses every duplicate() as unsupported, before it looks at
    #: the arguments (TOW-7; Flink's NotDuplicatingCheckpointStateToolset and its stream factory
    #: without toolsets, TO5, S17)
    capability: str | None = None
    #: an answer that is as good as an error (can_fast_duplicate may answer False, as Flink
    #: does for anything that is not a file handle)
    may_return: Callable[[Any], bool] | None = None


OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "storage.create_checkpoint_storage(job_id)",
        lambda w, v: w.storage.create_checkpoint_storage(v),
        _job_kind,
        _JOB_IDS,
    ),
    Operation(
        "storage.resolve_checkpoint(pointer)",
        lambda w, v: w.storage.resolve_checkpoint(v),
        _text_kind(none_legal=False),
        _POINTER_TYPES,
    ),
    Operation(
        "access.resolve_checkpoint(pointer)",
        lambda w, v: w.access.resolve_checkpoint(v),
        _text_kind(none_legal=False),
        _POINTER_TYPES,
    ),
    Operation(
        "access.initialize_location_for_checkpoint(checkpoint_id)",
        lambda w, v: w.access.initialize_location_for_checkpoint(v),
        _id_kind(negative=RANGE),  # Flink ACC6 rejects negative ids here (MD-8)
        _IDS,
    ),
    Operation(
        "access.initialize_location_for_savepoint(checkpoint_id)",
        lambda w, v: w.access.initialize_location_for_savepoint(v),
        _id_kind(negative=NEGATIVE),
        _IDS,
        capability="savepoints",
    ),
    Operation(
        "access.initialize_location_for_savepoint(checkpoint_id, <target below the root>)",
        lambda w, v: w.access.initialize_location_for_savepoint(v, w.savepoint_target),
        _id_kind(negative=NEGATIVE),
        _IDS,
        capability="savepoints",
    ),
    Operation(
        "access.initialize_location_for_savepoint(1, target)",
        lambda w, v: w.access.initialize_location_for_savepoint(1, v),
        _text_kind(none_legal=True),
        _TARGET_TYPES,
        capability="savepoints",
    ),
    Operation(
        "access.resolve_checkpoint_storage_location(checkpoint_id, default reference)",
        lambda w, v: w.access.resolve_checkpoint_storage_location(v, DEFAULT_REF),
        _id_kind(negative=NEGATIVE),
        _IDS,
    ),
    Operation(
        "access.resolve_checkpoint_storage_location(3, reference)",
        lambda w, v: w.access.resolve_checkpoint_storage_location(3, v),
        _reference_kind,
        _REFERENCES,
    ),
    Operation(
        "factory.create_checkpoint_state_output_stream(scope)",
        lambda w, v: w.factory.create_checkpoint_state_output_stream(v).close(),
        _scope_kind(none_kind=NULL_OK),
        _SCOPES,
    ),
    Operation(
        "location.create_checkpoint_state_output_stream(scope)",
        lambda w, v: w.location.create_checkpoint_state_output_stream(v).close(),
        _scope_kind(none_kind=NULL_OK),
        _SCOPES,
    ),
    Operation(
        "factory.can_fast_duplicate(handle, SHARED)",
        lambda w, v: w.factory.can_fast_duplicate(v, SHARED),
        _handle_kind,
        _HANDLES,
        may_return=_returns_false,
    ),
    Operation(
        "factory.can_fast_duplicate(handle of chk-1, scope)",
        lambda w, v: w.factory.can_fast_duplicate(w.handle, v),
        _scope_kind(none_kind=NULL_OK),  # Flink asks the shared toolset for null
        _SCOPES,
    ),
    Operation(
        "factory.duplicate(handles, SHARED)",
        lambda w, v: w.factory.duplicate(v, SHARED),
        _handles_kind,
        _HANDLE_LISTS,
        capability="fast-duplicate",
    ),
    Operation(
        "factory.duplicate([handle of chk-1], scope)",
        lambda w, v: w.factory.duplicate([w.handle], v),
        _scope_kind(none_kind=VALUE),  # Flink: IAE "Unknown state scope"
        _SCOPES,
        capability="fast-duplicate",
    ),
    Operation(
        "toolset.can_fast_duplicate(handle)",
        lambda w, v: w.toolset.can_fast_duplicate(v),
        _handle_kind,
        _HANDLES,
        may_return=_returns_false,
    ),
    Operation(
        "toolset.duplicate(handles)",
        lambda w, v: w.toolset.duplicate(v),
        _handles_kind,
        _HANDLE_LISTS,
        capability="fast-duplicate",
    ),
    Operation(
        "state stream (exclusive).write(data)",
        _stream_write(lambda w: w.factory.create_checkpoint_state_output_stream(EXCLUSIVE)),
        _data_kind,
        _DATA,
    ),
    Operation(
        "task-owned state stream.write(data)",
        _stream_write(lambda w: w.access.create_task_owned_state_stream()),
        _data_kind,
        _DATA,
    ),
    Operation(
        "metadata stream.write(data)",
        _stream_write(lambda w: w.location.create_metadata_output_stream()),
        _data_kind,
        _DATA,
    ),
    Operation(
        "completed.resolve_handle(handle)",
        lambda w, v: w.completed.resolve_handle(v),
        _handle_kind,
        _HANDLES,
    ),
)
_BY_NAME = {op.name: op for op in OPERATIONS}


@dataclass(frozen=True)
class Bad:
    """One bad argument for one operation, materialized: the value, its kind and a label."""

    operation: Operation
    value: Any
    kind: str
    label: str

    def describe(self) -> str:
        return f"{self.operation.name} with {self.label} ({self.kind})"


def _materialize(operation: Operation, raw: Any, world: Any) -> Bad | None:
    if isinstance(raw, WorldValue):
        value, label = raw.make(world), raw.label
    else:
        value, label = raw, show(raw)
    kind = operation.classify(value)
    if kind is None:
        return None
    return Bad(operation, value, kind, label)


def fixed_cases(
    world: Any, capabilities: Sequence[str] | frozenset[str], kinds: Sequence[str] = KINDS
) -> list[Bad]:
    """The fixed corpus for a target with ``capabilities``: every operation x its values."""
    cases = []
    for operation in OPERATIONS:
        if operation.capability is not None and operation.capability not in capabilities:
            continue
        for raw in operation.values:
            bad = _materialize(operation, raw, world)
            if bad is not None and bad.kind in kinds:
                cases.append(bad)
    return cases


# --------------------------------------------------------------------------- hypothesis: arguments


def bad_values() -> st.SearchStrategy[Any]:
    """Values of every shape; each operation's ``classify`` keeps the ones that are bad for it."""
    return st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.integers(min_value=2**63, max_value=2**70),
        st.integers(max_value=-(2**63) - 1, min_value=-(2**70)),
        st.floats(allow_nan=True, allow_infinity=True),
        st.decimals(allow_nan=False, allow_infinity=False, places=1),
        st.text(max_size=12),
        st.binary(max_size=12),
        st.lists(st.one_of(st.none(), st.integers(), st.text(max_size=3)), max_size=3),
        st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
        st.sampled_from([_OPAQUE, DEFAULT_REF, _SOME_JOB, EXCLUSIVE, SHARED]),
    )


# --------------------------------------------------------------------------- pointers


#: Pointers that name nothing on any backend: each must be refused with a typed error.
FREE_POINTERS: tuple[str, ...] = (
    "",
    " ",
    "\t\n",
    "a\x00b",
    "\udcff",
    "\udcff/chk-1",
    "y" * (MAX_POINTER_LENGTH + 904),
    "nosuchscheme-ckptconform://bucket/chk-1",
    "nosuchscheme-ckptconform:/chk-1",
    "%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
    "chk-1/%00/_metadata",
    "\u202echk-1",
    # shaped like credentials, as a pasted log line or configuration would be: an
    # implementation that scrubs what it shows parses these texts before anything else
    "a b=c&sig=ckptconform-sig/chk-1",
    "Authorization: Bearer ckptconform-token/chk-1",
    "a Bearer ckptconform-token/chk-1",
    "{'password': 'ckptconform-pw', 'region': 'eu'}/chk-1",
    "ckptconform:ckptconform-pw@127.0.0.1/chk-1",
)


@dataclass(frozen=True)
class PointerCase:
    """A pointer below the test's root, built from segments, and what it may resolve to.

    ``expect`` is the name of a known location (the pointer, normalised, names it: it may
    resolve to exactly that location, or be refused), ``None`` (nothing exists at the
    normalised path: it must be refused), or ``"escapes"`` (its ``..`` segments leave the
    test's root: any typed outcome is accepted).
    """

    segments: tuple[str, ...]
    expect: str | None
    why: str

    def pointer(self, root: str) -> str:
        return "/".join([root.rstrip("/"), *self.segments])


ESCAPES = "escapes"


def escapes(segments: Sequence[str]) -> bool:
    """Whether ``..`` segments climb above the start of ``segments``."""
    depth = 0
    for segment in segments:
        if segment == "..":
            depth -= 1
            if depth < 0:
                return True
        elif segment not in ("", "."):
            depth += 1
    return False


def normalised(segments: Sequence[str]) -> str:
    """The relative path the segments name, as Flink's Path normalises it ('.', '..', '//')."""
    return posixpath.normpath("/".join(segments) or ".")


def dot_segments(url: str) -> list[str]:
    """The '.' and '..' segments of a URL's path (what a normalised pointer never contains)."""
    path = url.split("://", 1)[-1]
    return [segment for segment in path.split("/") if segment in (".", "..")]


def expectation(segments: Sequence[str], known: dict[str, str]) -> str | None:
    """The ``PointerCase.expect`` of a pointer ``root/segments`` (``known``: relative path ->
    location name, for every checkpoint directory and metadata file below the root)."""
    if escapes(segments):
        return ESCAPES
    return known.get(normalised(segments))


def relative_segments(sandbox: Any, url: str | None) -> tuple[str, ...] | None:
    """``url``'s path below the sandbox root, as segments (None when it is not below it)."""
    if not url:
        return None
    try:
        root = sandbox.raw_path(sandbox.root).rstrip("/")
        path = sandbox.raw_path(url).rstrip("/")
    except Exception:
        return None
    if not path.startswith(root + "/"):
        return None
    return tuple(path[len(root) + 1 :].split("/"))


def relative_pointer_cases(
    one: tuple[str, ...], two: tuple[str, ...], known: dict[str, str]
) -> list[PointerCase]:
    """Hostile spellings built from two checkpoint directories' segments below the root.

    ``one`` and ``two`` are the segments of two checkpoint directories (e.g. ``("checkpoints",
    "<job>", "chk-1")``); ``known`` maps the normalised relative path of every checkpoint
    directory and metadata file below the root to its location's name.
    """
    parent, leaf = one[:-1], one[-1]
    sibling = (*one, "..", *two[len(parent) :]) if two[:-1] == parent else (*one, "..", leaf)
    spelled: list[tuple[tuple[str, ...], str]] = [
        (sibling, "'..' into a sibling"),
        ((*one, "."), "a trailing '.'"),
        ((*one, ".."), "'..' to the parent directory (no checkpoint there)"),
        ((*one, ".", "."), "'.' segments"),
        ((*parent, "x", "..", leaf), "'..' after a missing directory"),
        ((*one, *([".."] * len(one)), *one), "'..' up to the root and back down"),
        ((*parent, "", leaf), "an empty segment ('//')"),
        ((*one, "", ""), "a trailing '//'"),
        ((*parent, "x", "%2e%2e", leaf), "a percent-encoded '..' (a literal name)"),
        ((*parent, "x", "%2E%2E", leaf), "an upper-case percent-encoded '..'"),
        ((*parent, "x", ".%2e", leaf), "a half-encoded '..'"),
        ((*parent, f"{leaf}%2f.."), "a percent-encoded '/'"),
        ((*one, "\x00"), "a NUL segment"),
        ((*parent, leaf + "\x00"), "a NUL byte"),
        ((*one, "\n"), "a newline segment"),
        ((*one, "\udcff"), "a lone surrogate (not UTF-8)"),
        ((*one, "y" * (MAX_POINTER_LENGTH + 1)), "a segment longer than 4096 characters"),
        ((*one, *(["z" * 200] * 25)), "a pointer longer than 4096 characters"),
        (("..",), "the parent of the test's root"),
        ((*([".."] * 64), "etc", "passwd"), "'..' far above the root"),
        ((*one, *([".."] * (len(one) + 1))), "'..' one above the root"),
    ]
    return [PointerCase(segs, expectation(segs, known), why) for segs, why in spelled]


def _segment() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(["..", ".", "", "chk-1", "chk-2", "_metadata", "%2e%2e", "x"]),
        st.text(st.characters(codec="utf-8", exclude_characters="/\\"), min_size=1, max_size=8),
    )


@st.composite
def pointer_suffixes(draw: Any, max_segments: int = 6) -> tuple[str, ...]:
    """Segments appended to a known location: '.'/'..'/empty/encoded/odd segments."""
    return tuple(draw(st.lists(_segment(), min_size=1, max_size=max_segments)))


# --------------------------------------------------------------------------- references and targets


def hostile_reference_bytes() -> list[tuple[str, bytes]]:
    """The bytes of location references that are no usable path reference, by label."""
    magic = REFERENCE_MAGIC_NUMBER
    return [
        # Flink's reference takes any non-empty array; its decoder refuses four bytes or fewer
        ("one byte, shorter than the magic number", magic[:1]),
        ("3 bytes, no magic number", b"abc"),
        ("100 bytes, no magic number", b"x" * 100),
        ("the magic number only", magic),
        ("magic + not UTF-8", magic + b"\xff\xfe\xfd"),
        ("magic + NUL", magic + b"/a\x00b"),
        ("magic + '/..'", magic + b"/.."),
        ("magic + unknown scheme", magic + b"nosuchscheme-ckptconform://bucket/x"),
        ("magic + 5000 characters", magic + b"/" + b"y" * 5000),
    ]


def hostile_references() -> list[tuple[str, CheckpointStorageLocationReference]]:
    """Location references of the right type whose bytes are not a usable path reference."""
    return [
        (label, CheckpointStorageLocationReference(data))
        for label, data in hostile_reference_bytes()
    ]


def file_url_with_host(pointer: str) -> str | None:
    """A local ``pointer`` (``/a/b``, ``file:/a/b``, ``file:///a/b``) spelt as the file URL whose
    host is its first directory, ``file://a/b``; None for a pointer of another scheme or one
    directory deep. Flink refuses such a URL ("Found local file path with authority"): it
    names the host ``a``, not the directory ``/a``."""
    scheme, colon, rest = pointer.partition(":")
    if colon and scheme != "file":
        return None
    path = rest if colon else pointer
    if path.startswith("//"):
        authority, _, path = path[2:].partition("/")
        if authority:
            return None
        path = "/" + path
    if not path.startswith("/") or path.startswith("//"):
        return None
    first, _, below = path[1:].partition("/")
    if not first or not below:
        return None
    return f"file://{path[1:]}"


def dotted_authorities(pointer: str) -> list[str]:
    """An object-store ``pointer`` (``s3://bucket/key``) with '.' and then '..' put in as its
    authority before the bucket (``s3://./bucket/key``, ``s3://../bucket/key``); empty for a
    pointer that names no authority. '.' and '..' are no bucket: Flink's Path normalises only
    the path after the authority, and a request for such a bucket may reach the real one once
    an HTTP layer normalises the request's path."""
    scheme, sep, rest = pointer.partition("://")
    if not sep or scheme in ("file", "memory") or not rest or rest.startswith("/"):
        return []
    return [f"{scheme}://{dots}/{rest}" for dots in (".", "..")]


#: Savepoint targets that name no usable directory: refused at initialize_location_for_savepoint
#: or at the latest when the savepoint's metadata is finalized. ``{root}`` is the test's root.
#: (Newlines and lone surrogates are left out: Flink creates such directories.)
BAD_SAVEPOINT_TARGETS: tuple[str, ...] = (
    "",
    " ",
    "\t",
    "a\x00b",
    "{root}/sp\x00x",
    "{root}/" + "y" * (MAX_POINTER_LENGTH + 1),
    "nosuchscheme-ckptconform://bucket/sp",
)


def traversal_targets() -> list[tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], str]]:
    """Savepoint targets below the root with '.'/'..' segments.

    Each is (segments, normalised segments, directories that must not be created, why): the
    savepoint goes directly below the normalised target, and a directory that the target only
    passes through on its way up is never created (Flink's Path normalises before mkdirs).
    """
    return [
        (("sp-a", "..", "sp-b"), ("sp-b",), ("sp-a",), "'..' into a sibling"),
        (("sp-c", ".", "sp-d", ""), ("sp-c", "sp-d"), (), "'.' and a trailing '/'"),
        (("sp-e", "x", "..", "..", "sp-f"), ("sp-f",), ("sp-e",), "two '..'"),
    ]


def operation(name: str) -> Operation:
    """An operation by name (for tests that target one)."""
    return _BY_NAME[name]
