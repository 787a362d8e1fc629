"""The JobManager storage's checkpoint and savepoint locations (MEM3, L5, L6, PTR10, MD7).

State is always inline (``ckptstore.jobmanager.memory_streams``); a location differs only in
where its ``_metadata`` goes:

* ``PersistentMetadataCheckpointStorageLocation``: to the file ``<dir>/_metadata`` of a
  ``chk-<n>`` directory (with a checkpoint path) or a ``savepoint-...`` directory, written and
  finalized as the file-system storage does (``ckptstore.filesystem.metadata``);
* ``NonPersistentMetadataCheckpointStorageLocation``: nowhere (no checkpoint path); the
  metadata stays in memory and its completed location,
  ``NonPersistentCompletedCheckpointStorageLocation``, has the pointer
  ``NON_ADDRESSABLE_POINTER``, which resolves nowhere.

These classes were defined in ``ckptstore.jobmanager.storage``, which still exports them, so
pickles that name them there load.
"""

from __future__ import annotations

import io
import threading
from dataclasses import dataclass

from ckptstore.api import (
    METADATA_FILE_NAME,
    NON_ADDRESSABLE_POINTER,
    ByteStreamStateHandle,
    CheckpointStorageLocationReference,
    StreamStateHandle,
)
from ckptstore.calls import public_call
from ckptstore.errors import InvalidHandleError, StreamClosedError
from ckptstore.filesystem.layout import require_disposable
from ckptstore.filesystem.metadata import FsCheckpointMetadataOutputStream
from ckptstore.jobmanager.memory_streams import MemCheckpointStreamFactory
from ckptstore.names import unique_name
from ckptstore.paths import StoragePath
from ckptstore.stores.operations import delete_tree
from ckptstore.stores.registry import filesystem_for
from ckptstore.validation import require_bytes, require_handle

__all__ = [
    "MemoryCheckpointStorageLocation",
    "NonPersistentCompletedCheckpointStorageLocation",
    "NonPersistentMetadataCheckpointStorageLocation",
    "PersistentMetadataCheckpointStorageLocation",
]


class PersistentMetadataCheckpointStorageLocation(MemCheckpointStreamFactory):
    """A checkpoint or savepoint whose state is inline but whose ``_metadata`` is a file (MEM3)."""

    def __init__(self, checkpoint_dir: StoragePath, max_state_size: int, fs_token: str) -> None:
        super().__init__(max_state_size)
        self._dir = checkpoint_dir
        self._fs_token = fs_token

    @property
    def checkpoint_directory(self) -> str:
        return self._dir.url

    @property
    def metadata_file_path(self) -> str:
        return self._dir.child(METADATA_FILE_NAME).url

    @property
    def location_reference(self) -> CheckpointStorageLocationReference:
        return CheckpointStorageLocationReference.default()

    @public_call
    def create_metadata_output_stream(self) -> FsCheckpointMetadataOutputStream:
        return FsCheckpointMetadataOutputStream(
            self._dir.child(METADATA_FILE_NAME), self._dir, fs_token=self._fs_token
        )

    @public_call
    def dispose_on_failure(self) -> None:
        """Delete the checkpoint's directory and everything in it (MD7).

        Only a ``chk-<n>`` or ``savepoint-...`` directory (``ckptstore.filesystem.layout``).
        """
        require_disposable(self._dir, "dispose_on_failure")
        delete_tree(filesystem_for(self._dir, self._fs_token), self._dir)

    def __repr__(self) -> str:
        return (
            f"PersistentMetadataCheckpointStorageLocation({self._dir.shown!r}, "
            f"max_state_size={self.max_state_size})"
        )


@dataclass(frozen=True, slots=True)
class NonPersistentCompletedCheckpointStorageLocation:
    """A completed checkpoint that lives only in the JobManager's memory (MEM3, L6, PTR10).

    Its pointer, ``NON_ADDRESSABLE_POINTER``, resolves nowhere; disposing it does nothing.
    """

    metadata_handle: ByteStreamStateHandle

    @property
    def external_pointer(self) -> str:
        return NON_ADDRESSABLE_POINTER

    def dispose_storage_location(self) -> None:
        return None

    def resolve_handle(self, handle: StreamStateHandle) -> StreamStateHandle:
        handle = require_handle(handle)
        if getattr(handle, "relative_path", None) is not None:
            raise InvalidHandleError(
                f"cannot resolve the relative handle {handle!r}: this checkpoint was kept in "
                "the JobManager's memory and has no directory"
            )
        return handle


class _MemoryMetadataOutputStream:
    """Metadata kept in memory; finalizing yields a non-addressable location (MEM3)."""

    def __init__(self) -> None:
        self._buffer: io.BytesIO | None = io.BytesIO()
        self._lock = threading.Lock()

    @property
    def closed(self) -> bool:
        return self._buffer is None

    def write(self, data: bytes | bytearray | memoryview, /) -> int:
        view = require_bytes(data)
        buffer = self._buffer
        if buffer is None:
            raise StreamClosedError("Cannot write: the metadata stream is closed")
        return buffer.write(view)

    def flush(self) -> None:
        """Nothing to flush: the metadata stays in memory."""

    def tell(self) -> int:
        buffer = self._buffer
        return 0 if buffer is None else buffer.tell()

    def close_and_finalize_checkpoint(self) -> NonPersistentCompletedCheckpointStorageLocation:
        with self._lock:
            buffer = self._buffer
            if buffer is None:
                raise StreamClosedError("Already closed")
            self._buffer = None
        return NonPersistentCompletedCheckpointStorageLocation(
            ByteStreamStateHandle.of(unique_name(), buffer.getvalue())
        )

    def close(self) -> None:
        with self._lock:
            self._buffer = None

    def __enter__(self) -> _MemoryMetadataOutputStream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class NonPersistentMetadataCheckpointStorageLocation(MemCheckpointStreamFactory):
    """A checkpoint location that writes nothing anywhere (no checkpoint path, MEM3)."""

    @property
    def location_reference(self) -> CheckpointStorageLocationReference:
        return CheckpointStorageLocationReference.default()

    def create_metadata_output_stream(self) -> _MemoryMetadataOutputStream:
        return _MemoryMetadataOutputStream()

    def dispose_on_failure(self) -> None:
        """Nothing was written, so there is nothing to delete."""

    def __repr__(self) -> str:
        return (
            f"NonPersistentMetadataCheckpointStorageLocation(max_state_size={self.max_state_size})"
        )


#: Either kind of location that ``initialize_location_for_checkpoint`` returns.
MemoryCheckpointStorageLocation = (
    PersistentMetadataCheckpointStorageLocation | NonPersistentMetadataCheckpointStorageLocation
)
