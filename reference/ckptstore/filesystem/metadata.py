"""The ``_metadata`` output stream and the completed checkpoint location (MD1-MD7, PTR9).

``FsCheckpointMetadataOutputStream`` buffers the metadata in memory and publishes it at
``close_and_finalize_checkpoint()`` in one exclusive, atomic step
(``stores.operations.publish_exclusive``: temp file + ``os.link`` locally, one PutObject with
``If-None-Match: *`` on S3; on S3 servers that ignore that condition a refusal, or where the
user allowed it claim-then-write, see ``ckptstore.stores.s3``; a lost answer whose write committed
is recognised by its bytes). So
``_metadata`` is never visible half-written (what Flink gets from its RecoverableWriter,
MD2), ``close()`` without finalize leaves nothing (MD5), and an
existing ``_metadata`` is never replaced: on directory file systems a second stream fails at
construction already (T-BASE4), on object stores at the latest at finalize.

``FsCompletedCheckpointStorageLocation`` is the picklable result: external pointer, metadata
handle, recursive dispose (confined to ``chk-<n>`` and ``savepoint-...`` directories,
``ckptstore.filesystem.layout``) and ``resolve_handle`` (rebasing relative handles onto the
checkpoint's directory, with a path-traversal guard).

Both classes work with any file system of the registry: pass URLs (or ``StoragePath``) and
the store token (``stores.registry.register_filesystem``). The JobManager storage uses them too.
"""

from __future__ import annotations

import io
import threading
from dataclasses import dataclass, field
from typing import Any

from ckptstore.api import StreamStateHandle
from ckptstore.calls import public_call
from ckptstore.errors import (
    ConditionalWritesUnsupportedError,
    InvalidArgumentTypeError,
    MetadataExistsError,
    MissingArgumentError,
    StreamClosedError,
)
from ckptstore.filesystem.handles import FileStateHandle, RelativeFileStateHandle
from ckptstore.filesystem.layout import require_disposable
from ckptstore.io_errors import with_context
from ckptstore.paths import StoragePath, parse_storage_path
from ckptstore.redaction import redact_text
from ckptstore.stores.adapters import traits_for
from ckptstore.stores.operations import delete_tree, file_info, publish_exclusive
from ckptstore.stores.registry import filesystem_for
from ckptstore.validation import (
    require_bytes,
    require_handle,
    require_url_text,
)

__all__ = [
    "FsCheckpointMetadataOutputStream",
    "FsCompletedCheckpointStorageLocation",
]

_CLOSED_MESSAGE = "Stream has already been closed and discarded."


def _as_path(value: str | StoragePath, what: str) -> StoragePath:
    if value is None:
        raise MissingArgumentError(f"{what} must not be None")
    if isinstance(value, StoragePath):
        return value
    return parse_storage_path(require_url_text(value, what))


@dataclass(frozen=True, slots=True)
class FsCompletedCheckpointStorageLocation:
    """A finalized checkpoint or savepoint on a file system (MD6, PTR9).

    ``exclusive_dir`` is the checkpoint's own directory as written (it may contain the
    unresolved entropy key); the metadata file's parent is the directory the pointer names.
    """

    exclusive_dir: str
    metadata_handle: FileStateHandle
    external_pointer: str
    fs_token: str | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        if self.metadata_handle is None or self.external_pointer is None:
            raise MissingArgumentError("metadata handle and external pointer are required")
        if not isinstance(self.metadata_handle, FileStateHandle):
            raise InvalidArgumentTypeError(
                f"metadata_handle must be a FileStateHandle, got "
                f"{type(self.metadata_handle).__name__}"
            )
        require_url_text(self.external_pointer, "external_pointer")
        object.__setattr__(self, "exclusive_dir", _as_path(self.exclusive_dir, "directory").url)

    @property
    def checkpoint_directory(self) -> str:
        """The directory that holds ``_metadata`` (the pointer's directory)."""
        return self.metadata_handle.storage_path.parent.url

    def _filesystem(self, path: StoragePath) -> Any:
        return filesystem_for(path, self.fs_token)

    @public_call
    def dispose_storage_location(self) -> None:
        """Delete the checkpoint's own directory recursively; a missing one is fine.

        Never ``shared/`` or ``taskowned/``: only the exclusive directory (and, with entropy,
        the key-free directory that holds ``_metadata``), and only if it is a ``chk-<n>`` or
        ``savepoint-<job>-<suffix>`` directory (``ckptstore.filesystem.layout``). Any other
        directory (a pointer to some file resolves too, PTR7) raises ``DisposalRefusedError`` (an
        ``OSError``) before anything is deleted.
        """
        targets = [parse_storage_path(self.exclusive_dir)]
        metadata_dir = self.metadata_handle.storage_path.parent
        if metadata_dir not in targets:
            targets.append(metadata_dir)
        for target in targets:
            require_disposable(target, "dispose_storage_location")
        for target in targets:
            delete_tree(self._filesystem(target), target)

    def resolve_handle(self, handle: StreamStateHandle) -> StreamStateHandle:
        """Rebase a relative handle onto this location's directory; others come back as is.

        Anything that is not a state handle raises ``InvalidArgumentTypeError``; a relative
        path that is not one file name ``InvalidHandleError`` (both ``ValueError``, from
        ``require_handle``: such a handle could read or delete outside the checkpoint, H6).
        """
        handle = require_handle(handle)
        name = getattr(handle, "relative_path", None)
        if name is None:
            return handle
        directory = self.metadata_handle.storage_path.parent
        return RelativeFileStateHandle(
            directory.child(name).url,
            handle.state_size,
            relative_path=name,
            fs_token=self.fs_token,
        )

    def __repr__(self) -> str:
        return f"FsCompletedCheckpointStorageLocation({redact_text(self.external_pointer)!r})"


class FsCheckpointMetadataOutputStream:
    """Writes ``_metadata``: buffered, published atomically and exclusively at finalize.

    ``metadata_file`` is the target (``<dir>/_metadata``, entropy key already removed);
    ``exclusive_dir`` is the checkpoint's directory as the location knows it (default: the
    target's parent). ``check_existing`` (default: on directory file systems) fails at once
    with ``MetadataExistsError`` when the target exists; on object stores that check would
    cost a HEAD, and the exclusive PUT at finalize catches it anyway.
    """

    def __init__(
        self,
        metadata_file: str | StoragePath,
        exclusive_dir: str | StoragePath | None = None,
        *,
        fs_token: str | None = None,
        check_existing: bool | None = None,
    ) -> None:
        self._target = _as_path(metadata_file, "metadata file")
        self._exclusive_dir = (
            _as_path(exclusive_dir, "exclusive dir")
            if exclusive_dir is not None
            else self._target.parent
        )
        self._fs_token = fs_token
        self._fs = filesystem_for(self._target, fs_token)
        if check_existing is None:
            check_existing = traits_for(self._target.scheme).real_directories
        if check_existing and file_info(self._fs, self._target) is not None:
            raise MetadataExistsError(f"Target file {self._target.url} already exists.")
        #: the bytes written so far; None once the stream is closed or finalized
        self._buffer: io.BytesIO | None = io.BytesIO()
        #: serialises write() and close_and_finalize_checkpoint(); close() never takes it
        self._lock = threading.Lock()

    @property
    def metadata_file_path(self) -> str:
        return self._target.url

    @property
    def closed(self) -> bool:
        return self._buffer is None

    def write(self, data: bytes | bytearray | memoryview, /) -> int:
        view = require_bytes(data)
        with self._lock:
            buffer = self._buffer
            if buffer is None:
                raise StreamClosedError("closed")
            return buffer.write(view)

    def flush(self) -> None:
        """Nothing to do: the bytes are published together at finalize."""
        if self._buffer is None:
            raise StreamClosedError("closed")

    def tell(self) -> int:
        buffer = self._buffer
        return 0 if buffer is None else buffer.tell()

    @public_call
    def close_and_finalize_checkpoint(self) -> FsCompletedCheckpointStorageLocation:
        """Publish ``_metadata`` and return the completed location (MD4)."""
        with self._lock:
            buffer = self._buffer
            if buffer is None:
                raise StreamClosedError(_CLOSED_MESSAGE)
            self._buffer = None  # closed from here on, whatever the publish does
            data = buffer.getvalue()
            try:
                publish_exclusive(self._fs, self._target, data)
            except (MetadataExistsError, ConditionalWritesUnsupportedError):
                raise  # their own message says what happened
            except Exception as exc:
                raise with_context(
                    exc,
                    f"Could not flush and close the file system output stream to "
                    f"{self._target.url} in order to obtain the stream state handle",
                    self._target,
                    self._fs,
                ) from exc
        handle = FileStateHandle(self._target.url, len(data), fs_token=self._fs_token)
        return FsCompletedCheckpointStorageLocation(
            self._exclusive_dir.url,
            handle,
            self._target.parent.url,
            fs_token=self._fs_token,
        )

    def close(self) -> None:
        """Discard: nothing was published, so nothing remains (MD5). Never raises or blocks.

        A ``close()`` that races with a finalize in progress leaves the finalize alone: the
        finalize took the bytes already (as after a completed finalize, ``close()`` does
        nothing). A write racing with it may land in the discarded buffer, which is gone.
        """
        self._buffer = None

    def __enter__(self) -> FsCheckpointMetadataOutputStream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"FsCheckpointMetadataOutputStream({self._target.shown!r})"
