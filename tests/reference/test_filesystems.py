"""The file-system registry and scheme traits (ckptstore.stores.registry)."""

from __future__ import annotations

import errno
import io
import os
import pickle
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import fsspec
import fsspec.config
import pytest

from ckptstore.io_errors import host_endpoint, public_endpoint
from ckptstore.paths import parse_storage_path
from ckptstore.stores import local, operations, registry, retry
from ckptstore.stores.adapters import traits_for
from ckptstore.stores.registry import (
    filesystem_options,
    get_filesystem,
    register_filesystem,
    store_token,
)
from ckptstore.stores.remote import exclusive_mode
from ckptstore.stores.retry import retry_budget


def test_tokens_name_the_store_and_never_the_credentials() -> None:
    """Handles carry a store token: scheme + endpoint (no userinfo/query), no credentials."""
    options = {"key": "AKIASECRET", "secret": "S3CR3T", "endpoint_url": "http://127.0.0.1:1"}
    token = register_filesystem("s3", options)
    assert token == register_filesystem("s3", dict(reversed(list(options.items()))))
    # another secret, another key, userinfo/query/trailing slash/case: the same store
    assert token == register_filesystem("s3", {**options, "secret": "other", "key": "K2"})
    assert token == store_token("s3", {"endpoint_url": "http://u:pw@127.0.0.1:1/?sig=x"})
    assert token == store_token("s3", {"endpoint_url": "HTTP://127.0.0.1:1/"})
    assert token == store_token("s3", {"client_kwargs": {"endpoint_url": "http://127.0.0.1:1"}})
    assert token == store_token("s3a", options)  # spellings of one store
    # another endpoint is another store
    assert token != store_token("s3", {**options, "endpoint_url": "http://127.0.0.1:2"})
    assert token != store_token("gs", options)
    # without an endpoint the region picks AWS's endpoint
    east = store_token("s3", {"client_kwargs": {"region_name": "us-east-1"}})
    assert east != store_token("s3", {"client_kwargs": {"region_name": "eu-west-1"}})
    assert "S3CR3T" not in token
    assert "AKIA" not in token
    assert len(token) < 32
    assert token.isascii()
    assert pickle.loads(pickle.dumps(token)) == token


def test_public_endpoint_strips_userinfo_query_and_fragment() -> None:
    """What may be hashed or shown of an endpoint URL."""
    assert public_endpoint("https://user:pw@Host.Example:9000/base/?X-Amz-Signature=s#f") == (
        "https://host.example:9000/base"
    )
    assert public_endpoint("127.0.0.1:9000") == "127.0.0.1:9000"
    assert public_endpoint(None) is None
    assert public_endpoint("") is None


def test_s3_options_get_bounded_defaults_that_the_user_can_override(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A read that cannot reach its endpoint fails in seconds unless the user wants longer."""
    for name in ("AWS_MAX_ATTEMPTS", "AWS_RETRY_MODE"):
        monkeypatch.delenv(name, raising=False)
    options = filesystem_options("s3", {"endpoint_url": "http://127.0.0.1:1"})
    # issue 9: s3fs's own loop makes one pass, so it never multiplies botocore's 3 attempts
    assert options["retries"] == 1
    assert options["config_kwargs"] == {"connect_timeout": 2, "read_timeout": 20}
    assert retry.policy_of(options) == retry.DEFAULT_POLICY
    mine = filesystem_options(
        "s3",
        {"retries": 7, "config_kwargs": {"connect_timeout": 30, "retries": {"mode": "adaptive"}}},
    )
    assert mine["retries"] == 7
    assert mine["config_kwargs"] == {
        "connect_timeout": 30,
        "read_timeout": 20,
        "retries": {"mode": "adaptive"},
    }
    assert retry.policy_of(mine) is None  # botocore's own retries, as configured
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "9")  # botocore's own setting is respected
    assert retry.policy_of(filesystem_options("s3", {})) is None


def test_botocores_own_attempts_where_the_user_set_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """The retry config the user gave botocore (or the environment did) hands the retries to
    botocore's own handler, and the budget counts its requests per call."""
    for name in ("AWS_MAX_ATTEMPTS", "AWS_RETRY_MODE"):
        monkeypatch.delenv(name, raising=False)
    assert retry.policy_of(filesystem_options("s3", {})) == retry.DEFAULT_POLICY
    assert retry_budget(None).max_attempts == retry.DEFAULT_RETRY_ATTEMPTS - 1
    for retries, requests in (
        ({"max_attempts": 0}, 1),
        ({"max_attempts": 5}, 6),
        ({"total_max_attempts": 4}, 4),
        ({"total_max_attempts": 0}, 1),
        ({"mode": "adaptive"}, 3),
        ({}, 3),
    ):
        options = {"config_kwargs": {"retries": retries}}
        assert retry.policy_of(filesystem_options("s3", options)) is None, retries
        budget = retry_budget(options)
        assert budget.max_attempts == requests - 1, retries
        assert budget.seconds is None, retries
        assert budget.throttle_attempts is None, retries
    monkeypatch.setenv("AWS_RETRY_MODE", "standard")
    assert retry.policy_of(filesystem_options("s3", {})) is None
    assert retry_budget(None).max_attempts == retry.DEFAULT_RETRY_ATTEMPTS - 1
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "7")
    assert retry_budget(None).max_attempts == 6
    assert retry_budget({"retry_attempts": 2}).max_attempts == 1  # the keys win


def test_the_environments_retry_settings_are_folded_into_the_options(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """AWS_MAX_ATTEMPTS and AWS_RETRY_MODE become config_kwargs' retries where those do not
    set them (botocore's precedence), so the options key the file-system cache on them."""
    for name in ("AWS_MAX_ATTEMPTS", "AWS_RETRY_MODE"):
        monkeypatch.delenv(name, raising=False)
    assert retry.with_environment_retries({"read_timeout": 5}) == {"read_timeout": 5}
    given = {"retries": {"mode": "legacy"}}
    assert retry.with_environment_retries(given) == given
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", " 2 ")
    assert retry.with_environment_retries({}) == {"retries": {"total_max_attempts": 2}}
    assert retry.with_environment_retries({"retries": {"max_attempts": 0}}) == {
        "retries": {"max_attempts": 0}
    }
    assert retry.with_environment_retries({"retries": {"total_max_attempts": 5}}) == {
        "retries": {"total_max_attempts": 5}
    }
    monkeypatch.setenv("AWS_RETRY_MODE", "adaptive")
    assert retry.with_environment_retries(given) == {
        "retries": {"mode": "legacy", "total_max_attempts": 2}
    }
    assert given == {"retries": {"mode": "legacy"}}  # not modified
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "many")  # not a count: botocore's default stays
    assert retry.with_environment_retries({}) == {"retries": {"mode": "adaptive"}}
    monkeypatch.delenv("AWS_RETRY_MODE")
    assert retry.with_environment_retries({}) == {}


def test_s3fs_instances_get_the_retries_option() -> None:
    """s3fs takes ``retries`` as an attribute only; the registry sets it on its instance."""
    pytest.importorskip("s3fs")
    token = register_filesystem(
        "s3", {"endpoint_url": "http://127.0.0.1:3", "retries": 4}, authorities=["b-retries"]
    )
    fs = get_filesystem("s3", token, authority="b-retries")
    assert fs.retries == 4
    assert fs.config_kwargs["connect_timeout"] == 2


def test_fsspec_configuration_is_the_base_of_every_option_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Rule 3's source (FSSPEC_S3_* / config dir) sits below the storage's own options."""
    monkeypatch.setitem(
        fsspec.config.conf, "s3", {"endpoint_url": "http://127.0.0.1:4", "key": "env-key"}
    )
    assert filesystem_options("s3", None)["endpoint_url"] == "http://127.0.0.1:4"
    assert filesystem_options("s3", {"key": "mine"})["key"] == "mine"
    assert store_token("s3", None) == store_token("s3", {"endpoint_url": "http://127.0.0.1:4"})


def test_resolution_rules_store_then_bucket_then_fsspec(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rule 1 (same store, most recent, preferring the bucket), rule 2 (bucket), rule 3."""
    pytest.importorskip("s3fs")
    monkeypatch.setattr(registry, "_REGISTRATIONS", {})
    monkeypatch.setattr(registry, "_BY_STORE", {})
    monkeypatch.setattr(registry, "_BY_STORE_AUTHORITY", {})
    monkeypatch.setattr(registry, "_BY_AUTHORITY", {})
    monkeypatch.setattr(registry, "_INSTANCES", {})
    monkeypatch.setitem(fsspec.config.conf, "s3", {"endpoint_url": "http://127.0.0.1:9"})

    def used(token: str | None, bucket: str) -> tuple[str, str | None]:
        fs = get_filesystem("s3", token, authority=bucket)
        return fs.endpoint_url, fs.key

    one = {"endpoint_url": "http://127.0.0.1:5"}
    two = {"endpoint_url": "http://127.0.0.1:6"}
    t1 = register_filesystem("s3", {**one, "key": "old"}, authorities=["data"])
    t2 = register_filesystem("s3", {**two, "key": "proxy"}, authorities=["data"])
    # rule 1 beats rule 2: each store keeps its own handles, although two came later
    assert used(t1, "data") == ("http://127.0.0.1:5", "old")
    assert used(t2, "data") == ("http://127.0.0.1:6", "proxy")
    # most recent registration of a store wins (a rotated secret)
    register_filesystem("s3", {**one, "key": "rotated"}, authorities=["data"])
    assert used(t1, "data") == ("http://127.0.0.1:5", "rotated")
    # ... but a registration that named the handle's bucket beats one for another bucket
    register_filesystem("s3", {**one, "key": "tenant-b"}, authorities=["other"])
    assert used(t1, "data") == ("http://127.0.0.1:5", "rotated")
    assert used(t1, "elsewhere") == ("http://127.0.0.1:5", "tenant-b")
    # rule 2: an unknown store (or no token) goes where this process reaches the bucket
    assert used("fs-0000000000000000", "data") == ("http://127.0.0.1:5", "rotated")
    assert used(None, "other") == ("http://127.0.0.1:5", "tenant-b")
    # rule 3: nothing registered for store or bucket: fsspec's configuration
    assert used("fs-0000000000000000", "unknown-bucket") == ("http://127.0.0.1:9", None)


def test_local_and_memory_ignore_remote_options() -> None:
    """file and memory take no options; the user's options are meant for the object store."""
    assert filesystem_options("file", {"key": "x"}) == {}
    assert register_filesystem("memory", {"key": "x"}) == register_filesystem("memory")


def test_s3_listings_cache_off_by_default() -> None:
    """S3: use_listings_cache=False unless the user set it."""
    assert filesystem_options("s3", {})["use_listings_cache"] is False
    assert filesystem_options("s3", {"use_listings_cache": True})["use_listings_cache"] is True


def test_unknown_token_falls_back_to_defaults() -> None:
    """A token unknown in this process (and no bucket) gives the scheme's fsspec defaults."""
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
    for scheme in ("sftp", "hdfs"):  # remote file systems with directories (HOST_SCHEMES)
        traits = traits_for(scheme)
        assert traits.real_directories
        assert not traits.object_store
        assert not traits.server_side_copy
        assert not traits.entropy_allowed


def test_host_endpoints_name_host_and_port() -> None:
    """SFTP/HDFS options name a host: the store's identity and its messages show host:port."""
    assert host_endpoint({"host": "10.0.0.1", "port": 2222}) == "10.0.0.1:2222"
    assert host_endpoint({"host": "h"}) == "h"
    assert host_endpoint({"port": 22}) is None
    one = store_token("sftp", {"host": "127.0.0.1", "port": 1, "password": "pw-1"})
    assert one == store_token("sftp", {"host": "127.0.0.1", "port": 1, "password": "pw-2"})
    assert one != store_token("sftp", {"host": "127.0.0.1", "port": 2, "password": "pw-1"})
    assert "pw-1" not in one


class _FakeSftp:
    protocol = ("sftp", "ssh")


def test_exclusive_mode_adds_the_write_flag_for_sftp() -> None:
    """paramiko takes 'x' as O_CREAT|O_EXCL without O_WRONLY: SFTP files open with 'wxb'."""
    assert exclusive_mode(_FakeSftp()) == "wxb"
    assert exclusive_mode(fsspec.filesystem("memory")) == "xb"


# --------------------------------------------------------------------------- failed publishes

#: Publishes ``_metadata`` of argv[2] bytes into argv[1] under a file size limit of argv[3]
#: bytes (SIGXFSZ ignored, so writes beyond it fail with EFBIG); prints the error's errno.
_LIMITED_PUBLISH = """
import resource, signal, sys
from ckptstore.stores.operations import publish_exclusive
from ckptstore.paths import parse_storage_path
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[3]), resource.RLIM_INFINITY))
target = parse_storage_path(sys.argv[1]).child("_metadata")
try:
    publish_exclusive(None, target, b"m" * int(sys.argv[2]))
except OSError as error:
    print(type(error).__name__, error.errno)
else:
    print("published")
"""


@pytest.mark.skipif(not hasattr(signal, "SIGXFSZ"), reason="no file size limits here")
def test_a_local_publish_over_the_file_size_limit_leaves_nothing(tmp_path: Path) -> None:
    """A ``_metadata`` write that fails part-way (EFBIG, as on a full disk) removes its
    staging file; a later publish of a smaller one succeeds in the same directory."""
    directory = parse_storage_path(str(tmp_path))
    child = subprocess.run(
        [sys.executable, "-c", _LIMITED_PUBLISH, directory.url, str(1 << 20), str(64 << 10)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        timeout=60,
        check=True,
    )
    assert child.stdout.split() == ["CheckpointIOError", str(errno.EFBIG)], child.stderr
    assert list(tmp_path.iterdir()) == []
    operations.publish_exclusive(None, directory.child("_metadata"), b"small")
    assert [p.name for p in tmp_path.iterdir()] == ["_metadata"]


@pytest.mark.parametrize("step", ["write", "fsync", "link"])
def test_every_failing_step_of_a_local_publish_removes_its_staging_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    """Whichever step fails (write, fsync or link), no staging file stays behind."""

    def failing(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    if step == "write":
        monkeypatch.setattr(local, "open", _failing_writes, raising=False)
    else:
        monkeypatch.setattr(local.os, step, failing)
    with pytest.raises(OSError) as error:
        operations.publish_exclusive(
            None, parse_storage_path(str(tmp_path)).child("_metadata"), b"m"
        )
    assert error.value.errno == errno.ENOSPC
    assert list(tmp_path.iterdir()) == []


def _failing_writes(path: str, mode: str) -> Any:
    """``open`` whose files fail every write after creating the file (a full disk)."""

    class FullDisk(io.FileIO):
        def write(self, data: Any) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

    return FullDisk(path, mode.replace("b", ""))


class _HalfWritingFs:
    """A file system without an atomic publish (as SFTP) whose files fail their writes."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.removed: list[str] = []

    def open(self, path: str, mode: str) -> Any:
        return _failing_writes(path, "xb")

    def rm_file(self, path: str) -> None:
        self.removed.append(path)
        os.unlink(path)


def test_a_failed_publish_removes_the_half_written_file_it_created(tmp_path: Path) -> None:
    """Where the publish writes the target itself (SFTP), a failure deletes the file it
    created exclusively; a target that existed before is never deleted."""
    fs = _HalfWritingFs(tmp_path)
    target = parse_storage_path(f"sftp://host:22{tmp_path}/_metadata")
    with pytest.raises(OSError):
        operations.publish_exclusive(fs, target, b"metadata")
    assert fs.removed == [target.fs_path]
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "_metadata").write_bytes(b"first")
    with pytest.raises(FileExistsError):
        operations.publish_exclusive(fs, target, b"metadata")
    assert (tmp_path / "_metadata").read_bytes() == b"first"
