"""Flink 2.3.0's own checkpoint storages behind the ``ckptstore.api`` contract.

Every object here wraps the Java object Flink itself uses and forwards each call to it through
this process's JVM gateway (the kit's ``ckptconform.flink.gateway``); nothing of Flink's
behaviour is redone in Python. The adapter does only what a typed Java caller gets for free:
it refuses a Python value that no Java signature could take (``JavaTypeError``, a
``TypeError`` and a ``ValueError``), converts values (``JobID``, scopes, references, handles)
and maps Java exceptions to the contract's built-in types.

- ``FlinkCheckpointStorage`` holds configuration only (``FlinkConfig``): it pickles to that,
  and each process builds its own Java storage from it (``FileSystemCheckpointStorage`` or
  ``JobManagerCheckpointStorage``, then ``configure`` with the savepoint directory), the way
  Flink ships its storage to the JobManager.
- State handles: Flink's ``ByteStreamStateHandle`` becomes the contract's
  ``ckptstore.api.ByteStreamStateHandle`` (name and bytes); ``FileStateHandle`` and
  ``RelativeFileStateHandle`` become ``FlinkFileStateHandle`` / ``FlinkRelativeFileStateHandle``,
  which pickle to what Flink's Java serialization holds (path, relative path, size) and rebuild
  the Java handle in the process that reads or discards them. Paths are spelled as Flink's
  ``Path.toString()`` does (``file:/tmp/...``).
- Completed locations pickle to Flink's own Java serialization of the completed location
  (``InstantiationUtil.serializeObject``) and are deserialized by the receiving JVM.
- ``resolve_handle`` (the contract's rebasing of relative handles, which Flink does while it
  reads ``_metadata``) follows Flink's metadata deserializer: a relative handle becomes
  ``RelativeFileStateHandle(new Path(<exclusive dir of the pointer>, relativePath), ...)``; any
  other handle comes back as is.
"""

from __future__ import annotations

import io
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO, Self, cast

from ckptconform.flink.gateway import JavaTypeError, java_errors, jvm
from ckptstore.api import (
    ByteStreamStateHandle,
    CheckpointedStateScope,
    CheckpointStorageLocationReference,
    JobID,
    StreamStateHandle,
)

__all__ = [
    "FlinkCheckpointStorage",
    "FlinkCompletedLocation",
    "FlinkConfig",
    "FlinkFileStateHandle",
    "FlinkRelativeFileStateHandle",
    "FlinkStorageAccess",
    "to_flink_handle",
]

_JAVA_LONG = (-(2**63), 2**63 - 1)
_JAVA_INT = (-(2**31), 2**31 - 1)

FILESYSTEM = "filesystem"
JOBMANAGER = "jobmanager"


# --------------------------------------------------------------------------- conversions


def _state() -> Any:
    return jvm().org.apache.flink.runtime.state


def _java_path(path: str) -> Any:
    return jvm().org.apache.flink.core.fs.Path(_string(path, "path", nullable=False))


def _long(value: Any, what: str) -> int:
    if value is None or isinstance(value, bool) or not isinstance(value, int):
        raise JavaTypeError(f"{what} is a Java long; got {type(value).__name__} {value!r}")
    if not _JAVA_LONG[0] <= value <= _JAVA_LONG[1]:
        raise JavaTypeError(f"{what} is a Java long; {value} is out of its range")
    return value


def _string(value: Any, what: str, *, nullable: bool = True) -> str | None:
    if value is None and nullable:
        return None
    if not isinstance(value, str):
        raise JavaTypeError(f"{what} is a Java String; got {type(value).__name__} {value!r}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        # py4j sends strings as UTF-8: a lone surrogate cannot reach the JVM at all
        raise JavaTypeError(
            f"{what} cannot cross the JVM gateway (not UTF-8 text): {value!r}"
        ) from None
    return value


def _require_java_typed(handle: Any) -> None:
    """What Java's types guarantee of every StreamStateHandle that reaches a Java method: its
    state size is a long, a file handle's path and a relative handle's relative path are
    strings. A Python object that breaks them could not have been passed to Flink at all."""
    size = getattr(handle, "state_size", None)
    if isinstance(size, bool) or not isinstance(size, int):
        raise JavaTypeError(
            f"handle: a StreamStateHandle's state size is a Java long; got {size!r} in {handle!r}"
        )
    _string(getattr(handle, "file_path", None), "handle.file_path")
    _string(getattr(handle, "relative_path", None), "handle.relative_path")


def _scope(scope: Any) -> Any:
    if scope is None:
        return None  # Java passes null on; Flink decides what that means
    try:
        value = CheckpointedStateScope(scope)
    except (ValueError, TypeError):
        raise JavaTypeError(
            f"scope is a CheckpointedStateScope; got {type(scope).__name__} {scope!r}"
        ) from None
    enum = _state().CheckpointedStateScope
    return enum.EXCLUSIVE if value is CheckpointedStateScope.EXCLUSIVE else enum.SHARED


def _job_id(job_id: Any) -> Any:
    if job_id is None:
        return None
    if not isinstance(job_id, JobID):
        raise JavaTypeError(f"job_id is a JobID; got {type(job_id).__name__} {job_id!r}")
    return jvm().org.apache.flink.api.common.JobID.fromByteArray(job_id.bytes_)


def _reference_to_java(reference: Any) -> Any:
    if reference is None:
        return None
    if not isinstance(reference, CheckpointStorageLocationReference):
        raise JavaTypeError(
            "reference is a CheckpointStorageLocationReference; got "
            f"{type(reference).__name__} {reference!r}"
        )
    java_ref = _state().CheckpointStorageLocationReference
    if reference.is_default:
        return java_ref.getDefault()
    return java_ref(reference.reference_bytes)


def _reference_from_java(java_ref: Any) -> CheckpointStorageLocationReference:
    if java_ref.isDefaultReference():
        return CheckpointStorageLocationReference.default()
    return CheckpointStorageLocationReference(bytes(java_ref.getReferenceBytes()))


def _handle_from_java(java_handle: Any) -> StreamStateHandle | None:
    """The Python value of a Java ``StreamStateHandle`` (None for null)."""
    if java_handle is None:
        return None
    name = str(java_handle.getClass().getName())
    state = "org.apache.flink.runtime.state."
    if name == state + "memory.ByteStreamStateHandle":
        return ByteStreamStateHandle(str(java_handle.getHandleName()), bytes(java_handle.getData()))
    if name == state + "filesystem.RelativeFileStateHandle":
        return FlinkRelativeFileStateHandle(
            str(java_handle.getFilePath().toString()),
            str(java_handle.getRelativePath()),
            int(java_handle.getStateSize()),
            _java=java_handle,
        )
    if name == state + "filesystem.FileStateHandle":
        return FlinkFileStateHandle(
            str(java_handle.getFilePath().toString()),
            int(java_handle.getStateSize()),
            _java=java_handle,
        )
    return ForeignJavaStateHandle(java_handle)


def _handle_to_java(handle: Any) -> Any:
    """The Java ``StreamStateHandle`` for a Python handle (ours, the contract's or foreign)."""
    if handle is None:
        return None
    if isinstance(handle, FlinkFileStateHandle | ForeignJavaStateHandle):
        return handle.java()
    state = _state()
    if isinstance(handle, ByteStreamStateHandle):
        name = _string(handle.handle_name, "handle_name", nullable=False)
        return state.memory.ByteStreamStateHandle(name, handle.data)
    path = getattr(handle, "file_path", None)
    size = getattr(handle, "state_size", None)
    if isinstance(path, str) and isinstance(size, int):
        relative = getattr(handle, "relative_path", None)
        if isinstance(relative, str):
            relative = _string(relative, "relative_path")
            return state.filesystem.RelativeFileStateHandle(_java_path(path), relative, size)
        return state.filesystem.FileStateHandle(_java_path(path), size)
    inline = getattr(handle, "as_bytes_if_in_memory", None)
    data = inline() if callable(inline) else None
    if isinstance(data, bytes | bytearray):
        name = str(getattr(handle, "handle_name", "python-inline-state"))
        return state.memory.ByteStreamStateHandle(name, bytes(data))
    raise JavaTypeError(f"a StreamStateHandle is needed; got {type(handle).__name__} {handle!r}")


def to_flink_handle(handle: StreamStateHandle) -> StreamStateHandle:
    """Any contract handle as the handle Flink would hold: reads and discards go through Java.

    A file handle (``file_path``, ``state_size``, maybe ``relative_path``) becomes Flink's
    ``FileStateHandle`` / ``RelativeFileStateHandle`` of that path; an inline handle stays the
    contract's ``ByteStreamStateHandle`` (Flink's holds the same name and bytes).
    """
    java_handle = _handle_to_java(handle)
    with java_errors(f"convert {handle!r}"):
        converted = _handle_from_java(java_handle)
    if converted is None:
        raise JavaTypeError("a StreamStateHandle is needed; got None")
    return converted


def _handles_to_java(handles: Any) -> Any:
    if handles is None:
        return None
    if isinstance(handles, str | bytes) or not isinstance(handles, Sequence):
        raise JavaTypeError(f"handles is a List<StreamStateHandle>; got {type(handles).__name__}")
    java_list = jvm().java.util.ArrayList()
    for handle in handles:
        java_list.add(_handle_to_java(handle))
    return java_list


def _handles_from_java(java_list: Any) -> list[StreamStateHandle]:
    result = []
    # by index, not py4j's iterator: that one ends on a Java exception, which PySpark's error
    # handler (installed in a process that ran Spark) turns into an AssertionError
    for java_handle in java_list.toArray():
        handle = _handle_from_java(java_handle)
        assert handle is not None
        result.append(handle)
    return result


def _bytes(data: Any) -> bytes:
    if isinstance(data, bytes):
        return data
    if isinstance(data, bytearray | memoryview):
        return bytes(data)
    raise JavaTypeError(f"write(data): data must be bytes-like; got {type(data).__name__}")


# --------------------------------------------------------------------------- reading


class _JavaInputStream(io.RawIOBase):
    """A raw binary stream over a Java ``FSDataInputStream`` (bytes cross as copies)."""

    def __init__(self, java_stream: Any, name: str) -> None:
        super().__init__()
        self._java = java_stream
        self._name = name

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        if len(view) == 0:
            return 0
        with java_errors(f"read {self._name}"):
            data = self._java.readNBytes(len(view))
        n = len(data)
        view[:n] = data
        return n

    def readall(self) -> bytes:
        with java_errors(f"read {self._name}"):
            return bytes(self._java.readAllBytes())

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        with java_errors(f"seek {self._name}"):
            if whence == io.SEEK_CUR:
                offset += int(self._java.getPos())
            elif whence == io.SEEK_END:
                raise io.UnsupportedOperation("Flink's input streams seek from the start only")
            self._java.seek(offset)
            return int(self._java.getPos())

    def tell(self) -> int:
        with java_errors(f"tell {self._name}"):
            return int(self._java.getPos())

    def close(self) -> None:
        if not self.closed:
            try:
                with java_errors(f"close {self._name}"):
                    self._java.close()
            finally:
                super().close()


def _open(java_handle: Any, name: str) -> BinaryIO:
    with java_errors(f"openInputStream of {name}"):
        java_stream = java_handle.openInputStream()
    return cast(BinaryIO, io.BufferedReader(_JavaInputStream(java_stream, name), 1 << 20))


# --------------------------------------------------------------------------- handles


class FlinkFileStateHandle:
    """Flink's ``FileStateHandle``: a path and a size; equal by path (H1)."""

    __slots__ = ("_java_handle", "_path", "_pid", "_size")

    def __init__(self, file_path: str, state_size: int, *, _java: Any = None) -> None:
        self._path = file_path
        self._size = state_size
        self._java_handle = _java
        self._pid = os.getpid()

    def java(self) -> Any:
        """The Java handle, made anew in a process forked since (its JVM is another)."""
        if self._java_handle is None or self._pid != os.getpid():
            with java_errors(f"new FileStateHandle({self._path!r})"):
                self._java_handle = self._build()
            self._pid = os.getpid()
        return self._java_handle

    def _build(self) -> Any:
        return _state().filesystem.FileStateHandle(_java_path(self._path), self._size)

    @property
    def file_path(self) -> str:
        return self._path

    @property
    def state_size(self) -> int:
        return self._size

    def open_input_stream(self) -> BinaryIO:
        return _open(self.java(), self._path)

    def as_bytes_if_in_memory(self) -> bytes | None:
        return None

    def discard_state(self) -> None:
        with java_errors(f"discardState of {self._path}"):
            self.java().discardState()

    def __reduce__(self) -> tuple[Any, ...]:
        return (FlinkFileStateHandle, (self._path, self._size))

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self) or not isinstance(other, FlinkFileStateHandle):
            return NotImplemented
        return self._path == other._path

    def __hash__(self) -> int:
        return hash(self._path)

    def __repr__(self) -> str:
        return f"FlinkFileStateHandle({self._path!r}, {self._size} bytes)"


class FlinkRelativeFileStateHandle(FlinkFileStateHandle):
    """Flink's ``RelativeFileStateHandle``: also the bare file name inside its directory (H3)."""

    __slots__ = ("_relative",)

    def __init__(
        self, file_path: str, relative_path: str, state_size: int, *, _java: Any = None
    ) -> None:
        super().__init__(file_path, state_size, _java=_java)
        self._relative = relative_path

    def _build(self) -> Any:
        return _state().filesystem.RelativeFileStateHandle(
            _java_path(self._path), self._relative, self._size
        )

    @property
    def relative_path(self) -> str:
        return self._relative

    def __reduce__(self) -> tuple[Any, ...]:
        return (FlinkRelativeFileStateHandle, (self._path, self._relative, self._size))

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self) or not isinstance(other, FlinkRelativeFileStateHandle):
            return NotImplemented
        return self._path == other._path and self._relative == other._relative

    def __hash__(self) -> int:
        return hash((self._path, self._relative))

    def __repr__(self) -> str:
        return (
            f"FlinkRelativeFileStateHandle({self._path!r}, {self._relative!r}, {self._size} bytes)"
        )


class ForeignJavaStateHandle:
    """Any other Java ``StreamStateHandle`` (not expected from these storages)."""

    def __init__(self, java_handle: Any) -> None:
        self._java_handle = java_handle

    def java(self) -> Any:
        return self._java_handle

    @property
    def state_size(self) -> int:
        return int(self._java_handle.getStateSize())

    def open_input_stream(self) -> BinaryIO:
        return _open(self._java_handle, str(self._java_handle.toString()))

    def as_bytes_if_in_memory(self) -> bytes | None:
        data = self._java_handle.asBytesIfInMemory()
        return bytes(data.get()) if data.isPresent() else None

    def discard_state(self) -> None:
        with java_errors("discardState"):
            self._java_handle.discardState()


# --------------------------------------------------------------------------- streams


class _JavaOutputStream:
    """What both of Flink's output streams share: writes, position, state and close."""

    def __init__(self, java_stream: Any, what: str) -> None:
        self._java = java_stream
        self._what = what
        #: whether close() or a finalize was called here: ``closed`` for a Java stream without
        #: isClosed() (the in-memory metadata stream of Flink's non-persistent location)
        self._ended = False
        self._has_is_closed = True

    def write(self, data: bytes | bytearray | memoryview, /) -> int:
        payload = _bytes(data)
        with java_errors(f"write to {self._what}"):
            self._java.write(payload)
        return len(payload)

    def flush(self) -> None:
        with java_errors(f"flush {self._what}"):
            self._java.flush()

    def tell(self) -> int:
        with java_errors(f"getPos of {self._what}"):
            return int(self._java.getPos())

    @property
    def closed(self) -> bool:
        """Java's isClosed(); a stream whose class has none (Flink's NonPersistent
        MetadataOutputStream keeps its flag private) is closed once close() or
        closeAndFinalizeCheckpoint() was called on it."""
        from py4j.protocol import Py4JError, Py4JJavaError

        if self._has_is_closed:
            with java_errors(f"isClosed of {self._what}"):
                try:
                    return bool(self._java.isClosed())
                except Py4JError as exc:
                    if isinstance(exc, Py4JJavaError) or "does not exist" not in str(exc):
                        raise
                    self._has_is_closed = False
        return self._ended

    def close(self) -> None:
        with java_errors(f"close {self._what}"):
            self._java.close()
        self._ended = True

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._what})"


class FlinkStateOutputStream(_JavaOutputStream):
    """Flink's ``CheckpointStateOutputStream``: every ``write`` is one Java ``write(byte[])``."""

    def close_and_get_handle(self) -> StreamStateHandle | None:
        with java_errors(f"closeAndGetHandle of {self._what}"):
            return _handle_from_java(self._java.closeAndGetHandle())


class FlinkMetadataOutputStream(_JavaOutputStream):
    """Flink's ``CheckpointMetadataOutputStream`` (``_metadata``)."""

    def close_and_finalize_checkpoint(self) -> FlinkCompletedLocation:
        try:
            with java_errors(f"closeAndFinalizeCheckpoint of {self._what}"):
                return FlinkCompletedLocation(self._java.closeAndFinalizeCheckpoint())
        finally:
            self._ended = True


# --------------------------------------------------------------------------- factories


class FlinkStreamFactory:
    """Flink's ``CheckpointStreamFactory`` (what a worker resolves from a reference)."""

    def __init__(self, java_factory: Any) -> None:
        self._java = java_factory
        self._what = str(java_factory.toString())

    def create_checkpoint_state_output_stream(
        self, scope: CheckpointedStateScope
    ) -> FlinkStateOutputStream:
        java_scope = _scope(scope)
        with java_errors(f"createCheckpointStateOutputStream({scope}) of {self._what}"):
            java_stream = self._java.createCheckpointStateOutputStream(java_scope)
        return FlinkStateOutputStream(java_stream, f"a {scope} state stream")

    def can_fast_duplicate(self, handle: StreamStateHandle, scope: CheckpointedStateScope) -> bool:
        java_handle = _handle_to_java(handle)
        java_scope = _scope(scope)
        with java_errors(f"canFastDuplicate({handle!r}, {scope}) of {self._what}"):
            return bool(self._java.canFastDuplicate(java_handle, java_scope))

    def duplicate(
        self, handles: Sequence[StreamStateHandle], scope: CheckpointedStateScope
    ) -> list[StreamStateHandle]:
        java_handles = _handles_to_java(handles)
        java_scope = _scope(scope)
        with java_errors(f"duplicate(..., {scope}) of {self._what}"):
            return _handles_from_java(self._java.duplicate(java_handles, java_scope))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._what})"


class FlinkLocation(FlinkStreamFactory):
    """Flink's ``CheckpointStorageLocation``: a checkpoint or savepoint being written."""

    def create_metadata_output_stream(self) -> FlinkMetadataOutputStream:
        with java_errors(f"createMetadataOutputStream of {self._what}"):
            java_stream = self._java.createMetadataOutputStream()
        return FlinkMetadataOutputStream(java_stream, f"the _metadata of {self._what}")

    def dispose_on_failure(self) -> None:
        with java_errors(f"disposeOnFailure of {self._what}"):
            self._java.disposeOnFailure()

    @property
    def location_reference(self) -> CheckpointStorageLocationReference:
        with java_errors(f"getLocationReference of {self._what}"):
            return _reference_from_java(self._java.getLocationReference())


class FlinkToolset:
    """Flink's ``CheckpointStateToolset`` for task-owned state."""

    def __init__(self, java_toolset: Any) -> None:
        self._java = java_toolset
        self._what = str(java_toolset.getClass().getSimpleName())

    def can_fast_duplicate(self, handle: StreamStateHandle) -> bool:
        java_handle = _handle_to_java(handle)
        with java_errors(f"canFastDuplicate({handle!r}) of {self._what}"):
            return bool(self._java.canFastDuplicate(java_handle))

    def duplicate(self, handles: Sequence[StreamStateHandle]) -> list[StreamStateHandle]:
        java_handles = _handles_to_java(handles)
        with java_errors(f"duplicate of {self._what}"):
            return _handles_from_java(self._java.duplicate(java_handles))

    def __repr__(self) -> str:
        return f"FlinkToolset({self._what})"


# --------------------------------------------------------------------------- completed


def _serialize(java_object: Any) -> bytes:
    util = jvm().org.apache.flink.util.InstantiationUtil
    return bytes(util.serializeObject(java_object))


def _deserialize(data: bytes) -> Any:
    view = jvm()
    loader = view.java.lang.ClassLoader.getSystemClassLoader()
    return view.org.apache.flink.util.InstantiationUtil.deserializeObject(data, loader)


def _rebuild_completed(serialized: bytes) -> FlinkCompletedLocation:
    with java_errors("deserialize a completed checkpoint location"):
        return FlinkCompletedLocation(_deserialize(serialized))


class FlinkCompletedLocation:
    """Flink's ``CompletedCheckpointStorageLocation``; pickles to its Java serialization."""

    def __init__(self, java_location: Any) -> None:
        self._java = java_location
        self._pointer = str(java_location.getExternalPointer())
        self._metadata: StreamStateHandle | None = None

    @property
    def external_pointer(self) -> str:
        return self._pointer

    @property
    def metadata_handle(self) -> StreamStateHandle:
        if self._metadata is None:
            with java_errors(f"getMetadataHandle of {self._pointer}"):
                handle = _handle_from_java(self._java.getMetadataHandle())
            assert handle is not None
            self._metadata = handle
        return self._metadata

    def dispose_storage_location(self) -> None:
        with java_errors(f"disposeStorageLocation of {self._pointer}"):
            self._java.disposeStorageLocation()

    def resolve_handle(self, handle: StreamStateHandle) -> StreamStateHandle:
        """What Flink's metadata deserializer makes of a relative handle for this pointer."""
        if not isinstance(handle, StreamStateHandle):
            # the Java signature would be resolveHandle(StreamStateHandle): no other type gets in
            raise JavaTypeError(
                f"handle is a StreamStateHandle; got {type(handle).__name__} {handle!r}"
            )
        _require_java_typed(handle)
        relative = getattr(handle, "relative_path", None)
        if relative is None:
            return handle
        relative = cast(str, _string(relative, "relative_path"))
        size = int(getattr(handle, "state_size", -1))
        with java_errors(f"rebase {relative!r} onto {self._pointer}"):
            access = _state().filesystem.AbstractFsCheckpointStorageAccess
            completed = access.resolveCheckpointPointer(self._pointer)
            exclusive_dir = completed.getExclusiveCheckpointDir()
            path = jvm().org.apache.flink.core.fs.Path(exclusive_dir, relative)
            java_handle = _state().filesystem.RelativeFileStateHandle(path, relative, size)
        return FlinkRelativeFileStateHandle(str(path.toString()), relative, size, _java=java_handle)

    def __reduce__(self) -> tuple[Any, ...]:
        with java_errors(f"serialize the completed location {self._pointer}"):
            return (_rebuild_completed, (_serialize(self._java),))

    def __repr__(self) -> str:
        return f"FlinkCompletedLocation({self._pointer!r})"


# --------------------------------------------------------------------------- access


class FlinkStorageAccess:
    """Flink's ``CheckpointStorageAccess`` for one job (coordinator and worker views)."""

    def __init__(self, java_access: Any, job_id: JobID) -> None:
        self._java = java_access
        self._job_id = job_id

    def supports_highly_available_storage(self) -> bool:
        with java_errors("supportsHighlyAvailableStorage"):
            return bool(self._java.supportsHighlyAvailableStorage())

    def has_default_savepoint_location(self) -> bool:
        with java_errors("hasDefaultSavepointLocation"):
            return bool(self._java.hasDefaultSavepointLocation())

    def resolve_checkpoint(self, external_pointer: str) -> FlinkCompletedLocation:
        pointer = _string(external_pointer, "external_pointer")
        with java_errors(f"resolveCheckpoint({external_pointer!r})"):
            return FlinkCompletedLocation(self._java.resolveCheckpoint(pointer))

    def initialize_base_locations_for_checkpoint(self) -> None:
        with java_errors(f"initializeBaseLocationsForCheckpoint of job {self._job_id}"):
            self._java.initializeBaseLocationsForCheckpoint()

    def initialize_location_for_checkpoint(self, checkpoint_id: int) -> FlinkLocation:
        cid = _long(checkpoint_id, "checkpoint_id")
        with java_errors(f"initializeLocationForCheckpoint({checkpoint_id})"):
            return FlinkLocation(self._java.initializeLocationForCheckpoint(cid))

    def initialize_location_for_savepoint(
        self, checkpoint_id: int, external_location_pointer: str | None = None
    ) -> FlinkLocation:
        cid = _long(checkpoint_id, "checkpoint_id")
        target = _string(external_location_pointer, "external_location_pointer")
        with java_errors(f"initializeLocationForSavepoint({checkpoint_id}, {target!r})"):
            return FlinkLocation(self._java.initializeLocationForSavepoint(cid, target))

    def resolve_checkpoint_storage_location(
        self, checkpoint_id: int, reference: CheckpointStorageLocationReference
    ) -> FlinkStreamFactory:
        cid = _long(checkpoint_id, "checkpoint_id")
        java_ref = _reference_to_java(reference)
        with java_errors(f"resolveCheckpointStorageLocation({checkpoint_id}, {reference!r})"):
            return FlinkStreamFactory(self._java.resolveCheckpointStorageLocation(cid, java_ref))

    def create_task_owned_state_stream(self) -> FlinkStateOutputStream:
        with java_errors("createTaskOwnedStateStream"):
            java_stream = self._java.createTaskOwnedStateStream()
        return FlinkStateOutputStream(java_stream, "a task-owned state stream")

    def create_task_owned_checkpoint_state_toolset(self) -> FlinkToolset:
        with java_errors("createTaskOwnedCheckpointStateToolset"):
            return FlinkToolset(self._java.createTaskOwnedCheckpointStateToolset())

    def __repr__(self) -> str:
        return f"FlinkStorageAccess(job {self._job_id})"


# --------------------------------------------------------------------------- storage


@dataclass(frozen=True, slots=True)
class FlinkConfig:
    """What a Flink storage is built from in any process (its pickled form)."""

    kind: str
    checkpoint_dir: str | None
    savepoint_dir: str | None = None
    #: FileSystemCheckpointStorage: ``fileStateSizeThreshold`` and ``writeBufferSize`` (-1:
    #: Flink's configuration/default)
    file_state_size_threshold: int = -1
    write_buffer_size: int = -1
    #: ``execution.checkpointing.create-subdir`` (None: Flink's default, true)
    create_subdir: bool | None = None
    #: JobManagerCheckpointStorage: ``maxStateSize`` (None: Flink's default, 5 MiB)
    max_state_size: int | None = None


def _build_storage(config: FlinkConfig) -> Any:
    """Flink's storage for ``config``, configured as Flink's loader does (``configure``)."""
    view = jvm()
    flink = view.org.apache.flink
    state = flink.runtime.state
    conf = flink.configuration.Configuration()
    if config.savepoint_dir is not None:
        conf.set(flink.configuration.CheckpointingOptions.SAVEPOINT_DIRECTORY, config.savepoint_dir)
    if config.create_subdir is not None:
        if not isinstance(config.create_subdir, bool):
            raise JavaTypeError(
                f"create_subdir is a Java boolean; got {type(config.create_subdir).__name__}"
            )
        conf.set(
            flink.configuration.CheckpointingOptions.CREATE_CHECKPOINT_SUB_DIR, config.create_subdir
        )
    loader = view.java.lang.ClassLoader.getSystemClassLoader()
    if config.kind == FILESYSTEM:
        checkpoint_dir = _string(config.checkpoint_dir, "checkpoint_dir")
        path = None if checkpoint_dir is None else _java_path(checkpoint_dir)
        threshold = config.file_state_size_threshold
        buffer = config.write_buffer_size
        checks = ((threshold, "file_state_size_threshold"), (buffer, "write_buffer_size"))
        for value, what in checks:
            if isinstance(value, bool) or not isinstance(value, int):
                raise JavaTypeError(f"{what} is a Java int; got {type(value).__name__} {value!r}")
            if not _JAVA_INT[0] <= value <= _JAVA_INT[1]:
                raise JavaTypeError(f"{what} is a Java int; {value} is out of its range")
        storage = state.storage.FileSystemCheckpointStorage(path, threshold, buffer)
        return storage.configure(conf, loader)
    if config.kind == JOBMANAGER:
        checkpoint_dir = _string(config.checkpoint_dir, "checkpoint_dir")
        path = None if checkpoint_dir is None else _java_path(checkpoint_dir)
        jm = state.storage.JobManagerCheckpointStorage
        size = config.max_state_size
        if size is None:
            size = int(jm.DEFAULT_MAX_STATE_SIZE)
        if isinstance(size, bool) or not isinstance(size, int):
            raise JavaTypeError(f"max_state_size is a Java int; got {type(size).__name__} {size!r}")
        if not _JAVA_INT[0] <= size <= _JAVA_INT[1]:
            raise JavaTypeError(f"max_state_size is a Java int; {size} is out of its range")
        return jm(path, size).configure(conf, loader)
    raise ValueError(f"unknown Flink storage kind {config.kind!r}")


class FlinkCheckpointStorage:
    """Flink's ``FileSystemCheckpointStorage`` or ``JobManagerCheckpointStorage`` (CS1).

    Constructing one builds the Java storage at once (so Flink's own argument checks raise
    here); an unpickled copy builds its own Java storage on first use in its process.
    """

    def __init__(self, config: FlinkConfig, *, eager: bool = True) -> None:
        self._config = config
        self._lock = threading.Lock()
        self._java_storage: Any = None
        self._pid = 0
        if eager:
            self._java()

    @property
    def config(self) -> FlinkConfig:
        return self._config

    def _java(self) -> Any:
        import os

        with self._lock:
            if self._java_storage is None or self._pid != os.getpid():
                with java_errors(f"create Flink's {self._config.kind} checkpoint storage"):
                    self._java_storage = _build_storage(self._config)
                self._pid = os.getpid()
            return self._java_storage

    def create_checkpoint_storage(self, job_id: JobID) -> FlinkStorageAccess:
        java_job = _job_id(job_id)
        storage = self._java()
        with java_errors(f"createCheckpointStorage({job_id!r})"):
            return FlinkStorageAccess(storage.createCheckpointStorage(java_job), job_id)

    def resolve_checkpoint(self, external_pointer: str) -> FlinkCompletedLocation:
        pointer = _string(external_pointer, "external_pointer")
        storage = self._java()
        with java_errors(f"resolveCheckpoint({external_pointer!r})"):
            return FlinkCompletedLocation(storage.resolveCheckpoint(pointer))

    def __reduce__(self) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        return (_unpickle_storage, (self._config,))

    def __repr__(self) -> str:
        c = self._config
        return (
            f"FlinkCheckpointStorage({c.kind}, {c.checkpoint_dir!r}, "
            f"savepoints={c.savepoint_dir!r})"
        )


def _unpickle_storage(config: FlinkConfig) -> FlinkCheckpointStorage:
    return FlinkCheckpointStorage(config, eager=False)
