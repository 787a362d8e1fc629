"""PyFlink's checkpointing configuration, as plain Python values (CC1-CC5, CFG8).

``CheckpointConfig`` mirrors ``pyflink.datastream.CheckpointConfig``: the same method names,
class constants and defaults, and setters that return ``self`` so calls can be chained. Where
PyFlink wraps a Java object, this class keeps the values itself and performs the checks
that Flink's Java ``CheckpointConfig`` performs (10 ms minimum interval and timeout,
non-negative pause, at least one concurrent checkpoint, ...), raising typed errors from
``ckptstore.errors`` instead of Java's IllegalArgumentException.

Two checks are stricter than Flink's, on purpose: unaligned checkpoints and AT_LEAST_ONCE
are refused as a combination at the moment it is configured (Flink only documents that
unaligned checkpoints need EXACTLY_ONCE), and a negative alignment timeout is refused.
"""

from __future__ import annotations

import datetime
import enum
import warnings
from typing import TYPE_CHECKING, Any

from ckptstore.api import CheckpointStorage
from ckptstore.errors import (
    ConfigurationError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    MissingArgumentError,
)
from ckptstore.redaction import get_logger
from ckptstore.validation import (
    JAVA_INT_MAX,
    JAVA_LONG_MAX,
    describe,
    require_bool,
    require_int,
    require_str,
)

if TYPE_CHECKING:
    from ckptstore.filesystem.storage import FileSystemCheckpointStorage

__all__ = [
    "MINIMAL_CHECKPOINT_TIME",
    "UNLIMITED_TOLERABLE_FAILURE_NUMBER",
    "CheckpointConfig",
    "CheckpointingMode",
    "ExternalizedCheckpointCleanup",
    "ExternalizedCheckpointRetention",
]

_LOG = get_logger(__name__)

#: The smallest checkpoint interval and timeout Flink accepts, in milliseconds.
MINIMAL_CHECKPOINT_TIME = 10

#: What ``set_fail_on_checkpointing_errors(False)`` means: Java's Integer.MAX_VALUE.
UNLIMITED_TOLERABLE_FAILURE_NUMBER = 2**31 - 1


class CheckpointingMode(enum.Enum):
    """The consistency guarantee of checkpoints (CC2)."""

    EXACTLY_ONCE = 0
    AT_LEAST_ONCE = 1


class ExternalizedCheckpointRetention(enum.Enum):
    """What happens to a retained (externalized) checkpoint when the job is cancelled (CC3).

    Checkpoint state is always kept when the job ends FAILED. ``NO_EXTERNALIZED_CHECKPOINTS``
    is Flink's default: checkpoints are not retained beyond the job.
    """

    DELETE_ON_CANCELLATION = 0
    RETAIN_ON_CANCELLATION = 1
    NO_EXTERNALIZED_CHECKPOINTS = 2


#: The 1.x name of ``ExternalizedCheckpointRetention`` (same members and values).
ExternalizedCheckpointCleanup = ExternalizedCheckpointRetention


def _require_member(value: Any, enum_type: type[enum.Enum], setting: str) -> Any:
    if value is None:
        raise MissingArgumentError(f"{setting} must not be None")
    if not isinstance(value, enum_type):
        allowed = ", ".join(f"{enum_type.__name__}.{m.name}" for m in enum_type)
        raise InvalidArgumentTypeError(f"{setting} must be one of {allowed}; got {describe(value)}")
    return value


def _deprecated(old: str, new: str) -> None:
    warnings.warn(
        f"CheckpointConfig.{old} is deprecated; use CheckpointConfig.{new} instead",
        DeprecationWarning,
        stacklevel=3,
    )


class CheckpointConfig:
    """Configuration that captures all checkpointing related settings (CC1, CC4).

    A fresh config has checkpointing disabled (interval ``-1``) until
    ``set_checkpoint_interval`` is called, and otherwise Flink's defaults.
    """

    #: The default checkpoint mode: exactly once.
    DEFAULT_MODE = CheckpointingMode.EXACTLY_ONCE
    #: The default timeout of a checkpoint attempt: 10 minutes, in milliseconds.
    DEFAULT_TIMEOUT = 10 * 60 * 1000
    #: The default minimum pause to be made between checkpoints: none.
    DEFAULT_MIN_PAUSE_BETWEEN_CHECKPOINTS = 0
    #: The default limit of concurrently happening checkpoints: one.
    DEFAULT_MAX_CONCURRENT_CHECKPOINTS = 1

    def __init__(self) -> None:
        self._mode = CheckpointConfig.DEFAULT_MODE
        self._interval = -1
        self._timeout = CheckpointConfig.DEFAULT_TIMEOUT
        self._min_pause = CheckpointConfig.DEFAULT_MIN_PAUSE_BETWEEN_CHECKPOINTS
        self._max_concurrent = CheckpointConfig.DEFAULT_MAX_CONCURRENT_CHECKPOINTS
        # None = "not set", which reads as 0 but lets the deprecated fail-on-errors setter
        # still take effect (Flink's UNDEFINED_TOLERABLE_CHECKPOINT_NUMBER).
        self._tolerable_failures: int | None = None
        self._fail_on_errors = True
        self._unaligned = False
        self._alignment_timeout = datetime.timedelta(0)
        self._force_unaligned = False
        self._retention = ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS
        self._storage: CheckpointStorage | None = None

    # ------------------------------------------------------------------ interval and mode

    def is_checkpointing_enabled(self) -> bool:
        """Whether checkpointing is enabled, i.e. an interval has been set."""
        return self._interval > 0

    def get_checkpointing_mode(self) -> CheckpointingMode:
        """The checkpointing mode (exactly-once vs. at-least-once)."""
        return self._mode

    def set_checkpointing_mode(self, checkpointing_mode: CheckpointingMode) -> CheckpointConfig:
        """Set the checkpointing mode; AT_LEAST_ONCE is refused while unaligned is enabled."""
        mode = _require_member(checkpointing_mode, CheckpointingMode, "checkpointing mode")
        if mode is not CheckpointingMode.EXACTLY_ONCE and self._unaligned:
            raise ConfigurationError(
                f"checkpointing mode {mode.name} cannot be used while unaligned checkpoints are "
                "enabled: unaligned checkpoints need EXACTLY_ONCE; call "
                "disable_unaligned_checkpoints() first"
            )
        self._mode = mode
        return self

    def get_checkpoint_interval(self) -> int:
        """The interval in milliseconds at which checkpoints are scheduled; -1 if disabled."""
        return self._interval

    def set_checkpoint_interval(self, checkpoint_interval: int) -> CheckpointConfig:
        """Set the checkpoint interval in milliseconds (at least 10); enables checkpointing."""
        self._interval = require_int(
            checkpoint_interval,
            "checkpoint interval",
            minimum=MINIMAL_CHECKPOINT_TIME,
            maximum=JAVA_LONG_MAX,
            below_message=(
                f"Checkpoint interval must be larger than or equal to {MINIMAL_CHECKPOINT_TIME} "
                f"ms, got {checkpoint_interval!r}"
            ),
        )
        return self

    # ------------------------------------------------------------------ timing limits

    def get_checkpoint_timeout(self) -> int:
        """The time in milliseconds after which an unfinished checkpoint is discarded."""
        return self._timeout

    def set_checkpoint_timeout(self, checkpoint_timeout: int) -> CheckpointConfig:
        """Set the checkpoint timeout in milliseconds (at least 10)."""
        self._timeout = require_int(
            checkpoint_timeout,
            "checkpoint timeout",
            minimum=MINIMAL_CHECKPOINT_TIME,
            maximum=JAVA_LONG_MAX,
            below_message=(
                f"Checkpoint timeout must be larger than or equal to {MINIMAL_CHECKPOINT_TIME} "
                f"ms, got {checkpoint_timeout!r}"
            ),
        )
        return self

    def get_min_pause_between_checkpoints(self) -> int:
        """The minimal pause in milliseconds between the end of one checkpoint and the next."""
        return self._min_pause

    def set_min_pause_between_checkpoints(
        self, min_pause_between_checkpoints: int
    ) -> CheckpointConfig:
        """Set the minimal pause between checkpoints in milliseconds (zero or more)."""
        self._min_pause = require_int(
            min_pause_between_checkpoints,
            "min pause between checkpoints",
            minimum=0,
            maximum=JAVA_LONG_MAX,
            below_message=(
                "Pause value must be zero or positive: min pause between checkpoints got "
                f"{min_pause_between_checkpoints!r} ms"
            ),
        )
        return self

    def get_max_concurrent_checkpoints(self) -> int:
        """How many checkpoint attempts may be in progress at the same time."""
        return self._max_concurrent

    def set_max_concurrent_checkpoints(self, max_concurrent_checkpoints: int) -> CheckpointConfig:
        """Set how many checkpoint attempts may run at the same time (at least one)."""
        self._max_concurrent = require_int(
            max_concurrent_checkpoints,
            "max concurrent checkpoints",
            minimum=1,
            maximum=JAVA_INT_MAX,
            below_message=(
                "The maximum number of concurrent attempts must be at least one, got "
                f"{max_concurrent_checkpoints!r}"
            ),
        )
        return self

    # ------------------------------------------------------------------ failure handling

    def get_tolerable_checkpoint_failure_number(self) -> int:
        """How many consecutive checkpoint failures are tolerated before the job fails over."""
        return 0 if self._tolerable_failures is None else self._tolerable_failures

    def set_tolerable_checkpoint_failure_number(
        self, tolerable_checkpoint_failure_number: int
    ) -> CheckpointConfig:
        """Set how many consecutive checkpoint failures are tolerated (zero or more)."""
        self._tolerable_failures = require_int(
            tolerable_checkpoint_failure_number,
            "tolerable checkpoint failure number",
            minimum=0,
            maximum=JAVA_INT_MAX,
            below_message=(
                "The tolerable failure checkpoint number must be non-negative, got "
                f"{tolerable_checkpoint_failure_number!r}"
            ),
        )
        return self

    def is_fail_on_checkpointing_errors(self) -> bool:
        """Deprecated: whether a checkpoint error fails the job (tolerable failures == 0)."""
        _deprecated("is_fail_on_checkpointing_errors", "get_tolerable_checkpoint_failure_number")
        return self._fail_on_errors

    def set_fail_on_checkpointing_errors(
        self, fail_on_checkpointing_errors: bool
    ) -> CheckpointConfig:
        """Deprecated: True means 0 tolerable failures, False means unlimited.

        Like Flink, it has no effect (a warning is logged) once a tolerable failure number
        has been set explicitly.
        """
        _deprecated("set_fail_on_checkpointing_errors", "set_tolerable_checkpoint_failure_number")
        fail = require_bool(fail_on_checkpointing_errors, "fail on checkpointing errors")
        if self._tolerable_failures is not None:
            _LOG.warning(
                "tolerable checkpoint failure number is already set to %d; the deprecated "
                "set_fail_on_checkpointing_errors(%s) has no effect",
                self._tolerable_failures,
                fail,
            )
            return self
        self._fail_on_errors = fail
        self._tolerable_failures = 0 if fail else UNLIMITED_TOLERABLE_FAILURE_NUMBER
        return self

    # ------------------------------------------------------------------ unaligned checkpoints

    def is_unaligned_checkpoints_enabled(self) -> bool:
        """Whether unaligned checkpoints are enabled (default False)."""
        return self._unaligned

    def enable_unaligned_checkpoints(self, enabled: bool = True) -> CheckpointConfig:
        """Enable (or disable) unaligned checkpoints; they need EXACTLY_ONCE mode."""
        flag = require_bool(enabled, "unaligned checkpoints enabled")
        if flag and self._mode is not CheckpointingMode.EXACTLY_ONCE:
            raise ConfigurationError(
                "unaligned checkpoints can only be enabled with checkpointing mode "
                f"EXACTLY_ONCE; the mode is {self._mode.name}"
            )
        self._unaligned = flag
        return self

    def disable_unaligned_checkpoints(self) -> CheckpointConfig:
        """Disable unaligned checkpoints."""
        self._unaligned = False
        return self

    def get_alignment_timeout(self) -> datetime.timedelta:
        """How long a checkpoint stays aligned before switching to unaligned (default 0)."""
        return self._alignment_timeout

    def set_alignment_timeout(self, alignment_timeout: datetime.timedelta) -> CheckpointConfig:
        """Set the aligned-checkpoint timeout; 0 means "always start unaligned"."""
        if alignment_timeout is None:
            raise MissingArgumentError("alignment timeout must not be None; expected a timedelta")
        if not isinstance(alignment_timeout, datetime.timedelta):
            raise InvalidArgumentTypeError(
                f"alignment timeout must be a datetime.timedelta, got {describe(alignment_timeout)}"
            )
        if alignment_timeout < datetime.timedelta(0):
            raise InvalidArgumentError(
                f"alignment timeout must not be negative, got {alignment_timeout!r}"
            )
        self._alignment_timeout = alignment_timeout
        return self

    # Flink 1.14+ names of the same setting.
    get_aligned_checkpoint_timeout = get_alignment_timeout
    set_aligned_checkpoint_timeout = set_alignment_timeout

    def is_force_unaligned_checkpoints(self) -> bool:
        """Whether unaligned checkpoints are forced despite iteration feedback or partitioners."""
        return self._force_unaligned

    def set_force_unaligned_checkpoints(
        self, force_unaligned_checkpoints: bool = True
    ) -> CheckpointConfig:
        """Force unaligned checkpoints despite non-checkpointable iteration feedback."""
        self._force_unaligned = require_bool(
            force_unaligned_checkpoints, "force unaligned checkpoints"
        )
        return self

    # ------------------------------------------------------------------ externalized checkpoints

    def get_externalized_checkpoint_retention(self) -> ExternalizedCheckpointRetention:
        """What happens to retained checkpoints on cancellation (default: not retained)."""
        return self._retention

    def set_externalized_checkpoint_retention(
        self, retention_mode: ExternalizedCheckpointRetention
    ) -> CheckpointConfig:
        """Set what happens to retained checkpoints when the job is cancelled."""
        self._retention = _require_member(
            retention_mode, ExternalizedCheckpointRetention, "externalized checkpoint retention"
        )
        return self

    def set_externalized_checkpoint_cleanup(
        self, cleanup_mode: ExternalizedCheckpointRetention
    ) -> CheckpointConfig:
        """Deprecated 1.x name of ``set_externalized_checkpoint_retention``."""
        _deprecated("set_externalized_checkpoint_cleanup", "set_externalized_checkpoint_retention")
        return self.set_externalized_checkpoint_retention(cleanup_mode)

    def get_externalized_checkpoint_cleanup(self) -> ExternalizedCheckpointRetention:
        """Deprecated 1.x name of ``get_externalized_checkpoint_retention``."""
        _deprecated("get_externalized_checkpoint_cleanup", "get_externalized_checkpoint_retention")
        return self._retention

    def enable_externalized_checkpoints(
        self, cleanup_mode: ExternalizedCheckpointRetention
    ) -> CheckpointConfig:
        """Deprecated (1.15): use ``set_externalized_checkpoint_retention``."""
        _deprecated("enable_externalized_checkpoints", "set_externalized_checkpoint_retention")
        return self.set_externalized_checkpoint_retention(cleanup_mode)

    def is_externalized_checkpoints_enabled(self) -> bool:
        """Whether checkpoints are retained beyond the job (retention is not NO_EXTERNALIZED)."""
        _deprecated("is_externalized_checkpoints_enabled", "get_externalized_checkpoint_retention")
        return self._retention is not ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS

    # ------------------------------------------------------------------ storage

    def set_checkpoint_storage(self, storage: CheckpointStorage) -> CheckpointConfig:
        """Set the checkpoint storage: any object with the ``CheckpointStorage`` methods."""
        if storage is None:
            raise MissingArgumentError("checkpoint storage must not be None")
        if not isinstance(storage, CheckpointStorage):
            raise InvalidArgumentTypeError(
                "checkpoint storage must provide create_checkpoint_storage(job_id) and "
                f"resolve_checkpoint(pointer) (ckptstore.api.CheckpointStorage); got "
                f"{describe(storage)}"
            )
        self._storage = storage
        return self

    def set_checkpoint_storage_dir(self, checkpoint_path: str) -> CheckpointConfig:
        """Checkpoint to files in ``checkpoint_path`` (a FileSystemCheckpointStorage)."""
        path = require_str(checkpoint_path, "checkpoint storage directory")
        self._storage = _file_system_storage(path)
        return self

    def get_checkpoint_storage(self) -> CheckpointStorage | None:
        """The configured checkpoint storage, or None if none has been set."""
        return self._storage

    def __repr__(self) -> str:
        interval = self._interval if self._interval > 0 else "disabled"
        return (
            f"CheckpointConfig(mode={self._mode.name}, interval={interval}, "
            f"timeout={self._timeout}, min_pause={self._min_pause}, "
            f"max_concurrent={self._max_concurrent}, "
            f"tolerable_failures={self.get_tolerable_checkpoint_failure_number()}, "
            f"unaligned={self._unaligned}, retention={self._retention.name}, "
            f"storage={self._storage!r})"
        )


def _file_system_storage(path: str) -> FileSystemCheckpointStorage:
    # Imported here: the file-system storage pulls in fsspec, the config itself does not.
    from ckptstore.filesystem.storage import FileSystemCheckpointStorage

    return FileSystemCheckpointStorage(path)
