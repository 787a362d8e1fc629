"""The sftp backend: an asyncssh SFTP server on 127.0.0.1 that the suite starts and stops."""

from __future__ import annotations

import asyncio
import builtins
import socket
from typing import Any

import fsspec
import pytest

from ckptconform.backends.sftp import USER, SftpBackend


def _refused(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(2)
        return probe.connect_ex(("127.0.0.1", port)) != 0


def test_serves_a_directory_tree_on_loopback_and_stops_everything() -> None:
    backend = SftpBackend()
    try:
        root = backend.new_root()
        assert root.startswith(f"sftp://127.0.0.1:{backend.port}/ckptconform/")
        options = backend.storage_options
        assert options["host"] == "127.0.0.1"
        assert options["username"] == USER
        assert options["password"] not in backend.describe()
        # a client of its own (another connection), as an implementation has
        client = fsspec.filesystem("sftp", skip_instance_cache=True, **options)
        path = backend.raw_path(f"{root}/chk-1/state")
        client.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
        with client.open(path, "wb") as out:
            out.write(b"bytes")
        assert backend.raw.cat_file(path) == b"bytes"
        assert backend.url_of(path) == f"{root}/chk-1/state"
        assert len(backend._connections) == 2
        port = backend.port
        assert port is not None
        loop = backend._loop
        assert loop is not None
    finally:
        backend.stop()
    assert _refused(port)
    assert backend._connections == set()
    assert backend._loop is None
    assert backend._dir is None
    # every connection ended before the loop stopped: no task of the server is left pending
    # (it would be destroyed pending when the loop is collected)
    assert not [task for task in asyncio.all_tasks(loop) if not task.done()]


def test_refuses_a_wrong_password() -> None:
    backend = SftpBackend()
    try:
        backend.start()
        options = {**backend.storage_options, "password": "not-it"}
        with pytest.raises(Exception, match=r"(?i)auth"):
            fsspec.filesystem("sftp", skip_instance_cache=True, **options)
    finally:
        backend.stop()


def test_without_its_packages_the_leg_is_skipped_with_the_install_hint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real_import = builtins.__import__

    def without_asyncssh(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "asyncssh":
            raise ImportError("No module named 'asyncssh'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", without_asyncssh)
    reason = SftpBackend().availability()
    assert reason is not None
    assert "asyncssh" in reason
    assert "pip install 'checkpoint-conformance[sftp]'" in reason
