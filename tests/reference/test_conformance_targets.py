"""The reference's conformance targets (ARCHITECTURE.md section 4, plug-in contract)."""

from __future__ import annotations

import importlib
import pickle
import tomllib
from pathlib import Path
from typing import Any

import pytest

from ckptstore.api import (
    ByteStreamStateHandle,
    CheckpointedStateScope,
    CheckpointStorage,
    CheckpointStorageLocationReference,
    JobID,
)
from ckptstore.errors import ConfigurationError, InvalidArgumentError, StateSizeExceededError
from ckptstore.filesystem.storage import FileSystemCheckpointStorage
from ckptstore.jobmanager.storage import JobManagerCheckpointStorage
from ckptstore.targets import ReferenceTarget, conformance_target, jobmanager_target

REPO = Path(__file__).resolve().parents[2]

#: The capability names the plug-in contract documents (ARCHITECTURE.md section 4).
DOCUMENTED_CAPABILITIES = {
    "file-layout",
    "inline-state",
    "savepoints",
    "relocatable-savepoints",
    "task-owned-state",
    "fast-duplicate",
    "entropy-injection",
    "flat-layout",
    "memory-limit",
    "retry-budget",
    "redacts-secrets",
    "in-memory-checkpoints",
}
#: Capabilities the reference claims before the suite's catalog names them (none now).
AHEAD_OF_THE_SUITE: set[str] = set()
#: Names in the suite's catalog that no reference target claims (yet), with the reason.
UNCLAIMED: dict[str, str] = {}


def _dirs(tmp_path: Path) -> dict[str, str]:
    return {
        "checkpoint_dir": f"file://{tmp_path.as_posix()}/checkpoints",
        "savepoint_dir": f"file://{tmp_path.as_posix()}/savepoints",
    }


@pytest.mark.parametrize("target", [conformance_target, jobmanager_target])
def test_target_shape(target: ReferenceTarget) -> None:
    """Plug-in contract: name, capabilities, schemes, known_failures, make_storage."""
    assert isinstance(target.name, str)
    assert set(target.capabilities) <= DOCUMENTED_CAPABILITIES
    assert set(target.schemes) == {"file", "memory", "s3", "sftp"}
    assert dict(target.known_failures) == {}
    assert callable(target.make_storage)


def test_target_names_and_capabilities() -> None:
    """Plug-in contract: the FS target claims all but memory-limit and in-memory-checkpoints
    (it needs a checkpoint directory); the JM target five (not retry-budget: it writes no
    state files, which the suite's retry-budget check needs)."""
    assert conformance_target.name == "ckptstore"
    assert set(conformance_target.capabilities) == DOCUMENTED_CAPABILITIES - {
        "memory-limit",
        "in-memory-checkpoints",
    }
    assert jobmanager_target.name == "ckptstore-jobmanager"
    assert set(jobmanager_target.capabilities) == {
        "savepoints",
        "relocatable-savepoints",
        "memory-limit",
        "redacts-secrets",
        "in-memory-checkpoints",
    }


def test_entry_points_name_the_targets() -> None:
    """Plug-in contract: pyproject registers both targets in ckptconform.targets."""
    with open(REPO / "pyproject.toml", "rb") as handle:
        project = tomllib.load(handle)["project"]
    entries = project["entry-points"]["ckptconform.targets"]
    for name, target in (
        ("ckptstore", conformance_target),
        ("ckptstore-jobmanager", jobmanager_target),
    ):
        module, _, attr = entries[name].partition(":")
        loaded = getattr(importlib.import_module(module), attr)
        assert loaded is target
        assert loaded.name == name


# ----------------------------------------------------------------------------- FS target


def test_fs_target_maps_options(tmp_path: Path) -> None:
    """Plug-in contract: inline_threshold, write_buffer_size, storage_options reach the storage."""
    storage = conformance_target.make_storage(
        **_dirs(tmp_path),
        options={"inline_threshold": 0, "write_buffer_size": 1024, "storage_options": {}},
    )
    assert isinstance(storage, FileSystemCheckpointStorage)
    assert isinstance(storage, CheckpointStorage)
    assert storage.get_min_file_size_threshold() == 0
    assert storage.get_write_buffer_size() == 1024
    assert storage.get_checkpoint_path() == _dirs(tmp_path)["checkpoint_dir"]
    assert storage.get_savepoint_path() == _dirs(tmp_path)["savepoint_dir"]


def test_fs_target_defaults(tmp_path: Path) -> None:
    """Plug-in contract: without options, Flink's defaults; savepoint_dir may be None."""
    storage = conformance_target.make_storage(
        checkpoint_dir=_dirs(tmp_path)["checkpoint_dir"], savepoint_dir=None, options={}
    )
    assert isinstance(storage, FileSystemCheckpointStorage)
    assert storage.get_min_file_size_threshold() == 20480
    assert storage.get_write_buffer_size() == 4096
    assert storage.get_savepoint_path() is None
    none_options = conformance_target.make_storage(**_dirs(tmp_path), options=None)
    assert isinstance(none_options, FileSystemCheckpointStorage)


def test_fs_target_entropy(tmp_path: Path) -> None:
    """Plug-in contract: entropy_key and entropy_length reach the storage."""
    storage = conformance_target.make_storage(
        checkpoint_dir="memory:///entropy/_ek_/ckpt",
        savepoint_dir=None,
        options={"entropy_key": "_ek_", "entropy_length": 6},
    )
    assert isinstance(storage, FileSystemCheckpointStorage)
    assert storage.entropy_key == "_ek_"
    assert storage.entropy_length == 6


def test_fs_target_rejects_unknown_options(tmp_path: Path) -> None:
    """Plug-in contract: an unsupported option is a clear error listing the supported ones."""
    with pytest.raises(ConfigurationError) as info:
        conformance_target.make_storage(
            **_dirs(tmp_path), options={"max_state_size": 10, "inline_treshold": 0}
        )
    message = str(info.value)
    assert "'inline_treshold'" in message
    assert "'max_state_size'" in message
    assert "inline_threshold" in message  # the supported list


def test_fs_target_rejects_non_mapping_options(tmp_path: Path) -> None:
    """Plug-in contract: options is a mapping."""
    with pytest.raises(InvalidArgumentError, match="mapping"):
        conformance_target.make_storage(**_dirs(tmp_path), options=[("inline_threshold", 0)])  # type: ignore[arg-type]


def test_fs_target_fresh_storage_each_time(tmp_path: Path) -> None:
    """Plug-in contract: make_storage returns a fresh (equal, picklable) storage per call."""
    first = conformance_target.make_storage(**_dirs(tmp_path), options={})
    second = conformance_target.make_storage(**_dirs(tmp_path), options={})
    assert first is not second
    assert first == second
    assert pickle.loads(pickle.dumps(first)) == first


# ----------------------------------------------------------------------------- JM target


def test_jm_target_maps_options(tmp_path: Path) -> None:
    """Plug-in contract: max_state_size and storage_options reach the JM storage."""
    storage = jobmanager_target.make_storage(
        **_dirs(tmp_path), options={"max_state_size": 100, "storage_options": {}}
    )
    assert isinstance(storage, JobManagerCheckpointStorage)
    assert storage.get_max_state_size() == 100
    assert storage.get_checkpoint_path() == _dirs(tmp_path)["checkpoint_dir"]
    assert storage.get_savepoint_path() == _dirs(tmp_path)["savepoint_dir"]


def test_jm_target_memory_limit(tmp_path: Path) -> None:
    """MEM5 through the target: state over max_state_size fails at the handle."""
    storage = jobmanager_target.make_storage(**_dirs(tmp_path), options={"max_state_size": 8})
    access = storage.create_checkpoint_storage(JobID.generate())
    factory = access.resolve_checkpoint_storage_location(
        1, CheckpointStorageLocationReference.default()
    )
    ok = factory.create_checkpoint_state_output_stream(CheckpointedStateScope.EXCLUSIVE)
    ok.write(b"12345678")
    assert isinstance(ok.close_and_get_handle(), ByteStreamStateHandle)
    too_big = factory.create_checkpoint_state_output_stream(CheckpointedStateScope.EXCLUSIVE)
    too_big.write(b"123456789")
    with pytest.raises(StateSizeExceededError):
        too_big.close_and_get_handle()


def test_jm_target_default_max_size(tmp_path: Path) -> None:
    """CS3 through the target: no max_state_size option means 5 MiB."""
    storage = jobmanager_target.make_storage(**_dirs(tmp_path), options={})
    assert isinstance(storage, JobManagerCheckpointStorage)
    assert storage.get_max_state_size() == 5 * 1024 * 1024


@pytest.mark.parametrize(
    "option", ["inline_threshold", "write_buffer_size", "entropy_key", "bogus"]
)
def test_jm_target_rejects_unsupported_options(tmp_path: Path, option: str) -> None:
    """Plug-in contract: the JM storage has no threshold, buffer or entropy: clear error."""
    with pytest.raises(
        ConfigurationError,
        match=rf"'{option}'.*ckptstore-jobmanager|"
        rf"ckptstore-jobmanager.*'{option}'",
    ):
        jobmanager_target.make_storage(**_dirs(tmp_path), options={option: 1})


def test_jm_target_round_trip(tmp_path: Path) -> None:
    """Plug-in contract: a checkpoint made through the target resolves by its pointer."""
    storage = jobmanager_target.make_storage(**_dirs(tmp_path), options={})
    access = storage.create_checkpoint_storage(JobID.generate())
    location = access.initialize_location_for_checkpoint(1)
    stream = location.create_metadata_output_stream()
    stream.write(b"meta")
    completed = stream.close_and_finalize_checkpoint()
    resolved = storage.resolve_checkpoint(completed.external_pointer)
    assert resolved.metadata_handle.open_input_stream().read() == b"meta"


def test_make_storage_is_keyword_only(tmp_path: Path) -> None:
    """Plug-in contract: make_storage(*, checkpoint_dir, savepoint_dir, options)."""
    args: Any = (_dirs(tmp_path)["checkpoint_dir"], None, {})
    with pytest.raises(TypeError):
        conformance_target.make_storage(*args)


def test_documented_capabilities_are_the_suites():
    """ARCHITECTURE.md section 4: the names the reference claims are the suite's catalog
    (apart from those the suite has yet to add)."""
    from ckptconform.clauses import CAPABILITIES

    assert set(CAPABILITIES) - DOCUMENTED_CAPABILITIES <= set(UNCLAIMED)
    assert DOCUMENTED_CAPABILITIES - set(CAPABILITIES) <= AHEAD_OF_THE_SUITE


@pytest.mark.parametrize("target", [conformance_target, jobmanager_target])
def test_retry_budget_options_become_storage_options(target: ReferenceTarget) -> None:
    """Issue 9: the suite's retry_attempts and retry_seconds are merged into storage_options
    (and win over the same keys there); the ranges are checked at construction."""
    storage: Any = target.make_storage(
        checkpoint_dir="s3://bucket/ckpt",
        savepoint_dir=None,
        options={
            "retry_attempts": 3,
            "retry_seconds": 10,
            "storage_options": {"endpoint_url": "http://127.0.0.1:9", "retry_attempts": 7},
        },
    )
    assert storage._storage_options == {
        "endpoint_url": "http://127.0.0.1:9",
        "retry_attempts": 3,
        "retry_seconds": 10,
    }
    alone: Any = target.make_storage(
        checkpoint_dir="s3://bucket/ckpt", savepoint_dir=None, options={"retry_seconds": 2.5}
    )
    assert alone._storage_options == {"retry_seconds": 2.5}
    for bad in ({"retry_attempts": 0}, {"retry_seconds": 0}, {"retry_attempts": "3"}):
        with pytest.raises(ConfigurationError, match="retry_"):
            target.make_storage(checkpoint_dir="s3://bucket/ckpt", savepoint_dir=None, options=bad)


@pytest.mark.parametrize("target", [conformance_target, jobmanager_target])
def test_unconditional_metadata_becomes_a_storage_option(target: ReferenceTarget) -> None:
    """MD-13: the suite's allow_unconditional_metadata goes into storage_options (False too,
    which is the default), and anything but a bool is refused at construction."""
    for value in (True, False):
        storage: Any = target.make_storage(
            checkpoint_dir="s3://bucket/ckpt",
            savepoint_dir=None,
            options={
                "allow_unconditional_metadata": value,
                "storage_options": {"endpoint_url": "http://127.0.0.1:9"},
            },
        )
        assert storage._storage_options == {
            "endpoint_url": "http://127.0.0.1:9",
            "allow_unconditional_metadata": value,
        }
    with pytest.raises(ConfigurationError, match="allow_unconditional_metadata"):
        target.make_storage(
            checkpoint_dir="s3://bucket/ckpt",
            savepoint_dir=None,
            options={"allow_unconditional_metadata": "true"},
        )
