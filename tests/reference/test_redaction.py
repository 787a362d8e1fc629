"""ckptstore.redaction: no credential in repr, error messages, logs or store tokens.

Issue 10, case 5: secrets that are not under a secret-looking key (the password of an
endpoint or proxy URL, an ``aws_session_token`` nested in ``client_kwargs``, ``sig``/``pwd``
query parameters) showed up in ``repr``, errors and debug logs.
"""

from __future__ import annotations

import logging
import pickle
import socket
from typing import Any

import pytest

from ckptstore import FileSystemCheckpointStorage, JobManagerCheckpointStorage, filesystems
from ckptstore.api import JobID, encode_path_as_reference
from ckptstore.errors import CheckpointIOError
from ckptstore.filesystems import register_filesystem, store_token
from ckptstore.handles import FileStateHandle
from ckptstore.io_errors import translate_io_error
from ckptstore.paths import parse_storage_path
from ckptstore.redaction import (
    REDACTED,
    RedactingFilter,
    get_logger,
    is_secret_name,
    redact,
    redact_text,
    secret_values,
)

PASSWORD = "Pw-7e1d-secret"
SESSION = "IQoJb3JpZ2luX2VjEXAMPLESESSION"
SIG = "sv2021sigABCDEF"
SECRET_KEY = "wJalrXUtnFEMI-K7MDENG"
ALL_SECRETS = (PASSWORD, SESSION, SIG, SECRET_KEY)

OPTIONS: dict[str, Any] = {
    "endpoint_url": f"http://minio:{PASSWORD}@127.0.0.1:9000/?sig={SIG}",
    "key": "AKIAEXAMPLE",
    "secret": SECRET_KEY,
    "client_kwargs": {"aws_session_token": SESSION, "region_name": "eu-west-1"},
    "config_kwargs": {
        "proxies": {"https": f"http://proxyuser:{PASSWORD}@proxy:3128"},
        "connect_timeout": 1,
    },
}


def _clean(text: str) -> None:
    for secret in ALL_SECRETS:
        assert secret not in text, text


# --------------------------------------------------------------------------- the function


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("http://user:pass@host:9000/x", "http://***@host:9000/x"),
        ("https://u:p@ss@host/x", "https://***@host/x"),
        ("s3://bucket/key@v2", "s3://bucket/key@v2"),
        ("proxyuser:secret@proxy:3128", "***@proxy:3128"),
        ("someone@example.com", "someone@example.com"),
        (
            "https://acct.blob.core.windows.net/c?sv=2021-08-06&se=2030&sp=r&sig=abc%3D",
            "https://acct.blob.core.windows.net/c?sv=2021-08-06&se=2030&sp=r&sig=***",
        ),
        (
            "https://b.s3.amazonaws.com/k?X-Amz-Credential=AKIA%2F2026&X-Amz-Signature=f00&x=1",
            "https://b.s3.amazonaws.com/k?X-Amz-Credential=***&X-Amz-Signature=***&x=1",
        ),
        (
            "https://h/?X-Amz-Security-Token=tok&pwd=hunter2&password=x&token=t",
            "https://h/?X-Amz-Security-Token=***&pwd=***&password=***&token=***",
        ),
        ("Authorization: AWS4-HMAC-SHA256 Credential=AKIA/x, Signature=abc", "Authorization: ***"),
        ("got header Bearer eyJhbGciOiJIUzI1NiJ9.e30.sig", "got header Bearer ***"),
        (
            "AccountName=a;AccountKey=c2VjcmV0;EndpointSuffix=core",
            "AccountName=a;AccountKey=***;EndpointSuffix=core",
        ),
        ("Could not read s3://bucket/dir/state", "Could not read s3://bucket/dir/state"),
        ("/ckpt/job/chk-1/_metadata", "/ckpt/job/chk-1/_metadata"),
    ],
)
def test_redact_text(text: str, expected: str) -> None:
    assert redact_text(text) == expected


def test_redact_mappings_recursively() -> None:
    shown = redact(OPTIONS)
    _clean(repr(shown))
    assert shown["secret"] == REDACTED
    assert shown["key"] == REDACTED
    assert shown["client_kwargs"] == {"aws_session_token": REDACTED, "region_name": "eu-west-1"}
    assert shown["config_kwargs"]["proxies"]["https"] == "http://***@proxy:3128"
    assert shown["config_kwargs"]["connect_timeout"] == 1
    assert shown["endpoint_url"] == "http://***@127.0.0.1:9000/?sig=***"
    assert OPTIONS["secret"] == SECRET_KEY  # the input is not modified


def test_redact_other_values() -> None:
    class Session:
        def __repr__(self) -> str:
            return f"Session(secret={SECRET_KEY})"

    assert redact(Session()) == "<Session>"
    assert redact(b"raw") == "<3 bytes>"
    assert redact([f"http://u:{PASSWORD}@h", 1, None, True]) == ["http://***@h", 1, None, True]
    assert redact(("a",)) == ("a",)
    assert redact({"credentials": {"nested": "x"}}) == {"credentials": REDACTED}
    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    assert "<...>" in repr(redact(cyclic))


def test_secret_names_and_values() -> None:
    for name in (
        "key",
        "secret",
        "aws_session_token",
        "SAS_TOKEN",
        "sig",
        "pwd",
        "Password",
        "x-amz-credential",
        "connection_string",
        "private_key",
        "Authorization",
    ):
        assert is_secret_name(name), name
    for name in ("endpoint_url", "region_name", "anon", "use_ssl", "connect_timeout", "sv"):
        assert not is_secret_name(name), name
    values = secret_values(OPTIONS)
    for secret in (SECRET_KEY, SESSION, PASSWORD):
        assert secret in values


def test_logs_are_redacted(caplog: pytest.LogCaptureFixture) -> None:
    logger = get_logger("ckptstore.test-redaction")
    assert get_logger("ckptstore.test-redaction") is logger
    assert sum(isinstance(f, RedactingFilter) for f in logger.filters) == 1
    with caplog.at_level(logging.DEBUG, logger="ckptstore.test-redaction"):
        logger.warning("endpoint %s with %s", OPTIONS["endpoint_url"], {"token": SESSION})
    _clean(caplog.text)
    assert "http://***@127.0.0.1:9000" in caplog.text
    record = logging.LogRecord("x", logging.INFO, "f", 1, "key=%s", (SECRET_KEY,), None)
    assert RedactingFilter([SECRET_KEY]).filter(record)
    _clean(record.getMessage())


# --------------------------------------------------------------------------- where it is used


def test_storage_repr_shows_no_secret() -> None:
    storage = FileSystemCheckpointStorage(
        "s3://bucket/ckpt", savepoint_path="s3://bucket/sp", storage_options=OPTIONS
    )
    text = repr(storage)
    _clean(text)
    assert "storage_options=" in text
    assert "region_name" in text
    _clean(repr(storage.create_checkpoint_storage(JobID.generate())))
    _clean(repr(JobManagerCheckpointStorage(storage_options=OPTIONS)))


def test_reference_and_handle_reprs_show_no_userinfo() -> None:
    url = f"sftp://user:{PASSWORD}@host/ckpt/sp/savepoint-abcdef-0123456789ab"
    _clean(repr(encode_path_as_reference(url)))
    _clean(repr(FileStateHandle(url + "/state", 3)))
    _clean(repr(parse_storage_path(url)))
    assert PASSWORD not in parse_storage_path(url).shown


def test_error_messages_show_no_secret() -> None:
    """The io mapping blanks userinfo, secret parameters and the options' secret values."""

    class FakeS3:
        storage_options = OPTIONS
        endpoint_url = OPTIONS["endpoint_url"]
        key = "AKIAEXAMPLE"
        secret = SECRET_KEY

    class EndpointConnectionError(Exception):
        pass

    EndpointConnectionError.__module__ = "botocore.exceptions"
    path = parse_storage_path("s3://bucket/dir/state")
    cause = EndpointConnectionError(
        f"Could not connect to {OPTIONS['endpoint_url']} as {SECRET_KEY} token {SESSION}"
    )
    error = translate_io_error(cause, "read", path, FakeS3())
    assert isinstance(error, CheckpointIOError)
    _clean(str(error))
    assert "http://127.0.0.1:9000" in str(error)
    assert "s3://bucket/dir/state" in str(error)


def test_pointer_errors_show_no_secret() -> None:
    storage = FileSystemCheckpointStorage("memory:///redaction-test")
    for pointer in (
        f"s3://user:{PASSWORD}@bucket/chk-1",
        f"memory:///x/../../y?sig={SIG}",
        f"/x?pwd={PASSWORD}/\x00",
    ):
        with pytest.raises(OSError) as caught:
            storage.resolve_checkpoint(pointer)
        _clean(str(caught.value))


def test_store_tokens_and_cache_keys_hold_no_credential() -> None:
    """The handle's store token is a hash of scheme and endpoint only (10d38f9, verified
    here), and the instance cache key is salted: neither is a function of the secret alone."""
    token = register_filesystem("s3", OPTIONS, authorities=["bucket"])
    other_secret = {**OPTIONS, "secret": "another", "client_kwargs": {"region_name": "x"}}
    assert token == store_token("s3", other_secret)
    assert token == store_token("s3", {"endpoint_url": "http://127.0.0.1:9000"})
    handle = FileStateHandle("s3://bucket/dir/state", 3, fs_token=token)
    blob = pickle.dumps(handle)
    for secret in (*ALL_SECRETS, "AKIAEXAMPLE", "minio"):
        assert secret.encode() not in blob
    import hashlib
    import json

    keys = [r.key for r in filesystems._REGISTRATIONS.values()]
    options = filesystems.filesystem_options("s3", OPTIONS)
    unsalted = hashlib.sha256(
        json.dumps(["s3", options], default=repr, sort_keys=True).encode()
    ).hexdigest()
    assert unsalted not in keys


def test_unreachable_store_error_names_endpoint_without_secret() -> None:
    """End to end on a refused port: endpoint named, no secret, whatever the method."""
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    options = {
        "endpoint_url": f"http://127.0.0.1:{port}/?sig={SIG}",
        "key": "AKIAEXAMPLE",
        "secret": SECRET_KEY,
        "client_kwargs": {"aws_session_token": SESSION},
        "config_kwargs": {"retries": {"max_attempts": 0}},
    }
    storage = FileSystemCheckpointStorage("s3://bucket/ckpt", storage_options=options)
    with pytest.raises(OSError) as caught:
        storage.resolve_checkpoint("s3://bucket/ckpt/job/chk-1")
    _clean(str(caught.value))
    assert f"http://127.0.0.1:{port}" in str(caught.value)
