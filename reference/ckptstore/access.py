"""One job's view of file-system checkpoint storage: ``FsCheckpointStorageAccess`` (ACC1-ACC12).

Coordinator side: base directories, ``chk-<n>`` locations, savepoint locations and pointer
resolution. On object stores the coordinator sends no directory requests at all (on S3 its
once-per-job setup probes whether the server honours conditional writes: ``ckptstore.s3``,
:attr:`FsCheckpointStorageAccess.conditional_writes`); on ``file`` and ``memory`` it creates
directories with ``makedirs``. Worker side: the location for a
checkpoint id and reference, the task-owned stream and toolset, with no I/O whatsoever until
a stream spills to its file (S1).

Construction does no I/O (ACC1).
"""

from __future__ import annotations

import secrets
from collections.abc import Collection, Mapping
from typing import Any

from ckptstore.api import (
    CHECKPOINT_DIR_PREFIX,
    CHECKPOINT_SHARED_STATE_DIR,
    CHECKPOINT_TASK_OWNED_STATE_DIR,
    SAVEPOINT_DIR_PREFIX,
    CheckpointStateToolset,
    CheckpointStorageLocationReference,
    JobID,
    decode_path_from_reference,
    encode_path_as_reference,
)
from ckptstore.entropy import EntropyInjector
from ckptstore.errors import (
    CheckpointIOError,
    EndpointUnreachableError,
    InvalidArgumentError,
    InvalidReferenceError,
    MissingArgumentError,
    UnsupportedSchemeError,
)
from ckptstore.filesystems import (
    conditional_write_mode,
    filesystem_for,
    make_directories,
    make_directory_exclusive,
    path_is_s3,
    probe_conditional_writes,
    register_path,
    traits_for,
)
from ckptstore.io_errors import with_context
from ckptstore.locations import FsCheckpointStorageLocation
from ckptstore.metadata import FsCompletedCheckpointStorageLocation
from ckptstore.paths import StoragePath, parse_storage_path
from ckptstore.pointers import normalise_schemes, resolve_checkpoint_pointer
from ckptstore.redaction import redact_text
from ckptstore.streams import FsCheckpointStateOutputStream
from ckptstore.toolset import FsCheckpointStateToolset, NotDuplicatingCheckpointStateToolset
from ckptstore.validation import require_checkpoint_id, require_reference, require_url_text

__all__ = [
    "MAX_SAVEPOINT_DIR_ATTEMPTS",
    "FsCheckpointStorageAccess",
    "create_savepoint_directory",
    "random_savepoint_suffix",
]

MAX_SAVEPOINT_DIR_ATTEMPTS = 10
_SAVEPOINT_ALPHABET = "0123456789abcdef"


def random_savepoint_suffix() -> str:
    """12 random lowercase hex characters (L5; Flink's alphabet has a doubled '0', ours not)."""
    return "".join(secrets.choice(_SAVEPOINT_ALPHABET) for _ in range(12))


def _checkpoint_id(checkpoint_id: int) -> int:
    return require_checkpoint_id(checkpoint_id, "checkpoint_id")


def create_savepoint_directory(fs: Any, base: StoragePath, job_id: JobID) -> StoragePath:
    """Create a fresh ``savepoint-<job[0:6]>-<12 hex>`` directory under ``base`` (ACC7, L5).

    Directory file systems: exclusive mkdir, up to 10 fresh names. Object stores: nothing is
    created (there are no directories); the random name alone makes the directory unique.
    An unreachable endpoint fails at once (a new name would not reach it either); otherwise
    after 10 failures ``CheckpointIOError`` "Failed to create savepoint directory at <base>"
    ends with what the last attempt said.
    """
    prefix = f"{SAVEPOINT_DIR_PREFIX}{str(job_id)[:6]}-"
    last: BaseException | None = None
    for _ in range(MAX_SAVEPOINT_DIR_ATTEMPTS):
        directory = base.child(prefix + random_savepoint_suffix())
        try:
            if make_directory_exclusive(fs, directory):
                return directory
        except EndpointUnreachableError as exc:
            last = exc
            break
        except Exception as exc:
            last = exc
    message = f"Failed to create savepoint directory at {base.url}"
    if last is None:
        raise CheckpointIOError(f"{message}: {MAX_SAVEPOINT_DIR_ATTEMPTS} names existed already")
    raise with_context(last, message, base, fs) from last


class FsCheckpointStorageAccess:
    """Checkpoint storage access for one job on an fsspec file system."""

    def __init__(
        self,
        checkpoint_base: StoragePath,
        savepoint_base: StoragePath | None,
        job_id: JobID,
        *,
        file_state_threshold: int,
        write_buffer_size: int,
        create_subdir: bool = True,
        storage_options: Mapping[str, Any] | None = None,
        entropy: EntropyInjector | None = None,
        allowed_schemes: Collection[str] = (),
    ) -> None:
        if job_id is None:
            raise MissingArgumentError("jobId")
        if checkpoint_base is None:
            raise MissingArgumentError("checkpoint directory is null")
        if file_state_threshold < 0 or write_buffer_size < 0:
            raise InvalidArgumentError("threshold and write buffer size must be >= 0")
        self._job_id = job_id
        self._savepoint_base = savepoint_base
        self._threshold = file_state_threshold
        self._buffer_size = write_buffer_size
        self._storage_options = dict(storage_options or {})
        self._entropy = entropy
        self._checkpoints_dir = (
            checkpoint_base.child(str(job_id)) if create_subdir else checkpoint_base
        )
        self._shared_dir = self._checkpoints_dir.child(CHECKPOINT_SHARED_STATE_DIR)
        self._task_owned_dir = self._checkpoints_dir.child(CHECKPOINT_TASK_OWNED_STATE_DIR)
        schemes = {checkpoint_base.scheme, *allowed_schemes}
        if savepoint_base is not None:
            schemes.add(savepoint_base.scheme)
        self._allowed_schemes = normalise_schemes(schemes)
        # Register (no I/O) the options for the store and buckets of both base directories,
        # so handles read in this process find them (``ckptstore.filesystems``).
        self._token = register_path(checkpoint_base, self._storage_options)
        if savepoint_base is not None:
            register_path(savepoint_base, self._storage_options)

    # ------------------------------------------------------------------ properties

    @property
    def job_id(self) -> JobID:
        return self._job_id

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
    def allowed_schemes(self) -> frozenset[str]:
        return self._allowed_schemes

    def get_default_savepoint_directory(self) -> str | None:
        return None if self._savepoint_base is None else self._savepoint_base.url

    @property
    def conditional_writes(self) -> str:
        """How ``_metadata`` is kept from being overwritten in the checkpoint directory.

        ``"honoured"``: the store refuses a second exclusive create (local and memory file
        systems; S3 servers that honour ``If-None-Match: *``): one PutObject per
        ``_metadata``. ``"ignored: check-then-write"``: the S3 server ignores the condition,
        so a HEAD before the PUT refuses an existing ``_metadata``; two coordinators
        publishing the same checkpoint at the same moment could still overwrite each other.
        ``"unknown: not probed yet"``: S3 before ``initialize_base_locations_for_checkpoint``
        (or a first ``_metadata`` publish) in this process. No I/O.
        """
        fs = filesystem_for(self._checkpoints_dir, self._token)
        return conditional_write_mode(fs, self._checkpoints_dir)

    def _token_for(self, path: StoragePath) -> str:
        return register_path(path, self._storage_options)

    def _check_scheme(self, path: StoragePath, what: str) -> None:
        if path.scheme not in self._allowed_schemes:
            raise UnsupportedSchemeError(
                f"Cannot access file system for {what} '{redact_text(path.url)}': the scheme "
                f"'{path.scheme}' is not allowed for this storage (allowed: "
                f"{', '.join(sorted(self._allowed_schemes))}). Add it to the storage's "
                "allowed_schemes."
            )

    # ------------------------------------------------------------------ coordinator view

    def supports_highly_available_storage(self) -> bool:
        return True

    def has_default_savepoint_location(self) -> bool:
        return self._savepoint_base is not None

    def resolve_checkpoint(self, external_pointer: str) -> FsCompletedCheckpointStorageLocation:
        return resolve_checkpoint_pointer(
            external_pointer,
            allowed_schemes=self._allowed_schemes,
            storage_options=self._storage_options,
        )

    def initialize_base_locations_for_checkpoint(self) -> None:
        """Create ``shared/`` and ``taskowned/`` on directory file systems (ACC5).

        On S3 the coordinator's once-per-job setup also finds out whether the server honours
        conditional writes, once per process per endpoint and bucket (three requests under
        the checkpoint directory the first time: ``ckptstore.s3``); see
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
        for directory, what in (
            (self._shared_dir, "shared state"),
            (self._task_owned_dir, "task owned state"),
        ):
            try:
                make_directories(fs, directory)
            except OSError as exc:
                raise with_context(
                    exc, f"Failed to create directory for {what}: {directory.url}", directory, fs
                ) from exc

    def initialize_location_for_checkpoint(self, checkpoint_id: int) -> FsCheckpointStorageLocation:
        """``chk-<n>``, created on directory file systems; nothing sent to object stores (ACC6)."""
        location = self._checkpoint_location(_checkpoint_id(checkpoint_id))
        directory = parse_storage_path(location.checkpoint_directory)
        make_directories(filesystem_for(directory, self._token), directory)
        return location

    def initialize_location_for_savepoint(
        self, checkpoint_id: int, external_location_pointer: str | None = None
    ) -> FsCheckpointStorageLocation:
        """``<base>/savepoint-<job[0:6]>-<12 hex>``: target pointer wins over the default (ACC7)."""
        _checkpoint_id(checkpoint_id)  # unused, as in Flink, but it must be an id
        if external_location_pointer is not None:
            base = parse_storage_path(
                require_url_text(external_location_pointer, "external_location_pointer")
            )
            self._check_scheme(base, "savepoint path")
        elif self._savepoint_base is not None:
            base = self._savepoint_base
        else:
            raise InvalidArgumentError(
                "No savepoint location given and no default location configured."
            )
        token = self._token_for(base)
        fs = filesystem_for(base, token)
        directory = create_savepoint_directory(fs, base, self._job_id)
        return self._savepoint_location(directory, token)

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

    def resolve_checkpoint_storage_location(
        self, checkpoint_id: int, reference: CheckpointStorageLocationReference
    ) -> FsCheckpointStorageLocation:
        """The location for a checkpoint (default reference) or savepoint; no I/O (ACC9).

        A savepoint reference may name any directory its scheme allows (ACC9); the location's
        ``dispose_on_failure`` still deletes only a ``savepoint-...`` directory.
        """
        checkpoint_id = _checkpoint_id(checkpoint_id)
        reference = require_reference(reference)
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
        return FsCheckpointStateOutputStream(
            self._task_owned_dir,
            buffer_size=max(self._buffer_size, self._threshold),
            threshold=self._threshold,
            fs_token=self._token,
            allow_relative_paths=False,
            entropy=self._entropy,
        )

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
