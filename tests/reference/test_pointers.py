"""Pointer resolution (PTR1-PTR10) through
ckptstore.filesystem.pointers.resolve_checkpoint_pointer."""

from __future__ import annotations

from typing import Any

import pytest

from ckptstore import FileSystemCheckpointStorage
from ckptstore.api import NON_ADDRESSABLE_POINTER
from ckptstore.errors import (
    CheckpointNotFoundError,
    InvalidArgumentError,
    InvalidPointerError,
    MissingArgumentError,
    UnsupportedSchemeError,
)
from ckptstore.filesystem.pointers import normalise_schemes, resolve_checkpoint_pointer
from ckptstore.paths import parse_storage_path
from tests.reference._fsroot import FsRoot


def _resolve(pointer: Any, root: FsRoot) -> Any:
    return resolve_checkpoint_pointer(pointer, allowed_schemes=[root.scheme])


def test_null_and_empty(fsroot: FsRoot) -> None:
    """PTR2: None -> TypeError naming the pointer; '' -> ValueError 'empty checkpoint pointer'."""
    with pytest.raises(MissingArgumentError, match="checkpoint pointer"):
        _resolve(None, fsroot)
    with pytest.raises(InvalidArgumentError, match=r"^empty checkpoint pointer$"):
        _resolve("", fsroot)


def test_missing_path(fsroot: FsRoot) -> None:
    """PTR5: nothing there -> FileNotFoundError with Flink's message."""
    pointer = fsroot.sub("nothing")
    with pytest.raises(CheckpointNotFoundError) as info:
        _resolve(pointer, fsroot)
    assert str(info.value) == (
        f"Cannot find checkpoint or savepoint file/directory '{pointer}' on file system "
        f"'{fsroot.scheme}'."
    )
    assert isinstance(info.value, FileNotFoundError)


def test_directory_without_metadata(fsroot: FsRoot) -> None:
    """PTR6: a directory without _metadata -> FileNotFoundError with Flink's message."""
    directory = fsroot.sub("chk-1")
    fsroot.write(directory + "/other", b"x")
    with pytest.raises(FileNotFoundError) as info:
        _resolve(directory, fsroot)
    assert str(info.value) == (
        f"Cannot find meta data file '_metadata' in directory "
        f"'{parse_storage_path(directory).url}'. Please try to load the checkpoint/savepoint "
        "directly from the metadata file instead of the directory."
    )


def test_any_file_name_is_metadata(fsroot: FsRoot) -> None:
    """PTR7: a file is taken as the metadata file whatever its name; the dir is its parent."""
    url = fsroot.sub("sp", "renamed-meta")
    fsroot.write(url, b"abc")
    resolved = _resolve(url, fsroot)
    assert resolved.external_pointer == parse_storage_path(fsroot.sub("sp")).url
    assert resolved.metadata_handle.state_size == 3


def test_directory_forms(fsroot: FsRoot) -> None:
    """PTR1 / PTR8: dir, dir + '/', dir + '/_metadata' and non-canonical forms agree."""
    directory = fsroot.sub("a", "chk-3")
    fsroot.write(directory + "/_metadata", b"meta")
    canonical = parse_storage_path(directory).url
    forms = [directory, directory + "/", directory + "//", directory + "/_metadata", canonical]
    if fsroot.name == "local":
        path = parse_storage_path(directory).path
        forms += [path, "file:" + path, "local://" + path]
    for form in forms:
        resolved = _resolve(form, fsroot)
        assert resolved.external_pointer == canonical
        assert resolved.metadata_handle.file_path == canonical + "/_metadata"


def test_directory_named_metadata(fsroot: FsRoot) -> None:
    """A pointer ending in '_metadata' that is a directory: its own _metadata is used."""
    directory = fsroot.sub("_metadata")
    fsroot.write(directory + "/_metadata", b"inner")
    resolved = _resolve(directory, fsroot)
    assert resolved.external_pointer == parse_storage_path(directory).url


def test_scheme_allow_list(fsroot: FsRoot) -> None:
    """PTR4 / security: schemes not allowed are refused before any I/O, naming the fix."""
    with pytest.raises(UnsupportedSchemeError) as info:
        resolve_checkpoint_pointer("s3://bucket/x", allowed_schemes=[fsroot.scheme])
    assert "'s3'" in str(info.value)
    assert "allowed_schemes" in str(info.value)
    assert isinstance(info.value, OSError)
    with pytest.raises(UnsupportedSchemeError):
        resolve_checkpoint_pointer("http://example.invalid/x", allowed_schemes=["file", "memory"])


def test_storage_allows_its_own_schemes_and_extra_ones(memroot: FsRoot, tmp_path: Any) -> None:
    """Only the configured paths' schemes plus allowed_schemes; 'file' and 'local' are one."""
    local_dir = tmp_path / "chk-1"
    local_dir.mkdir()
    (local_dir / "_metadata").write_bytes(b"x")
    on_memory = FileSystemCheckpointStorage(memroot.sub("c"))
    with pytest.raises(UnsupportedSchemeError):
        on_memory.resolve_checkpoint(str(local_dir))
    allowing = FileSystemCheckpointStorage(memroot.sub("c"), allowed_schemes=["local"])
    assert allowing.resolve_checkpoint(str(local_dir)).metadata_handle.state_size == 1
    mixed = FileSystemCheckpointStorage(memroot.sub("c"), savepoint_path=str(tmp_path))
    assert mixed.resolve_checkpoint("file://" + str(local_dir))
    assert normalise_schemes(["s3a"]) == {"s3", "s3a"}  # never s3n: nothing serves it


def test_non_addressable_pointer(fsroot: FsRoot) -> None:
    """PTR10: the JobManager's non-persistent pointer -> FileNotFoundError."""
    with pytest.raises(CheckpointNotFoundError):
        _resolve(NON_ADDRESSABLE_POINTER, fsroot)


def test_garbage_pointer(fsroot: FsRoot) -> None:
    """T-BASE2 / PTR10: 'this-is_not/a#filepath.at.all' is an OSError (a relative local path)."""
    with pytest.raises(OSError):
        resolve_checkpoint_pointer("this-is_not/a#filepath.at.all", allowed_schemes=["file"])


@pytest.mark.parametrize("pointer", ["s3:bucket-without-slashes", "file://remotehost/x"])
def test_unparsable_pointer(pointer: str) -> None:
    """PTR3: a pointer that is no valid URI -> OSError 'is not a valid file URI'."""
    with pytest.raises(InvalidPointerError, match="is not a valid file URI"):
        resolve_checkpoint_pointer(pointer, allowed_schemes=["s3", "file"])
