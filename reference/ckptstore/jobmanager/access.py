"""One job's view of a JobManager storage: ``MemoryBackendCheckpointStorageAccess`` (MEM1-MEM3).

State is kept in memory on the worker side whatever the location reference: every stream is a
``MemoryCheckpointOutputStream`` of at most ``max_state_size`` bytes per handle
(``ckptstore.jobmanager.memory_streams``). On the coordinator side a checkpoint location writes its
``_metadata`` to ``<checkpoint path>/<job id>/chk-<n>/`` when a checkpoint path is set and
nowhere otherwise (``ckptstore.jobmanager.locations``).

What does not depend on where state goes lives in ``ckptstore.filesystem.base_access``, shared with
the file-system storage's access: argument checks, allowed schemes, pointer resolution and the
savepoint directories. Construction does no I/O.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from ckptstore.api import CHECKPOINT_DIR_PREFIX, CheckpointStorageLocationReference, JobID
from ckptstore.calls import public_call
from ckptstore.errors import ConfigurationError
from ckptstore.filesystem.base_access import AbstractCheckpointStorageAccess, optional_path_argument
from ckptstore.filesystem.toolset import NotDuplicatingCheckpointStateToolset
from ckptstore.jobmanager.locations import (
    MemoryCheckpointStorageLocation,
    NonPersistentMetadataCheckpointStorageLocation,
    PersistentMetadataCheckpointStorageLocation,
)
from ckptstore.jobmanager.memory_streams import (
    MemCheckpointStreamFactory,
    MemoryCheckpointOutputStream,
)
from ckptstore.paths import StoragePath
from ckptstore.stores.operations import (
    conditional_write_mode,
    make_directories,
    path_is_s3,
    probe_conditional_writes,
)
from ckptstore.stores.registry import filesystem_for
from ckptstore.validation import JAVA_INT_MAX, require_int

__all__ = ["MemoryBackendCheckpointStorageAccess", "require_max_state_size"]


def require_max_state_size(max_state_size: Any) -> int:
    """A maximum state size: an integer in ``[1, 2**31 - 1]`` (MEM1, Flink's message)."""
    return require_int(
        max_state_size,
        "max_state_size",
        minimum=1,
        maximum=JAVA_INT_MAX,
        error=ConfigurationError,
        below_message=f"maxStateSize must be > 0, got {max_state_size!r}",
    )


class MemoryBackendCheckpointStorageAccess(
    AbstractCheckpointStorageAccess[
        MemoryCheckpointStorageLocation,
        PersistentMetadataCheckpointStorageLocation,
        MemCheckpointStreamFactory,
    ]
):
    """One job's view of a JobManager storage: coordinator and worker side (MEM1-MEM3)."""

    def __init__(
        self,
        job_id: JobID,
        checkpoint_path: str | None,
        savepoint_path: str | None,
        max_state_size: int,
        *,
        storage_options: Mapping[str, Any] | None = None,
        allowed_schemes: Collection[str] = (),
    ) -> None:
        base = optional_path_argument(checkpoint_path, "checkpoint path")
        super().__init__(
            job_id,
            base,
            optional_path_argument(savepoint_path, "savepoint path"),
            storage_options=storage_options,
            allowed_schemes=allowed_schemes,
        )
        self._max_state_size = require_max_state_size(max_state_size)
        self._checkpoints_dir = None if base is None else base.child(str(self._job_id))

    # -- configuration, as Flink's getters (T-MEM1..T-MEM3)

    def get_max_state_size(self) -> int:
        return self._max_state_size

    def get_checkpoints_directory(self) -> str | None:
        """``<checkpoint path>/<job id>``, or ``None`` without a checkpoint path."""
        return None if self._checkpoints_dir is None else self._checkpoints_dir.url

    # -- coordinator view

    def supports_highly_available_storage(self) -> bool:
        """True exactly when checkpoint metadata is persisted (a checkpoint path is set)."""
        return self._checkpoints_dir is not None

    @public_call
    def initialize_base_locations_for_checkpoint(self) -> None:
        """No shared or task-owned directory to prepare (MEM2).

        With a checkpoint path on S3: finds out once per process per endpoint and bucket
        whether the server honours conditional writes (``ckptstore.stores.s3``;
        :attr:`conditional_writes`).
        """
        directory = self._checkpoints_dir
        if directory is not None and path_is_s3(directory):
            probe_conditional_writes(
                filesystem_for(directory, self._token_for(directory)), directory
            )

    @property
    def conditional_writes(self) -> str | None:
        """How ``_metadata`` is kept from being overwritten (``FsCheckpointStorageAccess``'s
        property of the same name); ``None`` without a checkpoint path. No I/O."""
        directory = self._checkpoints_dir
        if directory is None:
            return None
        return conditional_write_mode(
            filesystem_for(directory, self._token_for(directory)), directory
        )

    def _create_checkpoint_location(self, checkpoint_id: int) -> MemoryCheckpointStorageLocation:
        """In memory without a checkpoint path; else ``chk-<n>``, created where directories
        exist, for the ``_metadata`` file."""
        if self._checkpoints_dir is None:
            return NonPersistentMetadataCheckpointStorageLocation(self._max_state_size)
        directory = self._checkpoints_dir.child(f"{CHECKPOINT_DIR_PREFIX}{checkpoint_id}")
        token = self._token_for(directory)
        make_directories(filesystem_for(directory, token), directory)
        return PersistentMetadataCheckpointStorageLocation(directory, self._max_state_size, token)

    def _savepoint_location(
        self, directory: StoragePath, token: str
    ) -> PersistentMetadataCheckpointStorageLocation:
        """A savepoint: all state inline in its ``_metadata`` file (L5)."""
        return PersistentMetadataCheckpointStorageLocation(directory, self._max_state_size, token)

    # -- worker view

    def _worker_location(
        self, checkpoint_id: int, reference: CheckpointStorageLocationReference
    ) -> MemCheckpointStreamFactory:
        """In-memory streams whatever the reference: state always travels inline (ACC9)."""
        return MemCheckpointStreamFactory(self._max_state_size)

    def create_task_owned_state_stream(self) -> MemoryCheckpointOutputStream:
        return MemoryCheckpointOutputStream(self._max_state_size)

    def create_task_owned_checkpoint_state_toolset(self) -> NotDuplicatingCheckpointStateToolset:
        return NotDuplicatingCheckpointStateToolset()

    def __repr__(self) -> str:
        return (
            f"MemoryBackendCheckpointStorageAccess(job={self._job_id}, "
            f"checkpoints={self.get_checkpoints_directory()!r}, "
            f"savepoints={self.get_default_savepoint_directory()!r}, "
            f"max_state_size={self._max_state_size})"
        )
