"""ckptstore.io_errors: the one mapping of file-system failures to the contract's OSErrors."""

from __future__ import annotations

import errno
import io
from typing import Any, ClassVar

import pytest

from ckptstore.errors import (
    CheckpointIOError,
    CheckpointNotFoundError,
    InvalidArgumentError,
    MetadataExistsError,
)
from ckptstore.io_errors import (
    causal_chain,
    describe_endpoint,
    endpoint_label,
    guarded_reader,
    io_errors,
    is_unreachable,
    translate_io_error,
)
from ckptstore.paths import parse_storage_path

PATH = parse_storage_path("s3://bucket/dir/state")
SECRET = "io-S3cr3t-7d1e"


class _FakeS3:
    """What the mapper reads of an s3fs instance (duck typing)."""

    endpoint_url = "http://user:pw@127.0.0.1:9000/?X-Amz-Signature=abc"
    client_kwargs: ClassVar[dict[str, Any]] = {}
    key = "io-access-key"
    secret = SECRET
    storage_options: ClassVar[dict[str, Any]] = {
        "endpoint_url": endpoint_url,
        "key": key,
        "secret": SECRET,
    }


class EndpointConnectionError(Exception):
    """Stands in for botocore's exception of the same name (no OSError)."""


EndpointConnectionError.__module__ = "botocore.exceptions"


def test_client_library_failure_becomes_checkpoint_io_error_naming_endpoint_and_path() -> None:
    """A botocore-style exception (not an OSError) comes out as CheckpointIOError."""
    cause = EndpointConnectionError(
        f'Could not connect to "http://user:{SECRET}@127.0.0.1:9000/bucket/dir/state?sig=x" '
        f"with {SECRET}"
    )
    with pytest.raises(CheckpointIOError) as caught, io_errors("read", PATH, _FakeS3()):
        raise cause
    error = caught.value
    assert isinstance(error, OSError)
    message = str(error)
    assert message.startswith(
        "Could not read s3://bucket/dir/state (endpoint http://127.0.0.1:9000)"
    )
    assert "EndpointConnectionError" in message
    for secret in (SECRET, "user:", "pw@", "X-Amz-Signature", "sig=x"):
        assert secret not in message, message
    assert error.__cause__ is cause
    assert is_unreachable(cause)
    # the chained client exception is redacted in place: same object, no secret in its text
    for shown in (str(cause), repr(cause)):
        for secret in (SECRET, "pw@", "sig=x"):
            assert secret not in shown, shown


def test_every_exception_chained_to_the_cause_is_redacted() -> None:
    """Causes and contexts below the cause, OSError fields included, show no secret."""
    inner = OSError(5, f"refused ?X-Amz-Security-Token={SECRET}", f"http://u:{SECRET}@h/f")
    middle = ValueError(f"Custom endpoint `http://h/?sig={SECRET}` was not a valid URI", 7)
    middle.__context__ = inner
    cause = EndpointConnectionError(f"wrapped {SECRET}")
    cause.__cause__ = middle
    middle.__cause__ = cause  # a cycle must not hang the walk
    with pytest.raises(CheckpointIOError) as caught, io_errors("read", PATH, _FakeS3()):
        raise cause
    assert caught.value.__cause__ is cause
    for exc in (cause, middle, inner):
        for shown in (str(exc), repr(exc)):
            assert SECRET not in shown, shown
    assert middle.args[1] == 7
    assert inner.errno == 5


def test_missing_file_becomes_not_found() -> None:
    """FileNotFoundError (s3fs: NoSuchKey) -> CheckpointNotFoundError, still a FileNotFoundError."""
    with pytest.raises(CheckpointNotFoundError) as caught, io_errors("read", PATH, _FakeS3()):
        raise FileNotFoundError("bucket/dir/state")
    assert isinstance(caught.value, FileNotFoundError)
    assert "s3://bucket/dir/state" in str(caught.value)
    assert "http://127.0.0.1:9000" in str(caught.value)


@pytest.mark.parametrize(
    "error", [PermissionError("denied"), TimeoutError("slow"), OSError(5, "EIO")]
)
def test_other_os_errors_become_checkpoint_io_error(error: OSError) -> None:
    translated = translate_io_error(error, "delete", PATH, _FakeS3())
    assert type(translated) is CheckpointIOError
    assert str(translated).startswith("Could not delete s3://bucket/dir/state")


@pytest.mark.parametrize("error", [InvalidArgumentError("ours"), MetadataExistsError("ours")])
def test_our_own_errors_pass_unchanged(error: Exception) -> None:
    with pytest.raises(type(error)) as caught, io_errors("read", PATH, _FakeS3()):
        raise error
    assert caught.value is error


def test_whatever_a_file_system_call_raises_is_its_failure() -> None:
    """io_errors wraps file-system calls only: a client's TypeError or KeyError (botocore's
    ParamValidationError is no OSError either) is an I/O failure; a KeyboardInterrupt is not."""
    for error in (TypeError("client"), KeyError("client")):
        with pytest.raises(CheckpointIOError) as caught, io_errors("read", PATH, _FakeS3()):
            raise error
        assert caught.value.__cause__ is error
    with pytest.raises(KeyboardInterrupt), io_errors("read", PATH, _FakeS3()):
        raise KeyboardInterrupt


def test_endpoint_labels() -> None:
    assert endpoint_label(None, "file") == "local file system"
    assert endpoint_label(None, "memory") == "memory file system"
    assert endpoint_label(_FakeS3(), "s3") == "http://127.0.0.1:9000"

    class _Aws:
        storage_options: ClassVar[dict[str, Any]] = {"client_kwargs": {"region_name": "eu-1"}}

    assert endpoint_label(_Aws(), "s3") == "the default s3 endpoint, region eu-1"
    assert endpoint_label(object(), "gs") == "the default gs endpoint"
    in_client_kwargs = {"client_kwargs": {"endpoint_url": "https://k:s@minio:9000/"}}
    assert describe_endpoint("s3", in_client_kwargs) == "https://minio:9000"
    assert describe_endpoint("az", {"account_url": "https://acct.blob.example"}) == (
        "https://acct.blob.example"
    )
    sftp = {"host": "127.0.0.1", "port": 2222, "username": "u", "password": "pw-secret"}
    assert describe_endpoint("sftp", sftp) == "127.0.0.1:2222"


def test_guarded_reader_translates_read_failures_and_delegates_the_rest() -> None:
    """On S3 the GET happens at the first read: the reader maps its failures too."""

    class _Failing(io.BytesIO):
        def read(self, size: int | None = -1, /) -> bytes:
            raise EndpointConnectionError("no route")

    reader = guarded_reader(_Failing(b"x"), PATH, _FakeS3())
    with pytest.raises(CheckpointIOError, match="Could not read s3://bucket/dir/state"), reader:
        reader.read()
    assert reader.closed

    ok = guarded_reader(io.BytesIO(b"abcdef"), PATH, None)
    with ok:
        assert ok.read(2) == b"ab"
        assert ok.tell() == 2
        buffer = bytearray(2)
        assert ok.readinto(buffer) == 2
        assert bytes(buffer) == b"cd"
        assert ok.seek(0) == 0
        assert ok.read() == b"abcdef"
        assert ok.getvalue() == b"abcdef"  # type: ignore[attr-defined]
    assert ok.closed


class _AnyPosition(io.BytesIO):
    """Seeks like paramiko's SFTP files: any position is taken, even a negative one, and
    seek() returns None."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.position = 0

    def seek(self, offset: int, whence: int = 0, /) -> None:  # type: ignore[override]
        size = len(self.getvalue())
        self.position = (0, self.position, size)[whence] + offset

    def tell(self) -> int:
        return self.position


@pytest.mark.parametrize(
    ("offset", "whence"), [(-1, io.SEEK_SET), (-6, io.SEEK_CUR), (-11, io.SEEK_END)]
)
def test_guarded_reader_refuses_a_position_before_the_start(offset: int, whence: int) -> None:
    """A seek to before the start raises a ValueError (as io does) and moves nothing, also
    where the file system's reader would take the position (paramiko's)."""
    reader = guarded_reader(_AnyPosition(b"abcdefghij"), PATH, None)
    assert reader.seek(4) == 4  # paramiko's None: the position comes from tell()
    with pytest.raises(ValueError, match="negative seek position -") as caught:
        reader.seek(offset, whence)
    assert isinstance(caught.value, InvalidArgumentError)
    assert reader.tell() == 4
    assert reader.seek(-2, io.SEEK_END) == 8


def test_causal_chain_follows_causes_then_contexts_once_each() -> None:
    """The chain that is_unreachable and the S3 error-code lookups walk; a cycle ends it."""
    inner = ConnectionRefusedError("refused")
    middle = OSError("wrapped")
    middle.__context__ = inner
    outer = RuntimeError("outer")
    outer.__cause__ = middle
    inner.__context__ = outer  # a cycle
    assert list(causal_chain(outer)) == [outer, middle, inner]
    assert is_unreachable(outer)
    assert not is_unreachable(RuntimeError("alone"))


def test_an_errno_with_a_class_of_its_own_becomes_eio() -> None:
    """BAD-14: a CheckpointIOError keeps the failure's errno only where OSError keeps that
    errno a plain OSError (ENOSPC), else EIO (ENOTDIR would be a NotADirectoryError)."""
    from ckptstore.errors import CheckpointIOError
    from ckptstore.io_errors import contract_class

    assert contract_class(OSError(errno.ENOSPC, "full")) == (CheckpointIOError, errno.ENOSPC)
    assert contract_class(NotADirectoryError(errno.ENOTDIR, "no")) == (
        CheckpointIOError,
        errno.EIO,
    )
    assert contract_class(PermissionError(errno.EACCES, "no")) == (CheckpointIOError, errno.EIO)
