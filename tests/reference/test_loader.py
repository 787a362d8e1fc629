"""load_checkpoint_storage and the configuration keys (CS5, CS4 configure, CFG1-CFG5, CFG9)."""

from __future__ import annotations

import logging
import pickle
from pathlib import Path
from typing import Any

import pytest

from ckptstore.api import JobID
from ckptstore.errors import ConfigurationError, InvalidArgumentError, MissingArgumentError
from ckptstore.filesystem.storage import FileSystemCheckpointStorage
from ckptstore.jobmanager.storage import DEFAULT_MAX_STATE_SIZE, JobManagerCheckpointStorage
from ckptstore.loader import (
    DEFAULT_FILE_STATE_THRESHOLD,
    MAX_FILE_STATE_THRESHOLD,
    load_checkpoint_storage,
    load_file_system_storage,
)
from ckptstore.options import parse_memory_size


def _url(path: Path) -> str:
    return f"file://{path.as_posix()}"


# ----------------------------------------------------------------------------- CS5 defaults


@pytest.mark.parametrize(
    "config", [{}, {"execution.checkpointing.interval": "10s", "parallelism.default": 4}]
)
def test_nothing_configured(config: dict[str, Any]) -> None:
    """CS5 testNoCheckpointStorageDefined: no storage, dir or savepoint dir -> None."""
    assert load_checkpoint_storage(config) is None


def test_default_is_file_system_with_a_directory(tmp_path: Path) -> None:
    """CS5 testDefaultCheckpointStorage: a checkpoint dir alone gives the FS storage."""
    storage = load_checkpoint_storage({"execution.checkpointing.dir": str(tmp_path)})
    assert isinstance(storage, FileSystemCheckpointStorage)
    assert storage.get_checkpoint_path() == _url(tmp_path)
    assert storage.get_savepoint_path() is None
    assert storage.get_min_file_size_threshold() == DEFAULT_FILE_STATE_THRESHOLD == 20480
    # CS4 configure: buffer = max(4096, 20480)
    assert storage.get_write_buffer_size() == 20480
    assert storage.create_subdir is True


def test_default_is_jobmanager_with_only_a_savepoint_dir(tmp_path: Path) -> None:
    """CS5 default rule: no checkpoint dir -> JobManagerCheckpointStorage (savepoints kept)."""
    storage = load_checkpoint_storage({"execution.checkpointing.savepoint-dir": str(tmp_path)})
    assert isinstance(storage, JobManagerCheckpointStorage)
    assert storage.get_checkpoint_path() is None
    assert storage.get_savepoint_path() == _url(tmp_path)
    assert storage.get_max_state_size() == DEFAULT_MAX_STATE_SIZE


# ----------------------------------------------------------------------------- CFG1 shortcuts


@pytest.mark.parametrize("name", ["jobmanager", "JobManager", " JOBMANAGER "])
def test_jobmanager_shortcut(tmp_path: Path, name: str) -> None:
    """CFG1, CS5 testLoadJobManagerStorageWithParameters: paths come from the config."""
    storage = load_checkpoint_storage(
        {
            "execution.checkpointing.storage": name,
            "execution.checkpointing.dir": str(tmp_path / "ckpt"),
            "execution.checkpointing.savepoint-dir": str(tmp_path / "sp"),
        }
    )
    assert isinstance(storage, JobManagerCheckpointStorage)
    assert storage.get_checkpoint_path() == _url(tmp_path / "ckpt")
    assert storage.get_savepoint_path() == _url(tmp_path / "sp")


def test_jobmanager_shortcut_without_parameters() -> None:
    """CS5 testLoadJobManagerStorageNoParameters: no paths at all."""
    storage = load_checkpoint_storage({"state.checkpoint-storage": "jobmanager"})
    assert isinstance(storage, JobManagerCheckpointStorage)
    assert storage.get_checkpoint_path() is None
    assert storage.get_savepoint_path() is None


def test_filesystem_shortcut(tmp_path: Path) -> None:
    """CFG1: 'filesystem' with a directory gives the FS storage."""
    storage = load_checkpoint_storage(
        {"execution.checkpointing.storage": "filesystem", "state.checkpoints.dir": str(tmp_path)}
    )
    assert isinstance(storage, FileSystemCheckpointStorage)


def test_filesystem_shortcut_without_directory() -> None:
    """CS4 createFromConfig: 'filesystem' without a checkpoint dir names the missing key."""
    with pytest.raises(ConfigurationError, match=r"execution\.checkpointing\.dir"):
        load_checkpoint_storage({"execution.checkpointing.storage": "filesystem"})


def test_unknown_storage_name() -> None:
    """CS5: an unknown storage name is a configuration error naming key, value and choices."""
    with pytest.raises(ConfigurationError) as info:
        load_checkpoint_storage({"state.checkpoint-storage": "rocksdb"})
    message = str(info.value)
    assert "'rocksdb'" in message
    assert "state.checkpoint-storage" in message
    assert "'jobmanager'" in message
    assert "'filesystem'" in message


def test_blank_values_are_errors() -> None:
    """CFG2: a blank directory is an error, not silently 'unset'."""
    with pytest.raises(ConfigurationError, match="is empty"):
        load_checkpoint_storage({"execution.checkpointing.dir": "  "})


@pytest.mark.parametrize("bad", [17, True])
def test_string_keys_reject_other_types(bad: Any) -> None:
    """CFG1, CFG2: storage names and paths are strings."""
    with pytest.raises(ConfigurationError, match="needs a string"):
        load_checkpoint_storage({"execution.checkpointing.dir": bad})


# ----------------------------------------------------------------------------- aliases


@pytest.mark.parametrize(
    "key",
    ["execution.checkpointing.dir", "state.checkpoints.dir", "state.backend.fs.checkpointdir"],
)
def test_checkpoint_dir_aliases(tmp_path: Path, key: str) -> None:
    """CFG2: the 2.x key and both deprecated 1.x keys name the checkpoint directory."""
    storage = load_checkpoint_storage({key: str(tmp_path)})
    assert isinstance(storage, FileSystemCheckpointStorage)
    assert storage.get_checkpoint_path() == _url(tmp_path)


@pytest.mark.parametrize(
    "key",
    [
        "execution.checkpointing.savepoint-dir",
        "state.savepoints.dir",
        "savepoints.state.backend.fs.dir",
    ],
)
def test_savepoint_dir_aliases(tmp_path: Path, key: str) -> None:
    """CFG2: the savepoint directory and its deprecated keys."""
    storage = load_checkpoint_storage({"state.checkpoints.dir": str(tmp_path), key: "/sp"})
    assert isinstance(storage, FileSystemCheckpointStorage)
    assert storage.get_savepoint_path() == "file:///sp"


def test_new_key_wins_over_deprecated(tmp_path: Path) -> None:
    """CFG2: the 2.x key takes precedence over deprecated keys, whatever the order."""
    storage = load_checkpoint_storage(
        {
            "state.backend.fs.checkpointdir": str(tmp_path / "oldest"),
            "state.checkpoints.dir": str(tmp_path / "old"),
            "execution.checkpointing.dir": str(tmp_path / "new"),
        }
    )
    assert storage is not None
    assert isinstance(storage, FileSystemCheckpointStorage)
    assert storage.get_checkpoint_path() == _url(tmp_path / "new")
    older = load_checkpoint_storage(
        {
            "state.backend.fs.checkpointdir": str(tmp_path / "oldest"),
            "state.checkpoints.dir": str(tmp_path / "old"),
        }
    )
    assert isinstance(older, FileSystemCheckpointStorage)
    assert older.get_checkpoint_path() == _url(tmp_path / "old")


@pytest.mark.parametrize(
    "key",
    [
        "execution.checkpointing.data-inline-threshold",
        "state.storage.fs.memory-threshold",
        "state.backend.fs.memory-threshold",
    ],
)
def test_threshold_aliases(tmp_path: Path, key: str) -> None:
    """CFG4: the inline threshold and its deprecated keys."""
    storage = load_file_system_storage({"state.checkpoints.dir": str(tmp_path), key: "1kb"})
    assert storage.get_min_file_size_threshold() == 1024


@pytest.mark.parametrize(
    "key",
    [
        "execution.checkpointing.write-buffer-size",
        "state.storage.fs.write-buffer-size",
        "state.backend.fs.write-buffer-size",
    ],
)
def test_write_buffer_aliases(tmp_path: Path, key: str) -> None:
    """CFG5: the write buffer size and its deprecated keys; buffer = max(buffer, threshold)."""
    storage = load_file_system_storage(
        {"state.checkpoints.dir": str(tmp_path), key: 65536, "state.storage.fs.memory-threshold": 0}
    )
    assert storage.get_write_buffer_size() == 65536
    assert storage.get_min_file_size_threshold() == 0


# ----------------------------------------------------------------------------- CFG4 / CFG5


def test_load_file_system_storage_threshold_and_buffer(tmp_path: Path) -> None:
    """CS5 testLoadFileSystemCheckpointStorage: threshold 900kb; buffer = max(threshold, 1024)."""
    storage = load_checkpoint_storage(
        {
            "execution.checkpointing.storage": "filesystem",
            "execution.checkpointing.dir": str(tmp_path),
            "execution.checkpointing.data-inline-threshold": "900kb",
            "execution.checkpointing.write-buffer-size": "1024",
        }
    )
    assert isinstance(storage, FileSystemCheckpointStorage)
    assert storage.get_min_file_size_threshold() == 900 * 1024
    assert storage.get_write_buffer_size() == 900 * 1024


def test_buffer_larger_than_threshold_is_kept(tmp_path: Path) -> None:
    """CFG5: a buffer above the threshold stays as configured."""
    storage = load_file_system_storage(
        {
            "state.checkpoints.dir": str(tmp_path),
            "execution.checkpointing.data-inline-threshold": "1kb",
            "execution.checkpointing.write-buffer-size": 8192,
        }
    )
    assert storage.get_min_file_size_threshold() == 1024
    assert storage.get_write_buffer_size() == 8192


@pytest.mark.parametrize("bad", ["2mb", 1048577, -1, "1tb"])
def test_out_of_range_threshold_falls_back(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, bad: Any
) -> None:
    """CS4 configure: a threshold outside [0, 1 MiB] is ignored (warning) for 20 KiB."""
    with caplog.at_level(logging.WARNING, logger="ckptstore.loader"):
        storage = load_file_system_storage(
            {"state.checkpoints.dir": str(tmp_path), "state.storage.fs.memory-threshold": bad}
        )
    assert storage.get_min_file_size_threshold() == 20480
    assert "Ignoring invalid file size threshold value" in caplog.text
    assert "state.storage.fs.memory-threshold" in caplog.text


def test_threshold_boundaries(tmp_path: Path) -> None:
    """CFG4: 0 and exactly 1 MiB are valid thresholds."""
    for value, expected in (("0b", 0), ("1mb", MAX_FILE_STATE_THRESHOLD), (0, 0)):
        storage = load_file_system_storage(
            {
                "state.checkpoints.dir": str(tmp_path),
                "execution.checkpointing.data-inline-threshold": value,
            }
        )
        assert storage.get_min_file_size_threshold() == expected


@pytest.mark.parametrize("bad", ["1.5mb", "lots", True, "20 parsecs"])
def test_unparsable_threshold_is_an_error(tmp_path: Path, bad: Any) -> None:
    """CFG4: a value that is no MemorySize at all is an error naming the key."""
    with pytest.raises(ConfigurationError, match="data-inline-threshold"):
        load_file_system_storage(
            {
                "state.checkpoints.dir": str(tmp_path),
                "execution.checkpointing.data-inline-threshold": bad,
            }
        )


@pytest.mark.parametrize("bad", ["4kb", "-1", -5, True, 4096.0])
def test_invalid_write_buffer(tmp_path: Path, bad: Any) -> None:
    """CFG5: the write buffer is a non-negative integer."""
    with pytest.raises(ConfigurationError, match="write-buffer-size"):
        load_file_system_storage(
            {
                "state.checkpoints.dir": str(tmp_path),
                "execution.checkpointing.write-buffer-size": bad,
            }
        )


# ----------------------------------------------------------------------------- MemorySize


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("20kb", 20480),
        ("0b", 0),
        ("1mb", 1048576),
        ("512", 512),
        ("0", 0),
        ("1 MB", 1048576),
        ("  2k ", 2048),
        ("3 bytes", 3),
        ("1kibibytes", 1024),
        ("2mebibytes", 2 * 1024**2),
        ("1g", 1024**3),
        ("1gb", 1024**3),
        ("1gibibytes", 1024**3),
        ("2t", 2 * 1024**4),
        ("1TB", 1024**4),
        ("1tebibytes", 1024**4),
        ("1B", 1),
    ],
)
def test_parse_memory_size(text: str, expected: int) -> None:
    """CFG4: Flink's MemorySize syntax (units case-insensitive, powers of 1024)."""
    assert parse_memory_size(text) == expected


@pytest.mark.parametrize("bad", ["", "kb", "-1", "1.5mb", "1xb", "1 k b", "mb1", "9" * 30 + "tb"])
def test_parse_memory_size_rejects(bad: str) -> None:
    """CFG4: no number, fractions, negative numbers, unknown units or overflow are errors."""
    with pytest.raises(ConfigurationError):
        parse_memory_size(bad)


# ----------------------------------------------------------------------------- CFG3 / CFG9


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("execution.checkpointing.create-subdir", "false", False),
        ("execution.checkpointing.create-subdir", "TRUE", True),
        ("state.checkpoints.create-subdir", False, False),
    ],
)
def test_create_subdir(tmp_path: Path, key: str, value: Any, expected: bool) -> None:
    """CFG3: create-subdir (default true) and its deprecated key."""
    storage = load_file_system_storage({"state.checkpoints.dir": str(tmp_path), key: value})
    assert storage.create_subdir is expected


@pytest.mark.parametrize("bad", ["yes", 1, "0"])
def test_create_subdir_rejects_non_booleans(tmp_path: Path, bad: Any) -> None:
    """CFG3: only true/false."""
    with pytest.raises(ConfigurationError, match="create-subdir"):
        load_file_system_storage(
            {"state.checkpoints.dir": str(tmp_path), "execution.checkpointing.create-subdir": bad}
        )


def test_entropy_options() -> None:
    """CFG9: s3.entropy.key and s3.entropy.length (default 4) reach the storage."""
    storage = load_file_system_storage(
        {"state.checkpoints.dir": "s3://bucket/_entropy_/ckpt", "s3.entropy.key": "_entropy_"}
    )
    assert storage.entropy_key == "_entropy_"
    assert storage.entropy_length == 4
    longer = load_file_system_storage(
        {
            "state.checkpoints.dir": "s3://bucket/_entropy_/ckpt",
            "s3.entropy.key": "_entropy_",
            "s3.entropy.length": "7",
        }
    )
    assert longer.entropy_length == 7


def test_entropy_length_without_key_is_ignored() -> None:
    """CFG9: the length alone enables nothing."""
    storage = load_file_system_storage(
        {"state.checkpoints.dir": "s3://bucket/ckpt", "s3.entropy.length": 9}
    )
    assert storage.entropy_key is None


def test_invalid_entropy_is_a_configuration_error() -> None:
    """CFG9, E2: an invalid entropy setup is a configuration error."""
    with pytest.raises(ConfigurationError):
        load_file_system_storage(
            {
                "state.checkpoints.dir": "s3://bucket/_e_/ckpt",
                "s3.entropy.key": "_e_",
                "s3.entropy.length": 0,
            }
        )


# ----------------------------------------------------------------------------- storage options


def test_storage_options_are_passed_separately() -> None:
    """CS5: fsspec connection settings are not Flink keys; they are passed as an argument."""
    options = {"key": "AKIAEXAMPLE", "secret": "s3cr3t", "client_kwargs": {"region_name": "x"}}
    fs_storage = load_checkpoint_storage(
        {"state.checkpoints.dir": "s3://bucket/ckpt"}, storage_options=options
    )
    assert isinstance(fs_storage, FileSystemCheckpointStorage)
    assert fs_storage.storage_options == options
    assert "s3cr3t" not in repr(fs_storage)
    jm_storage = load_checkpoint_storage(
        {"state.checkpoint-storage": "jobmanager", "state.savepoints.dir": "s3://bucket/sp"},
        storage_options=options,
    )
    assert isinstance(jm_storage, JobManagerCheckpointStorage)
    assert "s3cr3t" not in repr(jm_storage)
    assert jm_storage == JobManagerCheckpointStorage(
        savepoint_path="s3://bucket/sp", storage_options=options
    )


def test_loaded_storage_is_picklable_and_usable(tmp_path: Path) -> None:
    """CS1: what the loader builds pickles and creates an access for a job."""
    storage = load_checkpoint_storage({"execution.checkpointing.dir": str(tmp_path)})
    copy = pickle.loads(pickle.dumps(storage))
    assert copy == storage
    assert copy is not None
    copy.create_checkpoint_storage(JobID.generate())


# ----------------------------------------------------------------------------- application storage


def test_application_storage_wins_over_config(tmp_path: Path) -> None:
    """CS5 testConfigureJobManagerStorage: the app's max size is kept; 'filesystem' ignored."""
    app = JobManagerCheckpointStorage(max_state_size=42)
    storage = load_checkpoint_storage(
        {
            "execution.checkpointing.storage": "filesystem",
            "execution.checkpointing.dir": str(tmp_path / "ckpt"),
            "execution.checkpointing.savepoint-dir": str(tmp_path / "sp"),
        },
        application_storage=app,
    )
    assert isinstance(storage, JobManagerCheckpointStorage)
    assert storage.get_max_state_size() == 42
    assert storage.get_checkpoint_path() == _url(tmp_path / "ckpt")
    assert storage.get_savepoint_path() == _url(tmp_path / "sp")


def test_application_savepoint_dir_beats_config(tmp_path: Path) -> None:
    """CS5 testConfigureJobManagerStorageWithParameters: the job's savepoint dir wins."""
    app = JobManagerCheckpointStorage(savepoint_path=str(tmp_path / "job-sp"))
    storage = load_checkpoint_storage(
        {"state.savepoints.dir": str(tmp_path / "cluster-sp")}, application_storage=app
    )
    assert isinstance(storage, JobManagerCheckpointStorage)
    assert storage.get_savepoint_path() == _url(tmp_path / "job-sp")


def test_application_storage_without_configure(tmp_path: Path) -> None:
    """CS5: a storage without configure() is used as it is."""
    app = FileSystemCheckpointStorage(str(tmp_path), 1000)
    storage = load_checkpoint_storage(
        {"execution.checkpointing.data-inline-threshold": "1kb"}, application_storage=app
    )
    assert storage is app


def test_application_storage_must_be_a_storage() -> None:
    """CS5: the application storage must provide the CheckpointStorage methods."""
    with pytest.raises(InvalidArgumentError, match="create_checkpoint_storage"):
        load_checkpoint_storage({}, application_storage="jobmanager")  # type: ignore[arg-type]


def test_config_must_be_a_mapping() -> None:
    """CS5: None or a non-mapping configuration is rejected."""
    with pytest.raises(MissingArgumentError):
        load_checkpoint_storage(None)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="mapping"):
        load_checkpoint_storage([("state.checkpoints.dir", "/x")])  # type: ignore[arg-type]
