"""Entropy injection (E1-E7): Flink's EntropyInjectorTest (T-EI*), FsStorageEntropyTest
(T-ENT1) and the entropy cases of FsCheckpointStreamFactoryTest (T-FSF4, T-FSF5).

Storage-level tests run on memory:// (our stand-in object store, no real I/O cost)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from ckptstore import FileStateHandle, FileSystemCheckpointStorage, RelativeFileStateHandle
from ckptstore.api import CheckpointedStateScope, JobID
from ckptstore.errors import ConfigurationError
from ckptstore.filesystem.entropy import ENTROPY_ALPHABET, EntropyInjector, validate_entropy_options
from ckptstore.paths import parse_storage_path
from tests.reference._fsroot import FsRoot

KEY = "_entropy_"
EXCLUSIVE = CheckpointedStateScope.EXCLUSIVE
SHARED = CheckpointedStateScope.SHARED


def _read(handle: Any) -> bytes:
    with handle.open_input_stream() as stream:
        return bytes(stream.read())


# --------------------------------------------------------------------------- injector


@pytest.mark.parametrize(
    "url",
    ["s3://bucket/path/to/file", "memory:///a/b", "s3://bucket/_entr0py_/x"],
)
def test_non_matching_paths_unchanged(url: str) -> None:
    """T-EI1: a path without the key comes back unchanged (inject and remove)."""
    injector = EntropyInjector(KEY, 4)
    path = parse_storage_path(url)
    assert injector.inject(path) == path
    assert injector.remove(path) == path
    assert not injector.is_active(path)


def test_disabled_injector_is_identity() -> None:
    """T-EI1 (null key, FLINK-25952): no key -> nothing changes."""
    injector = EntropyInjector(None)
    path = parse_storage_path("s3://bucket/_entropy_/x")
    assert injector.inject(path) == path
    assert injector.remove(path) == path


def test_full_uri_matching() -> None:
    """T-EI2: the bucket (authority) is kept; the key segment is replaced or removed."""
    injector = EntropyInjector(KEY, 4)
    path = parse_storage_path("s3://bucket/path/_entropy_/the/file")
    injected = injector.inject(path).url
    assert re.fullmatch(r"s3://bucket/path/[0-9A-Za-z]{4}/the/file", injected)
    assert injector.remove(path).url == "s3://bucket/path/the/file"


def test_path_only_matching_and_first_occurrence() -> None:
    """T-EI2 / E3: only the first occurrence is rewritten."""
    injector = EntropyInjector(KEY, 3)
    path = parse_storage_path("memory:///_entropy_/a/_entropy_/f")
    injected = injector.inject(path).path
    assert re.fullmatch(r"/[0-9A-Za-z]{3}/a/_entropy_/f", injected)
    assert injector.remove(path).path == "/a/_entropy_/f"


def test_entropy_not_full_segment() -> None:
    """T-EI2 testEntropyNotFullSegment: the key inside a segment."""
    injector = EntropyInjector(KEY, 3)
    path = parse_storage_path("s3://bucket/entropy-_entropy_-suffix/file")
    injected = injector.inject(path).url
    assert re.fullmatch(r"s3://bucket/entropy-[0-9A-Za-z]{3}-suffix/file", injected)
    assert injector.remove(path).url == "s3://bucket/entropy--suffix/file"


def test_key_in_bucket_name_is_not_rewritten() -> None:
    """E3: only the path component counts; the bucket is the URL's authority."""
    injector = EntropyInjector(KEY, 4)
    path = parse_storage_path("s3://my_entropy_bucket/x")
    assert not injector.is_active(path)


def test_generate_length_and_alphabet() -> None:
    """S3EntropyFsFactoryTest: length 7 -> 7 characters from [0-9A-Za-z] (E2)."""
    injector = EntropyInjector("__entropy__", 7)
    samples = {injector.generate() for _ in range(200)}
    assert all(len(s) == 7 and set(s) <= set(ENTROPY_ALPHABET) for s in samples)
    assert len(samples) > 190
    assert len(ENTROPY_ALPHABET) == 62


@pytest.mark.parametrize(
    "bad", ["a~b", "#", "@x", "*", "+", "%", "{", "}", "<", ">", "[", "]", "|", '"', "\\"]
)
def test_invalid_key_characters(bad: str) -> None:
    """E2: forbidden characters -> ConfigurationError with Flink's message."""
    message = r"Invalid character in value for s3\.entropy\.key"
    with pytest.raises(ConfigurationError, match=message):
        validate_entropy_options(bad, 4)


@pytest.mark.parametrize("length", [0, -1])
def test_invalid_length(length: int) -> None:
    """E2: length <= 0 -> ConfigurationError 's3.entropy.length must configure a value > 0'."""
    with pytest.raises(ConfigurationError, match=r"s3\.entropy\.length must configure a value > 0"):
        FileSystemCheckpointStorage("memory:///x/_entropy_", entropy_key=KEY, entropy_length=length)


def test_entropy_refused_on_local_file_system(tmp_path: Any) -> None:
    """E1 (our rule): entropy on a directory file system is a ConfigurationError that says why."""
    with pytest.raises(ConfigurationError, match="object store"):
        FileSystemCheckpointStorage(str(tmp_path / KEY), entropy_key=KEY)
    with pytest.raises(ConfigurationError):
        FileSystemCheckpointStorage(
            "memory:///x/_entropy_", savepoint_path=str(tmp_path), entropy_key=KEY
        )


# --------------------------------------------------------------------------- storage


def _entropy_storage(root: FsRoot, threshold: int = 10) -> FileSystemCheckpointStorage:
    return FileSystemCheckpointStorage(
        root.sub(KEY, "checkpoints"), threshold, entropy_key=KEY, entropy_length=4
    )


def test_entropy_injection(memroot: FsRoot) -> None:
    """T-ENT1: dirs keep the key; data files get entropy; metadata and pointer lose the key."""
    storage = _entropy_storage(memroot)
    unresolved_base = parse_storage_path(memroot.sub(KEY, "checkpoints")).url
    access = storage.create_checkpoint_storage(JobID.generate())
    access.initialize_base_locations_for_checkpoint()
    location = access.initialize_location_for_checkpoint(1)
    for directory in (
        location.checkpoint_directory,
        location.shared_state_directory,
        location.task_owned_state_directory,
    ):
        assert directory.startswith(unresolved_base)
    assert KEY not in location.metadata_file_path

    resolved_prefix = re.escape(parse_storage_path(memroot.url).url) + r"/[0-9A-Za-z]{4}/"
    task_owned = access.create_task_owned_state_stream()
    task_owned.write(bytes(11))
    exclusive = location.create_checkpoint_state_output_stream(EXCLUSIVE)
    exclusive.write(bytes(11))
    handles = [task_owned.close_and_get_handle(), exclusive.close_and_get_handle()]
    for handle in handles:
        assert isinstance(handle, FileStateHandle)
        assert KEY not in handle.file_path
        assert re.match(resolved_prefix, handle.file_path)
        assert _read(handle) == bytes(11)

    stream = location.create_metadata_output_stream()
    stream.write(b"meta")
    completed = stream.close_and_finalize_checkpoint()
    assert KEY not in completed.metadata_handle.file_path
    assert (
        completed.external_pointer
        == parse_storage_path(completed.metadata_handle.file_path).parent.url
    )
    assert KEY not in completed.external_pointer

    resolved = storage.resolve_checkpoint(completed.external_pointer)
    assert _read(resolved.metadata_handle) == b"meta"
    assert _read(resolved.resolve_handle(handles[1])) == bytes(11)  # absolute: unchanged


def test_entropy_makes_exclusive_state_absolute(memroot: FsRoot) -> None:
    """T-FSF4 / E6: key in the exclusive dir -> absolute handle under the resolved dir."""
    access = _entropy_storage(memroot, 0).create_checkpoint_storage(JobID.generate())
    location = access.initialize_location_for_checkpoint(1)
    stream = location.create_checkpoint_state_output_stream(EXCLUSIVE)
    stream.write(b"x")
    handle = stream.close_and_get_handle()
    assert type(handle) is FileStateHandle
    pattern = location.checkpoint_directory.replace(KEY, "[0-9A-Za-z]{4}")
    assert re.fullmatch(pattern, parse_storage_path(handle.file_path).parent.url)


def test_entropy_length_defaults_to_four(memroot: FsRoot) -> None:
    """E2: without entropy_length, the key is replaced by 4 characters (s3.entropy.length)."""
    storage = FileSystemCheckpointStorage(memroot.sub(KEY, "c"), 0, entropy_key=KEY)
    location = storage.create_checkpoint_storage(
        JobID.generate()
    ).initialize_location_for_checkpoint(1)
    stream = location.create_checkpoint_state_output_stream(SHARED)
    stream.write(b"x")
    handle = stream.close_and_get_handle()
    assert type(handle) is FileStateHandle
    pattern = memroot.sub(KEY, "c").replace(KEY, "[0-9A-Za-z]{4}")
    assert re.match(pattern, handle.file_path), handle.file_path


def test_key_not_in_path_keeps_relative_handles(memroot: FsRoot) -> None:
    """T-FSF5 / E6 (FLINK-31984): a key that is not in the path disables entropy."""
    storage = FileSystemCheckpointStorage(memroot.sub("plain"), 0, entropy_key=KEY)
    access = storage.create_checkpoint_storage(JobID.generate())
    location = access.initialize_location_for_checkpoint(1)
    stream = location.create_checkpoint_state_output_stream(EXCLUSIVE)
    stream.write(b"x")
    assert isinstance(stream.close_and_get_handle(), RelativeFileStateHandle)


def test_inline_handle_names_keep_the_key(memroot: FsRoot) -> None:
    """S12(c) (derived): inline handle names use the unresolved directory."""
    location = (
        _entropy_storage(memroot, 100)
        .create_checkpoint_storage(JobID.generate())
        .initialize_location_for_checkpoint(1)
    )
    stream = location.create_checkpoint_state_output_stream(SHARED)
    stream.write(b"x")
    handle = stream.close_and_get_handle()
    assert handle is not None
    assert KEY in handle.handle_name  # type: ignore[attr-defined]


def test_savepoint_with_entropy(memroot: FsRoot) -> None:
    """E4 / E7 on savepoints: metadata and pointer without the key; state absolute."""
    storage = FileSystemCheckpointStorage(
        memroot.sub("c"), 0, savepoint_path=memroot.sub(KEY, "sp"), entropy_key=KEY
    )
    access = storage.create_checkpoint_storage(JobID.generate())
    location = access.initialize_location_for_savepoint(1)
    stream = location.create_checkpoint_state_output_stream(EXCLUSIVE)
    stream.write(b"state")
    handle = stream.close_and_get_handle()
    assert type(handle) is FileStateHandle
    meta = location.create_metadata_output_stream()
    meta.write(b"m")
    completed = meta.close_and_finalize_checkpoint()
    assert KEY not in completed.external_pointer
    assert _read(storage.resolve_checkpoint(completed.external_pointer).metadata_handle) == b"m"
    location.dispose_on_failure()
    assert not memroot.exists(completed.metadata_handle.file_path)
