"""The JobManager checkpoint storage: inline state, optional metadata files (CS3, MEM1-MEM5).

``JobManagerCheckpointStorage`` keeps checkpoint state in memory: every state stream is a
``MemoryCheckpointOutputStream`` whose handle carries the bytes, limited to ``max_state_size``
per handle (5 MiB by default; MEM5). With a checkpoint path, only ``_metadata`` is written,
to ``<path>/<job id>/chk-<n>/_metadata`` (L6); without one, nothing is written and the
completed checkpoint's pointer is ``NON_ADDRESSABLE_POINTER``. Savepoints always go to a
file system (``<savepoint base>/savepoint-<job[0:6]>-<12 hex>/_metadata``, L5) with all state
inline in the metadata.

The storage object is picklable configuration; ``create_checkpoint_storage(job_id)`` returns a
``MemoryBackendCheckpointStorageAccess`` that does the work.
"""

from __future__ import annotations

import datetime
import io
import threading
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from ckptstore.access import create_savepoint_directory
from ckptstore.api import (
    CHECKPOINT_DIR_PREFIX,
    METADATA_FILE_NAME,
    NON_ADDRESSABLE_POINTER,
    ByteStreamStateHandle,
    CheckpointStorageLocationReference,
    JobID,
    StreamStateHandle,
)
from ckptstore.errors import (
    ConfigurationError,
    InvalidArgumentError,
    InvalidHandleError,
    MissingArgumentError,
    StreamClosedError,
    UnsupportedSchemeError,
)
from ckptstore.filesystems import (
    conditional_write_mode,
    delete_tree,
    filesystem_for,
    make_directories,
    path_is_s3,
    probe_conditional_writes,
    register_path,
    require_available_schemes,
)
from ckptstore.layout import require_disposable
from ckptstore.leftovers import DEFAULT_LEFTOVER_GRACE, Leftover, clean_leftovers, find_leftovers
from ckptstore.memory_streams import MemCheckpointStreamFactory, MemoryCheckpointOutputStream
from ckptstore.metadata import (
    FsCheckpointMetadataOutputStream,
    FsCompletedCheckpointStorageLocation,
)
from ckptstore.options import CHECKPOINTS_DIRECTORY, SAVEPOINT_DIRECTORY, get_string
from ckptstore.paths import StoragePath, parse_storage_path
from ckptstore.pointers import normalise_schemes, resolve_checkpoint_pointer
from ckptstore.redaction import redact_text
from ckptstore.toolset import NotDuplicatingCheckpointStateToolset
from ckptstore.validation import (
    JAVA_INT_MAX,
    describe,
    require_bool,
    require_bytes,
    require_checkpoint_id,
    require_duration,
    require_handle,
    require_int,
    require_job_id,
    require_reference,
    require_scheme_names,
    require_storage_options,
    require_url_text,
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


def _validate_max_state_size(max_state_size: Any) -> int:
    if max_state_size is None:
        return DEFAULT_MAX_STATE_SIZE
    return require_int(
        max_state_size,
        "max_state_size",
        minimum=1,
        maximum=JAVA_INT_MAX,
        error=ConfigurationError,
        below_message=f"maxStateSize must be > 0, got {max_state_size!r}",
    )


def _optional_path(value: Any, what: str) -> StoragePath | None:
    if value is None:
        return None
    path = parse_storage_path(require_url_text(value, what))
    require_available_schemes([path.scheme], what)
    return path


def _checkpoint_id(checkpoint_id: Any) -> int:
    return require_checkpoint_id(checkpoint_id, "checkpoint_id")


def _require_job_id(job_id: Any) -> JobID:
    return require_job_id(job_id)


# --------------------------------------------------------------------------- locations


def _own_or_local(schemes: list[str]) -> list[str]:
    """The schemes a storage may open by itself: those of its paths, else the local file system.

    A JobManager storage with no paths at all still takes savepoints to, and resolves pointers
    on, the local file system, which is Flink's default file system when none is configured.
    """
    return schemes or ["file"]


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

    def create_metadata_output_stream(self) -> FsCheckpointMetadataOutputStream:
        return FsCheckpointMetadataOutputStream(
            self._dir.child(METADATA_FILE_NAME), self._dir, fs_token=self._fs_token
        )

    def dispose_on_failure(self) -> None:
        """Delete the checkpoint's directory and everything in it (MD7).

        Only a ``chk-<n>`` or ``savepoint-...`` directory (``ckptstore.layout``).
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
            ByteStreamStateHandle.with_random_name(buffer.getvalue())
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

# --------------------------------------------------------------------------- access


class MemoryBackendCheckpointStorageAccess:
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
        self._job_id = _require_job_id(job_id)
        self._max_state_size = require_int(
            max_state_size,
            "max_state_size",
            minimum=1,
            maximum=JAVA_INT_MAX,
            error=ConfigurationError,
            below_message=f"maxStateSize must be > 0, got {max_state_size!r}",
        )
        self._storage_options = require_storage_options(storage_options)
        base = _optional_path(checkpoint_path, "checkpoint path")
        self._checkpoints_dir = base.child(str(self._job_id)) if base is not None else None
        self._savepoint_dir = _optional_path(savepoint_path, "savepoint path")
        paths = [p for p in (base, self._savepoint_dir) if p is not None]
        own = [p.scheme for p in paths]
        extra = require_scheme_names(allowed_schemes)
        require_available_schemes(extra)
        self._allowed_schemes = normalise_schemes([*_own_or_local(own), *extra])
        # Registering (no I/O) lets handles written elsewhere, such as a metadata handle
        # unpickled in this process, find these options (rules in ``ckptstore.filesystems``).
        for path in paths:
            register_path(path, self._storage_options)

    # -- configuration, as Flink's getters (T-MEM1..T-MEM3)

    @property
    def job_id(self) -> JobID:
        return self._job_id

    def get_max_state_size(self) -> int:
        return self._max_state_size

    def get_checkpoints_directory(self) -> str | None:
        """``<checkpoint path>/<job id>``, or ``None`` without a checkpoint path."""
        return None if self._checkpoints_dir is None else self._checkpoints_dir.url

    def get_default_savepoint_directory(self) -> str | None:
        return None if self._savepoint_dir is None else self._savepoint_dir.url

    def _token(self, path: StoragePath) -> str:
        return register_path(path, self._storage_options)

    # -- coordinator view

    def supports_highly_available_storage(self) -> bool:
        """True exactly when checkpoint metadata is persisted (a checkpoint path is set)."""
        return self._checkpoints_dir is not None

    def has_default_savepoint_location(self) -> bool:
        return self._savepoint_dir is not None

    def resolve_checkpoint(self, external_pointer: str) -> FsCompletedCheckpointStorageLocation:
        return resolve_checkpoint_pointer(
            external_pointer,
            allowed_schemes=self._allowed_schemes,
            storage_options=self._storage_options,
        )

    def initialize_base_locations_for_checkpoint(self) -> None:
        """No shared or task-owned directory to prepare (MEM2).

        With a checkpoint path on S3: finds out once per process per endpoint and bucket
        whether the server honours conditional writes (``ckptstore.s3``;
        :attr:`conditional_writes`).
        """
        directory = self._checkpoints_dir
        if directory is not None and path_is_s3(directory):
            probe_conditional_writes(filesystem_for(directory, self._token(directory)), directory)

    @property
    def conditional_writes(self) -> str | None:
        """How ``_metadata`` is kept from being overwritten (``FsCheckpointStorageAccess``'s
        property of the same name); ``None`` without a checkpoint path. No I/O."""
        directory = self._checkpoints_dir
        if directory is None:
            return None
        return conditional_write_mode(filesystem_for(directory, self._token(directory)), directory)

    def initialize_location_for_checkpoint(
        self, checkpoint_id: int
    ) -> MemoryCheckpointStorageLocation:
        checkpoint_id = _checkpoint_id(checkpoint_id)
        if self._checkpoints_dir is None:
            return NonPersistentMetadataCheckpointStorageLocation(self._max_state_size)
        directory = self._checkpoints_dir.child(f"{CHECKPOINT_DIR_PREFIX}{checkpoint_id}")
        token = self._token(directory)
        make_directories(filesystem_for(directory, token), directory)
        return PersistentMetadataCheckpointStorageLocation(directory, self._max_state_size, token)

    def initialize_location_for_savepoint(
        self, checkpoint_id: int, external_location_pointer: str | None = None
    ) -> PersistentMetadataCheckpointStorageLocation:
        """A fresh ``savepoint-<job[0:6]>-<12 hex>`` directory under the target or default base."""
        _checkpoint_id(checkpoint_id)  # unused, as in Flink, but it must be an id
        if external_location_pointer is not None:
            base = _optional_path(external_location_pointer, "external_location_pointer")
            if base is not None and base.scheme not in self._allowed_schemes:
                raise UnsupportedSchemeError(
                    f"Cannot access file system for savepoint path '{redact_text(base.url)}': "
                    "the scheme "
                    f"'{base.scheme}' is not allowed for this storage (allowed: "
                    f"{', '.join(sorted(self._allowed_schemes)) or 'none'}). Add it to the "
                    "storage's allowed_schemes."
                )
        else:
            base = self._savepoint_dir
        if base is None:
            raise InvalidArgumentError(
                "No savepoint location given and no default location configured."
            )
        token = self._token(base)
        directory = create_savepoint_directory(filesystem_for(base, token), base, self._job_id)
        return PersistentMetadataCheckpointStorageLocation(directory, self._max_state_size, token)

    # -- worker view

    def resolve_checkpoint_storage_location(
        self, checkpoint_id: int, reference: CheckpointStorageLocationReference
    ) -> MemCheckpointStreamFactory:
        """In-memory streams whatever the reference: state always travels inline (ACC9)."""
        _checkpoint_id(checkpoint_id)
        require_reference(reference)
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


# --------------------------------------------------------------------------- storage


class JobManagerCheckpointStorage:
    """Checkpoints to the JobManager's memory; savepoints to a file system (CS3, CC5).

    ``checkpoint_path`` (optional) persists each checkpoint's ``_metadata`` (with all state
    inline) so that checkpoints survive a JobManager failover; ``max_state_size`` (default
    5 MiB) limits each piece of state; ``savepoint_path`` is the default savepoint base.
    ``storage_options`` are fsspec connection settings for those paths (including the S3
    retry budget: ``ckptstore.filesystems.retry_budget``); ``allowed_schemes`` lists extra URL
    schemes that ``resolve_checkpoint`` may open. Arguments are checked by
    ``ckptstore.validation``; ``find_leftovers``/``clean_leftovers`` handle crash leftovers
    (``ckptstore.leftovers``).
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
        self._max_state_size = _validate_max_state_size(max_state_size)
        checkpoint = _optional_path(checkpoint_path, "checkpoint_path")
        savepoint = _optional_path(savepoint_path, "savepoint_path")
        self._checkpoint_path = None if checkpoint is None else checkpoint.url
        self._savepoint_path = None if savepoint is None else savepoint.url
        self._storage_options = require_storage_options(storage_options)
        extra = require_scheme_names(allowed_schemes)
        require_available_schemes(extra)
        self._allowed_schemes = tuple(sorted(normalise_schemes(extra)))
        self._register()

    def _register(self) -> None:
        """Register the options for the store and bucket of each path (no I/O)."""
        for path in (self._checkpoint_path, self._savepoint_path):
            if path is not None:
                register_path(parse_storage_path(path), self._storage_options)

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
            _require_job_id(job_id),
            self._checkpoint_path,
            self._savepoint_path,
            self._max_state_size,
            storage_options=self._storage_options,
            allowed_schemes=self._allowed_schemes,
        )

    def resolve_checkpoint(self, external_pointer: str) -> FsCompletedCheckpointStorageLocation:
        own = [p for p in (self._checkpoint_path, self._savepoint_path) if p is not None]
        schemes = [parse_storage_path(p).scheme for p in own]
        return resolve_checkpoint_pointer(
            external_pointer,
            allowed_schemes=[*_own_or_local(schemes), *self._allowed_schemes],
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

    # -- crash leftovers (``ckptstore.leftovers``)

    def _leftover_scope(self, job_id: JobID) -> dict[str, Any]:
        job = require_job_id(job_id)
        checkpoint = (
            None
            if self._checkpoint_path is None
            else parse_storage_path(self._checkpoint_path).child(str(job))
        )
        savepoint = (
            None if self._savepoint_path is None else parse_storage_path(self._savepoint_path)
        )
        options = self._storage_options
        return {
            "checkpoints_dir": checkpoint,
            "savepoint_dir": savepoint,
            "job_id": job,
            "token_for": lambda path: register_path(path, options),
        }

    def find_leftovers(
        self,
        job_id: JobID,
        *,
        older_than: float | datetime.timedelta = DEFAULT_LEFTOVER_GRACE,
    ) -> list[Leftover]:
        """Crash leftovers of ``job_id`` below the checkpoint and savepoint paths.

        Here they are ``_metadata`` staging files (state is inline) and abandoned, empty
        ``chk-<n>``/``savepoint-...`` directories; see ``ckptstore.leftovers``.
        """
        seconds = require_duration(older_than, "older_than")
        return find_leftovers(**self._leftover_scope(job_id), older_than=seconds)

    def clean_leftovers(
        self,
        job_id: JobID,
        *,
        older_than: float | datetime.timedelta = DEFAULT_LEFTOVER_GRACE,
        dry_run: bool = False,
    ) -> list[Leftover]:
        """Remove what ``find_leftovers`` reports; return what was removed."""
        seconds = require_duration(older_than, "older_than")
        dry = require_bool(dry_run, "dry_run")
        return clean_leftovers(**self._leftover_scope(job_id), older_than=seconds, dry_run=dry)

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
