"""JobManagerCheckpointStorage and its access (CS3, CC5, MEM1-MEM5, L5, L6, PTR10, T-MEM*)."""

from __future__ import annotations

import os
import pickle
import re
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import fsspec
import pytest

from ckptstore.api import (
    NON_ADDRESSABLE_POINTER,
    ByteStreamStateHandle,
    CheckpointedStateScope,
    CheckpointStorage,
    CheckpointStorageAccess,
    CheckpointStorageLocationReference,
    JobID,
    encode_path_as_reference,
)
from ckptstore.errors import (
    CheckpointNotFoundError,
    ConfigurationError,
    DuplicationNotSupportedError,
    InvalidArgumentError,
    InvalidHandleError,
    MetadataExistsError,
    MissingArgumentError,
    StateSizeExceededError,
    StreamClosedError,
    UnsupportedSchemeError,
)
from ckptstore.filesystem.handles import RelativeFileStateHandle
from ckptstore.filesystem.toolset import NotDuplicatingCheckpointStateToolset
from ckptstore.jobmanager.memory_streams import (
    MemCheckpointStreamFactory,
    MemoryCheckpointOutputStream,
)
from ckptstore.jobmanager.storage import (
    DEFAULT_MAX_STATE_SIZE,
    JobManagerCheckpointStorage,
    MemoryBackendCheckpointStorageAccess,
    NonPersistentMetadataCheckpointStorageLocation,
    PersistentMetadataCheckpointStorageLocation,
)

SAVEPOINT_NAME = re.compile(r"^savepoint-[0-9a-f]{6}-[0-9a-f]{12}$")


def _url_of(path: Path) -> str:
    return f"file://{path.as_posix()}"


@pytest.fixture
def job_id() -> JobID:
    return JobID.generate()


@pytest.fixture
def memory_root() -> Iterator[str]:
    """A fresh directory on fsspec's in-memory file system, removed afterwards."""
    root = f"/jm-test-{uuid.uuid4().hex}"
    fs = fsspec.filesystem("memory")
    yield f"memory://{root}"
    if fs.exists(root):
        fs.rm(root, recursive=True)


def _checkpoint(access: Any, checkpoint_id: int, state: bytes, metadata: bytes) -> Any:
    """Write one piece of state through the worker view and finalize the metadata."""
    location = access.initialize_location_for_checkpoint(checkpoint_id)
    factory = access.resolve_checkpoint_storage_location(checkpoint_id, location.location_reference)
    with factory.create_checkpoint_state_output_stream(CheckpointedStateScope.EXCLUSIVE) as out:
        out.write(state)
        handle = out.close_and_get_handle()
    assert isinstance(handle, ByteStreamStateHandle)
    assert handle.data == state
    stream = location.create_metadata_output_stream()
    stream.write(metadata)
    return stream.close_and_finalize_checkpoint()


# ----------------------------------------------------------------------------- construction


def test_default_max_state_size() -> None:
    """CS3, CC5: DEFAULT_MAX_STATE_SIZE is 5 MiB; None means the default."""
    assert DEFAULT_MAX_STATE_SIZE == 5 * 1024 * 1024 == 5242880
    assert JobManagerCheckpointStorage.DEFAULT_MAX_STATE_SIZE == DEFAULT_MAX_STATE_SIZE
    storage = JobManagerCheckpointStorage()
    assert storage.get_max_state_size() == DEFAULT_MAX_STATE_SIZE
    assert storage.get_checkpoint_path() is None
    assert storage.get_savepoint_path() is None
    assert JobManagerCheckpointStorage(None, None).get_max_state_size() == DEFAULT_MAX_STATE_SIZE


@pytest.mark.parametrize("bad", [0, -1, -(2**40)])
def test_non_positive_max_state_size(bad: int) -> None:
    """CS3: a maxStateSize of 0 or less raises 'maxStateSize must be > 0'."""
    with pytest.raises(ConfigurationError, match="maxStateSize must be > 0"):
        JobManagerCheckpointStorage(max_state_size=bad)


@pytest.mark.parametrize("bad", [True, 1.5, "17"])
def test_max_state_size_must_be_an_int(bad: Any) -> None:
    """CS3: booleans, floats and strings are not sizes."""
    with pytest.raises(InvalidArgumentError, match="max_state_size must be an integer"):
        JobManagerCheckpointStorage(max_state_size=bad)


def test_paths_are_canonical_urls(tmp_path: Path) -> None:
    """CC5: getters return the configured paths as canonical URLs."""
    storage = JobManagerCheckpointStorage(
        str(tmp_path / "ckpt"), 17, savepoint_path="memory://sp//x/"
    )
    assert storage.get_checkpoint_path() == f"file://{tmp_path.as_posix()}/ckpt"
    assert storage.get_savepoint_path() == "memory:///sp/x"
    assert storage.get_max_state_size() == 17


@pytest.mark.parametrize("bad", ["", 17])
def test_invalid_paths(bad: Any) -> None:
    """CS3: an empty or non-string path is an invalid argument."""
    with pytest.raises(InvalidArgumentError):
        JobManagerCheckpointStorage(bad)
    with pytest.raises(InvalidArgumentError):
        JobManagerCheckpointStorage(savepoint_path=bad)


def test_repr_is_flinks_and_hides_options() -> None:
    """CS3: toString is Flink's; no storage_options (credentials) appear."""
    storage = JobManagerCheckpointStorage(
        "s3://bucket/ckpt",
        1234,
        storage_options={"key": "AKIAEXAMPLE", "secret": "hunter2-secret"},
    )
    text = repr(storage)
    assert text == "JobManagerCheckpointStorage (checkpoints to JobManager) ( maxStateSize: 1234)"
    assert "hunter2" not in str(storage)


def test_pickles_to_configuration_only() -> None:
    """CS1, SER: the storage pickles small (< 1 KiB) and equal to itself."""
    storage = JobManagerCheckpointStorage(
        "s3://bucket/checkpoints",
        4096,
        savepoint_path="s3://bucket/savepoints",
        storage_options={"client_kwargs": {"endpoint_url": "http://127.0.0.1:9000"}},
    )
    blob = pickle.dumps(storage)
    assert len(blob) < 1024
    copy = pickle.loads(blob)
    assert copy == storage
    assert hash(copy) == hash(storage)
    assert copy.get_checkpoint_path() == "s3://bucket/checkpoints"


def test_equality_over_configuration(tmp_path: Path) -> None:
    """CS3: equality covers paths, max size and options."""
    base = str(tmp_path)
    assert JobManagerCheckpointStorage(base, 10) == JobManagerCheckpointStorage(base, 10)
    assert JobManagerCheckpointStorage(base, 10) != JobManagerCheckpointStorage(base, 11)
    assert JobManagerCheckpointStorage(base, 10) != JobManagerCheckpointStorage(None, 10)
    assert JobManagerCheckpointStorage(base, 10) != JobManagerCheckpointStorage(
        base, 10, savepoint_path=base
    )
    assert JobManagerCheckpointStorage() != object()


def test_is_a_checkpoint_storage(job_id: JobID) -> None:
    """CS1, CS2: the storage and its access satisfy the contract's protocols."""
    storage = JobManagerCheckpointStorage()
    assert isinstance(storage, CheckpointStorage)
    access = storage.create_checkpoint_storage(job_id)
    assert isinstance(access, MemoryBackendCheckpointStorageAccess)
    assert isinstance(access, CheckpointStorageAccess)


def test_access_registers_its_file_systems(job_id: JobID) -> None:
    """SER-4: the storage (also when unpickled) and its access register their options for
    the store and bucket of each path, so handles read in this process find them."""
    options = {"client_kwargs": {"endpoint_url": "http://127.0.0.1:1"}}
    storage = JobManagerCheckpointStorage(
        "s3://bucket/ckpt", savepoint_path="memory:///sp", storage_options=options
    )

    def registered(register: mock.Mock) -> list[tuple[str, Any]]:
        return sorted((path.url, opts) for path, opts in (c.args for c in register.call_args_list))

    with mock.patch("ckptstore.filesystem.base_access.register_path") as register:
        storage.create_checkpoint_storage(job_id)
    assert registered(register) == [
        ("memory:///sp", options),
        ("s3://bucket/ckpt", options),
    ]
    with mock.patch("ckptstore.jobmanager.storage.register_path") as register:
        pickle.loads(pickle.dumps(storage))
    assert registered(register) == [("memory:///sp", options), ("s3://bucket/ckpt", options)]


def test_create_checkpoint_storage_needs_a_job_id() -> None:
    """CS4/ACC1 analogue: a None job id raises MissingArgumentError naming jobId."""
    with pytest.raises(MissingArgumentError, match="jobId"):
        JobManagerCheckpointStorage().create_checkpoint_storage(None)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        JobManagerCheckpointStorage().create_checkpoint_storage("abc")  # type: ignore[arg-type]


def test_configure_fills_missing_paths_only(tmp_path: Path) -> None:
    """CS3 configure, CS5: application values win; config fills in what is missing."""
    app = JobManagerCheckpointStorage(None, 42, savepoint_path=str(tmp_path / "app-sp"))
    configured = app.configure(
        {
            "execution.checkpointing.dir": str(tmp_path / "cfg-ckpt"),
            "state.savepoints.dir": str(tmp_path / "cfg-sp"),
        }
    )
    assert configured.get_max_state_size() == 42
    assert configured.get_checkpoint_path() == f"file://{tmp_path.as_posix()}/cfg-ckpt"
    assert configured.get_savepoint_path() == f"file://{tmp_path.as_posix()}/app-sp"
    assert app.get_checkpoint_path() is None


# ----------------------------------------------------------------------------- T-MEM1..3


def test_parametrization_default(job_id: JobID) -> None:
    """T-MEM1: HA false, no default savepoint location, max size 5 MiB."""
    access = JobManagerCheckpointStorage().create_checkpoint_storage(job_id)
    assert not access.supports_highly_available_storage()
    assert not access.has_default_savepoint_location()
    assert access.get_default_savepoint_directory() is None
    assert access.get_checkpoints_directory() is None
    assert access.get_max_state_size() == DEFAULT_MAX_STATE_SIZE


def test_parametrization_directories(job_id: JobID, tmp_path: Path) -> None:
    """T-MEM2, MEM1, MEM2: HA true with a checkpoint dir; savepoint dir as configured."""
    checkpoints = str(tmp_path / "checkpoints")
    savepoints = str(tmp_path / "savepoints")
    access = JobManagerCheckpointStorage(
        checkpoints, savepoint_path=savepoints
    ).create_checkpoint_storage(job_id)
    assert access.supports_highly_available_storage()
    assert access.has_default_savepoint_location()
    assert access.get_default_savepoint_directory() == f"file://{tmp_path.as_posix()}/savepoints"
    assert access.get_checkpoints_directory() == (
        f"file://{tmp_path.as_posix()}/checkpoints/{job_id}"
    )


def test_parametrization_state_size(job_id: JobID) -> None:
    """T-MEM3: a max size of 17 is propagated to the access and its streams."""
    access = JobManagerCheckpointStorage(max_state_size=17).create_checkpoint_storage(job_id)
    assert access.get_max_state_size() == 17
    stream = access.create_task_owned_state_stream()
    assert isinstance(stream, MemoryCheckpointOutputStream)
    assert stream.max_size == 17
    factory = access.resolve_checkpoint_storage_location(
        1, CheckpointStorageLocationReference.default()
    )
    assert isinstance(factory, MemCheckpointStreamFactory)
    assert factory.max_state_size == 17


def test_access_rejects_non_positive_max_size(job_id: JobID) -> None:
    """MEM1: the access constructor requires maxStateSize > 0."""
    with pytest.raises(ConfigurationError, match="maxStateSize must be > 0"):
        MemoryBackendCheckpointStorageAccess(job_id, None, None, 0)


# ----------------------------------------------------------------------------- T-MEM4


def test_non_persistent_checkpoint_location(job_id: JobID) -> None:
    """T-MEM4, MEM3, L6, PTR10: ByteStreamStateHandle metadata; the pointer resolves nowhere."""
    storage = JobManagerCheckpointStorage()
    access = storage.create_checkpoint_storage(job_id)
    access.initialize_base_locations_for_checkpoint()
    completed = _checkpoint(access, 42, b"state", b"metadata bytes")
    assert completed.external_pointer == NON_ADDRESSABLE_POINTER
    assert isinstance(completed.metadata_handle, ByteStreamStateHandle)
    assert completed.metadata_handle.data == b"metadata bytes"
    completed.dispose_storage_location()  # does nothing, raises nothing
    with pytest.raises(FileNotFoundError):
        access.resolve_checkpoint(completed.external_pointer)
    with pytest.raises(CheckpointNotFoundError):
        storage.resolve_checkpoint(NON_ADDRESSABLE_POINTER)


def test_non_persistent_location_is_picklable(job_id: JobID) -> None:
    """MEM3: the completed in-memory location is a picklable value."""
    access = JobManagerCheckpointStorage().create_checkpoint_storage(job_id)
    completed = _checkpoint(access, 1, b"x", b"meta")
    copy = pickle.loads(pickle.dumps(completed))
    assert copy.metadata_handle.data == b"meta"
    assert copy.external_pointer == NON_ADDRESSABLE_POINTER


def test_pickles_naming_the_former_module_load(job_id: JobID) -> None:
    """SER, MEM3: the locations moved to ``ckptstore.jobmanager.locations``; a completed
    location pickled when its class lived in ``ckptstore.jobmanager.storage`` still loads."""
    access = JobManagerCheckpointStorage().create_checkpoint_storage(job_id)
    completed = _checkpoint(access, 1, b"x", b"meta")
    blob = pickle.dumps(completed, protocol=2)  # protocol 2 names a class in a text line
    now = b"ckptstore.jobmanager.locations\n"
    assert now in blob
    copy = pickle.loads(blob.replace(now, b"ckptstore.jobmanager.storage\n"))
    assert type(copy) is type(completed)
    assert copy.metadata_handle.data == b"meta"
    assert copy.external_pointer == NON_ADDRESSABLE_POINTER


def test_non_persistent_second_finalize_fails(job_id: JobID) -> None:
    """MEM3: a second finalize raises StreamClosedError ("Already closed")."""
    location = (
        JobManagerCheckpointStorage()
        .create_checkpoint_storage(job_id)
        .initialize_location_for_checkpoint(3)
    )
    assert isinstance(location, NonPersistentMetadataCheckpointStorageLocation)
    stream = location.create_metadata_output_stream()
    stream.write(b"abc")
    assert stream.tell() == 3
    stream.close_and_finalize_checkpoint()
    assert stream.closed
    with pytest.raises(StreamClosedError, match="Already closed"):
        stream.close_and_finalize_checkpoint()
    with pytest.raises(StreamClosedError):
        stream.write(b"more")
    stream.close()  # idempotent
    location.dispose_on_failure()  # nothing to delete


def test_non_persistent_metadata_close_discards(job_id: JobID) -> None:
    """MEM3, MD5: close() before finalize discards; finalize afterwards fails."""
    location = (
        JobManagerCheckpointStorage()
        .create_checkpoint_storage(job_id)
        .initialize_location_for_checkpoint(3)
    )
    with location.create_metadata_output_stream() as stream:
        stream.write(b"abc")
    with pytest.raises(StreamClosedError):
        stream.close_and_finalize_checkpoint()


def test_non_persistent_resolve_handle(job_id: JobID) -> None:
    """MEM3, H6: inline handles come back unchanged; relative handles have no directory."""
    access = JobManagerCheckpointStorage().create_checkpoint_storage(job_id)
    completed = _checkpoint(access, 1, b"x", b"meta")
    inline = ByteStreamStateHandle("name", b"data")
    assert completed.resolve_handle(inline) is inline
    relative = RelativeFileStateHandle("memory:///elsewhere/abc", 3, relative_path="abc")
    with pytest.raises(InvalidHandleError):
        completed.resolve_handle(relative)


# ----------------------------------------------------------------------------- T-MEM5


def test_location_reference(job_id: JobID, tmp_path: Path) -> None:
    """T-MEM5: checkpoints with and without a dir, and savepoints, use the default reference."""
    default = CheckpointStorageLocationReference.default()
    without_dir = JobManagerCheckpointStorage().create_checkpoint_storage(job_id)
    assert without_dir.initialize_location_for_checkpoint(1).location_reference is default
    with_dir = JobManagerCheckpointStorage(
        str(tmp_path / "ckpt"), savepoint_path=str(tmp_path / "sp")
    ).create_checkpoint_storage(job_id)
    assert with_dir.initialize_location_for_checkpoint(1).location_reference is default
    assert with_dir.initialize_location_for_savepoint(1).location_reference is default
    assert (
        with_dir.initialize_location_for_savepoint(2, str(tmp_path / "target")).location_reference
        is default
    )


# ----------------------------------------------------------------------------- T-MEM6


def test_task_owned_state_stream(job_id: JobID) -> None:
    """T-MEM6: the task-owned stream is a memory stream whose contents round-trip."""
    access = JobManagerCheckpointStorage().create_checkpoint_storage(job_id)
    stream = access.create_task_owned_state_stream()
    assert isinstance(stream, MemoryCheckpointOutputStream)
    stream.write(b"task-owned ")
    stream.write(bytearray(b"state"))
    handle = stream.close_and_get_handle()
    assert handle is not None
    assert handle.open_input_stream().read() == b"task-owned state"
    assert handle.as_bytes_if_in_memory() == b"task-owned state"


def test_task_owned_toolset_does_not_duplicate(job_id: JobID) -> None:
    """TO5, ACC11: the memory variant's toolset never duplicates."""
    access = JobManagerCheckpointStorage().create_checkpoint_storage(job_id)
    toolset = access.create_task_owned_checkpoint_state_toolset()
    assert isinstance(toolset, NotDuplicatingCheckpointStateToolset)
    handle = ByteStreamStateHandle("n", b"d")
    assert toolset.can_fast_duplicate(handle) is False
    with pytest.raises(
        DuplicationNotSupportedError, match=r"^The toolset does not support duplication$"
    ):
        toolset.duplicate([handle])
    with pytest.raises(OSError):
        toolset.duplicate([])


# ----------------------------------------------------------------------------- T-MEM7


def test_storage_location_mkdirs(job_id: JobID, tmp_path: Path) -> None:
    """T-MEM7, MEM2, MEM3: the job dir appears only at initialize_location_for_checkpoint."""
    base = tmp_path / "checkpoints"
    access = JobManagerCheckpointStorage(str(base)).create_checkpoint_storage(job_id)
    job_dir = base / str(job_id)
    assert not job_dir.exists()
    access.initialize_base_locations_for_checkpoint()
    assert not job_dir.exists()
    access.resolve_checkpoint_storage_location(177, CheckpointStorageLocationReference.default())
    assert not job_dir.exists()
    location = access.initialize_location_for_checkpoint(177)
    assert isinstance(location, PersistentMetadataCheckpointStorageLocation)
    assert (job_dir / "chk-177").is_dir()
    assert sorted(os.listdir(job_dir)) == ["chk-177"]  # no shared/ or taskowned/ (L6)


def test_negative_checkpoint_id(job_id: JobID, tmp_path: Path) -> None:
    """MEM3, ACC6: a negative id raises 'Illegal negative checkpoint id: <n>.'."""
    for storage in (JobManagerCheckpointStorage(), JobManagerCheckpointStorage(str(tmp_path))):
        access = storage.create_checkpoint_storage(job_id)
        with pytest.raises(InvalidArgumentError, match=r"^Illegal negative checkpoint id: -1\.$"):
            access.initialize_location_for_checkpoint(-1)
        with pytest.raises(InvalidArgumentError):
            access.initialize_location_for_checkpoint(True)  # type: ignore[arg-type]
    assert os.listdir(tmp_path) == []


def test_no_directory_requests_on_object_stores(job_id: JobID) -> None:
    """MEM3, S1, ACC6: on an object store the coordinator creates no directory.

    Its setup probes conditional writes (issue 9, ``ckptstore.stores.s3``) in the job's checkpoint
    directory, and that is all.
    """
    storage = JobManagerCheckpointStorage("s3://bucket/ckpt", savepoint_path="s3://bucket/sp")
    access = storage.create_checkpoint_storage(job_id)
    fake_fs = mock.Mock()
    with (
        mock.patch("ckptstore.jobmanager.access.filesystem_for", return_value=fake_fs),
        mock.patch("ckptstore.filesystem.base_access.filesystem_for", return_value=fake_fs),
        mock.patch("ckptstore.jobmanager.access.probe_conditional_writes") as probe,
    ):
        access.initialize_base_locations_for_checkpoint()
        location = access.initialize_location_for_checkpoint(5)
        savepoint = access.initialize_location_for_savepoint(5)
    assert fake_fs.mock_calls == []
    assert [call.args[1].url for call in probe.mock_calls] == [f"s3://bucket/ckpt/{job_id}"]
    assert isinstance(location, PersistentMetadataCheckpointStorageLocation)
    assert location.checkpoint_directory == f"s3://bucket/ckpt/{job_id}/chk-5"
    assert SAVEPOINT_NAME.match(savepoint.checkpoint_directory.rsplit("/", 1)[1])


# ----------------------------------------------------------------------------- persistent


def test_persistent_checkpoint_round_trip(job_id: JobID, tmp_path: Path) -> None:
    """MEM3, L6, PTR1: only <base>/<job>/chk-<n>/_metadata is written; the pointer resolves."""
    storage = JobManagerCheckpointStorage(str(tmp_path))
    access = storage.create_checkpoint_storage(job_id)
    access.initialize_base_locations_for_checkpoint()
    completed = _checkpoint(access, 7, b"inline state", b"the metadata")
    chk_dir = tmp_path / str(job_id) / "chk-7"
    assert sorted(os.listdir(chk_dir)) == ["_metadata"]
    assert (chk_dir / "_metadata").read_bytes() == b"the metadata"
    assert completed.external_pointer == f"file://{chk_dir.as_posix()}"
    for resolver in (storage, access, pickle.loads(pickle.dumps(storage))):
        resolved = resolver.resolve_checkpoint(completed.external_pointer)
        assert resolved.external_pointer == completed.external_pointer
        with resolved.metadata_handle.open_input_stream() as stream:
            assert stream.read() == b"the metadata"
    completed.dispose_storage_location()
    assert not chk_dir.exists()


def test_second_metadata_stream_fails(job_id: JobID, tmp_path: Path) -> None:
    """T-BASE4, MD2: a second metadata stream on a finalized location fails."""
    access = JobManagerCheckpointStorage(str(tmp_path)).create_checkpoint_storage(job_id)
    location = access.initialize_location_for_checkpoint(1)
    stream = location.create_metadata_output_stream()
    stream.write(b"first")
    stream.close_and_finalize_checkpoint()
    with pytest.raises(MetadataExistsError):
        location.create_metadata_output_stream()


def test_persistent_dispose_on_failure(job_id: JobID, tmp_path: Path) -> None:
    """MEM3, ACC12: dispose_on_failure deletes the chk dir recursively."""
    access = JobManagerCheckpointStorage(str(tmp_path)).create_checkpoint_storage(job_id)
    location = access.initialize_location_for_checkpoint(9)
    chk_dir = tmp_path / str(job_id) / "chk-9"
    (chk_dir / "leftover").write_bytes(b"x")
    location.dispose_on_failure()
    assert not chk_dir.exists()
    location.dispose_on_failure()  # already gone: fine


def test_persistent_checkpoint_on_memory_fs(job_id: JobID, memory_root: str) -> None:
    """MEM3, L6: the same layout on fsspec's memory file system."""
    storage = JobManagerCheckpointStorage(memory_root + "/ckpt")
    access = storage.create_checkpoint_storage(job_id)
    completed = _checkpoint(access, 3, b"s", b"meta on memory")
    assert completed.external_pointer == f"{memory_root}/ckpt/{job_id}/chk-3"
    fs = fsspec.filesystem("memory")
    root = memory_root.removeprefix("memory://")
    assert fs.cat_file(f"{root}/ckpt/{job_id}/chk-3/_metadata") == b"meta on memory"
    resolved = storage.resolve_checkpoint(completed.external_pointer + "/")
    assert resolved.metadata_handle.open_input_stream().read() == b"meta on memory"


def test_resolve_only_own_schemes(job_id: JobID, tmp_path: Path) -> None:
    """PTR4: pointers on schemes the storage was not configured for are refused."""
    storage = JobManagerCheckpointStorage(str(tmp_path))
    with pytest.raises(UnsupportedSchemeError, match="s3"):
        storage.resolve_checkpoint("s3://bucket/somewhere/chk-1")
    with pytest.raises(UnsupportedSchemeError):
        JobManagerCheckpointStorage(savepoint_path="memory://sp").resolve_checkpoint(
            f"file://{tmp_path.as_posix()}"
        )
    allowed = JobManagerCheckpointStorage(savepoint_path="memory://sp", allowed_schemes=["file"])
    with pytest.raises(CheckpointNotFoundError):
        allowed.resolve_checkpoint(f"file://{tmp_path.as_posix()}/missing")


# ----------------------------------------------------------------------------- savepoints


@pytest.mark.parametrize("where", ["local", "memory"])
def test_savepoint_default_location(
    job_id: JobID, tmp_path: Path, memory_root: str, where: str
) -> None:
    """CS3, L5, ACC7, T-BASE5: savepoints go to savepoint-<job6>-<12 hex>/_metadata only."""
    base = str(tmp_path / "sp") if where == "local" else memory_root + "/sp"
    storage = JobManagerCheckpointStorage(savepoint_path=base)
    access = storage.create_checkpoint_storage(job_id)
    location = access.initialize_location_for_savepoint(11)
    factory = access.resolve_checkpoint_storage_location(11, location.location_reference)
    out = factory.create_checkpoint_state_output_stream(CheckpointedStateScope.SHARED)
    out.write(b"savepoint state")
    handle = out.close_and_get_handle()
    assert isinstance(handle, ByteStreamStateHandle)  # state stays inline
    stream = location.create_metadata_output_stream()
    stream.write(b"savepoint metadata incl. " + handle.data)
    completed = stream.close_and_finalize_checkpoint()

    parent, name = completed.external_pointer.rsplit("/", 1)
    assert parent == storage.get_savepoint_path()
    assert SAVEPOINT_NAME.match(name)
    assert name.startswith(f"savepoint-{str(job_id)[:6]}-")
    fs, root = fsspec.core.url_to_fs(completed.external_pointer)
    assert [p.rsplit("/", 1)[1] for p in fs.find(root)] == ["_metadata"]
    resolved = storage.resolve_checkpoint(completed.external_pointer)
    assert (
        resolved.metadata_handle.open_input_stream().read()
        == b"savepoint metadata incl. savepoint state"
    )


def test_savepoint_target_wins(job_id: JobID, tmp_path: Path) -> None:
    """T-BASE5, ACC7: the target pointer wins over the default; the dir is its direct child."""
    access = JobManagerCheckpointStorage(
        savepoint_path=str(tmp_path / "default")
    ).create_checkpoint_storage(job_id)
    location = access.initialize_location_for_savepoint(1, str(tmp_path / "target"))
    assert Path(location.checkpoint_directory.removeprefix("file://")).parent == (
        tmp_path / "target"
    )
    assert not (tmp_path / "default").exists()
    assert len(os.listdir(tmp_path / "target")) == 1


def test_savepoint_target_scheme_must_be_allowed(job_id: JobID, tmp_path: Path) -> None:
    """PTR4, ACC7: a savepoint target on a scheme the storage may not open is refused."""
    access = JobManagerCheckpointStorage(str(tmp_path)).create_checkpoint_storage(job_id)
    with pytest.raises(UnsupportedSchemeError, match="allowed_schemes"):
        access.initialize_location_for_savepoint(1, "memory:///elsewhere")
    with pytest.raises(UnsupportedSchemeError, match="nosuchscheme"):  # as FsCheckpointStorage
        access.initialize_location_for_savepoint(1, "nosuchscheme://bucket/sp")
    allowed = JobManagerCheckpointStorage(allowed_schemes="file").create_checkpoint_storage(job_id)
    location = allowed.initialize_location_for_savepoint(1, tmp_path / "sp")  # type: ignore[arg-type]
    assert location.checkpoint_directory.startswith(_url_of(tmp_path / "sp") + "/savepoint-")


def test_path_like_and_hex_job_id(tmp_path: Path) -> None:
    """CC5: os.PathLike paths and a hex job id string are accepted, like the FS storage."""
    storage = JobManagerCheckpointStorage(tmp_path / "ckpt")  # type: ignore[arg-type]
    assert storage.get_checkpoint_path() == _url_of(tmp_path / "ckpt")
    job = JobID.generate()
    access = storage.create_checkpoint_storage(str(job))  # type: ignore[arg-type]
    assert access.job_id == job


def test_savepoint_without_any_location(job_id: JobID) -> None:
    """ACC7, T-BASE5: neither target nor default raises Flink's message."""
    access = JobManagerCheckpointStorage().create_checkpoint_storage(job_id)
    with pytest.raises(
        InvalidArgumentError,
        match=r"^No savepoint location given and no default location configured\.$",
    ):
        access.initialize_location_for_savepoint(1)


def test_savepoint_directories_are_fresh(job_id: JobID, tmp_path: Path) -> None:
    """ACC7: every savepoint gets its own new directory."""
    access = JobManagerCheckpointStorage(savepoint_path=str(tmp_path)).create_checkpoint_storage(
        job_id
    )
    dirs = {access.initialize_location_for_savepoint(i).checkpoint_directory for i in range(20)}
    assert len(dirs) == 20
    assert len(os.listdir(tmp_path)) == 20


def test_savepoint_is_relocatable(job_id: JobID, tmp_path: Path) -> None:
    """H6, P11: all state is inline, so a moved savepoint directory still resolves."""
    storage = JobManagerCheckpointStorage(savepoint_path=str(tmp_path / "sp"))
    access = storage.create_checkpoint_storage(job_id)
    location = access.initialize_location_for_savepoint(1)
    stream = location.create_metadata_output_stream()
    stream.write(b"self-contained")
    completed = stream.close_and_finalize_checkpoint()
    old = Path(completed.external_pointer.removeprefix("file://"))
    new = tmp_path / "sp" / "moved"
    shutil.move(str(old), str(new))
    resolved = storage.resolve_checkpoint(str(new))
    assert resolved.metadata_handle.open_input_stream().read() == b"self-contained"


def test_savepoint_mkdir_failure(job_id: JobID, tmp_path: Path) -> None:
    """ACC7: after 10 failed attempts the error names the base directory."""
    access = JobManagerCheckpointStorage(savepoint_path=str(tmp_path)).create_checkpoint_storage(
        job_id
    )
    with (
        mock.patch(
            "ckptstore.filesystem.base_access.make_directory_exclusive", return_value=False
        ) as mkdir,
        pytest.raises(OSError, match="Failed to create savepoint directory at"),
    ):
        access.initialize_location_for_savepoint(1)
    assert mkdir.call_count == 10


# ----------------------------------------------------------------------------- worker view


def test_worker_view_ignores_reference(job_id: JobID, tmp_path: Path) -> None:
    """ACC9 (memory variant): any reference gives in-memory streams; nothing is created."""
    access = JobManagerCheckpointStorage(str(tmp_path)).create_checkpoint_storage(job_id)
    for reference in (
        CheckpointStorageLocationReference.default(),
        encode_path_as_reference(f"file://{tmp_path.as_posix()}/elsewhere"),
    ):
        factory = access.resolve_checkpoint_storage_location(5, reference)
        assert isinstance(factory, MemCheckpointStreamFactory)
    assert os.listdir(tmp_path) == []
    with pytest.raises(MissingArgumentError):
        access.resolve_checkpoint_storage_location(5, None)  # type: ignore[arg-type]


def test_factory_cannot_duplicate(job_id: JobID) -> None:
    """S17: without toolsets, can_fast_duplicate is False and duplicate raises Flink's IAE."""
    factory = (
        JobManagerCheckpointStorage()
        .create_checkpoint_storage(job_id)
        .resolve_checkpoint_storage_location(1, CheckpointStorageLocationReference.default())
    )
    handle = ByteStreamStateHandle("n", b"d")
    for scope in CheckpointedStateScope:
        assert factory.can_fast_duplicate(handle, scope) is False
        with pytest.raises(
            InvalidArgumentError, match=r"^The underlying FS does not support duplication\.$"
        ):
            factory.duplicate([handle], scope)
    with pytest.raises(InvalidArgumentError, match="Unknown state scope"):
        factory.create_checkpoint_state_output_stream("exclusive")  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- memory stream


def test_memory_stream_round_trip() -> None:
    """MEM4, MemoryCheckpointOutputStreamTest.testStateStream: bytes round-trip inline."""
    payload = os.urandom(5000)
    stream = MemoryCheckpointOutputStream(DEFAULT_MAX_STATE_SIZE)
    for i in range(0, len(payload), 333):
        stream.write(payload[i : i + 333])
    assert stream.tell() == len(payload)
    stream.flush()
    stream.sync()
    handle = stream.close_and_get_handle()
    assert isinstance(handle, ByteStreamStateHandle)
    assert handle.state_size == len(payload)
    assert handle.open_input_stream().read() == payload
    uuid.UUID(handle.handle_name)  # a plain UUID string (H4)
    handle.discard_state()


def test_memory_stream_oversized_state() -> None:
    """MEM5, MemoryCheckpointOutputStreamTest.testOversizedState: 11 bytes over a max of 10."""
    stream = MemoryCheckpointOutputStream(10)
    stream.write(b"x" * 11)
    with pytest.raises(StateSizeExceededError) as info:
        stream.close_and_get_handle()
    assert str(info.value) == (
        "Size of the state is larger than the maximum permitted memory-backed state. "
        "Size=11 , maxSize=10 . Consider using a different state backend, like the File "
        "System State backend."
    )
    assert isinstance(info.value, OSError)
    assert stream.closed


def test_memory_stream_exactly_max_passes() -> None:
    """MEM5: the check is strict: exactly max_size bytes pass."""
    stream = MemoryCheckpointOutputStream(10)
    stream.write(b"0123456789")
    handle = stream.close_and_get_handle()
    assert handle is not None
    assert handle.state_size == 10


def test_memory_stream_limit_through_factory(job_id: JobID) -> None:
    """MEM5, P10: the default 5 MiB limit applies to state written through the storage."""
    factory = (
        JobManagerCheckpointStorage()
        .create_checkpoint_storage(job_id)
        .resolve_checkpoint_storage_location(1, CheckpointStorageLocationReference.default())
    )
    stream = factory.create_checkpoint_state_output_stream(CheckpointedStateScope.EXCLUSIVE)
    stream.write(b"\0" * (DEFAULT_MAX_STATE_SIZE + 1))
    with pytest.raises(OSError, match=rf"Size={DEFAULT_MAX_STATE_SIZE + 1} , maxSize=5242880 \."):
        stream.close_and_get_handle()


def test_memory_stream_nothing_written() -> None:
    """MEM4, S12: no bytes (also after an empty write) gives None."""
    stream = MemoryCheckpointOutputStream(10)
    assert stream.write(b"") == 0
    assert stream.close_and_get_handle() is None


def test_memory_stream_use_after_close() -> None:
    """S14, MEM4: write/handle after close or after a handle raise StreamClosedError."""
    stream = MemoryCheckpointOutputStream(10)
    stream.write(b"abc")
    stream.close()
    stream.close()  # idempotent
    assert stream.closed
    with pytest.raises(StreamClosedError):
        stream.write(b"x")
    with pytest.raises(StreamClosedError):
        stream.close_and_get_handle()
    with pytest.raises(ValueError):
        stream.write(b"x")

    taken = MemoryCheckpointOutputStream(10)
    taken.write(b"abc")
    assert taken.close_and_get_handle() is not None
    with pytest.raises(StreamClosedError, match="already been closed"):
        taken.close_and_get_handle()
    taken.close()  # after a handle: does nothing


def test_memory_stream_context_manager_discards() -> None:
    """MEM4: leaving the with-block closes the stream."""
    with MemoryCheckpointOutputStream(10) as stream:
        stream.write(b"abc")
    assert stream.closed
    with pytest.raises(StreamClosedError):
        stream.close_and_get_handle()


@pytest.mark.parametrize("bad", ["text", 17, None])
def test_memory_stream_rejects_non_bytes(bad: Any) -> None:
    """MEM4: only bytes-like objects can be written."""
    stream = MemoryCheckpointOutputStream(10)
    with pytest.raises((InvalidArgumentError, MissingArgumentError)):
        stream.write(bad)


def test_storage_without_paths_uses_the_local_file_system(tmp_path):
    """CS3/ACC7: with no paths configured, savepoints to a local target work and resolve.

    The scheme allow-list defaults to the local file system (Flink's default file system);
    any other scheme still needs allowed_schemes.
    """
    from ckptstore import JobManagerCheckpointStorage
    from ckptstore.api import JobID
    from ckptstore.errors import UnsupportedSchemeError

    storage = JobManagerCheckpointStorage()
    access = storage.create_checkpoint_storage(JobID.generate())
    location = access.initialize_location_for_savepoint(3, tmp_path.as_uri())
    with location.create_metadata_output_stream() as out:
        out.write(b"savepoint metadata")
        completed = out.close_and_finalize_checkpoint()
    resolved = storage.resolve_checkpoint(completed.external_pointer)
    with resolved.metadata_handle.open_input_stream() as stream:
        assert stream.read() == b"savepoint metadata"
    with pytest.raises(UnsupportedSchemeError):
        storage.resolve_checkpoint("s3://bucket/savepoint-abcdef-0123456789ab")
