"""The S3 file systems of one process read botocore's data files once: every session they make
shares the process's loader for its data path, and nothing else."""

from __future__ import annotations

from typing import Any

import pytest

from ckptstore.stores import s3

OPTIONS = {"endpoint_url": "http://127.0.0.1:9", "key": "a", "secret": "b"}


def _session(fs: Any, refresh: bool = False) -> Any:
    fs.connect(refresh=refresh)  # makes the session and its client: no request is sent
    return fs.session


def test_file_systems_share_the_data_loader_not_the_session():
    first = _session(s3.instantiate(OPTIONS))
    second = _session(s3.instantiate({**OPTIONS, "key": "c"}))
    assert first is not second
    assert first.get_component("data_loader") is second.get_component("data_loader")


def test_another_data_path_has_a_loader_of_its_own(monkeypatch, tmp_path):
    usual = _session(s3.instantiate(OPTIONS)).get_component("data_loader")
    monkeypatch.setenv("AWS_DATA_PATH", str(tmp_path))
    other = _session(s3.instantiate(OPTIONS)).get_component("data_loader")
    assert other is not usual
    assert str(tmp_path) in other.search_paths


@pytest.mark.parametrize("owned", [True, False])
def test_a_refresh_makes_a_new_session_only_where_s3fs_would(owned):
    """s3fs's ``refresh=True`` makes a new session where s3fs made the old one, and keeps a
    session the caller gave it."""
    fs = s3.instantiate(OPTIONS)
    if not owned:
        from ckptstore.stores.budgeted_s3 import new_session

        fs.session, fs._session_is_owned = new_session(), False
    before = _session(fs)
    after = _session(fs, refresh=True)
    assert (after is not before) == owned
    assert after.get_component("data_loader") is before.get_component("data_loader")
    assert fs._session_is_owned == owned
