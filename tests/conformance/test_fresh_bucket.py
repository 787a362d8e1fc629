"""The S3 backends' ``fresh_bucket`` and the suite's ``second_bucket`` that uses it.

A bucket of a test's own is made for one block and removed afterwards with everything in it;
where the server refuses to make one, or the backend has none, the suite's tests skip with the
reason instead of failing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ckptconform.backends import BackendSettings
from ckptconform.backends.base import BackendUnavailableError
from ckptconform.backends.local import LocalBackend
from ckptconform.backends.moto import MotoBackend
from ckptconform.suite._driver import second_bucket


@pytest.fixture(scope="module")
def moto() -> Iterator[MotoBackend]:
    backend = MotoBackend(BackendSettings(s3_bucket="fresh-bucket-tests"))
    backend.start()
    yield backend
    backend.stop()


def _buckets(moto: MotoBackend) -> set[str]:
    return {b["Name"] for b in moto.raw.call_s3("list_buckets")["Buckets"]}


def test_the_bucket_is_new_and_empty_and_goes_away_with_its_content(moto):
    with moto.fresh_bucket("ckpt-entkey-") as name:
        assert name.startswith("ckpt-entkey-")
        assert len(name) == len("ckpt-entkey-") + 16
        assert name in _buckets(moto)
        assert moto.raw.find(name) == []
        moto.raw.pipe_file(f"{name}/a/b", b"state")
        moto.raw.call_s3("create_multipart_upload", Bucket=name, Key="open/upload")
    assert name not in _buckets(moto)
    assert "fresh-bucket-tests" in _buckets(moto)


def test_each_block_gets_its_own_bucket(moto):
    with moto.fresh_bucket() as first, moto.fresh_bucket() as second:
        assert first != second


def test_a_refused_bucket_is_unavailable_with_the_reason(moto, monkeypatch):
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise PermissionError("Access Denied")

    monkeypatch.setattr(moto.raw, "mkdir", refuse)
    with (
        pytest.raises(BackendUnavailableError, match=r"cannot create a bucket.*Access Denied"),
        moto.fresh_bucket(),
    ):
        pytest.fail("the block ran without a bucket")


@pytest.mark.parametrize("prefix", ["Upper-", "under_score-", "-dash", "x" * 48])
def test_a_prefix_no_bucket_name_can_start_with_is_refused(moto, prefix):
    with (
        pytest.raises(ValueError, match="cannot begin an S3 bucket name"),
        moto.fresh_bucket(prefix),
    ):
        pytest.fail("the block ran")


def test_the_suite_gets_the_bucket_as_a_url(moto):
    with second_bucket(moto, "ckpt-") as url:
        assert url.startswith("s3://ckpt-")
        assert moto.raw_path(url) in _buckets(moto)


def test_the_suite_skips_where_no_bucket_can_be_made(moto, monkeypatch):
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise PermissionError("Access Denied")

    monkeypatch.setattr(moto.raw, "mkdir", refuse)
    with (
        pytest.raises(pytest.skip.Exception, match="no second bucket: moto: cannot create"),
        second_bucket(moto),
    ):
        pytest.fail("the block ran without a bucket")


def test_the_suite_skips_on_backends_without_buckets():
    with (
        pytest.raises(pytest.skip.Exception, match="the local backend offers no second bucket"),
        second_bucket(LocalBackend()),
    ):
        pytest.fail("the block ran without a bucket")
