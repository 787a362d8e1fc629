"""One job's view of file-system checkpoint storage: ``FsCheckpointStorageAccess`` (ACC1-ACC12).

Coordinator side: base directories and ``chk-<n>`` locations. On object stores the coordinator
sends no directory requests at all (on S3 its once-per-job setup probes whether the server
honours conditional writes: ``ckptstore.stores.s3``,
:attr:`FsCheckpointStorageAccess.conditional_writes`); on ``file`` and ``memory`` it creates
directories with ``makedirs``. Worker side: the location for a checkpoint id and reference, the
task-owned stream and toolset, with no I/O whatsoever until a stream spills to its file (S1).

What does not depend on files lives in ``ckptstore.filesystem.base_access``, shared with the
JobManager storage's access: argument checks, allowed schemes, pointer resolution and the savepoint
directories (``create_savepoint_directory``, re-exported here). Construction does no I/O (ACC1).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from ckptstore.api import (
    CHECKPOINT_DIR_PREFIX,
    CHECKPOINT_SHARED_STATE_DIR,
    CHECKPOINT_TASK_OWNED_STATE_DIR,
    CheckpointStateToolset,
    CheckpointStorageLocationReference,
    JobID,
    decode_path_from_reference,
    encode_path_as_reference,
)
from ckptstore.calls import public_call
from ckptstore.errors import InvalidReferenceError
from ckptstore.filesystem.base_access import (
    MAX_SAVEPOINT_DIR_ATTEMPTS,
    AbstractCheckpointStorageAccess,
    create_savepoint_directory,
    random_savepoint_suffix,
)
from ckptstore.filesystem.entropy import EntropyInjector
from ckptstore.filesystem.locations import FsCheckpointStorageLocation
from ckptstore.filesystem.streams import FsCheckpointStateOutputStream, StreamSettings
from ckptstore.filesystem.toolset import (
    FsCheckpointStateToolset,
    NotDuplicatingCheckpointStateToolset,
)
from ckptstore.io_errors import with_context
from ckptstore.paths import StoragePath, parse_storage_path
from ckptstore.stores.adapters import traits_for
from ckptstore.stores.operations import (
    conditional_write_mode,
    make_directories,
    path_is_s3,
    probe_conditional_writes,
)
from ckptstore.stores.registry import filesystem_for

__all__ = [
    "MAX_SAVEPOINT_DIR_ATTEMPTS",
    "FsCheckpointStorageAccess",
    "create_savepoint_directory",
    "random_savepoint_suffix",
]


class FsCheckpointStorageAccess(
    AbstractCheckpointStorageAccess[
        FsCheckpointStorageLocation, FsCheckpointStorageLocation, FsCheckpointStorageLocation
    ]
):
    """Checkpoint storage access for one job on an fsspec file system.

    What is not about files (argument checks, allowed schemes, pointer resolution, savepoint
    directories) is ``ckptstore.filesystem.base_access``'s.
    """

    def __init__(
        self,
        checkpoint_base: StoragePath,
        savepoint_base: StoragePath | None,
        job_id: JobID,
        *,
        file_state_threshold: int,
        write_buffer_size: int,
        create_subdir: bool,
        storage_options: Mapping[str, Any] | None = None,
        entropy: EntropyInjector | None = None,
        allowed_schemes: Collection[str] = (),
    ) -> None:
        super().__init__(
            job_id,
            checkpoint_base,
            savepoint_base,
            storage_options=storage_options,
            allowed_schemes=allowed_schemes,
        )
        # the storage checked every argument; its checkpoint directory is never None
        token = self._checkpoint_base_token
        assert token is not None
        self._token = token
        self._threshold = file_state_threshold
        self._buffer_size = write_buffer_size
        self._entropy = entropy
        self._checkpoints_dir = (
            checkpoint_base.child(str(self._job_id)) if create_subdir else checkpoint_base
        )
        self._shared_dir = self._checkpoints_dir.child(CHECKPOINT_SHARED_STATE_DIR)
        self._task_owned_dir = self._checkpoints_dir.child(CHECKPOINT_TASK_OWNED_STATE_DIR)
        self._task_owned_settings: StreamSettings | None = None

    # ------------------------------------------------------------------ properties

    @property
    def checkpoints_directory(self) -> str:
        """``<base>/<job id>`` (or ``<base>`` without create_subdir, CFG3)."""
        return self._checkpoints_dir.url

    @property
    def shared_state_directory(self) -> str:
        return self._shared_dir.url

    @property
    def task_owned_state_directory(self) -> str:
        return self._task_owned_dir.url

    @property
    def conditional_writes(self) -> str:
        """How ``_metadata`` is kept from being overwritten in the checkpoint directory.

        ``"honoured"``: the store refuses a second exclusive create (local and memory file
        systems; S3 servers that honour ``If-None-Match: *``): one PutObject per
        ``_metadata``. Where the S3 server ignores the condition:
        ``"ignored: finalization refused"`` (every finalization raises
        ``ConditionalWritesUnsupportedError``), or ``"ignored: claim-then-write"`` where the
        storage options set ``allow_unconditional_metadata`` (``ckptstore.stores.s3``).
        ``"unknown: not probed yet"``: S3 before ``initialize_base_locations_for_checkpoint``
        (or a first ``_metadata`` publish) in this process. No I/O.
        """
        fs = filesystem_for(self._checkpoints_dir, self._token)
        return conditional_write_mode(fs, self._checkpoints_dir)

    # ------------------------------------------------------------------ coordinator view

    def supports_highly_available_storage(self) -> bool:
        return True

    @public_call
    def initialize_base_locations_for_checkpoint(self) -> None:
        """Create ``shared/`` and ``taskowned/`` on directory file systems (ACC5).

        On S3 the coordinator's once-per-job setup also finds out whether the server honours
        conditional writes, once per process per endpoint and bucket (three requests under
        the checkpoint directory the first time: ``ckptstore.stores.s3``); see
        :attr:`conditional_writes`. No directory request is sent to an object store.
        """
        fs = filesystem_for(self._checkpoints_dir, self._token)
        if path_is_s3(self._checkpoints_dir):
            # where _metadata goes: with entropy injection, the path without the key (MD1)
            entropy = self._entropy
            probe_dir = (
                entropy.remove(self._checkpoints_dir)
                if entropy is not None
                else self._checkpoints_dir
            )
            probe_conditional_writes(fs, probe_dir)
        _make_state_directory(fs, self._shared_dir, "shared state")
        _make_state_directory(fs, self._task_owned_dir, "task owned state")

    def _create_checkpoint_location(self, checkpoint_id: int) -> FsCheckpointStorageLocation:
        """``chk-<n>``, created on directory file systems; nothing sent to object stores (ACC6)."""
        location = self._checkpoint_location(checkpoint_id)
        directory = parse_storage_path(location.checkpoint_directory)
        make_directories(filesystem_for(directory, self._token), directory)
        return location

    def _checkpoint_location(self, checkpoint_id: int) -> FsCheckpointStorageLocation:
        return FsCheckpointStorageLocation(
            self._checkpoints_dir.child(f"{CHECKPOINT_DIR_PREFIX}{checkpoint_id}"),
            self._shared_dir,
            self._task_owned_dir,
            CheckpointStorageLocationReference.default(),
            file_state_threshold=self._threshold,
            write_buffer_size=self._buffer_size,
            fs_token=self._token,
            entropy=self._entropy,
            layout_kind="checkpoint",
        )

    def _savepoint_location(
        self, directory: StoragePath, token: str
    ) -> FsCheckpointStorageLocation:
        return FsCheckpointStorageLocation(
            directory,
            directory,
            directory,
            encode_path_as_reference(directory.url),
            file_state_threshold=self._threshold,
            write_buffer_size=self._buffer_size,
            fs_token=token,
            entropy=self._entropy,
            layout_kind="savepoint",
        )

    # ------------------------------------------------------------------ worker view

    def _worker_location(
        self, checkpoint_id: int, reference: CheckpointStorageLocationReference
    ) -> FsCheckpointStorageLocation:
        """The location for a checkpoint (default reference) or savepoint; no I/O (ACC9).

        A savepoint reference may name any directory its scheme allows (ACC9); the location's
        ``dispose_on_failure`` still deletes only a ``savepoint-...`` directory.
        """
        if reference.is_default:
            return self._checkpoint_location(checkpoint_id)
        try:
            directory = parse_storage_path(decode_path_from_reference(reference))
        except InvalidReferenceError:
            raise
        except ValueError as exc:
            raise InvalidReferenceError("Reference cannot be decoded to a path") from exc
        self._check_scheme(directory, "location reference")
        return self._savepoint_location(directory, self._token_for(directory))

    def create_task_owned_state_stream(self) -> FsCheckpointStateOutputStream:
        """A stream into ``taskowned/``; absolute handles, inline threshold applies (ACC10)."""
        settings = self._task_owned_settings
        if settings is None:
            settings = self._task_owned_settings = StreamSettings.of(
                self._task_owned_dir,
                capacity=max(self._buffer_size, self._threshold),
                threshold=self._threshold,
                fs_token=self._token,
                allow_relative_paths=False,
                entropy=self._entropy,
            )
        return FsCheckpointStateOutputStream.with_settings(settings)

    def create_task_owned_checkpoint_state_toolset(self) -> CheckpointStateToolset:
        """Server-side duplication into ``taskowned/`` where the store can copy (ACC11)."""
        if traits_for(self._task_owned_dir.scheme).server_side_copy:
            return FsCheckpointStateToolset(
                self._task_owned_dir, fs_token=self._token, entropy=self._entropy
            )
        return NotDuplicatingCheckpointStateToolset()

    def __repr__(self) -> str:
        return (
            f"FsCheckpointStorageAccess(job={self._job_id}, "
            f"checkpoints={self._checkpoints_dir.shown!r})"
        )


def _make_state_directory(fs: Any, directory: StoragePath, what: str) -> None:
    """Create the job's directory for one kind of state; a failure names the kind (ACC5)."""
    try:
        make_directories(fs, directory)
    except OSError as exc:
        raise with_context(
            exc, f"Failed to create directory for {what}: {directory.url}", directory, fs
        ) from exc
