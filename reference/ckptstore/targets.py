"""The reference's conformance targets: what ``ckptconform --impl ckptstore[-jobmanager]`` runs.

A target is a plain object (ARCHITECTURE.md section 4): ``name``, ``capabilities`` (here a
mapping: capability -> the schemes where it holds, ``None`` for all), ``schemes``,
``known_failures``, ``options`` and ``make_storage(*, checkpoint_dir, savepoint_dir,
options)``. Nothing here imports ``ckptconform``; capabilities and option keys are plain
strings from the suite's documented lists (CONFORMANCE.md); each target declares as
``options`` the keys of its translation table.

- ``conformance_target`` ("ckptstore"): ``FileSystemCheckpointStorage``.
- ``jobmanager_target`` ("ckptstore-jobmanager"): ``JobManagerCheckpointStorage`` with the
  checkpoint directory the suite gives, so completed checkpoints are addressable; without one
  (``checkpoint_dir=None``, capability ``in-memory-checkpoints``) they are kept in memory.

The suite's option keys are translated to constructor arguments; an option a storage does
not support raises ``ConfigurationError`` naming the key and the supported keys, so a
mistyped or inapplicable option never passes silently (the suite itself passes only the
declared keys). Flink's ``create_subdir`` is a constructor argument of
``FileSystemCheckpointStorage`` but no suite option.

Retry budget (capability ``retry-budget``, both targets accept the options): the suite's
storage-agnostic ``retry_attempts`` (requests per operation, an integer >= 1) and
``retry_seconds`` (seconds per public call, > 0) become the ``storage_options`` keys of the same
names (``ckptstore.stores.s3``: botocore's attempts, connect/read timeouts, backoff and a deadline
on S3; local and memory I/O is not retried). They are merged into the ``storage_options`` option
and win over its own keys of those names. So is the suite's ``allow_unconditional_metadata``
(a bool): where the S3 server ignores conditional writes, finalizations are refused without
it and published claim-then-write with it (``ckptstore.stores.s3``, MD-13).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ckptstore.api import CheckpointStorage
from ckptstore.errors import ConfigurationError, InvalidArgumentError
from ckptstore.stores.adapters import traits_for
from ckptstore.validation import describe

__all__ = ["ReferenceTarget", "conformance_target", "jobmanager_target"]

_SCHEMES = frozenset({"file", "memory", "s3", "sftp"})
#: The schemes whose file systems copy without moving the bytes through this process
#: (hard links, memory copies, S3 CopyObject); SFTP has no server-side copy, so the reference
#: answers can_fast_duplicate() False there and claims ``fast-duplicate`` only on these.
_COPY_SCHEMES = frozenset(s for s in _SCHEMES if traits_for(s).server_side_copy)

#: suite option key -> FileSystemCheckpointStorage keyword
_FS_OPTIONS = MappingProxyType(
    {
        "storage_options": "storage_options",
        "inline_threshold": "file_state_size_threshold",
        "write_buffer_size": "write_buffer_size",
        "entropy_key": "entropy_key",
        "entropy_length": "entropy_length",
        "create_subdir": "create_subdir",
        "retry_attempts": "retry_attempts",
        "retry_seconds": "retry_seconds",
        "allow_unconditional_metadata": "allow_unconditional_metadata",
    }
)

#: suite option key -> JobManagerCheckpointStorage keyword
_JM_OPTIONS = MappingProxyType(
    {
        "storage_options": "storage_options",
        "max_state_size": "max_state_size",
        "retry_attempts": "retry_attempts",
        "retry_seconds": "retry_seconds",
        "allow_unconditional_metadata": "allow_unconditional_metadata",
    }
)

#: suite option keys that go into ``storage_options`` (``ckptstore.stores.s3``)
_STORAGE_OPTION_KEYS = ("retry_attempts", "retry_seconds", "allow_unconditional_metadata")


def _translate(
    target: str, options: Mapping[str, Any] | None, supported: Mapping[str, str]
) -> dict[str, Any]:
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise InvalidArgumentError(f"options must be a mapping, got {describe(options)}")
    unknown = sorted(str(key) for key in options if key not in supported)
    if unknown:
        raise ConfigurationError(
            f"target {target!r} does not support the option(s) {', '.join(map(repr, unknown))}; "
            f"supported options: {', '.join(sorted(supported))}"
        )
    kwargs = {supported[key]: value for key, value in options.items() if value is not None}
    moved = {key: kwargs.pop(key) for key in _STORAGE_OPTION_KEYS if key in kwargs}
    if moved:
        storage_options = kwargs.get("storage_options")
        if storage_options is not None and not isinstance(storage_options, Mapping):
            raise InvalidArgumentError(
                f"storage_options must be a mapping, got {describe(storage_options)}"
            )
        kwargs["storage_options"] = {**(storage_options or {}), **moved}
    return kwargs


def _make_file_system_storage(
    checkpoint_dir: str, savepoint_dir: str | None, kwargs: dict[str, Any]
) -> CheckpointStorage:
    from ckptstore.filesystem.storage import FileSystemCheckpointStorage

    return FileSystemCheckpointStorage(checkpoint_dir, savepoint_path=savepoint_dir, **kwargs)


def _make_jobmanager_storage(
    checkpoint_dir: str | None, savepoint_dir: str | None, kwargs: dict[str, Any]
) -> CheckpointStorage:
    from ckptstore.jobmanager.storage import JobManagerCheckpointStorage

    return JobManagerCheckpointStorage(checkpoint_dir, savepoint_path=savepoint_dir, **kwargs)


@dataclass(frozen=True)
class ReferenceTarget:
    """A conformance target backed by one of the reference's storages."""

    name: str
    #: capability -> the schemes where it holds (None: all of ``schemes``)
    capabilities: Mapping[str, frozenset[str] | None]
    schemes: frozenset[str]
    supported_options: Mapping[str, str]
    factory: Callable[[Any, str | None, dict[str, Any]], CheckpointStorage] = field(repr=False)
    known_failures: Mapping[str, str] = field(default_factory=dict)

    @property
    def options(self) -> frozenset[str]:
        """The suite's option keys this target accepts (the keys of its translation table)."""
        return frozenset(self.supported_options)

    def make_storage(
        self,
        *,
        checkpoint_dir: str | None,
        savepoint_dir: str | None,
        options: Mapping[str, Any] | None = None,
    ) -> CheckpointStorage:
        """A fresh storage on ``checkpoint_dir`` / ``savepoint_dir`` with the suite's options."""
        kwargs = _translate(self.name, options, self.supported_options)
        return self.factory(checkpoint_dir, savepoint_dir, kwargs)


#: FileSystemCheckpointStorage: everything but the JobManager's memory limit.
conformance_target = ReferenceTarget(
    name="ckptstore",
    capabilities=MappingProxyType(
        {
            "file-layout": None,
            "inline-state": None,
            "savepoints": None,
            "relocatable-savepoints": None,
            "task-owned-state": None,
            "fast-duplicate": _COPY_SCHEMES,
            "entropy-injection": None,
            "flat-layout": None,
            "retry-budget": None,
            "redacts-secrets": None,
        }
    ),
    schemes=_SCHEMES,
    supported_options=_FS_OPTIONS,
    factory=_make_file_system_storage,
)

#: JobManagerCheckpointStorage: state inline (limited by max_state_size), metadata and
#: savepoints on the file system. No inline threshold, no state files, no task-owned files.
jobmanager_target = ReferenceTarget(
    name="ckptstore-jobmanager",
    capabilities=MappingProxyType(
        dict.fromkeys(
            (
                "savepoints",
                "relocatable-savepoints",
                "memory-limit",
                "redacts-secrets",
                "in-memory-checkpoints",
            )
        )
    ),
    schemes=_SCHEMES,
    supported_options=_JM_OPTIONS,
    factory=_make_jobmanager_storage,
)
