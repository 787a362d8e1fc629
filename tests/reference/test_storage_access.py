"""FileSystemCheckpointStorage and FsCheckpointStorageAccess (CS4, CFG3, ACC1-ACC12, L1-L3).

Mirrors Flink's FsCheckpointStorageAccessTest (T-FSA*), AbstractFileCheckpointStorageAccess-
TestBase (T-BASE*), FsCheckpointMetadataOutputStreamTest (T-MOS*),
CheckpointStateOutputStreamTest's metadata cases (T-CSOS*) and
FsCompletedCheckpointStorageLocationTest (T-CCL1).
"""

from __future__ import annotations

import copy
import pickle
import threading
from typing import Any

import pytest

from ckptstore import FileStateHandle, FileSystemCheckpointStorage, RelativeFileStateHandle
from ckptstore.api import (
    ByteStreamStateHandle,
    CheckpointedStateScope,
    CheckpointStorage,
    CheckpointStorageAccess,
    CheckpointStorageLocation,
    CheckpointStorageLocationReference,
    CompletedCheckpointStorageLocation,
    JobID,
)
from ckptstore.errors import (
    CheckpointIOError,
    InvalidArgumentError,
    InvalidHandleError,
    MetadataExistsError,
    MissingArgumentError,
    StreamClosedError,
)
from ckptstore.paths import parse_storage_path
from ckptstore.stores import operations, registry
from tests.reference._fsroot import FsRoot

EXCLUSIVE = CheckpointedStateScope.EXCLUSIVE
SHARED = CheckpointedStateScope.SHARED
DEFAULT = CheckpointStorageLocationReference.default()


def _storage(root: FsRoot, threshold: int = 1024, **kwargs: Any) -> FileSystemCheckpointStorage:
    return FileSystemCheckpointStorage(root.sub("checkpoints"), threshold, 4096, **kwargs)


def _finalize(location: Any, data: bytes = b"metadata") -> Any:
    stream = location.create_metadata_output_stream()
    stream.write(data)
    return stream.close_and_finalize_checkpoint()


def _read(handle: Any) -> bytes:
    with handle.open_input_stream() as stream:
        return bytes(stream.read())


# --------------------------------------------------------------------------- configuration


def test_threshold_validation() -> None:
    """CS4: the threshold must be in [-1, 1048576], with Flink's message."""
    for bad in (-2, 1048577):
        with pytest.raises(ValueError) as info:
            FileSystemCheckpointStorage("/tmp/x", bad)
        assert str(info.value) == (
            "The threshold for file state size must be in [-1, 1048576], where '-1' means to "
            "use the value from the deployment's configuration."
        )
    FileSystemCheckpointStorage("/tmp/x", 1048576)
    FileSystemCheckpointStorage("/tmp/x", -1)


def test_write_buffer_validation_and_missing_path() -> None:
    """CS4: write buffer >= -1; a None path is a TypeError; CC5 getters and defaults."""
    with pytest.raises(ValueError, match="not less than '-1'"):
        FileSystemCheckpointStorage("/tmp/x", None, -2)
    with pytest.raises(MissingArgumentError):
        FileSystemCheckpointStorage(None)  # type: ignore[arg-type]
    storage = FileSystemCheckpointStorage("/tmp/x")
    assert storage.get_min_file_size_threshold() == 20480
    assert storage.get_write_buffer_size() == 4096
    assert storage.get_checkpoint_path() == "file:///tmp/x"
    assert storage.get_savepoint_path() is None
    assert FileSystemCheckpointStorage.MAX_FILE_STATE_THRESHOLD == 1048576
    assert FileSystemCheckpointStorage("/tmp/x", 100, 50).get_write_buffer_size() == 50


def test_create_checkpoint_storage_needs_job_id() -> None:
    """CS4: create_checkpoint_storage(None) -> TypeError 'jobId'."""
    with pytest.raises(MissingArgumentError, match="jobId"):
        FileSystemCheckpointStorage("/tmp/x").create_checkpoint_storage(None)  # type: ignore[arg-type]


def test_pickles_to_configuration_only() -> None:
    """CS1: pickles small, equal after a round trip, no file system or lock inside."""
    storage = FileSystemCheckpointStorage(
        "s3://bucket/ckpt",
        100,
        savepoint_path="s3://bucket/sp",
        storage_options={"endpoint_url": "http://127.0.0.1:9", "key": "AK", "secret": "SK"},
        entropy_key="_entropy_",
        allowed_schemes=["file"],
    )
    storage.create_checkpoint_storage(JobID.generate())
    data = pickle.dumps(storage)
    assert len(data) < 1024
    assert b"S3FileSystem" not in data
    assert b"lock" not in data.lower()
    back = pickle.loads(data)
    assert back == storage
    assert hash(back) == hash(storage)
    assert copy.deepcopy(storage) == storage
    assert isinstance(storage, CheckpointStorage)


def test_equality_over_configuration() -> None:
    """CS4: equality covers location, threshold and buffer size (and our other options)."""
    assert FileSystemCheckpointStorage("/a", 10) == FileSystemCheckpointStorage("file:///a", 10)
    assert FileSystemCheckpointStorage("/a", 10) != FileSystemCheckpointStorage("/a", 11)
    assert FileSystemCheckpointStorage("/a") != FileSystemCheckpointStorage("/b")
    assert FileSystemCheckpointStorage("/a") != FileSystemCheckpointStorage(
        "/a", create_subdir=False
    )


def test_repr_redacts_secrets() -> None:
    """repr never shows secret-looking storage options."""
    storage = FileSystemCheckpointStorage(
        "s3://bucket/c",
        storage_options={
            "key": "AKIAXXX",
            "secret": "hunter2",
            "token": "tok",
            "client_kwargs": {"aws_session_token": "S3SSVALUE", "region_name": "eu-west-1"},
            "endpoint_url": "http://127.0.0.1:1",
        },
    )
    text = repr(storage)
    for secret in ("AKIAXXX", "hunter2", "'tok'", "S3SSVALUE"):
        assert secret not in text
    assert "eu-west-1" in text
    assert "127.0.0.1" in text


def test_storage_is_thread_safe(fsroot: FsRoot) -> None:
    """CS1: one storage used from many threads at once."""
    storage = _storage(fsroot, 0)
    errors: list[BaseException] = []

    def work() -> None:
        try:
            access = storage.create_checkpoint_storage(JobID.generate())
            access.initialize_base_locations_for_checkpoint()
            location = access.initialize_location_for_checkpoint(1)
            stream = location.create_checkpoint_state_output_stream(SHARED)
            stream.write(b"abc")
            handle = stream.close_and_get_handle()
            completed = _finalize(location)
            assert _read(storage.resolve_checkpoint(completed.external_pointer).metadata_handle)
            assert handle is not None
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


# --------------------------------------------------------------------------- layout, mkdirs


def test_layout_and_protocols(fsroot: FsRoot) -> None:
    """L1/L2: <base>/<job>/shared, taskowned, chk-<n> (no padding); ACC2/ACC3."""
    job = JobID.generate()
    access = _storage(fsroot).create_checkpoint_storage(job)
    assert isinstance(access, CheckpointStorageAccess)
    base = parse_storage_path(fsroot.sub("checkpoints")).url
    assert access.checkpoints_directory == f"{base}/{job}"
    assert access.shared_state_directory == f"{base}/{job}/shared"
    assert access.task_owned_state_directory == f"{base}/{job}/taskowned"
    location = access.initialize_location_for_checkpoint(17)
    assert isinstance(location, CheckpointStorageLocation)
    assert location.checkpoint_directory == f"{base}/{job}/chk-17"
    assert location.shared_state_directory == f"{base}/{job}/shared"
    assert location.task_owned_state_directory == f"{base}/{job}/taskowned"
    assert location.location_reference.is_default
    assert access.supports_highly_available_storage()
    assert not access.has_default_savepoint_location()


def test_storage_location_mkdirs(fsroot: FsRoot) -> None:
    """T-FSA5: no job dir after construction; base locations create it; resolve creates nothing."""
    job = JobID.generate()
    access = _storage(fsroot).create_checkpoint_storage(job)
    job_dir = fsroot.sub("checkpoints", str(job))
    assert not fsroot.exists(job_dir)
    access.initialize_base_locations_for_checkpoint()
    assert fsroot.isdir(job_dir + "/shared")
    assert fsroot.isdir(job_dir + "/taskowned")
    assert not fsroot.exists(job_dir + "/chk-177")
    access.resolve_checkpoint_storage_location(177, DEFAULT)
    assert not fsroot.exists(job_dir + "/chk-177")
    access.initialize_location_for_checkpoint(177)
    assert fsroot.isdir(job_dir + "/chk-177")


def test_worker_path_sends_no_directory_requests(fsroot: FsRoot, spy_fs: Any) -> None:
    """S1, ACC9, ACC10: resolve, create streams, write, close: no mkdir/exists/info/ls."""
    storage = _storage(fsroot, 10)
    job = JobID.generate()
    coordinator = storage.create_checkpoint_storage(job)
    coordinator.initialize_base_locations_for_checkpoint()
    coordinator.initialize_location_for_checkpoint(3)
    spy = spy_fs(fsroot.scheme)
    worker = pickle.loads(pickle.dumps(storage)).create_checkpoint_storage(job)
    location = worker.resolve_checkpoint_storage_location(3, DEFAULT)
    handles = []
    for scope in (EXCLUSIVE, SHARED):
        for size in (5, 500):
            stream = location.create_checkpoint_state_output_stream(scope)
            stream.write(bytes(size))
            handles.append(stream.close_and_get_handle())
    discarded = location.create_checkpoint_state_output_stream(SHARED)
    discarded.write(bytes(100))
    discarded.close()
    task_owned = worker.create_task_owned_state_stream()
    task_owned.write(bytes(100))
    handles.append(task_owned.close_and_get_handle())
    forbidden = {
        "makedirs",
        "mkdir",
        "exists",
        "info",
        "ls",
        "isdir",
        "isfile",
        "find",
        "walk",
        "glob",
        "size",
    }
    assert not forbidden & set(spy.names()), spy.names()
    assert all(handle is not None for handle in handles)


def test_negative_checkpoint_id() -> None:
    """ACC6: a negative id -> ValueError 'Illegal negative checkpoint id: <n>.'"""
    access = FileSystemCheckpointStorage("memory:///never").create_checkpoint_storage(
        JobID.generate()
    )
    with pytest.raises(InvalidArgumentError, match=r"^Illegal negative checkpoint id: -1\.$"):
        access.initialize_location_for_checkpoint(-1)


def test_create_subdir_false(fsroot: FsRoot) -> None:
    """CFG3: without create_subdir, shared/, taskowned/ and chk-<n> sit directly in the base."""
    storage = _storage(fsroot, create_subdir=False)
    access = storage.create_checkpoint_storage(JobID.generate())
    access.initialize_base_locations_for_checkpoint()
    location = access.initialize_location_for_checkpoint(5)
    base = fsroot.sub("checkpoints")
    assert fsroot.isdir(base + "/shared")
    assert fsroot.isdir(base + "/taskowned")
    assert location.checkpoint_directory == parse_storage_path(base + "/chk-5").url


def test_directories_for_exclusive_and_shared_state(fsroot: FsRoot) -> None:
    """T-FSA4: exclusive state goes to chk-<n>, shared state to shared/ (flush_to_file)."""
    access = _storage(fsroot).create_checkpoint_storage(JobID.generate())
    access.initialize_base_locations_for_checkpoint()
    location = access.initialize_location_for_checkpoint(11)
    chk, shared = location.checkpoint_directory, access.shared_state_directory

    exclusive = location.create_checkpoint_state_output_stream(EXCLUSIVE)
    exclusive.write(b"x")
    exclusive.flush_to_file()
    assert len(fsroot.files(chk)) == 1
    assert fsroot.files(shared) == []
    exclusive.close()

    shared_stream = location.create_checkpoint_state_output_stream(SHARED)
    shared_stream.write(b"x")
    shared_stream.flush_to_file()
    assert len(fsroot.files(shared)) == 1
    shared_stream.close()


def test_task_owned_state_stream(fsroot: FsRoot) -> None:
    """T-FSA3 / TO2 / ACC10: taskowned/<uuid>, absolute handle, round trip; inline applies."""
    storage = FileSystemCheckpointStorage(fsroot.sub("checkpoints"), 10)
    access = storage.create_checkpoint_storage(JobID.generate())
    access.initialize_base_locations_for_checkpoint()
    stream = access.create_task_owned_state_stream()
    stream.write(b"Exactly 11!")
    handle = stream.close_and_get_handle()
    assert type(handle) is FileStateHandle
    assert parse_storage_path(handle.file_path).parent.name == "taskowned"
    assert _read(handle) == b"Exactly 11!"
    small = access.create_task_owned_state_stream()
    small.write(b"tiny")
    assert isinstance(small.close_and_get_handle(), ByteStreamStateHandle)


def test_resolve_checkpoint_storage_location(fsroot: FsRoot) -> None:
    """T-FSA6 / ACC9: default reference -> chk dir; a path reference -> that directory."""
    access = _storage(fsroot, 0).create_checkpoint_storage(JobID.generate())
    default = access.resolve_checkpoint_storage_location(4, DEFAULT)
    assert default.checkpoint_directory.endswith("/chk-4")
    target = fsroot.sub("elsewhere")
    fsroot.makedirs(target)
    reference = CheckpointStorageLocationReference(
        b"\x05\x5f\x3f\x18" + parse_storage_path(target).url.encode()
    )
    located = access.resolve_checkpoint_storage_location(4, reference)
    assert located.checkpoint_directory == parse_storage_path(target).url
    assert located.shared_state_directory == parse_storage_path(target).url
    stream = located.create_checkpoint_state_output_stream(SHARED)
    stream.write(b"x")
    handle = stream.close_and_get_handle()
    assert isinstance(handle, FileStateHandle)
    assert parse_storage_path(handle.file_path).parent.url == parse_storage_path(target).url
    with pytest.raises(MissingArgumentError):
        access.resolve_checkpoint_storage_location(4, None)  # type: ignore[arg-type]


def test_reference_with_foreign_scheme_is_refused(fsroot: FsRoot) -> None:
    """Security: a reference naming a scheme this storage may not open is an OSError."""
    access = _storage(fsroot).create_checkpoint_storage(JobID.generate())
    foreign = "s3://bucket/x" if fsroot.scheme != "s3" else "gs://bucket/x"
    reference = CheckpointStorageLocationReference(b"\x05\x5f\x3f\x18" + foreign.encode())
    with pytest.raises(OSError, match="not allowed"):
        access.resolve_checkpoint_storage_location(1, reference)


# --------------------------------------------------------------------------- metadata


def test_file_existence(fsroot: FsRoot) -> None:
    """T-MOS1: _metadata is invisible until finalize (like Flink's RecoverableWriter case)."""
    access = _storage(fsroot).create_checkpoint_storage(JobID.generate())
    location = access.initialize_location_for_checkpoint(1)
    target = location.metadata_file_path
    stream = location.create_metadata_output_stream()
    stream.write(b"meta")
    assert not fsroot.exists(target)
    completed = stream.close_and_finalize_checkpoint()
    assert fsroot.read(target) == b"meta"
    assert isinstance(completed, CompletedCheckpointStorageLocation)
    assert completed.external_pointer == location.checkpoint_directory
    assert completed.metadata_handle == FileStateHandle(target, 4)
    assert completed.metadata_handle.state_size == 4


def test_cleanup_when_closed(fsroot: FsRoot) -> None:
    """T-MOS2 / MD5: close() without finalize leaves nothing; finalize then fails."""
    location = _storage(fsroot).create_checkpoint_storage(JobID.generate())
    location = location.initialize_location_for_checkpoint(1)
    stream = location.create_metadata_output_stream()
    stream.write(b"meta")
    stream.close()
    stream.close()
    assert fsroot.files(location.checkpoint_directory) == []
    with pytest.raises(StreamClosedError, match="already been closed"):
        stream.close_and_finalize_checkpoint()
    with pytest.raises(StreamClosedError):
        stream.write(b"x")


def test_cleanup_when_commit_failed(fsroot: FsRoot, monkeypatch: pytest.MonkeyPatch) -> None:
    """T-MOS3: a failing publish makes finalize raise OSError and leaves no target."""
    from ckptstore.filesystem import metadata as metadata_module

    def failing(fs: Any, path: Any, data: bytes) -> None:
        raise OSError("no space left")

    location = _storage(fsroot).create_checkpoint_storage(JobID.generate())
    location = location.initialize_location_for_checkpoint(1)
    stream = location.create_metadata_output_stream()
    stream.write(b"meta")
    monkeypatch.setattr(metadata_module, "publish_exclusive", failing)
    with pytest.raises(CheckpointIOError, match="Could not flush and close"):
        stream.close_and_finalize_checkpoint()
    assert fsroot.files(location.checkpoint_directory) == []
    assert stream.closed


def test_empty_metadata_still_produces_file(fsroot: FsRoot) -> None:
    """T-CSOS1 (metadata variant) / MD3: an empty metadata stream still gives a file."""
    location = _storage(fsroot).create_checkpoint_storage(JobID.generate())
    location = location.initialize_location_for_checkpoint(1)
    completed = location.create_metadata_output_stream().close_and_finalize_checkpoint()
    assert fsroot.read(location.metadata_file_path) == b""
    assert completed.metadata_handle.state_size == 0


def test_metadata_write_and_read(fsroot: FsRoot) -> None:
    """T-CSOS2 (metadata variant): 1.69 MB of mixed writes round-trip (handle and raw)."""
    location = _storage(fsroot).create_checkpoint_storage(JobID.generate())
    location = location.initialize_location_for_checkpoint(1)
    stream = location.create_metadata_output_stream()
    chunks = [bytes([i % 251]) * (i * 37 % 9000 + 1) for i in range(380)]
    data = b"".join(chunks)
    for chunk in chunks:
        stream.write(chunk)
    assert stream.tell() == len(data)
    completed = stream.close_and_finalize_checkpoint()
    assert _read(completed.metadata_handle) == data
    assert fsroot.read(location.metadata_file_path) == data


def test_metadata_close_does_not_lock(fsroot: FsRoot, monkeypatch: pytest.MonkeyPatch) -> None:
    """T-CSOS5 (metadata variant): close() returns while finalize is blocked; finalize wins."""
    from ckptstore.filesystem import metadata as metadata_module

    location = _storage(fsroot).create_checkpoint_storage(JobID.generate())
    location = location.initialize_location_for_checkpoint(1)
    stream = location.create_metadata_output_stream()
    stream.write(b"m")
    entered, release = threading.Event(), threading.Event()
    real = metadata_module.publish_exclusive

    def blocking(fs: Any, path: Any, data: bytes) -> None:
        entered.set()
        release.wait(10)
        real(fs, path, data)

    monkeypatch.setattr(metadata_module, "publish_exclusive", blocking)
    result: list[Any] = []
    worker = threading.Thread(target=lambda: result.append(stream.close_and_finalize_checkpoint()))
    worker.start()
    assert entered.wait(5)
    stream.close()
    release.set()
    worker.join(5)
    assert result
    assert fsroot.read(location.metadata_file_path) == b"m"


def test_write_to_already_existing_checkpoint_fails(fsroot: FsRoot) -> None:
    """T-BASE4 / MD2: a second metadata stream on a finalized location fails; first kept."""
    access = _storage(fsroot).create_checkpoint_storage(JobID.generate())
    location = access.initialize_location_for_checkpoint(1)
    _finalize(location, b"first")
    with pytest.raises(FileExistsError):
        _finalize(location, b"second")
    with pytest.raises(MetadataExistsError):
        location.create_metadata_output_stream()
    assert fsroot.read(location.metadata_file_path) == b"first"


def test_exclusive_publish_on_object_store_path(memroot: FsRoot) -> None:
    """MD2: without the early check, the exclusive publish still refuses an existing target."""
    from ckptstore.filesystem.metadata import FsCheckpointMetadataOutputStream

    target = memroot.sub("chk-1", "_metadata")
    first = FsCheckpointMetadataOutputStream(target, check_existing=False)
    second = FsCheckpointMetadataOutputStream(target, check_existing=False)
    first.write(b"one")
    second.write(b"two")
    first.close_and_finalize_checkpoint()
    with pytest.raises(MetadataExistsError):
        second.close_and_finalize_checkpoint()
    assert memroot.read(target) == b"one"


# --------------------------------------------------------------------------- pointers


def test_pointer_path_resolution(fsroot: FsRoot) -> None:
    """T-BASE1 / PTR8: the _metadata file, the dir and dir + '/' resolve alike."""
    storage = _storage(fsroot)
    access = storage.create_checkpoint_storage(JobID.generate())
    location = access.initialize_location_for_checkpoint(7)
    data = bytes(range(256)) * 92 + bytes(134)  # 23,686 bytes as in Flink's test
    completed = _finalize(location, data)
    pointer = completed.external_pointer
    for form in (
        pointer,
        pointer + "/",
        pointer + "/_metadata",
        parse_storage_path(pointer).path if fsroot.name == "local" else pointer,
    ):
        resolved = access.resolve_checkpoint(form)
        assert resolved.external_pointer == pointer
        assert _read(resolved.metadata_handle) == data
        assert resolved.metadata_handle.state_size == len(data)


def test_failing_pointer_path_resolution(fsroot: FsRoot) -> None:
    """T-BASE2 / PTR2 / PTR5 / PTR10: None, '', garbage, a missing path."""
    access = _storage(fsroot).create_checkpoint_storage(JobID.generate())
    with pytest.raises(TypeError):
        access.resolve_checkpoint(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="empty checkpoint pointer"):
        access.resolve_checkpoint("")
    with pytest.raises(OSError):
        access.resolve_checkpoint("this-is_not/a#filepath.at.all")
    with pytest.raises(FileNotFoundError, match="Cannot find checkpoint or savepoint"):
        access.resolve_checkpoint(fsroot.sub("no", "such", "dir"))


def test_persist_multiple_metadata_only_checkpoints(fsroot: FsRoot) -> None:
    """T-BASE3: two jobs share one base and checkpoint id 177; each resolves the other's."""
    storage = _storage(fsroot)
    first = storage.create_checkpoint_storage(JobID.generate())
    second = storage.create_checkpoint_storage(JobID.generate())
    p1 = _finalize(first.initialize_location_for_checkpoint(177), b"one").external_pointer
    p2 = _finalize(second.initialize_location_for_checkpoint(177), b"two").external_pointer
    assert len(fsroot.raw.ls(fsroot.raw_path(fsroot.sub("checkpoints")))) == 2
    assert fsroot.exists(p1 + "/_metadata")
    assert fsroot.exists(p2 + "/_metadata")
    assert _read(second.resolve_checkpoint(p1).metadata_handle) == b"one"
    assert _read(first.resolve_checkpoint(p2).metadata_handle) == b"two"


def test_restore_through_fresh_storage(fsroot: FsRoot) -> None:
    """PTR9 / H6: a fresh storage resolves the pointer and rebases the relative handles."""
    storage = _storage(fsroot, 0)
    access = storage.create_checkpoint_storage(JobID.generate())
    access.initialize_base_locations_for_checkpoint()
    location = access.initialize_location_for_checkpoint(2)
    stream = location.create_checkpoint_state_output_stream(EXCLUSIVE)
    stream.write(b"exclusive state")
    handle = stream.close_and_get_handle()
    assert isinstance(handle, RelativeFileStateHandle)
    completed = _finalize(location)
    fresh = pickle.loads(pickle.dumps(storage))
    resolved = fresh.resolve_checkpoint(completed.external_pointer)
    rebased = resolved.resolve_handle(handle)
    assert rebased == handle
    assert _read(rebased) == b"exclusive state"
    inline = ByteStreamStateHandle("x", b"abc")
    assert resolved.resolve_handle(inline) is inline


@pytest.mark.parametrize("bad", ["..", ".", "", "a/b", "..\\x", "a\\b", "x\x00"])
def test_resolve_handle_guards_against_traversal(fsroot: FsRoot, bad: str) -> None:
    """Relocation guard: a relative path that is not one file name -> ValueError."""
    access = _storage(fsroot).create_checkpoint_storage(JobID.generate())
    completed = _finalize(access.initialize_location_for_checkpoint(1))

    class Crafted:
        state_size = 1
        file_path = "file:///etc/passwd"
        relative_path = bad

        def open_input_stream(self) -> Any:
            raise AssertionError("must not be read")

        def as_bytes_if_in_memory(self) -> None:
            return None

        def discard_state(self) -> None:
            raise AssertionError("must not be discarded")

    with pytest.raises(InvalidHandleError):
        completed.resolve_handle(Crafted())


# --------------------------------------------------------------------------- disposal


def test_dispose_storage_location_deletes_recursively(fsroot: FsRoot) -> None:
    """T-CCL1 / MD6: dispose removes the checkpoint dir with a nested tree; shared stays."""
    access = _storage(fsroot, 0).create_checkpoint_storage(JobID.generate())
    access.initialize_base_locations_for_checkpoint()
    location = access.initialize_location_for_checkpoint(9)
    shared = location.create_checkpoint_state_output_stream(SHARED)
    shared.write(b"shared")
    shared_handle = shared.close_and_get_handle()
    assert isinstance(shared_handle, FileStateHandle)
    fsroot.write(location.checkpoint_directory + "/nested/deeper/file", b"x")
    completed = _finalize(location)
    completed.dispose_storage_location()
    assert not fsroot.exists(location.checkpoint_directory)
    assert fsroot.exists(shared_handle.file_path)
    completed.dispose_storage_location()  # missing is fine


def test_dispose_on_failure(fsroot: FsRoot) -> None:
    """MD7 / ACC12: dispose_on_failure deletes the exclusive dir recursively; missing is fine."""
    access = _storage(fsroot, 0).create_checkpoint_storage(JobID.generate())
    access.initialize_base_locations_for_checkpoint()
    location = access.initialize_location_for_checkpoint(3)
    stream = location.create_checkpoint_state_output_stream(EXCLUSIVE)
    stream.write(b"partial")
    assert stream.close_and_get_handle() is not None
    location.dispose_on_failure()
    assert not fsroot.exists(location.checkpoint_directory)
    assert fsroot.isdir(access.shared_state_directory)
    location.dispose_on_failure()


def test_local_publish_never_overwrites(tmp_path: Any) -> None:
    """MD2 (local): temp file + os.link refuses an existing target and leaves no temp."""
    target = parse_storage_path(str(tmp_path / "_metadata"))
    fs = registry.get_filesystem("file")
    operations.publish_exclusive(fs, target, b"one")
    with pytest.raises(MetadataExistsError):
        operations.publish_exclusive(fs, target, b"two")
    assert (tmp_path / "_metadata").read_bytes() == b"one"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["_metadata"]
