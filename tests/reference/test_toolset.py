"""Task-owned toolset and factory duplication (TO4, TO5, S17; Flink's T-TS*, T-FSA7)."""

from __future__ import annotations

from typing import Any

import pytest

from ckptstore import FileStateHandle, FileSystemCheckpointStorage, RelativeFileStateHandle
from ckptstore.api import (
    ByteStreamStateHandle,
    CheckpointedStateScope,
    CheckpointStateToolset,
    JobID,
)
from ckptstore.errors import DuplicationNotSupportedError, InvalidHandleError
from ckptstore.filesystem.layout import is_state_file_name
from ckptstore.filesystem.toolset import (
    FsCheckpointStateToolset,
    NotDuplicatingCheckpointStateToolset,
)
from ckptstore.paths import parse_storage_path
from ckptstore.stores.registry import register_filesystem
from tests.reference._fsroot import FsRoot


def _read(handle: Any) -> bytes:
    with handle.open_input_stream() as stream:
        return bytes(stream.read())


def _toolset(root: FsRoot) -> FsCheckpointStateToolset:
    directory = root.sub("toolset")
    root.makedirs(directory)
    return FsCheckpointStateToolset(
        parse_storage_path(directory), fs_token=register_filesystem(root.scheme)
    )


def test_cannot_duplicate_non_file_handle(fsroot: FsRoot) -> None:
    """T-TS1: inline handles cannot be fast-duplicated; duplicate() refuses them."""
    toolset = _toolset(fsroot)
    inline = ByteStreamStateHandle("name", b"abc")
    assert not toolset.can_fast_duplicate(inline)
    with pytest.raises(InvalidHandleError, match="only FileStateHandles"):
        toolset.duplicate([inline])


def test_can_duplicate(fsroot: FsRoot) -> None:
    """T-TS2: a file in a different directory can be duplicated."""
    url = fsroot.sub("elsewhere", "f")
    fsroot.write(url, b"abc")
    assert _toolset(fsroot).can_fast_duplicate(FileStateHandle(url, 3))


def test_cannot_duplicate_into_same_directory(fsroot: FsRoot) -> None:
    """T-TS3: a file already in the toolset's directory cannot be duplicated."""
    toolset = _toolset(fsroot)
    url = fsroot.sub("toolset", "f")
    fsroot.write(url, b"abc")
    assert not toolset.can_fast_duplicate(FileStateHandle(url, 3))


def test_cannot_duplicate_across_file_systems(fsroot: FsRoot) -> None:
    """A file on another scheme is not fast-duplicable."""
    other = "s3://bucket/f" if fsroot.scheme != "s3" else "memory:///f"
    assert not _toolset(fsroot).can_fast_duplicate(FileStateHandle(other, 3))


def test_duplicating(fsroot: FsRoot) -> None:
    """T-TS4: handles rebased onto the toolset dir, relative stays relative; the names are
    fresh UUIDs (TO4's first version), never the source's (two sources named alike from two
    directories would overwrite each other)."""
    token = register_filesystem(fsroot.scheme)
    sources = []
    for name, relative in (("a", False), ("b", True), ("c", False)):
        url = fsroot.sub("src", name)
        fsroot.write(url, name.encode() * 3)
        if relative:
            sources.append(RelativeFileStateHandle(url, 3, relative_path=name, fs_token=token))
        else:
            sources.append(FileStateHandle(url, 3, fs_token=token))
    toolset = _toolset(fsroot)
    copies = toolset.duplicate(sources)
    target = parse_storage_path(fsroot.sub("toolset"))
    assert [type(c) for c in copies] == [FileStateHandle, RelativeFileStateHandle, FileStateHandle]
    for source, copy in zip(sources, copies, strict=True):
        path = parse_storage_path(copy.file_path)
        assert path.parent == target
        assert is_state_file_name(path.name)
        assert copy.state_size == source.state_size
        assert _read(copy) == _read(source)
    assert copies[1].relative_path == parse_storage_path(copies[1].file_path).name  # type: ignore[attr-defined]
    sources[0].discard_state()
    assert _read(copies[0]) == b"aaa"  # an independent copy (or hard link)


def test_task_owned_toolset(fsroot: FsRoot) -> None:
    """T-FSA7 / ACC11: the access gives a duplicating toolset on taskowned/."""
    access = FileSystemCheckpointStorage(fsroot.sub("c"), 0).create_checkpoint_storage(
        JobID.generate()
    )
    access.initialize_base_locations_for_checkpoint()
    toolset = access.create_task_owned_checkpoint_state_toolset()
    assert isinstance(toolset, CheckpointStateToolset)
    location = access.initialize_location_for_checkpoint(1)
    stream = location.create_checkpoint_state_output_stream(CheckpointedStateScope.SHARED)
    stream.write(b"shared")
    handle = stream.close_and_get_handle()
    assert handle is not None
    assert toolset.can_fast_duplicate(handle)
    [copy] = toolset.duplicate([handle])
    assert parse_storage_path(copy.file_path).parent.url == access.task_owned_state_directory  # type: ignore[attr-defined]


def test_not_duplicating_toolset() -> None:
    """TO5 / T-FSA7: the not-duplicating toolset says no and refuses with an OSError."""
    toolset = NotDuplicatingCheckpointStateToolset()
    assert not toolset.can_fast_duplicate(FileStateHandle("/x", 1))
    with pytest.raises(DuplicationNotSupportedError, match="does not support duplication"):
        toolset.duplicate([FileStateHandle("/x", 1)])


def test_factory_duplication_api(fsroot: FsRoot) -> None:
    """S17: can_fast_duplicate/duplicate by scope on a location (a stream factory)."""
    access = FileSystemCheckpointStorage(fsroot.sub("c"), 0).create_checkpoint_storage(
        JobID.generate()
    )
    access.initialize_base_locations_for_checkpoint()
    location = access.initialize_location_for_checkpoint(2)
    url = fsroot.sub("restored", "f")
    fsroot.write(url, b"restored")
    handle = FileStateHandle(url, 8)
    for scope, directory in (
        (CheckpointedStateScope.EXCLUSIVE, location.checkpoint_directory),
        (CheckpointedStateScope.SHARED, location.shared_state_directory),
    ):
        assert location.can_fast_duplicate(handle, scope)
        [copy] = location.duplicate([handle], scope)
        assert parse_storage_path(copy.file_path).parent.url == directory  # type: ignore[attr-defined]
        assert _read(copy) == b"restored"
    with pytest.raises(ValueError, match="Unknown state scope"):
        location.duplicate([handle], "bogus")  # type: ignore[arg-type]
