"""What both checkpoint storage accesses share, as Flink's ``AbstractFsCheckpointStorageAccess``.

``FsCheckpointStorageAccess`` (``ckptstore.filesystem.access``) and
``MemoryBackendCheckpointStorageAccess`` (``ckptstore.jobmanager.access``) are one job's view of
their storage. They differ in where checkpoint state goes; everything else is here, once:

* the checks of the contract's arguments: the job id, checkpoint ids, location references and
  savepoint targets (``ckptstore.validation``), and :func:`path_argument` and
  :func:`allowed_schemes_argument`, the checks of the storages' constructors too;
* the schemes an access may open (its own paths', else the local file system, plus the
  storage's ``allowed_schemes``) and the error for any other (``ckptstore.filesystem.pointers``);
* pointer resolution and the default savepoint directory;
* savepoint directories: ``<base>/savepoint-<job[0:6]>-<12 hex>`` below the target or the
  default base, with up to ten fresh names (ACC7, L5).

A subclass says what a checkpoint location is (``_create_checkpoint_location``), what a fresh
savepoint directory becomes (``_savepoint_location``) and what a worker writes to for a checkpoint
id and reference (``_worker_location``); it also provides the base locations, the task-owned
stream and toolset. Construction does no I/O (ACC1): it registers the connection options of its
paths so that handles read in this process find them (``ckptstore.stores.registry``).
"""

from __future__ import annotations

import secrets
from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping
from typing import Any, Generic, TypeVar

from ckptstore.api import (
    SAVEPOINT_DIR_PREFIX,
    CheckpointStorageLocationReference,
    JobID,
)
from ckptstore.calls import public_call
from ckptstore.errors import CheckpointIOError, EndpointUnreachableError, InvalidArgumentError
from ckptstore.filesystem.metadata import FsCompletedCheckpointStorageLocation
from ckptstore.filesystem.pointers import (
    require_allowed_scheme,
    resolve_checkpoint_pointer,
    storage_schemes,
)
from ckptstore.io_errors import with_context
from ckptstore.paths import StoragePath, parse_storage_path
from ckptstore.stores.operations import make_directory_exclusive
from ckptstore.stores.registry import filesystem_for, register_path, require_available_schemes
from ckptstore.validation import (
    require_checkpoint_id,
    require_job_id,
    require_reference,
    require_scheme_names,
    require_storage_options,
    require_url_text,
)

__all__ = [
    "MAX_SAVEPOINT_DIR_ATTEMPTS",
    "AbstractCheckpointStorageAccess",
    "allowed_schemes_argument",
    "create_savepoint_directory",
    "optional_path_argument",
    "path_argument",
    "random_savepoint_suffix",
]

MAX_SAVEPOINT_DIR_ATTEMPTS = 10
_SAVEPOINT_ALPHABET = "0123456789abcdef"

CheckpointLocationT = TypeVar("CheckpointLocationT")
SavepointLocationT = TypeVar("SavepointLocationT")
WorkerLocationT = TypeVar("WorkerLocationT")


def path_argument(value: Any, what: str) -> StoragePath:
    """A path or URL argument, parsed (Flink's Path rules), on a scheme a file system serves."""
    path = parse_storage_path(require_url_text(value, what))
    require_available_schemes([path.scheme], what)
    return path


def optional_path_argument(value: Any, what: str) -> StoragePath | None:
    """:func:`path_argument`, or ``None`` for ``None``."""
    return None if value is None else path_argument(value, what)


def allowed_schemes_argument(value: Any) -> tuple[str, ...]:
    """An ``allowed_schemes`` argument: URL scheme names, each served by a file system."""
    names = require_scheme_names(value)
    require_available_schemes(names)
    return names


def random_savepoint_suffix() -> str:
    """12 random lowercase hex characters (L5; Flink's alphabet has a doubled '0', ours not)."""
    return "".join(secrets.choice(_SAVEPOINT_ALPHABET) for _ in range(12))


def create_savepoint_directory(fs: Any, base: StoragePath, job_id: JobID) -> StoragePath:
    """Create a fresh ``savepoint-<job[0:6]>-<12 hex>`` directory under ``base`` (ACC7, L5).

    Directory file systems: exclusive mkdir, up to 10 fresh names. Object stores: nothing is
    created (there are no directories); the random name alone makes the directory unique.
    An unreachable endpoint fails at once (a new name would not reach it either); otherwise
    after 10 failures ``CheckpointIOError`` "Failed to create savepoint directory at <base>"
    ends with what the last attempt said.
    """
    prefix = f"{SAVEPOINT_DIR_PREFIX}{str(job_id)[:6]}-"
    failure: BaseException = CheckpointIOError(
        f"{MAX_SAVEPOINT_DIR_ATTEMPTS} names existed already"
    )
    for _ in range(MAX_SAVEPOINT_DIR_ATTEMPTS):
        directory = base.child(prefix + random_savepoint_suffix())
        try:
            if make_directory_exclusive(fs, directory):
                return directory
        except Exception as exc:
            failure = exc
            if isinstance(exc, EndpointUnreachableError):
                break
    raise with_context(
        failure, f"Failed to create savepoint directory at {base.url}", base, fs
    ) from failure


class AbstractCheckpointStorageAccess(
    ABC, Generic[CheckpointLocationT, SavepointLocationT, WorkerLocationT]
):
    """One job's view of a checkpoint storage: the part that does not depend on the storage.

    ``checkpoint_base`` (the configured checkpoint path, without the job id) and
    ``savepoint_base`` (the default savepoint directory) may be ``None``; the schemes of those
    given, else ``file``, plus ``allowed_schemes`` are the ones this access may open.
    """

    def __init__(
        self,
        job_id: JobID,
        checkpoint_base: StoragePath | None,
        savepoint_base: StoragePath | None,
        *,
        storage_options: Mapping[str, Any] | None = None,
        allowed_schemes: Collection[str] = (),
    ) -> None:
        self._job_id = require_job_id(job_id)
        self._savepoint_base = savepoint_base
        self._storage_options = require_storage_options(storage_options)
        extra = allowed_schemes_argument(allowed_schemes)
        self._allowed_schemes = storage_schemes((checkpoint_base, savepoint_base), extra)
        # Registering (no I/O) lets handles read in this process, such as those in a
        # ``_metadata`` written elsewhere, find these options (``ckptstore.stores.registry``).
        self._checkpoint_base_token: str | None = None
        if checkpoint_base is not None:
            self._checkpoint_base_token = self._token_for(checkpoint_base)
        if savepoint_base is not None:
            self._token_for(savepoint_base)

    # ------------------------------------------------------------------ properties

    @property
    def job_id(self) -> JobID:
        return self._job_id

    @property
    def allowed_schemes(self) -> frozenset[str]:
        """The schemes this access may open (pointers, savepoint targets, references)."""
        return self._allowed_schemes

    def get_default_savepoint_directory(self) -> str | None:
        return None if self._savepoint_base is None else self._savepoint_base.url

    def _token_for(self, path: StoragePath) -> str:
        """Register this storage's options for the store and bucket of ``path`` (no I/O)."""
        return register_path(path, self._storage_options)

    def _check_scheme(self, path: StoragePath, what: str) -> None:
        require_allowed_scheme(path, self._allowed_schemes, what)

    # ------------------------------------------------------------------ coordinator view

    @abstractmethod
    def supports_highly_available_storage(self) -> bool: ...

    def has_default_savepoint_location(self) -> bool:
        return self._savepoint_base is not None

    def resolve_checkpoint(self, external_pointer: str) -> FsCompletedCheckpointStorageLocation:
        """Find a completed checkpoint or savepoint by its pointer (PTR1-PTR10)."""
        return resolve_checkpoint_pointer(
            external_pointer,
            allowed_schemes=self._allowed_schemes,
            storage_options=self._storage_options,
        )

    @abstractmethod
    def initialize_base_locations_for_checkpoint(self) -> None: ...

    @public_call
    def initialize_location_for_checkpoint(self, checkpoint_id: int) -> CheckpointLocationT:
        """The location of checkpoint ``checkpoint_id`` (ACC6; ``_create_checkpoint_location``)."""
        checkpoint_id = require_checkpoint_id(checkpoint_id, "checkpoint_id")
        return self._create_checkpoint_location(checkpoint_id)

    @public_call
    def initialize_location_for_savepoint(
        self, checkpoint_id: int, external_location_pointer: str | None = None
    ) -> SavepointLocationT:
        """``<base>/savepoint-<job[0:6]>-<12 hex>``: target pointer wins over the default (ACC7)."""
        require_checkpoint_id(checkpoint_id, "checkpoint_id")  # unused, as in Flink
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
        directory = create_savepoint_directory(filesystem_for(base, token), base, self._job_id)
        return self._savepoint_location(directory, token)

    @abstractmethod
    def _create_checkpoint_location(self, checkpoint_id: int) -> CheckpointLocationT:
        """The location of a checked checkpoint id, created where the storage needs that."""

    @abstractmethod
    def _savepoint_location(self, directory: StoragePath, token: str) -> SavepointLocationT:
        """The location of a freshly named savepoint directory (``token``: its file system)."""

    # ------------------------------------------------------------------ worker view

    def resolve_checkpoint_storage_location(
        self, checkpoint_id: int, reference: CheckpointStorageLocationReference
    ) -> WorkerLocationT:
        """Where a worker writes for ``checkpoint_id`` and ``reference`` (ACC9; no I/O)."""
        checkpoint_id = require_checkpoint_id(checkpoint_id, "checkpoint_id")
        return self._worker_location(checkpoint_id, require_reference(reference))

    @abstractmethod
    def _worker_location(
        self, checkpoint_id: int, reference: CheckpointStorageLocationReference
    ) -> WorkerLocationT:
        """The worker's location for a checked checkpoint id and reference."""
