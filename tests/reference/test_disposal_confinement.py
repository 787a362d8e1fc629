"""Hostile pointers, references and handles: normalisation, confined disposal, no overwrites.

Issue 10, cases 3 and 4: ``.../chk-1/../chk-1`` resolved and kept ``..`` in the pointer; a
pointer to any file resolved as a metadata file, and disposing that location deleted the
file's whole directory, siblings included; duplicating two handles with the same file name
into one place overwrote the first on S3 and memory.
"""

from __future__ import annotations

from typing import Any

import pytest

from ckptstore import FileSystemCheckpointStorage, JobManagerCheckpointStorage
from ckptstore.api import (
    CheckpointedStateScope,
    JobID,
    encode_path_as_reference,
)
from ckptstore.errors import (
    CheckpointStorageError,
    DisposalRefusedError,
    InvalidPathError,
    InvalidPointerError,
)
from ckptstore.filesystem.handles import FileStateHandle, RelativeFileStateHandle
from ckptstore.filesystem.layout import (
    is_checkpoint_dir_name,
    is_savepoint_dir_name,
    is_staging_file_name,
    is_state_file_name,
    require_disposable,
)
from ckptstore.filesystem.metadata import FsCompletedCheckpointStorageLocation
from ckptstore.filesystem.toolset import FsCheckpointStateToolset
from ckptstore.paths import StoragePath, parse_storage_path
from ckptstore.stores.operations import delete_file, delete_tree
from ckptstore.stores.registry import filesystem_for, register_filesystem, register_path
from tests.reference._fsroot import FsRoot
from tests.reference._moto import S3Root

EXCLUSIVE = CheckpointedStateScope.EXCLUSIVE
SHARED = CheckpointedStateScope.SHARED


def _read(handle: Any) -> bytes:
    with handle.open_input_stream() as stream:
        return bytes(stream.read())


def _checkpoint(root: FsRoot, checkpoint_id: int = 1) -> tuple[Any, Any]:
    storage = FileSystemCheckpointStorage(root.sub("ckpt"), 0, savepoint_path=root.sub("sp"))
    access = storage.create_checkpoint_storage(JobID.generate())
    access.initialize_base_locations_for_checkpoint()
    location = access.initialize_location_for_checkpoint(checkpoint_id)
    stream = location.create_checkpoint_state_output_stream(EXCLUSIVE)
    stream.write(b"state" * 10)
    assert stream.close_and_get_handle() is not None
    with location.create_metadata_output_stream() as out:
        out.write(b"metadata")
        completed = out.close_and_finalize_checkpoint()
    return storage, completed


# --------------------------------------------------------------------------- normalisation


def test_dot_segments_are_resolved_and_never_kept(fsroot: FsRoot) -> None:
    """Flink's Path normalises (URI.normalize): the resolved pointer has no '.' or '..'."""
    storage, completed = _checkpoint(fsroot)
    pointer = completed.external_pointer
    name = pointer.rsplit("/", 1)[1]
    for spelling in (
        f"{pointer}/../{name}",
        f"{pointer}/./",
        f"{pointer}/.",
        f"{pointer}/../{name}/_metadata",
        f"{pointer}/x/y/../../_metadata",
    ):
        resolved = storage.resolve_checkpoint(spelling)
        assert resolved.external_pointer == pointer, spelling
        assert "/." not in resolved.metadata_handle.file_path


@pytest.mark.parametrize(
    "pointer",
    [
        "/..",
        "/a/../../etc",
        "file:///../../etc/passwd",
        "memory:///../x",
        "s3://bucket/../other/chk-1",
        "s3://../chk-1",
        "s3://bad bucket/chk-1",
        "s3://user:secret@bucket/chk-1",
        "/tmp/a\x00b",
        "/tmp/\nforged log line",
        "\udcff",
        "/" + "x" * 5000,
    ],
)
def test_pointers_that_name_no_location_safely_fail_before_io(pointer: str) -> None:
    """PTR3: OSError (InvalidPointerError) before any file system is touched."""
    storage = FileSystemCheckpointStorage("memory:///confine", allowed_schemes=["s3", "file"])
    with pytest.raises(InvalidPointerError) as caught:
        storage.resolve_checkpoint(pointer)
    assert isinstance(caught.value, OSError)
    assert "secret" not in str(caught.value)


def test_handle_paths_are_normalised(fsroot: FsRoot) -> None:
    handle = FileStateHandle(fsroot.sub("a", "..", "b", ".", "f"), 3)
    assert handle.file_path == parse_storage_path(fsroot.sub("b", "f")).url
    assert handle == FileStateHandle(fsroot.sub("b", "f"), 3)


# --------------------------------------------------------------------------- disposal


def test_a_pointer_to_any_file_resolves_but_disposing_it_deletes_nothing(fsroot: FsRoot) -> None:
    """PTR7 stays (any file resolves), but its directory is no layout directory: refused."""
    storage, _ = _checkpoint(fsroot)
    reports = fsroot.sub("data", "reports")
    for name, data in (("summary.csv", b"a,b"), ("other.csv", b"c,d")):
        fsroot.write(f"{reports}/{name}", data)
    before = fsroot.files()
    location = storage.resolve_checkpoint(f"{reports}/summary.csv")
    assert _read(location.metadata_handle) == b"a,b"
    with pytest.raises(DisposalRefusedError) as caught:
        location.dispose_storage_location()
    assert isinstance(caught.value, PermissionError)
    assert isinstance(caught.value, OSError)
    assert "Nothing was deleted" in str(caught.value)
    assert fsroot.files() == before


def test_a_metadata_file_in_a_foreign_directory_is_not_disposed(fsroot: FsRoot) -> None:
    """A '_metadata' dropped into /data/reports is still no checkpoint directory."""
    storage, _ = _checkpoint(fsroot)
    reports = fsroot.sub("data", "reports")
    fsroot.write(f"{reports}/_metadata", b"x")
    fsroot.write(f"{reports}/precious", b"y")
    before = fsroot.files()
    with pytest.raises(DisposalRefusedError):
        storage.resolve_checkpoint(reports).dispose_storage_location()
    assert fsroot.files() == before


def test_layout_directories_are_still_disposed(fsroot: FsRoot) -> None:
    """DIS-2 unchanged: chk-<n> (also resolved through any spelling) goes, recursively."""
    storage, completed = _checkpoint(fsroot)
    fsroot.write(completed.external_pointer + "/nested/file", b"x")
    resolved = storage.resolve_checkpoint(completed.external_pointer + "/../chk-1/")
    resolved.dispose_storage_location()
    assert not fsroot.exists(completed.external_pointer)
    resolved.dispose_storage_location()  # gone: fine


def test_hostile_reference_location_refuses_dispose_on_failure(fsroot: FsRoot) -> None:
    """A worker location from a reference to any directory may write new files there (ACC9),
    but dispose_on_failure deletes only a savepoint directory."""
    victim = fsroot.sub("home", "user")
    fsroot.write(f"{victim}/thesis.tex", b"years of work")
    fsroot.makedirs(fsroot.sub("ckpt"))
    access = FileSystemCheckpointStorage(fsroot.sub("ckpt")).create_checkpoint_storage(
        JobID.generate()
    )
    location = access.resolve_checkpoint_storage_location(1, encode_path_as_reference(victim))
    before = fsroot.files()
    with pytest.raises(DisposalRefusedError):
        location.dispose_on_failure()
    assert fsroot.files() == before
    savepoint = access.initialize_location_for_savepoint(2, fsroot.sub("targets"))
    worker = access.resolve_checkpoint_storage_location(2, savepoint.location_reference)
    worker.dispose_on_failure()  # a savepoint directory: allowed
    assert not fsroot.exists(savepoint.checkpoint_directory)


def test_hostile_completed_location_refuses(fsroot: FsRoot) -> None:
    """A completed location built (or unpickled) with a foreign directory deletes nothing."""
    fsroot.write(fsroot.sub("etc", "passwd"), b"root")
    fake = FsCompletedCheckpointStorageLocation(
        fsroot.sub("etc"),
        FileStateHandle(fsroot.sub("ckpt", "j", "chk-1", "_metadata"), 1),
        fsroot.sub("ckpt", "j", "chk-1"),
    )
    with pytest.raises(DisposalRefusedError):
        fake.dispose_storage_location()
    assert fsroot.exists(fsroot.sub("etc", "passwd"))


def test_jobmanager_locations_are_confined_too(fsroot: FsRoot) -> None:
    storage = JobManagerCheckpointStorage(fsroot.sub("ckpt"), savepoint_path=fsroot.sub("sp"))
    access = storage.create_checkpoint_storage(JobID.generate())
    location = access.initialize_location_for_checkpoint(4)
    with location.create_metadata_output_stream() as out:
        out.write(b"m")
        completed = out.close_and_finalize_checkpoint()
    fsroot.write(fsroot.sub("loose", "file"), b"z")
    with pytest.raises(DisposalRefusedError):
        storage.resolve_checkpoint(fsroot.sub("loose", "file")).dispose_storage_location()
    assert fsroot.exists(fsroot.sub("loose", "file"))
    completed.dispose_storage_location()
    assert not fsroot.exists(location.checkpoint_directory)


# --------------------------------------------------------------------------- client syntax


def _victim(root: Any) -> list[str]:
    """Someone else's files in ``<root>/victim`` (with a chk-5 of its own), written raw."""
    for name in ("thesis.tex", "chk-5/_metadata", "chk-5/state"):
        root.write(root.sub("victim", *name.split("/")), b"not yours")
    return list(root.files())


@pytest.mark.parametrize("spelling", ["victim?versionId=", "vic*", "vi[c]tim", "victim::x"])
def test_directories_the_client_would_read_as_others_are_refused(
    fsroot: FsRoot, spelling: str
) -> None:
    """DIS-7: as checkpoint directory, savepoint target or pointer, refused before any I/O."""
    _victim(fsroot)
    storage, _ = _checkpoint(fsroot)
    before = fsroot.files()
    hostile = fsroot.sub(spelling)
    with pytest.raises(InvalidPathError):
        FileSystemCheckpointStorage(hostile)
    with pytest.raises(InvalidPathError):
        JobManagerCheckpointStorage(hostile)
    access = storage.create_checkpoint_storage(JobID.generate())
    with pytest.raises(InvalidPathError):
        access.initialize_location_for_savepoint(2, hostile)
    for pointer in (hostile, f"{hostile}/chk-5", f"{hostile}/chk-5/_metadata"):
        with pytest.raises(InvalidPointerError):
            storage.resolve_checkpoint(pointer)
    assert fsroot.files() == before


@pytest.mark.parametrize("spelling", ["*/chk-5", "vic?im/chk-5", "[v]ictim/chk-5"])
def test_deletion_never_expands_a_pattern(fsroot: FsRoot, spelling: str) -> None:
    """DIS-7 at the deletion itself: a path made by another route than parsing (a listed
    name) is never handed to a glob-expanding rm; nothing is deleted."""
    before = _victim(fsroot)
    target = parse_storage_path(fsroot.url).child(spelling)
    fs = filesystem_for(target, register_path(target))
    with pytest.raises(DisposalRefusedError, match="glob pattern"):
        delete_tree(fs, target)
    with pytest.raises(DisposalRefusedError):
        delete_file(fs, target.child("state"))
    assert fsroot.files() == before


def test_s3_keys_s3fs_would_cut_are_never_deleted(s3: S3Root) -> None:
    """DIS-7 on S3: s3fs reads 'victim?versionId=/chk-5' as the key 'victim'. Refused as a
    pointer and a savepoint target before any request, and by the deletion itself."""
    for key in ("victim", "victim/thesis.tex", "victim/chk-5/_metadata"):
        s3.raw.pipe_file(parse_storage_path(s3.sub(*key.split("/"))).path, b"not yours")
    before = s3.keys()
    storage = FileSystemCheckpointStorage(s3.sub("ckpt"), storage_options=s3.storage_options)
    access = storage.create_checkpoint_storage(JobID.generate())
    with s3.record() as rec:
        with pytest.raises(InvalidPointerError):
            storage.resolve_checkpoint(s3.sub("victim?versionId=", "chk-5"))
        with pytest.raises(InvalidPathError):
            access.initialize_location_for_savepoint(1, s3.sub("victim?versionId="))
    assert rec.operations() == {}, rec.summary()
    token = register_filesystem("s3", s3.storage_options, authorities=[s3.backend.bucket])
    for spelling in ("victim?versionId=/chk-5", "victim?versionId=x"):
        target = StoragePath("s3", f"{parse_storage_path(s3.url).path}/{spelling}")
        fs = filesystem_for(target, token)
        with pytest.raises(DisposalRefusedError, match="victim"):
            delete_tree(fs, target)
        with pytest.raises(DisposalRefusedError):
            delete_file(fs, target)
    assert s3.keys() == before


def test_layout_names() -> None:
    assert is_checkpoint_dir_name("chk-0")
    assert is_checkpoint_dir_name("chk-17")
    assert not is_checkpoint_dir_name("chk-")
    assert not is_checkpoint_dir_name("chk-1a")
    assert not is_checkpoint_dir_name("chk-1/..")
    assert not is_checkpoint_dir_name("CHK-1")
    assert is_savepoint_dir_name("savepoint-1b080b-0a3f12cd45ef")
    assert not is_savepoint_dir_name("savepoint-1b080b-0a3f")
    assert not is_savepoint_dir_name("savepoints")
    assert is_state_file_name("3f0f7a9e-0b1c-4d2e-8f3a-1234567890ab")
    assert not is_state_file_name("_metadata")
    assert is_staging_file_name("._metadata." + "a" * 32 + ".inprogress")
    assert not is_staging_file_name("._metadata.x.inprogress")
    for url in ("/", "s3://bucket", "/home/user", "/ckpt/shared", "/ckpt/taskowned"):
        with pytest.raises(DisposalRefusedError):
            require_disposable(parse_storage_path(url), "test")


def test_discard_never_deletes_a_directory(fsroot: FsRoot) -> None:
    """A handle pointing at a directory: discard fails (OSError) or does nothing; the
    directory and its files stay."""
    directory = fsroot.sub("dir")
    fsroot.write(f"{directory}/keep", b"k")
    handle = FileStateHandle(directory, 1)
    error: BaseException | None = None
    try:
        handle.discard_state()
    except OSError as caught:
        error = caught
    assert error is None or isinstance(error, CheckpointStorageError)
    assert fsroot.exists(f"{directory}/keep")


# --------------------------------------------------------------------------- duplication


def _two_sources_named_alike(root: FsRoot) -> list[Any]:
    token = register_filesystem(root.scheme)
    handles = []
    for folder, data in (("one", b"first" * 3), ("two", b"second" * 3)):
        url = root.sub("restored", folder, "same-name")
        root.write(url, data)
        handles.append(FileStateHandle(url, len(data), fs_token=token))
    return handles


def test_duplicating_files_with_one_name_never_overwrites(fsroot: FsRoot) -> None:
    sources = _two_sources_named_alike(fsroot)
    target = fsroot.sub("target")
    fsroot.makedirs(target)
    toolset = FsCheckpointStateToolset(
        parse_storage_path(target), fs_token=register_filesystem(fsroot.scheme)
    )
    copies = toolset.duplicate(sources)
    assert len({c.file_path for c in copies}) == 2  # type: ignore[attr-defined]
    assert [_read(c) for c in copies] == [_read(s) for s in sources]
    again = toolset.duplicate(sources)  # a second batch into the same place
    assert [_read(c) for c in again] == [_read(s) for s in sources]
    assert [_read(c) for c in copies] == [_read(s) for s in sources]
    assert len(fsroot.files(target)) == 4


def test_duplicating_through_a_factory_and_a_relative_handle(fsroot: FsRoot) -> None:
    storage = FileSystemCheckpointStorage(fsroot.sub("ckpt"), 0)
    access = storage.create_checkpoint_storage(JobID.generate())
    access.initialize_base_locations_for_checkpoint()
    location = access.initialize_location_for_checkpoint(2)
    sources = _two_sources_named_alike(fsroot)
    relative = RelativeFileStateHandle(
        sources[0].file_path, sources[0].state_size, relative_path="same-name"
    )
    for scope in (EXCLUSIVE, SHARED):
        copies = location.duplicate([relative, sources[1]], scope)
        assert copies[0].relative_path == copies[0].file_path.rsplit("/", 1)[1]  # type: ignore[attr-defined]
        assert [_read(c) for c in copies] == [_read(s) for s in sources]


def test_a_failed_batch_leaves_no_copy(fsroot: FsRoot) -> None:
    sources = _two_sources_named_alike(fsroot)
    missing = FileStateHandle(fsroot.sub("restored", "gone"), 3)
    target = fsroot.sub("target")
    fsroot.makedirs(target)
    toolset = FsCheckpointStateToolset(parse_storage_path(target))
    with pytest.raises(FileNotFoundError) as caught:
        toolset.duplicate([*sources, missing])
    assert isinstance(caught.value, CheckpointStorageError)
    assert fsroot.files(target) == []


def test_duplicating_on_s3_never_overwrites(s3: S3Root) -> None:
    """On S3 CopyObject overwrites: fresh names are the guarantee; one CopyObject each."""
    storage = FileSystemCheckpointStorage(s3.sub("ckpt"), 0, storage_options=s3.storage_options)
    token = register_filesystem("s3", s3.storage_options, authorities=[s3.backend.bucket])
    sources = []
    for folder, data in (("one", b"first"), ("two", b"second")):
        url = s3.sub("restored", folder, "same-name")
        s3.raw.pipe_file(parse_storage_path(url).path, data)
        sources.append(FileStateHandle(url, len(data), fs_token=token))
    access = storage.create_checkpoint_storage(JobID.generate())
    toolset = access.create_task_owned_checkpoint_state_toolset()
    with s3.record() as rec:
        copies = toolset.duplicate(sources)
    assert rec.operations() == {"CopyObject": 2}, rec.summary()
    assert [s3.read(c.file_path) for c in copies] == [b"first", b"second"]  # type: ignore[attr-defined]
