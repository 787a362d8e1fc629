"""Unit tests of ckptstore.paths (Flink's Path rules, spec section 0)."""

from __future__ import annotations

import os

import pytest

from ckptstore.errors import InvalidArgumentError, InvalidPathError, MissingArgumentError
from ckptstore.paths import StoragePath, parse_storage_path


@pytest.mark.parametrize(
    ("text", "url"),
    [
        ("/x/y", "file:///x/y"),
        ("/x/y/", "file:///x/y"),
        ("/x//y///z", "file:///x/y/z"),
        ("file:/x/y", "file:///x/y"),
        ("file:///x/y", "file:///x/y"),
        ("local:///x/y", "file:///x/y"),
        ("FILE:///x", "file:///x"),
        ("memory://a/b", "memory:///a/b"),
        ("memory:///a/b/", "memory:///a/b"),
        ("s3://bucket/key/", "s3://bucket/key"),
        ("s3://bucket//a///b", "s3://bucket/a/b"),
        ("s3a://bucket/k", "s3a://bucket/k"),
        ("/a\\b\\c", "file:///a/b/c"),
        ("file:/a\\b", "file:///a/b"),
        ("memory://a\\b/./c/../d", "memory:///a/b/d"),
        ("s3://bucket/a\\b", "s3://bucket/a/b"),
    ],
)
def test_normalisation(text: str, url: str) -> None:
    """Spec section 0: backslash -> '/', '//' collapsed, trailing '/' dropped; local forms agree."""
    assert parse_storage_path(text).url == url


def test_relative_local_paths_are_made_absolute() -> None:
    """PTR10: a relative string resolves against the local file system (the working dir)."""
    assert parse_storage_path("a/b").url == "file://" + os.path.abspath("a/b")


def test_scheme_detection() -> None:
    assert parse_storage_path("/x").scheme == "file"
    assert parse_storage_path("file:/x").scheme == "file"
    assert parse_storage_path("local:///x").scheme == "file"
    assert parse_storage_path("s3://b/k").scheme == "s3"
    assert parse_storage_path("memory:///x").scheme == "memory"


def test_host_authority_paths() -> None:
    """sftp://host:port/dir: the URL keeps the host; the file system's path starts at '/'."""
    path = parse_storage_path("sftp://127.0.0.1:2222/ckpt//job/")
    assert path.scheme == "sftp"
    assert path.url == "sftp://127.0.0.1:2222/ckpt/job"
    assert path.fs_path == "/ckpt/job"
    assert path.child("chk-1").fs_path == "/ckpt/job/chk-1"
    assert parse_storage_path("s3://bucket/key").fs_path == "bucket/key"
    assert parse_storage_path("/x/y").fs_path == "/x/y"


def test_join_parent_name() -> None:
    base = parse_storage_path("s3://bucket/ckpt")
    child = base.child("job/chk-1")
    assert child.url == "s3://bucket/ckpt/job/chk-1"
    assert child.name == "chk-1"
    assert child.parent.url == "s3://bucket/ckpt/job"
    assert base.child("x").parent == base
    local = parse_storage_path("/a")
    assert local.parent == StoragePath("file", "/")
    assert local.child("b").url == "file:///a/b"
    assert local.parent.child("b").url == "file:///b"


@pytest.mark.parametrize("bad", ["", "   ", "s3://", "s3:bucket"])
def test_invalid(bad: str) -> None:
    with pytest.raises(InvalidArgumentError):
        parse_storage_path(bad)


def test_none_and_remote_file_host() -> None:
    with pytest.raises(MissingArgumentError):
        parse_storage_path(None)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        parse_storage_path("file://otherhost/x")
    with pytest.raises(InvalidArgumentError, match="authority 'localhost'"):
        parse_storage_path("file://localhost/x")  # Flink refuses it too


@pytest.mark.parametrize(
    "text",
    [
        "s3://bucket/victim?versionId=",  # s3fs: the key 'victim'
        "s3://bucket/victim?versionId=/chk-5",
        "s3a://bucket/a?b/c",
        "s3://bucket/jobs/*/chk-5",  # fsspec's rm and copy expand glob patterns
        "memory:///jobs/chk-?",
        "/jobs/[ab]/chk-1",
        "file:///tmp/x*y",
        "s3://bucket/a::memory://b",  # fsspec's URL chaining
        "sftp://127.0.0.1:22/dir/*",
    ],
)
def test_what_the_clients_read_as_syntax_is_refused(text: str) -> None:
    """DIS-7: a path the file system's client would read as another path never parses."""
    with pytest.raises(InvalidPathError, match="glob pattern, a version id"):
        parse_storage_path(text)


def test_characters_no_client_reads_as_syntax_stay() -> None:
    """'#', '%', ']' and ':' are characters of a key; an SFTP host may be an IPv6 literal."""
    assert parse_storage_path("s3://bucket/a#b/%41]:c").path == "bucket/a#b/%41]:c"
    assert parse_storage_path("sftp://[::1]:22/dir").fs_path == "/dir"
