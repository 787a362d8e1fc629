"""The public contract of a checkpoint storage: value types and protocols.

This is the only module of ``ckptstore`` that the conformance suite (``ckptconform``) and
third-party implementations need. It mirrors Flink's interfaces in snake_case
(``docs/ARCHITECTURE.md`` section 3) and does no I/O: it imports only the
standard library and ``ckptstore.errors``.

Value types (concrete, picklable): ``JobID``, ``CheckpointedStateScope``,
``CheckpointStorageLocationReference`` (with the REF1-REF3 path encoding) and
``ByteStreamStateHandle`` (inline state, which needs no file system).

Protocols (structural, ``runtime_checkable``): streams, factories, locations, handles,
toolsets, the storage access and the storage itself. An implementation does not inherit
from them; it only has to provide the methods.

Errors: the contract names built-in exception types (``TypeError`` for a missing argument,
``ValueError`` for an invalid one, ``FileNotFoundError`` for a missing checkpoint,
``OSError`` for any other I/O problem). Implementations may raise subclasses.

Handles read elsewhere: state handles and completed locations are values that travel
(pickled into ``_metadata``, to a restarted coordinator, to a Spark executor that reads
``_metadata``), so they carry no credentials and no client; at most a non-secret identity of
the store they were written to (e.g. a short hash of scheme and endpoint URL without
userinfo or query). Wherever a handle is read or discarded (``open_input_stream``,
``discard_state``, and the same for a completed location's ``metadata_handle``,
``dispose_storage_location`` and the handles of ``resolve_handle``), any implementation must
pick the connection settings in this order, in the process doing the I/O:

1. the settings configured in that process for the same store (same scheme and endpoint,
   never compared by credentials); if several storages configured it, the most recent one
   (so a rotated secret works);
2. else the settings of a storage configured in that process for the handle's scheme and
   bucket (authority), whatever its exact options: another endpoint URL to the same data,
   another secret; the most recent one;
3. else the process-wide configuration of the file-system library for the scheme (for
   fsspec: ``FSSPEC_S3_ENDPOINT_URL``, ``FSSPEC_S3_KEY``, ``FSSPEC_S3_SECRET``... or its
   config directory), exactly as any URL of that scheme would be opened.

"Configured in that process" means a storage constructed or unpickled there (and its
accesses), for the buckets of its checkpoint and savepoint directories and the savepoint
targets it used. A handle must never fall back to a default endpoint while a storage of the
process names its bucket. A read whose endpoint cannot be reached fails within seconds (bounded
retries and connect timeouts by default, which the user may override) with an ``OSError``
(``FileNotFoundError`` for a missing object) whose message names the endpoint and the path,
and never a credential.

Untrusted input (what every implementation should do; the reference does it as described):

* Arguments are checked before anything else: ``None`` raises ``TypeError``, a wrong type or
  value ``ValueError`` (the reference raises ``ckptstore.errors`` subclasses, e.g.
  ``InvalidArgumentTypeError`` which is both), with the argument, the value and the accepted
  range in the message. Checkpoint and savepoint ids are non-negative Java longs
  (``0 .. 2**63 - 1``), so that Flink can read what was written.
* Pointers and paths are normalised like Flink's ``Path`` (``.`` and ``..`` resolved, so an
  ``external_pointer`` never contains them); a pointer that cannot name a location
  (``..`` above its root or bucket, control characters, not UTF-8) raises ``OSError``
  (PTR3) before any I/O.
* Disposal deletes only what the layout names: ``dispose_storage_location`` and
  ``dispose_on_failure`` delete a ``chk-<n>`` or ``savepoint-<job>-<suffix>`` directory and
  refuse anything else with an ``OSError`` (``PermissionError`` in the reference), deleting
  nothing; ``discard_state`` deletes one file.
* Duplication never overwrites: copies get fresh names (or are created exclusively), so two
  sources with the same file name never collide in one target directory.
* Every failure of a file system or its client library (an unreachable endpoint, a
  misconfigured client) surfaces as ``OSError`` from every method, within a bounded retry
  budget (the reference: ``ckptstore.stores.retry.retry_budget``, configurable with the
  storage-agnostic options ``retry_attempts`` and ``retry_seconds``), naming the endpoint and the
  path but never a secret; ``repr``, error messages and logs show no credential
  (``ckptstore.redaction``).
* Crash leftovers (staging files, state files of checkpoints that never got ``_metadata``)
  can be found and removed within the storage's own layout (the reference:
  ``find_leftovers``/``clean_leftovers`` of its storages, ``ckptstore.filesystem.leftovers``).
"""

from __future__ import annotations

import enum
import io
import secrets
import uuid
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Protocol, runtime_checkable

from ckptstore.errors import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    InvalidReferenceError,
    MissingArgumentError,
)

__all__ = [
    "CHECKPOINT_DIR_PREFIX",
    "CHECKPOINT_SHARED_STATE_DIR",
    "CHECKPOINT_TASK_OWNED_STATE_DIR",
    "METADATA_FILE_NAME",
    "NON_ADDRESSABLE_POINTER",
    "REFERENCE_MAGIC_NUMBER",
    "SAVEPOINT_DIR_PREFIX",
    "ByteStreamStateHandle",
    "CheckpointMetadataOutputStream",
    "CheckpointStateOutputStream",
    "CheckpointStateToolset",
    "CheckpointStorage",
    "CheckpointStorageAccess",
    "CheckpointStorageLocation",
    "CheckpointStorageLocationReference",
    "CheckpointStreamFactory",
    "CheckpointedStateScope",
    "CompletedCheckpointStorageLocation",
    "FileStateHandle",
    "JobID",
    "RelativeFileStateHandle",
    "StreamStateHandle",
    "decode_path_from_reference",
    "encode_path_as_reference",
]

# Layout names (L1, L3, L5). Flink's docs call the layout "not part of a public API", but
# every Flink tool and user relies on it, and the conformance suite checks it for
# implementations that claim the ``file-layout`` capability.
CHECKPOINT_DIR_PREFIX = "chk-"
CHECKPOINT_SHARED_STATE_DIR = "shared"
CHECKPOINT_TASK_OWNED_STATE_DIR = "taskowned"
METADATA_FILE_NAME = "_metadata"
SAVEPOINT_DIR_PREFIX = "savepoint-"

#: The external pointer of a checkpoint that was not persisted (MEM3, L6, PTR10).
NON_ADDRESSABLE_POINTER = "<checkpoint-not-externally-addressable>"

#: The four magic bytes that start a path-encoded location reference (REF2).
REFERENCE_MAGIC_NUMBER = bytes((0x05, 0x5F, 0x3F, 0x18))


# --------------------------------------------------------------------------- value types


@dataclass(frozen=True, slots=True)
class JobID:
    """A job's identity: 16 bytes, printed as 32 lowercase hex characters (L2)."""

    bytes_: bytes

    def __post_init__(self) -> None:
        if self.bytes_ is None:
            raise MissingArgumentError("JobID needs 16 bytes, got None")
        if not isinstance(self.bytes_, bytes | bytearray):
            raise InvalidArgumentTypeError(
                f"JobID needs 16 bytes, got {type(self.bytes_).__name__}"
            )
        if len(self.bytes_) != 16:
            raise InvalidArgumentError(f"JobID needs exactly 16 bytes, got {len(self.bytes_)}")
        object.__setattr__(self, "bytes_", bytes(self.bytes_))

    @classmethod
    def generate(cls) -> JobID:
        """A new random job id."""
        return cls(secrets.token_bytes(16))

    @classmethod
    def from_hex(cls, text: str) -> JobID:
        """Parse the 32-hex-character form that ``str()`` prints."""
        if text is None:
            raise MissingArgumentError("JobID.from_hex needs a string, got None")
        if not isinstance(text, str):
            raise InvalidArgumentTypeError(
                f"JobID.from_hex needs a string of 32 hex characters, got {type(text).__name__}"
            )
        if len(text) != 32:
            raise InvalidArgumentError(
                f"a JobID is 32 hex characters, got {len(text)}: {_shown(text, 77)!r}"
            )
        try:
            return cls(bytes.fromhex(text))
        except ValueError as exc:
            raise InvalidArgumentError(
                f"a JobID is 32 hex characters, got {_shown(text, 80)!r}"
            ) from exc

    def __str__(self) -> str:
        return self.bytes_.hex()

    def __repr__(self) -> str:
        return f"JobID('{self}')"


class CheckpointedStateScope(enum.StrEnum):
    """Who owns a piece of checkpointed state (S3).

    EXCLUSIVE state belongs to one checkpoint (its ``chk-<n>`` directory); SHARED state may be
    referenced by several checkpoints (``shared/``).
    """

    EXCLUSIVE = "exclusive"
    SHARED = "shared"


class CheckpointStorageLocationReference:
    """Tells a worker where a checkpoint's state goes (REF1).

    The *default* reference (``CheckpointStorageLocationReference.default()``) means "the
    location your own configuration derives from the checkpoint id" and is a singleton, also
    after pickling. Any other reference wraps non-empty bytes, usually an encoded path
    (``encode_path_as_reference``). References compare by their bytes.
    """

    __slots__ = ("_bytes",)
    _DEFAULT: CheckpointStorageLocationReference | None = None

    def __init__(self, reference_bytes: bytes) -> None:
        if reference_bytes is None:
            raise MissingArgumentError("reference bytes must not be None")
        if not isinstance(reference_bytes, bytes | bytearray | memoryview):
            raise InvalidArgumentTypeError(
                f"reference bytes must be bytes, got {type(reference_bytes).__name__}"
            )
        if len(reference_bytes) == 0:
            raise InvalidArgumentError(
                "reference bytes must not be empty; "
                "use CheckpointStorageLocationReference.default()"
            )
        self._bytes: bytes | None = bytes(reference_bytes)

    @classmethod
    def default(cls) -> CheckpointStorageLocationReference:
        """The singleton default reference."""
        if cls._DEFAULT is None:
            instance = object.__new__(cls)
            instance._bytes = None
            cls._DEFAULT = instance
        return cls._DEFAULT

    @property
    def is_default(self) -> bool:
        return self._bytes is None

    @property
    def reference_bytes(self) -> bytes:
        """The wrapped bytes; empty for the default reference."""
        return b"" if self._bytes is None else self._bytes

    def __reduce__(self) -> tuple[Any, ...]:
        if self._bytes is None:
            return (_default_reference, ())
        return (CheckpointStorageLocationReference, (self._bytes,))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CheckpointStorageLocationReference):
            return NotImplemented
        return self._bytes == other._bytes

    def __hash__(self) -> int:
        return hash(self._bytes)

    def __repr__(self) -> str:
        if self._bytes is None:
            return "CheckpointStorageLocationReference.default()"
        if self._bytes.startswith(REFERENCE_MAGIC_NUMBER):
            try:
                path = decode_path_from_reference(self)
            except InvalidReferenceError:
                pass
            else:
                from ckptstore.redaction import redact_text

                return f"CheckpointStorageLocationReference(path={redact_text(path)!r})"
        return f"CheckpointStorageLocationReference({self._bytes!r})"


def _shown(text: str, limit: int) -> str:
    """``text`` as a message may show it: credentials removed, then cut (redaction module)."""
    from ckptstore.redaction import redact_text

    return redact_text(text, limit=limit)


def _default_reference() -> CheckpointStorageLocationReference:
    return CheckpointStorageLocationReference.default()


def encode_path_as_reference(path: str) -> CheckpointStorageLocationReference:
    """Encode a path or URL as a reference: the magic bytes, then UTF-8 (REF2)."""
    if path is None:
        raise MissingArgumentError("path must not be None")
    if not isinstance(path, str):
        raise InvalidArgumentTypeError(f"path must be a string, got {type(path).__name__}")
    if not path:
        raise InvalidArgumentError("path must not be empty")
    try:
        encoded = path.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidArgumentError("path is not valid UTF-8 text") from exc
    return CheckpointStorageLocationReference(REFERENCE_MAGIC_NUMBER + encoded)


def decode_path_from_reference(reference: CheckpointStorageLocationReference) -> str:
    """Decode a reference made by ``encode_path_as_reference`` (REF3).

    Raises ``InvalidReferenceError`` (a ``ValueError``) for the default reference, a reference
    of four bytes or fewer, a wrong magic number, or bytes that are not UTF-8.
    """
    if reference is None:
        raise MissingArgumentError("reference must not be None")
    if not isinstance(reference, CheckpointStorageLocationReference):
        raise InvalidArgumentTypeError(
            f"reference must be a CheckpointStorageLocationReference, got "
            f"{type(reference).__name__}"
        )
    if reference.is_default:
        raise InvalidReferenceError("Cannot decode default reference")
    raw = reference.reference_bytes
    if len(raw) <= len(REFERENCE_MAGIC_NUMBER):
        raise InvalidReferenceError("Reference too short.")
    if not raw.startswith(REFERENCE_MAGIC_NUMBER):
        raise InvalidReferenceError("Reference starts with the wrong magic number")
    try:
        return raw[len(REFERENCE_MAGIC_NUMBER) :].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidReferenceError("Reference cannot be decoded to a path") from exc


# --------------------------------------------------------------------------- state handles


@runtime_checkable
class StreamStateHandle(Protocol):
    """A handle to a piece of checkpointed state: its bytes, wherever they live.

    Handles are picklable values. ``state_size`` is the number of bytes (``-1`` if unknown).
    A handle that names a file carries no credentials; read or discarded in another process
    it finds its connection settings by the rule of this module's docstring ("Handles read
    elsewhere": same store, else same scheme and bucket, else the library's process-wide
    configuration), and an unreachable endpoint raises ``OSError`` in seconds.
    """

    @property
    def state_size(self) -> int: ...

    def open_input_stream(self) -> BinaryIO:
        """A binary stream that reads the state from its start."""
        ...

    def as_bytes_if_in_memory(self) -> bytes | None:
        """The state itself when it is held inline in the handle, else ``None``."""
        ...

    def discard_state(self) -> None:
        """Delete the state's file, if it has one; never touch any directory (H2)."""
        ...


@runtime_checkable
class FileStateHandle(StreamStateHandle, Protocol):
    """State in a file; ``file_path`` is an absolute URL such as ``s3://bucket/key``."""

    @property
    def file_path(self) -> str: ...


@runtime_checkable
class RelativeFileStateHandle(FileStateHandle, Protocol):
    """State in a file of its checkpoint directory, remembered by its bare file name.

    ``relative_path`` is one path segment. A completed location rebases such handles onto
    its own directory (``CompletedCheckpointStorageLocation.resolve_handle``), which is what
    lets a moved savepoint restore (H6).
    """

    @property
    def relative_path(self) -> str: ...


@dataclass(frozen=True, slots=True)
class ByteStreamStateHandle:
    """Inline state: the bytes travel inside the handle (H4). Discarding it does nothing."""

    handle_name: str
    data: bytes = field(repr=False)

    def __post_init__(self) -> None:
        if self.handle_name is None or self.data is None:
            raise MissingArgumentError("ByteStreamStateHandle needs a name and bytes")
        if not isinstance(self.handle_name, str):
            raise InvalidArgumentTypeError(
                f"handle_name must be a string, got {type(self.handle_name).__name__}"
            )
        if not isinstance(self.data, bytes | bytearray | memoryview):
            raise InvalidArgumentTypeError(
                f"data must be bytes-like, got {type(self.data).__name__}"
            )
        object.__setattr__(self, "data", bytes(self.data))

    @classmethod
    def of(cls, handle_name: str, data: bytes) -> ByteStreamStateHandle:
        """A handle from a name and bytes the caller already holds as ``str`` and ``bytes``.

        What storages call for every small state: it skips the argument checks of the
        constructor (about half the cost of a small inline state), so the caller vouches
        for the types.
        """
        handle = object.__new__(cls)
        _set_handle_name(handle, handle_name)
        _set_data(handle, data)
        return handle

    @classmethod
    def with_random_name(cls, data: bytes, prefix: str = "") -> ByteStreamStateHandle:
        """A handle named ``<prefix>/<random uuid>`` (or the uuid alone without a prefix).

        Deprecated: name the handle yourself (``ByteStreamStateHandle(name, data)``); kept,
        with a ``DeprecationWarning``, for storages written against the earlier contract.
        """
        warnings.warn(
            "ByteStreamStateHandle.with_random_name is deprecated: name the handle yourself "
            "with ByteStreamStateHandle(name, data)",
            DeprecationWarning,
            stacklevel=2,
        )
        name = str(uuid.uuid4())
        return cls(f"{prefix.rstrip('/')}/{name}" if prefix else name, data)

    @property
    def state_size(self) -> int:
        return len(self.data)

    def open_input_stream(self) -> BinaryIO:
        return io.BytesIO(self.data)

    def as_bytes_if_in_memory(self) -> bytes | None:
        return self.data

    def discard_state(self) -> None:
        return None

    def __repr__(self) -> str:
        return f"ByteStreamStateHandle({self.handle_name!r}, {len(self.data)} bytes)"


# The slots' own setters: half the cost of object.__setattr__, which looks the name up.
_set_handle_name = ByteStreamStateHandle.__dict__["handle_name"].__set__
_set_data = ByteStreamStateHandle.__dict__["data"].__set__


# --------------------------------------------------------------------------- streams


@runtime_checkable
class CheckpointStateOutputStream(Protocol):
    """A binary, write-only stream for one piece of state (S4-S16).

    ``close_and_get_handle()`` ends the stream and returns the handle to what was written,
    or ``None`` when nothing was written. ``close()`` discards: it removes the stream's own
    file, if one was created, and nothing else. Both are safe to call from another thread.
    Writing after either raises ``OSError`` or ``ValueError``. ``tell()`` counts every byte
    written. Used as a context manager, leaving the block closes (discards) the stream
    unless a handle was already taken.
    """

    def write(self, data: bytes | bytearray | memoryview, /) -> int: ...

    def flush(self) -> None: ...

    def tell(self) -> int: ...

    @property
    def closed(self) -> bool: ...

    def close_and_get_handle(self) -> StreamStateHandle | None: ...

    def close(self) -> None: ...

    def __enter__(self) -> CheckpointStateOutputStream: ...

    def __exit__(self, *exc_info: object) -> None: ...


@runtime_checkable
class CheckpointStreamFactory(Protocol):
    """Creates state streams for one checkpoint location (S2, S3, S17).

    It never creates or checks directories: they exist already (S1).
    """

    def create_checkpoint_state_output_stream(
        self, scope: CheckpointedStateScope
    ) -> CheckpointStateOutputStream: ...

    def can_fast_duplicate(self, handle: StreamStateHandle, scope: CheckpointedStateScope) -> bool:
        """Whether ``duplicate`` can copy this handle into ``scope`` without re-uploading it."""
        ...

    def duplicate(
        self, handles: Sequence[StreamStateHandle], scope: CheckpointedStateScope
    ) -> list[StreamStateHandle]:
        """Copy the handles' state into ``scope``'s directory; ``ValueError`` if unsupported."""
        ...


@runtime_checkable
class CompletedCheckpointStorageLocation(Protocol):
    """A finalized checkpoint or savepoint (MD4, MD6, PTR9)."""

    @property
    def external_pointer(self) -> str:
        """The string that ``resolve_checkpoint`` accepts to find this checkpoint again."""
        ...

    @property
    def metadata_handle(self) -> StreamStateHandle: ...

    def dispose_storage_location(self) -> None:
        """Delete the checkpoint's own directory (never ``shared/`` or ``taskowned/``)."""
        ...

    def resolve_handle(self, handle: StreamStateHandle) -> StreamStateHandle:
        """Rebase a relative handle onto this location's directory; others come back as is.

        A relative path that is not a single file name inside the directory raises
        ``ValueError``: it never reads outside the checkpoint.
        """
        ...


@runtime_checkable
class CheckpointMetadataOutputStream(Protocol):
    """Writes ``_metadata``; invisible until finalized, and never left half-written (MD1-MD5)."""

    def write(self, data: bytes | bytearray | memoryview, /) -> int: ...

    def flush(self) -> None: ...

    def tell(self) -> int: ...

    @property
    def closed(self) -> bool: ...

    def close_and_finalize_checkpoint(self) -> CompletedCheckpointStorageLocation: ...

    def close(self) -> None: ...

    def __enter__(self) -> CheckpointMetadataOutputStream: ...

    def __exit__(self, *exc_info: object) -> None: ...


@runtime_checkable
class CheckpointStorageLocation(CheckpointStreamFactory, Protocol):
    """The coordinator's handle on one in-progress checkpoint or savepoint (ACC12)."""

    def create_metadata_output_stream(self) -> CheckpointMetadataOutputStream: ...

    def dispose_on_failure(self) -> None:
        """Delete everything of this (aborted) location's exclusive directory (MD7)."""
        ...

    @property
    def location_reference(self) -> CheckpointStorageLocationReference: ...


@runtime_checkable
class CheckpointStateToolset(Protocol):
    """Operations on the task-owned state location (TO4, TO5)."""

    def can_fast_duplicate(self, handle: StreamStateHandle) -> bool: ...

    def duplicate(self, handles: Sequence[StreamStateHandle]) -> list[StreamStateHandle]: ...


@runtime_checkable
class CheckpointStorageAccess(Protocol):
    """One job's view of the storage: the coordinator's methods and the worker's (CS2)."""

    # coordinator view
    def supports_highly_available_storage(self) -> bool: ...

    def has_default_savepoint_location(self) -> bool: ...

    def resolve_checkpoint(self, external_pointer: str) -> CompletedCheckpointStorageLocation: ...

    def initialize_base_locations_for_checkpoint(self) -> None: ...

    def initialize_location_for_checkpoint(
        self, checkpoint_id: int
    ) -> CheckpointStorageLocation: ...

    def initialize_location_for_savepoint(
        self, checkpoint_id: int, external_location_pointer: str | None = None
    ) -> CheckpointStorageLocation: ...

    # worker view
    def resolve_checkpoint_storage_location(
        self, checkpoint_id: int, reference: CheckpointStorageLocationReference
    ) -> CheckpointStreamFactory: ...

    def create_task_owned_state_stream(self) -> CheckpointStateOutputStream: ...

    def create_task_owned_checkpoint_state_toolset(self) -> CheckpointStateToolset: ...


@runtime_checkable
class CheckpointStorage(Protocol):
    """A picklable, thread-safe factory that holds configuration only (CS1)."""

    def create_checkpoint_storage(self, job_id: JobID) -> CheckpointStorageAccess: ...

    def resolve_checkpoint(self, external_pointer: str) -> CompletedCheckpointStorageLocation: ...
