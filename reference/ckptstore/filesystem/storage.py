"""``FileSystemCheckpointStorage``: checkpoints on any fsspec file system (CS4, CFG2-CFG5).

The storage is configuration only: paths, thresholds, fsspec ``storage_options``, entropy
and the extra schemes pointers may use. It is immutable (hence thread-safe), compares by
configuration, pickles to that configuration alone (no file system, lock or cache) and never
shows a secret in ``repr`` (``ckptstore.redaction``: secret-looking keys at any depth, URL
userinfo, secret query parameters). Each ``create_checkpoint_storage(job_id)`` returns a
fresh ``FsCheckpointStorageAccess``. Every argument goes through ``ckptstore.validation``.

Crash leftovers (``ckptstore.filesystem.leftovers``): ``find_leftovers(job_id, older_than=...)``
lists the staging files and orphaned state files a crash left in this storage's own layout for a
job, and ``clean_leftovers(job_id, older_than=..., dry_run=False)`` removes them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from ckptstore.api import JobID
from ckptstore.errors import ConfigurationError, MissingArgumentError
from ckptstore.filesystem.access import FsCheckpointStorageAccess
from ckptstore.filesystem.base_access import (
    allowed_schemes_argument,
    optional_path_argument,
    path_argument,
)
from ckptstore.filesystem.entropy import EntropyInjector, validate_entropy_options
from ckptstore.filesystem.handles import FileStateHandle, RelativeFileStateHandle
from ckptstore.filesystem.leftovers import Leftover, LeftoverMethods
from ckptstore.filesystem.locations import MAX_FILE_STATE_THRESHOLD
from ckptstore.filesystem.metadata import FsCompletedCheckpointStorageLocation
from ckptstore.filesystem.pointers import (
    normalise_schemes,
    resolve_checkpoint_pointer,
    storage_schemes,
)
from ckptstore.paths import StoragePath, parse_storage_path
from ckptstore.redaction import redact, secret_values
from ckptstore.stores.adapters import traits_for
from ckptstore.stores.registry import register_path
from ckptstore.validation import (
    MAX_WRITE_BUFFER_SIZE,
    require_bool,
    require_int,
    require_job_id,
    require_storage_options,
)

__all__ = [
    "DEFAULT_FILE_STATE_THRESHOLD",
    "DEFAULT_WRITE_BUFFER_SIZE",
    "FileStateHandle",
    "FileSystemCheckpointStorage",
    "Leftover",
    "RelativeFileStateHandle",
    "redact_options",
]

#: CFG4: execution.checkpointing.data-inline-threshold (20 KiB since FLINK-17865).
DEFAULT_FILE_STATE_THRESHOLD = 20 * 1024
#: CFG5: execution.checkpointing.write-buffer-size.
DEFAULT_WRITE_BUFFER_SIZE = 4096


def redact_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of fsspec options that is safe to show (``ckptstore.redaction.redact``, with
    the options' own secret values blanked wherever they occur)."""
    result = redact(dict(options), secret_values(options))
    assert isinstance(result, dict)
    return result


class FileSystemCheckpointStorage(LeftoverMethods):
    """Checkpoint storage on a file system (local, memory, S3 or any fsspec URL).

    ``file_state_size_threshold``: state up to this size is kept inline (None or -1: 20480;
    range [-1, 1048576]). ``write_buffer_size``: stream buffer (-1: 4096; at most
    ``MAX_WRITE_BUFFER_SIZE``, 64 MiB); streams use ``max(buffer, threshold)``.
    ``create_subdir``: put ``shared/``, ``taskowned/`` and ``chk-<n>`` under
    ``<path>/<job id>`` (CFG3; ``True`` or ``False``, nothing else). ``storage_options``:
    fsspec connection settings, including the retry budget: the storage-agnostic
    ``retry_attempts`` (requests per operation) and ``retry_seconds`` (seconds per public call,
    ``ckptstore.stores.s3``), or the client's own ``retries``, ``config_kwargs``
    ``connect_timeout``/``read_timeout``/``retries`` (``ckptstore.stores.registry``), and
    ``allow_unconditional_metadata`` (a bool: publish ``_metadata`` on S3 servers that ignore
    conditional writes, at the risk ``ckptstore.stores.s3`` states, instead of refusing).
    ``entropy_key``/``entropy_length``: entropy injection (object stores and memory only).
    ``allowed_schemes``: schemes, besides those of the configured paths, that
    ``resolve_checkpoint`` may open; each must be served by an fsspec file system.

    Bad arguments raise ``ckptstore.validation``'s typed errors (``TypeError`` for ``None``,
    ``ValueError`` otherwise) naming the argument, the value and the accepted range.
    """

    MAX_FILE_STATE_THRESHOLD = MAX_FILE_STATE_THRESHOLD

    def __init__(
        self,
        checkpoint_path: str,
        file_state_size_threshold: int | None = None,
        write_buffer_size: int = -1,
        *,
        savepoint_path: str | None = None,
        create_subdir: bool = True,
        storage_options: Mapping[str, Any] | None = None,
        entropy_key: str | None = None,
        entropy_length: int = 4,
        allowed_schemes: Collection[str] = (),
    ) -> None:
        if checkpoint_path is None:
            raise MissingArgumentError(
                "checkpoint directory is null (checkpoint_path must not be None)"
            )
        checkpoint = path_argument(checkpoint_path, "checkpoint_path")
        savepoint = optional_path_argument(savepoint_path, "savepoint_path")

        threshold = -1 if file_state_size_threshold is None else file_state_size_threshold
        message = (
            f"The threshold for file state size must be in [-1, {MAX_FILE_STATE_THRESHOLD}], "
            "where '-1' means to use the value from the deployment's configuration."
        )
        threshold = require_int(
            threshold,
            "file_state_size_threshold",
            minimum=-1,
            maximum=MAX_FILE_STATE_THRESHOLD,
            range_message=message,
        )
        write_buffer_size = require_int(
            write_buffer_size,
            "write_buffer_size",
            minimum=-1,
            maximum=MAX_WRITE_BUFFER_SIZE,
            below_message=(
                "The write buffer size must be not less than '-1', where '-1' means to use the "
                "value from the deployment's configuration."
            ),
        )
        create_subdir = require_bool(create_subdir, "create_subdir")
        options = require_storage_options(storage_options)
        schemes = allowed_schemes_argument(allowed_schemes)
        validate_entropy_options(entropy_key, entropy_length)
        if entropy_key is not None:
            for path in (checkpoint, savepoint):
                if path is not None and not traits_for(path.scheme).entropy_allowed:
                    raise ConfigurationError(
                        f"Entropy injection (entropy_key={entropy_key!r}) is not supported on "
                        f"'{path.scheme}' paths such as {path.url}: it spreads objects over "
                        "key prefixes of an object store (S3, GCS, Azure); on a file system "
                        "with real directories it would only create a directory per file. "
                        "Remove entropy_key or use an object store."
                    )

        self._checkpoint = checkpoint
        self._savepoint = savepoint
        self._threshold = threshold
        self._buffer_size = write_buffer_size
        self._create_subdir = create_subdir
        self._storage_options: dict[str, Any] = options
        self._entropy_key = entropy_key
        self._entropy_length = entropy_length
        self._allowed_schemes = tuple(sorted(normalise_schemes(schemes)))
        # Register the connection options in this process (also after unpickling) for the
        # store and buckets of both paths, so handles read here find them (rules in
        # ``ckptstore.stores.registry``). No I/O.
        for path in (checkpoint, savepoint):
            if path is not None:
                register_path(path, self._storage_options)

    # ------------------------------------------------------------------ PyFlink getters

    def get_checkpoint_path(self) -> str:
        return self._checkpoint.url

    def get_savepoint_path(self) -> str | None:
        return None if self._savepoint is None else self._savepoint.url

    def get_min_file_size_threshold(self) -> int:
        """The configured threshold, or the default 20480 (CS4)."""
        return DEFAULT_FILE_STATE_THRESHOLD if self._threshold < 0 else self._threshold

    def get_write_buffer_size(self) -> int:
        """The configured buffer size, or the default 4096 (not max'ed with the threshold)."""
        return DEFAULT_WRITE_BUFFER_SIZE if self._buffer_size < 0 else self._buffer_size

    @property
    def create_subdir(self) -> bool:
        return self._create_subdir

    @property
    def storage_options(self) -> dict[str, Any]:
        """A copy of the fsspec options (they may hold credentials: do not log them)."""
        return dict(self._storage_options)

    @property
    def entropy_key(self) -> str | None:
        return self._entropy_key

    @property
    def entropy_length(self) -> int:
        return self._entropy_length

    @property
    def allowed_schemes(self) -> tuple[str, ...]:
        return self._allowed_schemes

    # ------------------------------------------------------------------ contract

    def _entropy(self) -> EntropyInjector | None:
        if self._entropy_key is None:
            return None
        return EntropyInjector(self._entropy_key, self._entropy_length)

    def _all_allowed_schemes(self) -> frozenset[str]:
        return storage_schemes((self._checkpoint, self._savepoint), self._allowed_schemes)

    def create_checkpoint_storage(self, job_id: JobID) -> FsCheckpointStorageAccess:
        """A fresh access object for one job (no I/O)."""
        job_id = require_job_id(job_id)
        return FsCheckpointStorageAccess(
            self._checkpoint,
            self._savepoint,
            job_id,
            file_state_threshold=self.get_min_file_size_threshold(),
            write_buffer_size=max(self.get_write_buffer_size(), self.get_min_file_size_threshold()),
            create_subdir=self._create_subdir,
            storage_options=self._storage_options,
            entropy=self._entropy(),
            allowed_schemes=self._allowed_schemes,
        )

    def resolve_checkpoint(self, external_pointer: str) -> FsCompletedCheckpointStorageLocation:
        """Find a completed checkpoint or savepoint by its pointer (PTR1-PTR10)."""
        return resolve_checkpoint_pointer(
            external_pointer,
            allowed_schemes=self._all_allowed_schemes(),
            storage_options=self._storage_options,
        )

    # ------------------------------------------------------------------ crash leftovers

    def _leftover_directories(
        self, job_id: JobID
    ) -> tuple[JobID, StoragePath | None, StoragePath | None]:
        """``find_leftovers``/``clean_leftovers``
        (``ckptstore.filesystem.leftovers.LeftoverMethods``) scan the job's checkpoint directory
        (CFG3) and the default savepoint directory."""
        access = self.create_checkpoint_storage(job_id)
        return access.job_id, parse_storage_path(access.checkpoints_directory), self._savepoint

    # ------------------------------------------------------------------ value semantics

    def _config(self) -> dict[str, Any]:
        return {
            "checkpoint_path": self._checkpoint.url,
            "file_state_size_threshold": self._threshold,
            "write_buffer_size": self._buffer_size,
            "savepoint_path": self.get_savepoint_path(),
            "create_subdir": self._create_subdir,
            "storage_options": dict(self._storage_options),
            "entropy_key": self._entropy_key,
            "entropy_length": self._entropy_length,
            "allowed_schemes": self._allowed_schemes,
        }

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restore, (self._config(),))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FileSystemCheckpointStorage):
            return NotImplemented
        return self._config() == other._config()

    def __hash__(self) -> int:
        config = self._config()
        config["storage_options"] = repr(sorted(config["storage_options"].items()))
        return hash(tuple(sorted((k, repr(v)) for k, v in config.items())))

    def __repr__(self) -> str:
        parts = [
            f"checkpoint_path={redact(self._checkpoint.url)!r}",
            f"savepoint_path={redact(self.get_savepoint_path())!r}",
            f"file_state_size_threshold={self.get_min_file_size_threshold()}",
            f"write_buffer_size={self.get_write_buffer_size()}",
        ]
        if not self._create_subdir:
            parts.append("create_subdir=False")
        if self._storage_options:
            parts.append(f"storage_options={redact_options(self._storage_options)!r}")
        if self._entropy_key is not None:
            parts.append(f"entropy_key={redact(self._entropy_key)!r}")
            parts.append(f"entropy_length={self._entropy_length}")
        if self._allowed_schemes:
            parts.append(f"allowed_schemes={self._allowed_schemes!r}")
        return f"FileSystemCheckpointStorage({', '.join(parts)})"


def _restore(config: dict[str, Any]) -> FileSystemCheckpointStorage:
    return FileSystemCheckpointStorage(**config)
