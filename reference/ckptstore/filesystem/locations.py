"""Stream factories and in-progress checkpoint locations (S2, S3, S17, ACC12, MD1, MD7).

``FsCheckpointStreamFactory`` turns a scope into a state stream in the right directory
(EXCLUSIVE: the checkpoint's own directory, relative handles; SHARED: ``shared/``, absolute
handles) and offers the duplication API. It never creates or checks a directory (S1).

``FsCheckpointStorageLocation`` is the coordinator's in-progress checkpoint or savepoint:
a factory plus the metadata stream, ``dispose_on_failure`` and the location reference.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from ckptstore.api import (
    METADATA_FILE_NAME,
    CheckpointedStateScope,
    CheckpointStorageLocationReference,
    StreamStateHandle,
)
from ckptstore.calls import public_call
from ckptstore.errors import ArgumentOutOfRangeError, InvalidArgumentError
from ckptstore.filesystem.entropy import EntropyInjector
from ckptstore.filesystem.layout import require_disposable
from ckptstore.filesystem.metadata import FsCheckpointMetadataOutputStream
from ckptstore.filesystem.streams import FsCheckpointStateOutputStream, StreamSettings
from ckptstore.filesystem.toolset import FsCheckpointStateToolset
from ckptstore.paths import StoragePath, parse_storage_path
from ckptstore.stores.adapters import traits_for
from ckptstore.stores.operations import delete_tree
from ckptstore.stores.registry import filesystem_for
from ckptstore.validation import (
    MAX_WRITE_BUFFER_SIZE,
    require_handle,
    require_handles,
    require_int,
    require_reference,
    require_scope,
)

__all__ = [
    "MAX_FILE_STATE_THRESHOLD",
    "FsCheckpointStorageLocation",
    "FsCheckpointStreamFactory",
    "checked_sizes",
]

#: The largest inline threshold (1 MiB), as in Flink and PyFlink.
MAX_FILE_STATE_THRESHOLD = 1024 * 1024


def _scope(scope: CheckpointedStateScope) -> CheckpointedStateScope:
    return require_scope(scope)


def checked_sizes(file_state_threshold: int, write_buffer_size: int) -> tuple[int, int]:
    """The inline threshold and write buffer size, checked as Flink's factory checks them.

    For a factory constructed directly (Flink's ``FsCheckpointStreamFactory`` is public); a
    storage's factories get values the storage has checked already
    (``ckptstore.filesystem.storage``).
    """
    file_state_threshold = require_int(
        file_state_threshold,
        "file_state_threshold",
        minimum=0,
        below_message="The threshold for file state size must be zero or larger.",
    )
    write_buffer_size = require_int(
        write_buffer_size,
        "write_buffer_size",
        minimum=0,
        maximum=MAX_WRITE_BUFFER_SIZE,
        below_message="The write buffer size must be zero or larger.",
    )
    if file_state_threshold > MAX_FILE_STATE_THRESHOLD:
        raise ArgumentOutOfRangeError(
            f"The threshold for file state size cannot be larger than {MAX_FILE_STATE_THRESHOLD}"
        )
    return file_state_threshold, write_buffer_size


class FsCheckpointStreamFactory:
    """Creates state streams for one location; assumes its directories exist (S1, S2)."""

    def __init__(
        self,
        exclusive_dir: StoragePath,
        shared_dir: StoragePath,
        *,
        file_state_threshold: int,
        write_buffer_size: int,
        fs_token: str | None = None,
        entropy: EntropyInjector | None = None,
    ) -> None:
        file_state_threshold, write_buffer_size = checked_sizes(
            file_state_threshold, write_buffer_size
        )
        self._exclusive_dir = parse_storage_path(exclusive_dir)
        self._shared_dir = parse_storage_path(shared_dir)
        exclusive_dir, shared_dir = self._exclusive_dir, self._shared_dir
        self._threshold = file_state_threshold
        self._buffer_size = max(write_buffer_size, file_state_threshold)
        self._fs_token = fs_token
        self._stream_settings = {
            scope: StreamSettings.of(
                exclusive_dir if scope is CheckpointedStateScope.EXCLUSIVE else shared_dir,
                capacity=self._buffer_size,
                threshold=file_state_threshold,
                fs_token=fs_token,
                allow_relative_paths=scope is CheckpointedStateScope.EXCLUSIVE,
                entropy=entropy,
            )
            for scope in CheckpointedStateScope
        }
        self._toolsets: dict[CheckpointedStateScope, FsCheckpointStateToolset] | None = None
        if traits_for(exclusive_dir.scheme).server_side_copy:
            self._toolsets = {
                CheckpointedStateScope.EXCLUSIVE: FsCheckpointStateToolset(
                    exclusive_dir, fs_token=fs_token, entropy=entropy
                ),
                CheckpointedStateScope.SHARED: FsCheckpointStateToolset(
                    shared_dir, fs_token=fs_token, entropy=entropy
                ),
            }

    @property
    def checkpoint_directory(self) -> str:
        """The EXCLUSIVE scope's directory (``chk-<n>`` or the savepoint directory)."""
        return self._exclusive_dir.url

    @property
    def shared_state_directory(self) -> str:
        return self._shared_dir.url

    @property
    def file_state_threshold(self) -> int:
        return self._threshold

    @property
    def write_buffer_size(self) -> int:
        return self._buffer_size

    def create_checkpoint_state_output_stream(
        self, scope: CheckpointedStateScope
    ) -> FsCheckpointStateOutputStream:
        """A stream into the scope's directory; EXCLUSIVE handles are relative (S3)."""
        if scope.__class__ is not CheckpointedStateScope:
            scope = _scope(scope)
        return FsCheckpointStateOutputStream.with_settings(self._stream_settings[scope])

    def can_fast_duplicate(self, handle: StreamStateHandle, scope: CheckpointedStateScope) -> bool:
        scope = _scope(scope)
        handle = require_handle(handle)
        if self._toolsets is None:
            return False
        return self._toolsets[scope].can_fast_duplicate(handle)

    @public_call
    def duplicate(
        self, handles: Sequence[StreamStateHandle], scope: CheckpointedStateScope
    ) -> list[StreamStateHandle]:
        scope = _scope(scope)
        handles = require_handles(handles)
        if self._toolsets is None:
            raise InvalidArgumentError("The underlying FS does not support duplication.")
        return self._toolsets[scope].duplicate(handles)


class FsCheckpointStorageLocation(FsCheckpointStreamFactory):
    """An in-progress checkpoint or savepoint (ACC6-ACC8, ACC12)."""

    def __init__(
        self,
        exclusive_dir: StoragePath,
        shared_dir: StoragePath,
        task_owned_dir: StoragePath,
        reference: CheckpointStorageLocationReference,
        *,
        file_state_threshold: int,
        write_buffer_size: int,
        fs_token: str | None = None,
        entropy: EntropyInjector | None = None,
        layout_kind: Literal["checkpoint", "savepoint"],
    ) -> None:
        super().__init__(
            exclusive_dir,
            shared_dir,
            file_state_threshold=file_state_threshold,
            write_buffer_size=write_buffer_size,
            fs_token=fs_token,
            entropy=entropy,
        )
        reference = require_reference(reference, "location reference")
        self._layout_kind = layout_kind
        task_owned_dir = parse_storage_path(task_owned_dir)
        self._task_owned_dir = task_owned_dir
        self._reference = reference
        metadata_dir = entropy.remove(exclusive_dir) if entropy is not None else exclusive_dir
        self._metadata_file = metadata_dir.child(METADATA_FILE_NAME)

    @property
    def task_owned_state_directory(self) -> str:
        return self._task_owned_dir.url

    @property
    def metadata_file_path(self) -> str:
        """Where ``_metadata`` goes: the exclusive dir with the entropy key removed (MD1)."""
        return self._metadata_file.url

    @property
    def location_reference(self) -> CheckpointStorageLocationReference:
        return self._reference

    @public_call
    def create_metadata_output_stream(self) -> FsCheckpointMetadataOutputStream:
        """The ``_metadata`` stream; fails if this location was finalized already (T-BASE4)."""
        return FsCheckpointMetadataOutputStream(
            self._metadata_file, self._exclusive_dir, fs_token=self._fs_token
        )

    @public_call
    def dispose_on_failure(self) -> None:
        """Recursively delete the exclusive directory; missing is fine (MD7).

        Only a ``chk-<n>`` directory for a checkpoint location, a ``savepoint-<job>-<suffix>``
        directory for a savepoint location (``ckptstore.filesystem.layout``): a location resolved
        from a reference to any other directory raises ``DisposalRefusedError`` and deletes nothing.
        """
        targets = [self._exclusive_dir]
        if self._metadata_file.parent != self._exclusive_dir:
            targets.append(self._metadata_file.parent)
        for target in targets:
            require_disposable(target, "dispose_on_failure", self._layout_kind)
        for target in targets:
            delete_tree(filesystem_for(target, self._fs_token), target)

    def __repr__(self) -> str:
        return f"FsCheckpointStorageLocation({self._exclusive_dir.shown!r}, {self._reference!r})"
