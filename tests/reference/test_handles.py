"""FileStateHandle / RelativeFileStateHandle (H1-H3; Flink's FileStateHandleTest T-FSH*)."""

from __future__ import annotations

import errno
import pickle
from typing import Any

import pytest

from ckptstore import FileStateHandle, RelativeFileStateHandle
from ckptstore.api import FileStateHandle as FileStateHandleProtocol
from ckptstore.api import RelativeFileStateHandle as RelativeProtocol
from ckptstore.errors import (
    CheckpointIOError,
    InvalidArgumentError,
    MissingArgumentError,
    StateSizeMismatchError,
)
from ckptstore.filesystem import handles as handles_module
from ckptstore.paths import parse_storage_path
from ckptstore.stores.registry import register_filesystem, register_path
from tests.reference._fsroot import FsRoot
from tests.reference._moto import S3Root


class _ScriptedFs:
    """A file system whose rm_file/exists answers are scripted; records calls."""

    def __init__(self, rm_error: BaseException | None, exists: bool) -> None:
        self.rm_error = rm_error
        self.exists_answer = exists
        self.calls: list[tuple[str, str]] = []

    def rm_file(self, path: str) -> None:
        self.calls.append(("rm_file", path))
        if self.rm_error is not None:
            raise self.rm_error

    def exists(self, path: str) -> bool:
        self.calls.append(("exists", path))
        return self.exists_answer


def _with_fs(monkeypatch: pytest.MonkeyPatch, fs: Any) -> None:
    monkeypatch.setattr(handles_module, "get_filesystem", lambda scheme, token=None, **kw: fs)


def test_dispose_deletes_file(fsroot: FsRoot) -> None:
    """T-FSH1: discard_state deletes the file."""
    url = fsroot.sub("dir", "state")
    fsroot.write(url, b"abc")
    handle = FileStateHandle(url, 3, fs_token=register_filesystem(fsroot.scheme))
    handle.discard_state()
    assert not fsroot.exists(url)
    assert fsroot.isdir(fsroot.sub("dir"))


def test_dispose_does_not_delete_parent_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    """T-FSH2: exactly one delete call, on the file path only (H2)."""
    fs = _ScriptedFs(None, exists=True)
    _with_fs(monkeypatch, fs)
    FileStateHandle("s3://bucket/dir/file", 3).discard_state()
    assert fs.calls == [("rm_file", "bucket/dir/file")]


def test_discard_without_exists_call_when_delete_succeeds(monkeypatch: pytest.MonkeyPatch) -> None:
    """T-FSH3: when the delete succeeds, no existence check follows."""
    fs = _ScriptedFs(None, exists=False)
    _with_fs(monkeypatch, fs)
    FileStateHandle("s3://bucket/f", 1).discard_state()
    assert [name for name, _ in fs.calls] == ["rm_file"]


@pytest.mark.parametrize("error", [OSError("boom"), RuntimeError("boom")])
def test_discard_failing_delete_of_missing_file_is_fine(
    monkeypatch: pytest.MonkeyPatch, error: BaseException
) -> None:
    """T-FSH4: delete fails but the file is gone -> no error."""
    fs = _ScriptedFs(error, exists=False)
    _with_fs(monkeypatch, fs)
    FileStateHandle("s3://bucket/f", 1).discard_state()
    assert [name for name, _ in fs.calls] == ["rm_file", "exists"]


def test_discard_failing_delete_of_existing_file_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    """T-FSH5: delete fails and the file is still there -> OSError."""
    _with_fs(monkeypatch, _ScriptedFs(OSError("denied"), exists=True))
    with pytest.raises(CheckpointIOError):
        FileStateHandle("s3://bucket/f", 1).discard_state()


def test_discard_missing_file_is_fine(fsroot: FsRoot) -> None:
    """H2: a missing file is not an error (FileNotFoundError from the delete)."""
    FileStateHandle(fsroot.sub("nothing"), 0).discard_state()


def test_open_input_stream_reads_the_file(fsroot: FsRoot) -> None:
    """H1: the handle reads its file through the registry's file system."""
    url = fsroot.sub("f")
    fsroot.write(url, b"payload")
    handle = FileStateHandle(url, 7, fs_token=register_filesystem(fsroot.scheme))
    with handle.open_input_stream() as stream:
        assert stream.read() == b"payload"
    assert handle.as_bytes_if_in_memory() is None


#: How a reader reads a state to its end: every way must notice a file of another size.
READS = ("read()", "read(n)", "read(size)", "readinto", "read1", "seek+read()")
STATE = bytes(range(256)) * 400  # 102,400 bytes


def _read_to_the_end(handle: Any, how: str) -> bytes:
    """Read ``handle``'s stream to its end the way ``how`` names."""
    with handle.open_input_stream() as stream:
        if how == "read()":
            return bytes(stream.read())
        if how == "read(size)":
            return bytes(stream.read(handle.state_size))
        if how == "seek+read()":
            stream.seek(handle.state_size // 2)
            return bytes(stream.read())
        pieces = []
        while True:
            if how == "readinto":
                buffer = bytearray(7000)
                piece = bytes(buffer[: stream.readinto(buffer)])
            else:
                piece = stream.read1(7000) if how == "read1" else stream.read(7000)
            if not piece:
                return b"".join(pieces)
            pieces.append(bytes(piece))


def _raw_handle(raw: Any, url: str, data: bytes, size: int, options: Any = None) -> Any:
    """A handle of ``size`` bytes for a file whose bytes are ``data``, written raw."""
    path = parse_storage_path(url)
    if path.scheme != "s3":
        raw.makedirs(path.parent.path, exist_ok=True)
    raw.pipe_file(path.path, data)
    return FileStateHandle(url, size, fs_token=register_path(path, options))


@pytest.mark.parametrize("how", READS)
@pytest.mark.parametrize("found", [STATE[:50_000], STATE + b"more bytes"], ids=["short", "long"])
def test_a_file_of_another_size_raises_on_read(fsroot: FsRoot, how: str, found: bytes) -> None:
    """A file shorter or longer than its handle's state_size raises StateSizeMismatchError
    (an OSError, EIO) on every way of reading it, instead of returning other bytes."""
    handle = _raw_handle(fsroot.raw, fsroot.sub("state"), found, len(STATE))
    with pytest.raises(StateSizeMismatchError, match="does not hold the 102400 bytes") as error:
        _read_to_the_end(handle, how)
    assert isinstance(error.value, OSError)
    assert error.value.errno == errno.EIO


@pytest.mark.parametrize("how", READS)
def test_a_file_of_its_size_reads_every_way(fsroot: FsRoot, how: str) -> None:
    """A file of exactly state_size bytes reads back whole, however it is read."""
    handle = _raw_handle(fsroot.raw, fsroot.sub("state"), STATE, len(STATE))
    expected = STATE[len(STATE) // 2 :] if how == "seek+read()" else STATE
    assert _read_to_the_end(handle, how) == expected


def test_reads_beyond_the_end_and_unknown_sizes_are_no_mismatch(fsroot: FsRoot) -> None:
    """A seek past the end reads nothing (no error); a handle of unknown size (-1) reads
    whatever the file holds."""
    handle = _raw_handle(fsroot.raw, fsroot.sub("state"), STATE, len(STATE))
    with handle.open_input_stream() as stream:
        stream.seek(len(STATE) + 10)
        assert stream.read() == b""
        assert stream.read(5) == b""
    unknown = _raw_handle(fsroot.raw, fsroot.sub("unknown"), STATE, -1)
    assert _read_to_the_end(unknown, "read()") == STATE


@pytest.mark.parametrize("how", ["read()", "read(n)", "readinto", "seek+read()"])
@pytest.mark.parametrize(
    "found", [STATE[:50_000], STATE + b"more", b""], ids=["short", "long", "empty"]
)
def test_an_object_of_another_size_raises_on_read(s3: S3Root, how: str, found: bytes) -> None:
    """S3: each GET compares the object's size in its answer with state_size, so a reader
    that never asks beyond state_size also notices an object that grew; still one GetObject
    and no HeadObject per read."""
    handle = _raw_handle(s3.raw, s3.sub("state"), found, len(STATE), s3.storage_options)
    with s3.record() as requests, pytest.raises(StateSizeMismatchError):
        _read_to_the_end(handle, how)
    assert requests.count(operation="HeadObject") == 0
    assert requests.count(operation="GetObject") == 1


@pytest.mark.parametrize("how", ["read()", "read(n)", "readinto", "seek+read()"])
def test_an_object_of_its_size_reads_with_one_get(s3: S3Root, how: str) -> None:
    """S3: an object of exactly state_size bytes reads back with one GetObject, no HEAD."""
    handle = _raw_handle(s3.raw, s3.sub("state"), STATE, len(STATE), s3.storage_options)
    with s3.record() as requests:
        back = _read_to_the_end(handle, how)
    assert back == (STATE[len(STATE) // 2 :] if how == "seek+read()" else STATE)
    assert [r.operation for r in requests.requests] == ["GetObject"]


def test_an_empty_state_checks_its_object_once(s3: S3Root) -> None:
    """S3: an empty state costs one GetObject at the first read; the object must be empty."""
    empty = _raw_handle(s3.raw, s3.sub("empty"), b"", 0, s3.storage_options)
    with s3.record() as requests:
        assert _read_to_the_end(empty, "read(n)") == b""
    assert [r.operation for r in requests.requests] == ["GetObject"]
    grown = _raw_handle(s3.raw, s3.sub("grown"), b"not empty", 0, s3.storage_options)
    with pytest.raises(StateSizeMismatchError, match="it holds 9 bytes"):
        _read_to_the_end(grown, "read()")


def test_equality_and_hash() -> None:
    """H1: FileStateHandle compares by path only; H3: relative also by relative path."""
    a = FileStateHandle("/x/y", 1)
    assert a == FileStateHandle("file:///x/y", 99)
    assert hash(a) == hash(FileStateHandle("/x/y", 2))
    r = RelativeFileStateHandle("/x/y", 1, relative_path="y")
    assert r == RelativeFileStateHandle("/x/y", 5, relative_path="y")
    assert r != RelativeFileStateHandle("/x/y", 1, relative_path="z")
    assert r != a


def test_protocols_pickling_and_repr() -> None:
    """Handles satisfy the api protocols, pickle small and carry no credentials."""
    token = register_filesystem("s3", {"key": "AKIA", "secret": "SECRET"})
    r = RelativeFileStateHandle("s3://b/k/f", 4, relative_path="f", fs_token=token)
    assert isinstance(r, RelativeProtocol)
    assert isinstance(FileStateHandle("/a", 1), FileStateHandleProtocol)
    data = pickle.dumps(r)
    assert b"SECRET" not in data
    assert b"AKIA" not in data
    assert len(data) < 512
    back = pickle.loads(data)
    assert back == r
    assert back.fs_token == token
    assert repr(FileStateHandle("/a", 1)) == "File State: file:///a [1 bytes]"


def test_validation() -> None:
    """H1: size >= -1 and a path are required."""
    with pytest.raises(MissingArgumentError):
        FileStateHandle(None, 1)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        FileStateHandle("/a", -2)
    with pytest.raises(InvalidArgumentError):
        RelativeFileStateHandle("/a", 1, relative_path="")
