"""FileStateHandle / RelativeFileStateHandle (H1-H3; Flink's FileStateHandleTest T-FSH*)."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from ckptstore import FileStateHandle, RelativeFileStateHandle
from ckptstore import handles as handles_module
from ckptstore.api import FileStateHandle as FileStateHandleProtocol
from ckptstore.api import RelativeFileStateHandle as RelativeProtocol
from ckptstore.errors import CheckpointIOError, InvalidArgumentError, MissingArgumentError
from ckptstore.filesystems import register_filesystem
from tests.reference._fsroot import FsRoot


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
