"""CheckpointConfig, CheckpointingMode and ExternalizedCheckpointRetention (CC1-CC5, CFG8)."""

from __future__ import annotations

import datetime
import logging
import pickle
import warnings
from typing import Any

import pytest

from ckptstore.api import CheckpointStorage, JobID
from ckptstore.config import (
    MINIMAL_CHECKPOINT_TIME,
    UNLIMITED_TOLERABLE_FAILURE_NUMBER,
    CheckpointConfig,
    CheckpointingMode,
    ExternalizedCheckpointCleanup,
    ExternalizedCheckpointRetention,
)
from ckptstore.errors import ConfigurationError, InvalidArgumentError, MissingArgumentError


@pytest.fixture
def config() -> CheckpointConfig:
    return CheckpointConfig()


# ----------------------------------------------------------------------------- enums


def test_checkpointing_mode_values() -> None:
    """CC2: EXACTLY_ONCE = 0, AT_LEAST_ONCE = 1, nothing else."""
    assert CheckpointingMode.EXACTLY_ONCE.value == 0
    assert CheckpointingMode.AT_LEAST_ONCE.value == 1
    assert [m.name for m in CheckpointingMode] == ["EXACTLY_ONCE", "AT_LEAST_ONCE"]


def test_retention_values_and_alias() -> None:
    """CC3: the three retention members with PyFlink's values; the 1.x name is an alias."""
    assert ExternalizedCheckpointRetention.DELETE_ON_CANCELLATION.value == 0
    assert ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION.value == 1
    assert ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS.value == 2
    assert ExternalizedCheckpointCleanup is ExternalizedCheckpointRetention


def test_enums_are_not_ints() -> None:
    """CC2/CC3: like PyFlink's Enum, members do not compare equal to plain ints."""
    assert CheckpointingMode.EXACTLY_ONCE != 0
    assert CheckpointingMode(1) is CheckpointingMode.AT_LEAST_ONCE


# ----------------------------------------------------------------------------- defaults


def test_class_constants() -> None:
    """CC1: PyFlink's class constants."""
    assert CheckpointConfig.DEFAULT_MODE is CheckpointingMode.EXACTLY_ONCE
    assert CheckpointConfig.DEFAULT_TIMEOUT == 600000
    assert CheckpointConfig.DEFAULT_MIN_PAUSE_BETWEEN_CHECKPOINTS == 0
    assert CheckpointConfig.DEFAULT_MAX_CONCURRENT_CHECKPOINTS == 1


def test_defaults(config: CheckpointConfig) -> None:
    """CC4, CFG8: a fresh config has Flink's defaults and checkpointing off."""
    assert not config.is_checkpointing_enabled()
    assert config.get_checkpoint_interval() == -1
    assert config.get_checkpointing_mode() is CheckpointingMode.EXACTLY_ONCE
    assert config.get_checkpoint_timeout() == 600000
    assert config.get_min_pause_between_checkpoints() == 0
    assert config.get_max_concurrent_checkpoints() == 1
    assert config.get_tolerable_checkpoint_failure_number() == 0
    assert not config.is_unaligned_checkpoints_enabled()
    assert config.get_alignment_timeout() == datetime.timedelta(0)
    assert not config.is_force_unaligned_checkpoints()
    assert (
        config.get_externalized_checkpoint_retention()
        is ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS
    )
    assert config.get_checkpoint_storage() is None


def test_fail_on_checkpointing_errors_default_is_deprecated(config: CheckpointConfig) -> None:
    """CC4: fail_on_checkpointing_errors is deprecated and defaults to True."""
    with pytest.warns(DeprecationWarning, match="is_fail_on_checkpointing_errors"):
        assert config.is_fail_on_checkpointing_errors() is True


# ----------------------------------------------------------------------------- setters


def test_setters_chain_and_round_trip(config: CheckpointConfig) -> None:
    """CC4: every setter returns the config; getters return what was set."""
    result = (
        config.set_checkpoint_interval(1000)
        .set_checkpointing_mode(CheckpointingMode.AT_LEAST_ONCE)
        .set_checkpoint_timeout(60000)
        .set_min_pause_between_checkpoints(500)
        .set_max_concurrent_checkpoints(3)
        .set_tolerable_checkpoint_failure_number(5)
        .set_force_unaligned_checkpoints()
        .set_alignment_timeout(datetime.timedelta(seconds=30))
        .set_externalized_checkpoint_retention(
            ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION
        )
    )
    assert result is config
    assert config.is_checkpointing_enabled()
    assert config.get_checkpoint_interval() == 1000
    assert config.get_checkpointing_mode() is CheckpointingMode.AT_LEAST_ONCE
    assert config.get_checkpoint_timeout() == 60000
    assert config.get_min_pause_between_checkpoints() == 500
    assert config.get_max_concurrent_checkpoints() == 3
    assert config.get_tolerable_checkpoint_failure_number() == 5
    assert config.is_force_unaligned_checkpoints()
    assert config.get_alignment_timeout() == datetime.timedelta(seconds=30)
    assert config.get_aligned_checkpoint_timeout() == datetime.timedelta(seconds=30)
    assert (
        config.get_externalized_checkpoint_retention()
        is ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION
    )


def test_minimal_interval_and_timeout_boundaries(config: CheckpointConfig) -> None:
    """CFG8: Flink's MINIMAL_CHECKPOINT_TIME (10 ms) is accepted, 9 ms is not."""
    assert MINIMAL_CHECKPOINT_TIME == 10
    config.set_checkpoint_interval(10).set_checkpoint_timeout(10)
    assert config.get_checkpoint_interval() == 10
    assert config.get_checkpoint_timeout() == 10
    with pytest.raises(InvalidArgumentError, match="interval must be larger than or equal to 10"):
        config.set_checkpoint_interval(9)
    with pytest.raises(InvalidArgumentError, match="timeout must be larger than or equal to 10"):
        config.set_checkpoint_timeout(9)
    assert config.get_checkpoint_interval() == 10


@pytest.mark.parametrize(
    ("setter", "bad", "message"),
    [
        ("set_checkpoint_interval", 0, "Checkpoint interval"),
        ("set_checkpoint_interval", -1, "Checkpoint interval"),
        ("set_checkpoint_timeout", 0, "Checkpoint timeout"),
        ("set_min_pause_between_checkpoints", -1, "Pause value must be zero or positive"),
        ("set_max_concurrent_checkpoints", 0, "at least one"),
        ("set_tolerable_checkpoint_failure_number", -1, "must be non-negative"),
    ],
)
def test_out_of_range_values_are_rejected(
    config: CheckpointConfig, setter: str, bad: int, message: str
) -> None:
    """CC4: range checks of Flink's CheckpointConfig, with the value in the message."""
    with pytest.raises(InvalidArgumentError, match=message) as info:
        getattr(config, setter)(bad)
    assert str(bad) in str(info.value)


@pytest.mark.parametrize(
    "setter",
    [
        "set_checkpoint_interval",
        "set_checkpoint_timeout",
        "set_min_pause_between_checkpoints",
        "set_max_concurrent_checkpoints",
        "set_tolerable_checkpoint_failure_number",
    ],
)
@pytest.mark.parametrize("bad", [True, 1000.0, "1000", b"1"])
def test_integer_settings_reject_other_types(
    config: CheckpointConfig, setter: str, bad: Any
) -> None:
    """CC4: booleans, floats and strings are not integers here (True is no interval)."""
    with pytest.raises(InvalidArgumentError, match="must be an integer"):
        getattr(config, setter)(bad)


@pytest.mark.parametrize(
    "setter",
    [
        "set_checkpoint_interval",
        "set_checkpoint_timeout",
        "set_min_pause_between_checkpoints",
        "set_max_concurrent_checkpoints",
        "set_tolerable_checkpoint_failure_number",
        "set_checkpointing_mode",
        "set_externalized_checkpoint_retention",
        "set_alignment_timeout",
        "set_checkpoint_storage",
        "set_checkpoint_storage_dir",
        "set_force_unaligned_checkpoints",
        "enable_unaligned_checkpoints",
    ],
)
def test_none_is_a_missing_argument(config: CheckpointConfig, setter: str) -> None:
    """CC4: None raises MissingArgumentError (a TypeError), as Java's NPE."""
    method = getattr(config, setter)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with pytest.raises(MissingArgumentError):
            method(None)
        with pytest.raises(TypeError):
            method(None)


def test_mode_must_be_a_member(config: CheckpointConfig) -> None:
    """CC2: plain ints or strings are not modes; the message lists the allowed members."""
    with pytest.raises(InvalidArgumentError, match=r"CheckpointingMode\.EXACTLY_ONCE"):
        config.set_checkpointing_mode(0)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        config.set_checkpointing_mode("AT_LEAST_ONCE")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="RETAIN_ON_CANCELLATION"):
        config.set_externalized_checkpoint_retention(1)  # type: ignore[arg-type]


def test_errors_are_value_errors(config: CheckpointConfig) -> None:
    """CC4: invalid values raise ValueError subclasses (Java's IllegalArgumentException)."""
    with pytest.raises(ValueError):
        config.set_max_concurrent_checkpoints(0)


# ----------------------------------------------------------------------------- unaligned


def test_unaligned_checkpoints_toggle(config: CheckpointConfig) -> None:
    """CC4: enable_unaligned_checkpoints(enabled=True) / disable_unaligned_checkpoints()."""
    assert config.enable_unaligned_checkpoints() is config
    assert config.is_unaligned_checkpoints_enabled()
    config.enable_unaligned_checkpoints(False)
    assert not config.is_unaligned_checkpoints_enabled()
    config.enable_unaligned_checkpoints(True).disable_unaligned_checkpoints()
    assert not config.is_unaligned_checkpoints_enabled()


def test_unaligned_checkpoints_need_exactly_once(config: CheckpointConfig) -> None:
    """CC4: unaligned checkpoints work only with EXACTLY_ONCE, in either order of setting."""
    config.set_checkpointing_mode(CheckpointingMode.AT_LEAST_ONCE)
    with pytest.raises(ConfigurationError, match="EXACTLY_ONCE"):
        config.enable_unaligned_checkpoints()
    config.enable_unaligned_checkpoints(False)  # disabling is always fine
    config.set_checkpointing_mode(CheckpointingMode.EXACTLY_ONCE).enable_unaligned_checkpoints()
    with pytest.raises(ConfigurationError, match="unaligned"):
        config.set_checkpointing_mode(CheckpointingMode.AT_LEAST_ONCE)
    assert config.get_checkpointing_mode() is CheckpointingMode.EXACTLY_ONCE


def test_alignment_timeout_validation(config: CheckpointConfig) -> None:
    """CC4: the alignment timeout is a non-negative timedelta (default 0)."""
    config.set_alignment_timeout(datetime.timedelta(0))
    with pytest.raises(InvalidArgumentError, match="negative"):
        config.set_alignment_timeout(datetime.timedelta(seconds=-1))
    with pytest.raises(InvalidArgumentError, match="timedelta"):
        config.set_alignment_timeout(1000)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [1, 0, "true"])
def test_boolean_settings_reject_non_booleans(config: CheckpointConfig, bad: Any) -> None:
    """CC4: flags take True/False only."""
    with pytest.raises(InvalidArgumentError, match="True or False"):
        config.set_force_unaligned_checkpoints(bad)
    with pytest.raises(InvalidArgumentError, match="True or False"):
        config.enable_unaligned_checkpoints(bad)


# ----------------------------------------------------------------------------- deprecated


def test_fail_on_checkpointing_errors_maps_to_tolerable_failures() -> None:
    """CC4: the deprecated flag sets 0 or unlimited tolerable failures, with a warning."""
    config = CheckpointConfig()
    with pytest.warns(DeprecationWarning, match="set_tolerable_checkpoint_failure_number"):
        config.set_fail_on_checkpointing_errors(False)
    assert config.get_tolerable_checkpoint_failure_number() == UNLIMITED_TOLERABLE_FAILURE_NUMBER
    with pytest.warns(DeprecationWarning, match="is_fail_on_checkpointing_errors"):
        assert config.is_fail_on_checkpointing_errors() is False


def test_tolerable_failures_overrule_deprecated_flag(caplog: pytest.LogCaptureFixture) -> None:
    """CC4: an explicit tolerable failure number wins over the deprecated flag (logged)."""
    config = CheckpointConfig().set_tolerable_checkpoint_failure_number(3)
    with (
        caplog.at_level(logging.WARNING),
        pytest.warns(DeprecationWarning, match="set_fail_on_checkpointing_errors"),
    ):
        config.set_fail_on_checkpointing_errors(False)
    assert config.get_tolerable_checkpoint_failure_number() == 3
    assert "no effect" in caplog.text


def test_deprecated_externalized_checkpoint_methods(config: CheckpointConfig) -> None:
    """CC3: the 1.x externalized-checkpoint methods still work and warn."""
    with pytest.warns(DeprecationWarning, match="is_externalized_checkpoints_enabled"):
        assert not config.is_externalized_checkpoints_enabled()
    with pytest.warns(DeprecationWarning, match="set_externalized_checkpoint_retention"):
        config.enable_externalized_checkpoints(ExternalizedCheckpointCleanup.DELETE_ON_CANCELLATION)
    with pytest.warns(DeprecationWarning, match="is_externalized_checkpoints_enabled"):
        assert config.is_externalized_checkpoints_enabled()
    with pytest.warns(DeprecationWarning, match="set_externalized_checkpoint_cleanup"):
        config.set_externalized_checkpoint_cleanup(
            ExternalizedCheckpointCleanup.RETAIN_ON_CANCELLATION
        )
    with pytest.warns(DeprecationWarning, match="get_externalized_checkpoint_cleanup"):
        assert (
            config.get_externalized_checkpoint_cleanup()
            is ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION
        )
    assert (
        config.get_externalized_checkpoint_retention()
        is ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION
    )


# ----------------------------------------------------------------------------- storage


class _DuckStorage:
    """A third-party storage: only the two CheckpointStorage methods, no ckptstore base."""

    def create_checkpoint_storage(self, job_id: JobID) -> Any:
        raise NotImplementedError

    def resolve_checkpoint(self, external_pointer: str) -> Any:
        raise NotImplementedError


def test_set_checkpoint_storage_accepts_any_conforming_object(config: CheckpointConfig) -> None:
    """CC4: set_checkpoint_storage takes anything with the CheckpointStorage methods."""
    storage = _DuckStorage()
    assert config.set_checkpoint_storage(storage) is config
    assert config.get_checkpoint_storage() is storage


def test_set_checkpoint_storage_rejects_non_storage(config: CheckpointConfig) -> None:
    """CC4: a string or other object is not a storage; the message says what is needed."""
    with pytest.raises(InvalidArgumentError, match="create_checkpoint_storage"):
        config.set_checkpoint_storage("file:///tmp/ckpt")  # type: ignore[arg-type]


def test_set_checkpoint_storage_with_jobmanager_storage(config: CheckpointConfig) -> None:
    """CC4, CC5: the reference JobManager storage is a CheckpointStorage."""
    from ckptstore.jobmanager.storage import JobManagerCheckpointStorage

    storage = JobManagerCheckpointStorage()
    config.set_checkpoint_storage(storage)
    assert config.get_checkpoint_storage() is storage
    assert isinstance(storage, CheckpointStorage)


def test_set_checkpoint_storage_dir(config: CheckpointConfig, tmp_path: Any) -> None:
    """CC4: set_checkpoint_storage_dir(path) configures a FileSystemCheckpointStorage."""
    fs_storage = pytest.importorskip("ckptstore.filesystem.storage")
    config.set_checkpoint_storage_dir(str(tmp_path))
    storage = config.get_checkpoint_storage()
    assert isinstance(storage, fs_storage.FileSystemCheckpointStorage)
    assert storage.get_checkpoint_path().endswith(tmp_path.name)


@pytest.mark.parametrize("bad", ["", "   ", 17])
def test_set_checkpoint_storage_dir_rejects_bad_paths(config: CheckpointConfig, bad: Any) -> None:
    """CC4: the storage directory must be a non-blank string."""
    with pytest.raises(InvalidArgumentError):
        config.set_checkpoint_storage_dir(bad)
    assert config.get_checkpoint_storage() is None


def test_repr_and_pickle(config: CheckpointConfig) -> None:
    """CC1: the config prints its settings and survives pickling."""
    config.set_checkpoint_interval(5000)
    assert "interval=5000" in repr(config)
    copy = pickle.loads(pickle.dumps(config))
    assert copy.get_checkpoint_interval() == 5000
    assert copy.get_checkpointing_mode() is CheckpointingMode.EXACTLY_ONCE
