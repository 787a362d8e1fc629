"""Build a checkpoint storage from Flink-style configuration (CS5, CS4 configure, CFG1-CFG5, CFG9).

``load_checkpoint_storage(config)`` follows Flink's ``CheckpointStorageLoader``:

1. a storage set by the application (``application_storage=``) wins; the configuration only
   fills in what it left open (JobManager storage: missing checkpoint/savepoint paths);
2. otherwise ``execution.checkpointing.storage``: ``jobmanager`` or ``filesystem``;
3. otherwise the default: a ``FileSystemCheckpointStorage`` when a checkpoint directory is
   configured, else a ``JobManagerCheckpointStorage``;
4. with no storage, checkpoint directory or savepoint directory configured at all, ``None``.

The file-system settings are read as ``FileSystemCheckpointStorage.configure`` reads them:
an inline threshold outside ``[0, 1 MiB]`` is ignored with a logged warning in favour of the
20 KiB default, and the write buffer becomes ``max(write buffer, threshold)``. fsspec
connection settings are not Flink keys; they are passed separately as ``storage_options``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ckptstore.api import CheckpointStorage
from ckptstore.errors import ConfigurationError, InvalidArgumentError, MissingArgumentError
from ckptstore.options import (
    CHECKPOINT_STORAGE,
    CHECKPOINTS_DIRECTORY,
    CREATE_CHECKPOINT_SUB_DIR,
    ENTROPY_INJECT_KEY,
    ENTROPY_INJECT_LENGTH,
    FS_SMALL_FILE_THRESHOLD,
    FS_WRITE_BUFFER_SIZE,
    SAVEPOINT_DIRECTORY,
    ConfigOption,
    get_bool,
    get_int,
    get_memory_size,
    get_string,
)
from ckptstore.redaction import get_logger
from ckptstore.validation import describe

if TYPE_CHECKING:
    from ckptstore.filesystem.storage import FileSystemCheckpointStorage
    from ckptstore.jobmanager.storage import JobManagerCheckpointStorage

__all__ = [
    "DEFAULT_FILE_STATE_THRESHOLD",
    "MAX_FILE_STATE_THRESHOLD",
    "load_checkpoint_storage",
    "load_file_system_storage",
    "load_jobmanager_storage",
]

_LOG = get_logger(__name__)

#: The inline threshold when none (or an invalid one) is configured: 20 KiB (CFG4).
DEFAULT_FILE_STATE_THRESHOLD = 20 * 1024
#: The largest inline threshold Flink accepts: 1 MiB (CS4).
MAX_FILE_STATE_THRESHOLD = 1024 * 1024

_SHORTCUTS = ("jobmanager", "filesystem")


def load_checkpoint_storage(
    config: Mapping[str, str | int | bool],
    *,
    storage_options: Mapping[str, Any] | None = None,
    application_storage: CheckpointStorage | None = None,
) -> CheckpointStorage | None:
    """The checkpoint storage that ``config`` describes, or ``None`` if it describes none.

    ``storage_options`` are fsspec connection settings (endpoint, credentials, ...) handed to
    the storage; they are never read from ``config``. Raises ``ConfigurationError`` for an
    unknown storage name or an invalid value.
    """
    config = _require_mapping(config)
    if application_storage is not None:
        return _configure_application_storage(application_storage, config)
    name = get_string(config, CHECKPOINT_STORAGE)
    if name is not None:
        kind = name.lower()
        if kind == "jobmanager":
            return load_jobmanager_storage(config, storage_options=storage_options)
        if kind == "filesystem":
            return load_file_system_storage(config, storage_options=storage_options)
        raise ConfigurationError(
            f"Unknown checkpoint storage {name!r} in {_key_of(config, CHECKPOINT_STORAGE)!r}"
            f": expected one of {', '.join(repr(s) for s in _SHORTCUTS)} (checkpoint storage "
            "factory class names are not supported)"
        )
    if get_string(config, CHECKPOINTS_DIRECTORY) is not None:
        return load_file_system_storage(config, storage_options=storage_options)
    if get_string(config, SAVEPOINT_DIRECTORY) is not None:
        return load_jobmanager_storage(config, storage_options=storage_options)
    return None


def load_jobmanager_storage(
    config: Mapping[str, str | int | bool], *, storage_options: Mapping[str, Any] | None = None
) -> JobManagerCheckpointStorage:
    """A ``JobManagerCheckpointStorage`` with the configured checkpoint and savepoint paths."""
    from ckptstore.jobmanager.storage import JobManagerCheckpointStorage

    config = _require_mapping(config)
    try:
        return JobManagerCheckpointStorage(
            get_string(config, CHECKPOINTS_DIRECTORY),
            savepoint_path=get_string(config, SAVEPOINT_DIRECTORY),
            storage_options=storage_options,
        )
    except (InvalidArgumentError, MissingArgumentError) as exc:
        raise ConfigurationError(
            f"Invalid configuration for the JobManager storage: {exc}"
        ) from exc


def load_file_system_storage(
    config: Mapping[str, str | int | bool], *, storage_options: Mapping[str, Any] | None = None
) -> FileSystemCheckpointStorage:
    """A ``FileSystemCheckpointStorage`` from the configuration (CS4 ``createFromConfig``)."""
    from ckptstore.filesystem.storage import FileSystemCheckpointStorage

    config = _require_mapping(config)
    checkpoint_dir = get_string(config, CHECKPOINTS_DIRECTORY)
    if checkpoint_dir is None:
        raise ConfigurationError(
            "Cannot create the file system state backend: The configuration does not specify "
            f"the checkpoint directory '{CHECKPOINTS_DIRECTORY.key}'"
        )
    threshold = configured_file_state_threshold(config)
    write_buffer = get_int(config, FS_WRITE_BUFFER_SIZE)
    if write_buffer < 0:
        raise ConfigurationError(
            f"configuration key {_key_of(config, FS_WRITE_BUFFER_SIZE)!r}: the write buffer "
            f"size must not be negative, got {write_buffer}"
        )
    entropy_key = get_string(config, ENTROPY_INJECT_KEY)
    entropy_options: dict[str, Any] = {}
    if entropy_key is not None:
        entropy_options = {
            "entropy_key": entropy_key,
            "entropy_length": get_int(config, ENTROPY_INJECT_LENGTH),
        }
    try:
        return FileSystemCheckpointStorage(
            checkpoint_dir,
            threshold,
            max(write_buffer, threshold),
            savepoint_path=get_string(config, SAVEPOINT_DIRECTORY),
            create_subdir=get_bool(config, CREATE_CHECKPOINT_SUB_DIR),
            storage_options=storage_options,
            **entropy_options,
        )
    except ConfigurationError:
        raise
    except (InvalidArgumentError, MissingArgumentError) as exc:
        raise ConfigurationError(f"Invalid configuration for the state backend: {exc}") from exc


def configured_file_state_threshold(config: Mapping[str, str | int | bool]) -> int:
    """The inline threshold of the configuration; an out-of-range value falls back to 20 KiB."""
    key, threshold = get_memory_size(config, FS_SMALL_FILE_THRESHOLD)
    if 0 <= threshold <= MAX_FILE_STATE_THRESHOLD:
        return threshold
    _LOG.warning(
        "Ignoring invalid file size threshold value (%s = %d): the value must be between 0 and "
        "%d. Using the default value %d instead.",
        key,
        threshold,
        MAX_FILE_STATE_THRESHOLD,
        DEFAULT_FILE_STATE_THRESHOLD,
    )
    return DEFAULT_FILE_STATE_THRESHOLD


def _configure_application_storage(
    storage: CheckpointStorage,
    config: Mapping[str, str | int | bool],
) -> CheckpointStorage:
    """Application values win; the configuration only fills in what the storage left open."""
    if not isinstance(storage, CheckpointStorage):
        raise InvalidArgumentError(
            "application_storage must provide create_checkpoint_storage(job_id) and "
            f"resolve_checkpoint(pointer); got {describe(storage)}"
        )
    configure = getattr(storage, "configure", None)
    if not callable(configure):
        return storage
    configured: object = configure(config)
    if not isinstance(configured, CheckpointStorage):
        raise ConfigurationError(
            f"{type(storage).__name__}.configure(config) returned {describe(configured)}, "
            "not a checkpoint storage"
        )
    return configured


def _require_mapping(config: Any) -> Mapping[str, Any]:
    if config is None:
        raise MissingArgumentError("configuration must not be None; pass {} for an empty one")
    if not isinstance(config, Mapping):
        raise InvalidArgumentError(f"configuration must be a mapping, got {describe(config)}")
    return config


def _key_of(config: Mapping[str, Any], option: ConfigOption) -> str:
    found = option.lookup(config)
    return found[0] if found else option.key
