"""An SFTP server on 127.0.0.1 (asyncssh, in this process), reached through fsspec's ``sftp``.

The leg for remote file systems with real directories (SFTP here; HDFS, FTP and SMB behave
alike for a storage): directories must exist before a file goes in, the URL's authority is a
host (``sftp://127.0.0.1:<port>/ckptconform/...``), the file system's paths start at ``/``, and
the connection settings (host, port, user, password) come in ``storage_options`` as fsspec's
``SFTPFileSystem`` takes them. The server runs on its own event loop in a daemon thread, serves
a temporary directory as its root (chroot) and accepts one user with a random password; other
processes (Spark executors) reach it like any SFTP server. Needs ``asyncssh`` (server) and
``paramiko`` (fsspec's client): ``pip install 'checkpoint-conformance[sftp]'``.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ckptconform.backends.base import Backend, random_name

__all__ = ["ConnectionDrop", "SftpBackend"]

USER = "ckptconform"


@dataclass
class ConnectionDrop:
    """One connection drop :meth:`SftpBackend.dropping_connection` arms, and whether it hit."""

    operation: str
    path_part: bytes
    hits: int = 0


class SftpBackend(Backend):
    name = "sftp"
    scheme = "sftp"
    object_store = False
    cross_process = True
    #: an SFTP file is written in place: its bytes show before its writer closes it
    shows_unclosed_files = True

    planned_endpoint = "asyncssh SFTP server on 127.0.0.1, free port, started on first use"

    _dir: str | None = None
    _loop: asyncio.AbstractEventLoop | None = None
    _thread: threading.Thread | None = None
    _acceptor: Any = None
    _connections: set[Any]
    port: int | None = None
    _password: str = ""
    _drop: ConnectionDrop | None = None
    #: the path of each file the server has open (its handle object's id), for drops on READ
    _paths: dict[int, bytes]

    def availability(self) -> str | None:
        missing = []
        for module in ("asyncssh", "paramiko"):
            try:
                __import__(module)
            except ImportError as exc:
                missing.append(f"{module} ({exc})")
        if missing:
            return (
                f"sftp: {', '.join(missing)} not installed; "
                "pip install 'checkpoint-conformance[sftp]'"
            )
        return None

    def _start(self) -> None:
        self._dir = tempfile.mkdtemp(prefix="ckptconform-sftp-")
        self._connections = set()
        self._paths = {}
        self._password = f"pw-{random_name(20)}"
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="ckptconform-sftp", daemon=True
        )
        self._thread.start()
        self._acceptor = asyncio.run_coroutine_threadsafe(self._listen(), self._loop).result(30)
        self.port = int(self._acceptor.sockets[0].getsockname()[1])
        self._fs = _inspecting_filesystem(self.storage_options)

    async def _listen(self) -> Any:
        import asyncssh

        assert self._dir is not None
        chroot, password, connections = os.fsencode(self._dir), self._password, self._connections

        backend = self

        class _DroppingSFTPServer(asyncssh.SFTPServer):
            """The server's SFTP session, which drops its connection where a test asks."""

            async def open(self, path: bytes, pflags: int, attrs: Any) -> Any:
                await backend._maybe_drop("open", path, self)
                handle = await _answer(super().open(path, pflags, attrs))
                backend._paths[id(handle)] = path
                return handle

            async def read(self, file_obj: Any, offset: int, size: int) -> bytes:
                await backend._maybe_drop("read", backend._paths.get(id(file_obj), b""), self)
                return bytes(await _answer(super().read(file_obj, offset, size)))

            async def close(self, file_obj: Any) -> None:
                path = backend._paths.pop(id(file_obj), b"")
                await backend._maybe_drop("close", path, self)
                await _answer(super().close(file_obj))

        class _Server(asyncssh.SSHServer):
            def connection_made(self, conn: Any) -> None:
                self._conn = conn
                connections.add(conn)

            def connection_lost(self, exc: Exception | None) -> None:
                connections.discard(self._conn)

            def begin_auth(self, username: str) -> bool:
                return True

            def password_auth_supported(self) -> bool:
                return True

            def validate_password(self, username: str, given: str) -> bool:
                return username == USER and given == password

        return await asyncssh.listen(
            "127.0.0.1",
            0,
            server_host_keys=[asyncssh.generate_private_key("ssh-ed25519")],
            server_factory=_Server,
            sftp_factory=lambda channel: _DroppingSFTPServer(channel, chroot=chroot),
            allow_scp=False,
        )

    @contextlib.contextmanager
    def dropping_connection(self, operation: str, path_part: str) -> Iterator[ConnectionDrop]:
        """While open, the server drops the client's connection, once, instead of answering
        the next ``operation`` ("open", "read" or "close") on a file whose path holds
        ``path_part`` (a fault for REQ-12: the client sees its connection lost mid-request)."""
        drop = ConnectionDrop(operation, os.fsencode(path_part))
        self._drop = drop
        try:
            yield drop
        finally:
            self._drop = None

    async def _maybe_drop(self, operation: str, path: bytes, server: Any) -> None:
        drop = self._drop
        if drop is None or drop.operation != operation or drop.path_part not in path:
            return
        self._drop = None
        drop.hits += 1
        import asyncssh

        server.connection.abort()
        # no answer can reach the client any more; the session ends with its connection
        raise asyncssh.SFTPConnectionLost("the connection was dropped (ckptconform REQ-12)")

    async def _close_server(self) -> None:
        """Stop listening, then close every client connection (other processes' too) and
        wait until each has ended, so no task of the server outlives its loop."""
        self._acceptor.close()
        await self._acceptor.wait_closed()
        open_connections = list(self._connections)
        for conn in open_connections:
            conn.close()
        for conn in open_connections:
            await conn.wait_closed()
        self._connections.clear()

    def _stop(self) -> None:
        if self._fs is not None:
            client = getattr(self._fs, "client", None)
            if client is not None:
                client.close()
            self._fs = None
        if self._loop is not None:
            loop = self._loop
            if self._acceptor is not None:
                asyncio.run_coroutine_threadsafe(self._close_server(), loop).result(30)
                self._acceptor = None
            loop.call_soon_threadsafe(loop.stop)
            if self._thread is not None:
                self._thread.join(timeout=10)
                self._thread = None
            self._loop = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    @property
    def storage_options(self) -> dict[str, Any]:
        return {
            "host": "127.0.0.1",
            "port": self.port,
            "username": USER,
            "password": self._password,
            # paramiko's option of nested sequences (legacy algorithms it need not offer):
            # implementations must carry and show options of any shape, not only strings
            "disabled_algorithms": {
                "ciphers": ("3des-cbc",),
                "kex": ["diffie-hellman-group1-sha1"],
            },
        }

    def unreachable_options(self, port: int) -> dict[str, Any]:
        return {**self.storage_options, "port": port}

    def unreachable_url(self, url: str, port: int) -> str:
        return url.replace(f"//127.0.0.1:{self.port}/", f"//127.0.0.1:{port}/", 1)

    @property
    def base_url(self) -> str:
        if self.port is None:
            self.start()
        return f"sftp://127.0.0.1:{self.port}/ckptconform"

    def url_of(self, raw_path: str) -> str:
        return f"sftp://127.0.0.1:{self.port}/{raw_path.lstrip('/')}"

    def describe(self) -> str:
        where = f" on 127.0.0.1:{self.port}, root {self._dir}" if self.port else ""
        return f"sftp (asyncssh SFTP server{where})"


def _inspecting_filesystem(options: dict[str, Any]) -> Any:
    """fsspec's SFTP file system for the suite's own inspection (``raw``), listing a directory
    with one request per page of names. fsspec lists with paramiko's ``listdir_iter``, which
    sends 50 requests ahead for every directory, and a test's checks list its tree again and
    again: on this leg that was most of a test's time."""
    from fsspec.implementations.sftp import SFTPFileSystem

    class InspectingSFTPFileSystem(SFTPFileSystem):  # type: ignore[misc]
        def ls(self, path: str, detail: bool = False) -> list[Any]:
            path = self._strip_protocol(path)
            stats = [self._decode_stat(stat, path) for stat in self.ftp.listdir_attr(path)]
            return stats if detail else sorted(stat["name"] for stat in stats)

    return InspectingSFTPFileSystem(skip_instance_cache=True, **options)


async def _answer(result: Any) -> Any:
    """What an ``asyncssh.SFTPServer`` method gave: its value, awaited where it is awaitable."""
    return await result if inspect.isawaitable(result) else result
