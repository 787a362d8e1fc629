"""ckptstore.redaction: no credential in repr, error messages, logs or store tokens.

Issue 10, case 5: secrets that are not under a secret-looking key (the password of an
endpoint or proxy URL, an ``aws_session_token`` nested in ``client_kwargs``, ``sig``/``pwd``
query parameters) showed up in ``repr``, errors and debug logs.
"""

from __future__ import annotations

import logging
import pickle
import re
import socket
import time
from collections.abc import Callable
from typing import Any

import pytest

from ckptstore import FileSystemCheckpointStorage, JobManagerCheckpointStorage, redaction
from ckptstore.api import JobID, encode_path_as_reference
from ckptstore.errors import CheckpointIOError
from ckptstore.filesystem.handles import FileStateHandle
from ckptstore.io_errors import translate_io_error
from ckptstore.paths import parse_storage_path
from ckptstore.redaction import (
    LONGEST_SHOWN,
    REDACTED,
    RedactingFilter,
    get_logger,
    is_secret_name,
    redact,
    redact_text,
    secret_values,
)
from ckptstore.stores import registry
from ckptstore.stores.registry import register_filesystem, store_token
from ckptstore.validation import describe

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

    keys = [r.key for r in registry._REGISTRATIONS.values()]
    options = registry.filesystem_options("s3", OPTIONS)
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


# --------------------------------------------------------------------------- linear time

#: Texts that made a backtracking pattern quadratic, by shape; each is ``n`` characters long.
HOSTILE_SHAPES: dict[str, Callable[[int], str]] = {
    "letters and digits": lambda n: ("ab1" * n)[:n],
    "no '@'": lambda n: "x" * n,
    "'a://' repeated": lambda n: "a://" * (n // 4),
    "'a:' repeated, then '@'": lambda n: "a:" * (n // 2) + "@",
    "'='": lambda n: "=" * n,
    "quoted items": lambda n: "'a':" * (n // 4),
    "a Bearer token": lambda n: "Bearer " + "a" * n,
    "parameters": lambda n: " a=b" * (n // 4),
    "'a://' then colons": lambda n: "a://" + ":" * n,
    "a URL's long key": lambda n: "s3://bucket/" + "a" * n,
}
MEGABYTE = 1 << 20


def _within_a_second_up_to_a_megabyte(shape: str, call: Callable[[str], object]) -> None:
    """``call`` on the shape at 16 KiB, doubled up to 1 MiB, each in under a second: a
    quadratic pattern fails at a small size (in seconds) instead of holding the GIL for the
    half hour a megabyte would take it."""
    size = 16 * 1024
    while size <= MEGABYTE:
        text = HOSTILE_SHAPES[shape](size)
        start = time.perf_counter()
        call(text)
        took = time.perf_counter() - start
        assert took < 1.0, f"{shape}: {len(text)} characters took {took:.2f} s"
        size *= 2


_PATTERNS = [name for name, value in vars(redaction).items() if isinstance(value, re.Pattern)]


@pytest.mark.parametrize("shape", sorted(HOSTILE_SHAPES))
@pytest.mark.parametrize("pattern", _PATTERNS)
def test_every_pattern_is_linear(pattern: str, shape: str) -> None:
    """Each pattern of the module, on every hostile shape, is linear in the text."""
    compiled: re.Pattern[str] = getattr(redaction, pattern)
    _within_a_second_up_to_a_megabyte(shape, lambda text: compiled.sub("", text))


@pytest.mark.parametrize("shape", sorted(HOSTILE_SHAPES))
def test_secret_values_of_hostile_urls_are_linear(shape: str) -> None:
    _within_a_second_up_to_a_megabyte(shape, lambda text: secret_values({"endpoint_url": text}))


@pytest.mark.parametrize("shape", sorted(HOSTILE_SHAPES))
def test_messages_of_hostile_text_are_fast_and_say_its_length(shape: str) -> None:
    """A message shows a text longer than LONGEST_SHOWN by its length only (a cut before
    redaction could show a secret's start; redacting a megabyte for 2000 characters is waste)."""
    text = HOSTILE_SHAPES[shape](MEGABYTE)
    start = time.perf_counter()
    shown = [redact_text(text), redact(text), redact([text]), describe(text)]
    assert time.perf_counter() - start < 0.5
    for each in shown:
        assert f"<{len(text)} characters, not shown>" in repr(each)
    assert redact_text("x" * LONGEST_SHOWN, limit=10) == "x" * 10 + "..."


@pytest.mark.parametrize("shape", ["letters and digits", "a URL's long key", "'a://' repeated"])
def test_full_redaction_of_a_megabyte_is_linear(shape: str) -> None:
    """Without a limit (log records) the whole text is redacted, in linear time."""
    password = f"http://u:{PASSWORD}@h/ "
    _within_a_second_up_to_a_megabyte(
        shape, lambda text: _clean(redact_text(password + text + password, limit=None))
    )


def test_url_passwords_are_found_by_a_scan() -> None:
    """secret_values finds a URL's password after the user's first ':' (RFC 3986: the user
    has none), up to the last '@' of the authority (the password may hold '@')."""
    for url, password in (
        ("http://user:pa:ss@h/x", "pa:ss"),
        ("https://u:p@ss@host/x", "p@ss"),
        ("http://u:a@b:c@h", "a@b:c"),
        ("http://:hunter22@h", "hunter22"),
    ):
        assert password in secret_values({"endpoint_url": url}), url
    for url in ("http://user@h", "x://u:pass", "http://u:pass/x@y", "1http://u:pass@h"):
        assert secret_values({"endpoint_url": url}) == [], url
