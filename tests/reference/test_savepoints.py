"""Savepoint locations (ACC7, ACC8, L5, H6): Flink's T-BASE5, T-FSA1, T-FSA2 and relocation."""

from __future__ import annotations

import pickle
import re
from typing import Any

import pytest

from ckptstore import FileSystemCheckpointStorage, RelativeFileStateHandle
from ckptstore.api import (
    REFERENCE_MAGIC_NUMBER,
    CheckpointedStateScope,
    CheckpointStorageLocationReference,
    JobID,
    decode_path_from_reference,
    encode_path_as_reference,
)
from ckptstore.errors import CheckpointIOError, InvalidArgumentError, InvalidReferenceError
from ckptstore.filesystem import base_access as base_access_module
from ckptstore.paths import parse_storage_path
from tests.reference._fsroot import FsRoot

EXCLUSIVE = CheckpointedStateScope.EXCLUSIVE
SHARED = CheckpointedStateScope.SHARED


def _read(handle: Any) -> bytes:
    with handle.open_input_stream() as stream:
        return bytes(stream.read())


def _access(root: FsRoot, savepoints: bool, threshold: int = 1024) -> Any:
    storage = FileSystemCheckpointStorage(
        root.sub("checkpoints"),
        threshold,
        savepoint_path=root.sub("savepoints") if savepoints else None,
    )
    return storage.create_checkpoint_storage(JobID.generate())


def _assert_savepoint_in(location: Any, base: str, job: JobID) -> None:
    directory = parse_storage_path(location.checkpoint_directory)
    assert directory.parent.url == parse_storage_path(base).url  # a direct child (T-BASE5)
    assert re.fullmatch(rf"savepoint-{str(job)[:6]}-[0-9a-f]{{12}}", directory.name)  # L5
    assert len(directory.name) == 29
    assert parse_storage_path(location.metadata_file_path).parent == directory


def test_savepoint_path_configured_and_target(fsroot: FsRoot) -> None:
    """T-BASE5 testSavepointPathConfiguredAndTarget: the target pointer wins."""
    access = _access(fsroot, savepoints=True)
    target = fsroot.sub("custom")
    location = access.initialize_location_for_savepoint(1, target)
    _assert_savepoint_in(location, target, access.job_id)


def test_savepoint_path_configured_no_target(fsroot: FsRoot) -> None:
    """T-BASE5 testSavepointPathConfiguredNoTarget: the default location is used."""
    access = _access(fsroot, savepoints=True)
    assert access.has_default_savepoint_location()
    location = access.initialize_location_for_savepoint(1)
    _assert_savepoint_in(location, fsroot.sub("savepoints"), access.job_id)
    assert fsroot.isdir(location.checkpoint_directory)


def test_no_savepoint_path_configured_and_target(fsroot: FsRoot) -> None:
    """T-BASE5 testNoSavepointPathConfiguredAndTarget: the target is used."""
    access = _access(fsroot, savepoints=False)
    target = fsroot.sub("target")
    _assert_savepoint_in(access.initialize_location_for_savepoint(1, target), target, access.job_id)


def test_no_savepoint_path_configured_no_target(fsroot: FsRoot) -> None:
    """T-BASE5 testNoSavepointPathConfiguredNoTarget: ValueError with Flink's message."""
    access = _access(fsroot, savepoints=False)
    assert not access.has_default_savepoint_location()
    with pytest.raises(
        InvalidArgumentError,
        match=r"^No savepoint location given and no default location configured\.$",
    ):
        access.initialize_location_for_savepoint(1)


@pytest.mark.parametrize("custom", [False, True], ids=["T-FSA1-default", "T-FSA2-custom"])
def test_savepoints_in_one_directory(fsroot: FsRoot, custom: bool) -> None:
    """T-FSA1 / T-FSA2 / ACC8: exclusive, shared and task-owned dirs are the savepoint dir."""
    access = _access(fsroot, savepoints=True)
    location = access.initialize_location_for_savepoint(1, fsroot.sub("custom") if custom else None)
    assert location.checkpoint_directory == location.shared_state_directory
    assert location.checkpoint_directory == location.task_owned_state_directory
    reference = location.location_reference
    assert not reference.is_default
    assert decode_path_from_reference(reference) == location.checkpoint_directory


def test_savepoint_state_round_trip_via_reference(fsroot: FsRoot) -> None:
    """ACC9 / REF4: the worker writes savepoint state through the path reference."""
    access = _access(fsroot, savepoints=True, threshold=0)
    location = access.initialize_location_for_savepoint(5)
    worker = access.resolve_checkpoint_storage_location(5, location.location_reference)
    exclusive = worker.create_checkpoint_state_output_stream(EXCLUSIVE)
    exclusive.write(b"exclusive")
    shared = worker.create_checkpoint_state_output_stream(SHARED)
    shared.write(b"shared")
    h1, h2 = exclusive.close_and_get_handle(), shared.close_and_get_handle()
    assert isinstance(h1, RelativeFileStateHandle)
    assert not isinstance(h2, RelativeFileStateHandle)
    for handle in (h1, h2):
        assert parse_storage_path(handle.file_path).parent.url == location.checkpoint_directory
    stream = location.create_metadata_output_stream()
    stream.write(b"meta")
    completed = stream.close_and_finalize_checkpoint()
    assert completed.external_pointer == location.checkpoint_directory


def test_relocated_savepoint_restores(fsroot: FsRoot) -> None:
    """H6: a savepoint directory moved as a whole restores through its relative handles."""
    access = _access(fsroot, savepoints=True, threshold=0)
    location = access.initialize_location_for_savepoint(1)
    stream = location.create_checkpoint_state_output_stream(EXCLUSIVE)
    stream.write(b"relocatable")
    handle = stream.close_and_get_handle()
    assert isinstance(handle, RelativeFileStateHandle)
    meta = location.create_metadata_output_stream()
    meta.write(b"m")
    completed = meta.close_and_finalize_checkpoint()

    old = parse_storage_path(completed.external_pointer)
    new = parse_storage_path(fsroot.sub("moved", old.name))
    fsroot.makedirs(new.parent.url)
    fsroot.raw.mv(old.path, new.path, recursive=True)
    assert not fsroot.exists(old.url)

    storage = FileSystemCheckpointStorage(fsroot.sub("other"))
    resolved = storage.resolve_checkpoint(new.url)
    assert resolved.external_pointer == new.url
    rebased = resolved.resolve_handle(handle)
    assert parse_storage_path(rebased.file_path).parent == new
    assert _read(rebased) == b"relocatable"


def test_savepoint_directory_attempts(fsroot: FsRoot, monkeypatch: pytest.MonkeyPatch) -> None:
    """ACC7: up to 10 attempts with fresh names, then OSError 'Failed to create savepoint...'."""
    access = _access(fsroot, savepoints=True)
    attempts: list[str] = []

    def collide(fs: Any, path: Any) -> bool:
        attempts.append(path.name)
        return len(attempts) == 10

    monkeypatch.setattr(base_access_module, "make_directory_exclusive", collide)
    location = access.initialize_location_for_savepoint(1)
    assert parse_storage_path(location.checkpoint_directory).name == attempts[-1]
    assert len(set(attempts)) == 10

    def broken(fs: Any, path: Any) -> bool:
        raise OSError("read-only")

    monkeypatch.setattr(base_access_module, "make_directory_exclusive", broken)
    with pytest.raises(CheckpointIOError, match="Failed to create savepoint directory at") as info:
        access.initialize_location_for_savepoint(1)
    assert isinstance(info.value.__cause__, OSError)


def test_savepoint_directory_is_exclusive(fsroot: FsRoot, monkeypatch: pytest.MonkeyPatch) -> None:
    """ACC7 (our rule): on directory file systems an existing directory is not reused."""
    access = _access(fsroot, savepoints=True)
    names = iter(["aaaaaaaaaaaa", "aaaaaaaaaaaa", "bbbbbbbbbbbb"])
    monkeypatch.setattr(base_access_module, "random_savepoint_suffix", lambda: next(names))
    first = access.initialize_location_for_savepoint(1)
    second = access.initialize_location_for_savepoint(2)
    assert first.checkpoint_directory.endswith("aaaaaaaaaaaa")
    assert second.checkpoint_directory.endswith("bbbbbbbbbbbb")


# --------------------------------------------------------------------------- references


@pytest.mark.parametrize(
    "url", ["file:///a/b/savepoint-abcdef-0123456789ab", "s3://bucket/sp/x", "memory:///ü/ß"]
)
def test_encode_and_decode(url: str) -> None:
    """T-REF1 / REF2: paths round-trip through the magic-number encoding."""
    reference = encode_path_as_reference(url)
    assert reference.reference_bytes.startswith(REFERENCE_MAGIC_NUMBER)
    assert decode_path_from_reference(reference) == url
    assert pickle.loads(pickle.dumps(reference)) == reference


def test_decoding_errors() -> None:
    """T-REF2 too short, T-REF3 garbage, T-REF4 default: all ValueError (REF3)."""
    with pytest.raises(InvalidReferenceError, match=r"Reference too short\."):
        decode_path_from_reference(CheckpointStorageLocationReference(b"\x05\x5f"))
    with pytest.raises(InvalidReferenceError, match="wrong magic number"):
        decode_path_from_reference(CheckpointStorageLocationReference(bytes(range(12))))
    with pytest.raises(InvalidReferenceError, match="Cannot decode default reference"):
        decode_path_from_reference(CheckpointStorageLocationReference.default())
    default = CheckpointStorageLocationReference.default()
    assert pickle.loads(pickle.dumps(default)) is default
