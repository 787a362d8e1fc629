"""The file-system registry and scheme traits (ckptstore.filesystems)."""

from __future__ import annotations

import pickle

import fsspec

from ckptstore.filesystems import (
    filesystem_options,
    get_filesystem,
    register_filesystem,
    traits_for,
)


def test_tokens_are_stable_and_free_of_secrets() -> None:
    """Handles carry a token: same options -> same token, no credential inside."""
    options = {"key": "AKIASECRET", "secret": "S3CR3T", "endpoint_url": "http://127.0.0.1:1"}
    token = register_filesystem("s3", options)
    assert token == register_filesystem("s3", dict(reversed(list(options.items()))))
    assert token != register_filesystem("s3", {**options, "secret": "other"})
    assert "S3CR3T" not in token
    assert "AKIA" not in token
    assert len(token) < 32
    assert token.isascii()
    assert pickle.loads(pickle.dumps(token)) == token


def test_local_and_memory_ignore_remote_options() -> None:
    """file and memory take no options; the user's options are meant for the object store."""
    assert filesystem_options("file", {"key": "x"}) == {}
    assert register_filesystem("memory", {"key": "x"}) == register_filesystem("memory")


def test_s3_listings_cache_off_by_default() -> None:
    """S3: use_listings_cache=False unless the user set it."""
    assert filesystem_options("s3", {})["use_listings_cache"] is False
    assert filesystem_options("s3", {"use_listings_cache": True})["use_listings_cache"] is True


def test_unknown_token_falls_back_to_defaults() -> None:
    """A token unknown in this process gives the scheme's fsspec defaults."""
    fs = get_filesystem("memory", "fs-unknown")
    assert isinstance(fs, type(fsspec.filesystem("memory")))
    assert get_filesystem("memory", register_filesystem("memory")) is get_filesystem("memory")


def test_traits() -> None:
    """Object stores have no directories; file and memory do."""
    s3 = traits_for("s3")
    assert s3.object_store
    assert not s3.real_directories
    assert s3.entropy_allowed
    assert s3.read_with_size_hint
    for scheme in ("file", "memory"):
        traits = traits_for(scheme)
        assert traits.real_directories
        assert not traits.object_store
    assert not traits_for("file").entropy_allowed
    assert traits_for("memory").entropy_allowed
    assert traits_for("gs").object_store
