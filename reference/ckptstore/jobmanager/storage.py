"""The JobManager checkpoint storage: inline state, optional metadata files (CS3, MEM1-MEM5).

``JobManagerCheckpointStorage`` keeps checkpoint state in memory: every state stream is a
``MemoryCheckpointOutputStream`` whose handle carries the bytes, limited to ``max_state_size``
per handle (5 MiB by default; MEM5). With a checkpoint path, only ``_metadata`` is written,
to ``<path>/<job id>/chk-<n>/_metadata`` (L6); without one, nothing is written and the
completed checkpoint's pointer is ``NON_ADDRESSABLE_POINTER``. Savepoints always go to a
file system (``<savepoint base>/savepoint-<job[0:6]>-<12 hex>/_metadata``, L5) with all state
inline in the metadata.

The storage object is picklable configuration; ``create_checkpoint_storage(job_id)`` returns a
``MemoryBackendCheckpointStorageAccess`` (``ckptstore.jobmanager.access``) that does the work,
with the locations of ``ckptstore.jobmanager.locations``. Both modules' classes are exported
here too, where they were defined before, so imports and pickles that name them here work.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from ckptstore.api import JobID
from ckptstore.errors import InvalidArgumentError, MissingArgumentError
from ckptstore.filesystem.base_access import allowed_schemes_argument, optional_path_argument
from ckptstore.filesystem.leftovers import LeftoverMethods
from ckptstore.filesystem.metadata import FsCompletedCheckpointStorageLocation
from ckptstore.filesystem.pointers import (
    normalise_schemes,
    resolve_checkpoint_pointer,
    storage_schemes,
)
from ckptstore.jobmanager.access import MemoryBackendCheckpointStorageAccess, require_max_state_size
from ckptstore.jobmanager.locations import (
    MemoryCheckpointStorageLocation,
    NonPersistentCompletedCheckpointStorageLocation,
    NonPersistentMetadataCheckpointStorageLocation,
    PersistentMetadataCheckpointStorageLocation,
)
from ckptstore.options import CHECKPOINTS_DIRECTORY, SAVEPOINT_DIRECTORY, get_string
from ckptstore.paths import StoragePath, parse_storage_path
from ckptstore.stores.registry import register_path
from ckptstore.validation import (
    describe,
    require_job_id,
    require_storage_options,
)

__all__ = [
    "DEFAULT_MAX_STATE_SIZE",
    "JobManagerCheckpointStorage",
    "MemoryBackendCheckpointStorageAccess",
    "MemoryCheckpointStorageLocation",
    "NonPersistentCompletedCheckpointStorageLocation",
    "NonPersistentMetadataCheckpointStorageLocation",
    "PersistentMetadataCheckpointStorageLocation",
]

#: The default maximum size of one piece of state: 5 MiB (CS3).
DEFAULT_MAX_STATE_SIZE = 5 * 1024 * 1024


class JobManagerCheckpointStorage(LeftoverMethods):
    """Checkpoints to the JobManager's memory; savepoints to a file system (CS3, CC5).

    ``checkpoint_path`` (optional) persists each checkpoint's ``_metadata`` (with all state
    inline) so that checkpoints survive a JobManager failover; ``max_state_size`` (default
    5 MiB) limits each piece of state; ``savepoint_path`` is the default savepoint base.
    ``storage_options`` are fsspec connection settings for those paths (including the S3
    retry budget: ``ckptstore.stores.retry.retry_budget``); ``allowed_schemes`` lists extra URL
    schemes that ``resolve_checkpoint`` may open. Arguments are checked by
    ``ckptstore.validation``; ``find_leftovers``/``clean_leftovers`` handle crash leftovers
    (``ckptstore.filesystem.leftovers``).
    """

    DEFAULT_MAX_STATE_SIZE = DEFAULT_MAX_STATE_SIZE

    def __init__(
        self,
        checkpoint_path: str | None = None,
        max_state_size: int | None = None,
        *,
        savepoint_path: str | None = None,
        storage_options: Mapping[str, Any] | None = None,
        allowed_schemes: Collection[str] = (),
    ) -> None:
        self._max_state_size = (
            DEFAULT_MAX_STATE_SIZE
            if max_state_size is None
            else require_max_state_size(max_state_size)
        )
        checkpoint = optional_path_argument(checkpoint_path, "checkpoint_path")
        savepoint = optional_path_argument(savepoint_path, "savepoint_path")
        self._checkpoint_path = None if checkpoint is None else checkpoint.url
        self._savepoint_path = None if savepoint is None else savepoint.url
        self._storage_options = require_storage_options(storage_options)
        extra = allowed_schemes_argument(allowed_schemes)
        self._allowed_schemes = tuple(sorted(normalise_schemes(extra)))
        self._register()

    def _paths(self) -> tuple[StoragePath | None, StoragePath | None]:
        """The checkpoint and savepoint paths, parsed (``None`` where not set)."""
        return (
            None if self._checkpoint_path is None else parse_storage_path(self._checkpoint_path),
            None if self._savepoint_path is None else parse_storage_path(self._savepoint_path),
        )

    def _register(self) -> None:
        """Register the options for the store and bucket of each path (no I/O)."""
        for path in self._paths():
            if path is not None:
                register_path(path, self._storage_options)

    def __setstate__(self, state: dict[str, Any]) -> None:
        # unpickled: register here too, as a constructed storage does
        self.__dict__.update(state)
        self._register()

    # -- PyFlink getters

    def get_checkpoint_path(self) -> str | None:
        """The base path of persisted checkpoint metadata, or ``None``."""
        return self._checkpoint_path

    def get_savepoint_path(self) -> str | None:
        """The default savepoint base path, or ``None``."""
        return self._savepoint_path

    def get_max_state_size(self) -> int:
        """The maximum size of one piece of state, in bytes."""
        return self._max_state_size

    # -- CheckpointStorage

    def create_checkpoint_storage(self, job_id: JobID) -> MemoryBackendCheckpointStorageAccess:
        return MemoryBackendCheckpointStorageAccess(
            require_job_id(job_id),
            self._checkpoint_path,
            self._savepoint_path,
            self._max_state_size,
            storage_options=self._storage_options,
            allowed_schemes=self._allowed_schemes,
        )

    def resolve_checkpoint(self, external_pointer: str) -> FsCompletedCheckpointStorageLocation:
        """Find a completed checkpoint or savepoint by its pointer (PTR1-PTR10)."""
        return resolve_checkpoint_pointer(
            external_pointer,
            allowed_schemes=storage_schemes(self._paths(), self._allowed_schemes),
            storage_options=self._storage_options,
        )

    def configure(self, config: Mapping[str, Any]) -> JobManagerCheckpointStorage:
        """A copy whose missing paths come from Flink configuration keys (CS3 ``configure``).

        The maximum state size and any path set on this object are kept (application values
        win over the cluster configuration).
        """
        if config is None:
            raise MissingArgumentError("configuration must not be None")
        if not isinstance(config, Mapping):
            raise InvalidArgumentError(f"configuration must be a mapping, got {describe(config)}")
        checkpoint = self._checkpoint_path or get_string(config, CHECKPOINTS_DIRECTORY)
        savepoint = self._savepoint_path or get_string(config, SAVEPOINT_DIRECTORY)
        return JobManagerCheckpointStorage(
            checkpoint,
            self._max_state_size,
            savepoint_path=savepoint,
            storage_options=self._storage_options,
            allowed_schemes=self._allowed_schemes,
        )

    # -- crash leftovers (``ckptstore.filesystem.leftovers``: ``LeftoverMethods``)

    def _leftover_directories(
        self, job_id: JobID
    ) -> tuple[JobID, StoragePath | None, StoragePath | None]:
        job = require_job_id(job_id)
        checkpoint, savepoint = self._paths()
        return job, None if checkpoint is None else checkpoint.child(str(job)), savepoint

    # -- value semantics

    def _key(self) -> tuple[Any, ...]:
        return (
            self._checkpoint_path,
            self._savepoint_path,
            self._max_state_size,
            sorted(self._storage_options.items(), key=lambda item: str(item[0])),
            self._allowed_schemes,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, JobManagerCheckpointStorage):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash((self._checkpoint_path, self._savepoint_path, self._max_state_size))

    def __repr__(self) -> str:
        return (
            "JobManagerCheckpointStorage (checkpoints to JobManager) "
            f"( maxStateSize: {self._max_state_size})"
        )
