"""Remote file systems with directories on hosts (SFTP, FTP, HDFS, SMB: ``paths.HOST_SCHEMES``).

They have real directories, which the coordinator creates, and no atomic publish: ``_metadata``
is an exclusive create and a write (``FsspecStore.publish``). SFTP and FTP clients serve one
thread each (paramiko's SFTP client mixes up the answers of concurrent requests and hangs):
each thread gets its own connection, made anew when the server dropped it (REQ-12).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import IO, Any

from ckptstore.paths import StoragePath
from ckptstore.stores.protocol import FsspecStore, copy_options

__all__ = ["THREAD_BOUND_SCHEMES", "RemoteStore", "exclusive_mode"]

#: Schemes whose fsspec clients must not be shared by threads: one connection per thread.
THREAD_BOUND_SCHEMES = frozenset({"sftp", "ssh", "ftp"})


class RemoteStore(FsspecStore):
    """A file system on a host; ``thread_bound`` for the clients of one thread."""

    def __init__(self, *, thread_bound: bool = False) -> None:
        self.thread_bound = thread_bound

    def instantiate(self, scheme: str, options: Mapping[str, Any]) -> Any:
        kwargs = copy_options(options)
        if self.thread_bound:
            kwargs["skip_instance_cache"] = True  # fsspec's cache would share it between threads
        return super().instantiate(scheme, kwargs)

    def connected(self, fs: Any) -> bool:
        return _connected(fs)

    def exclusive_mode(self, fs: Any) -> str:
        return exclusive_mode(fs)

    def open_exclusive_write(self, fs: Any, path: StoragePath) -> IO[bytes]:
        writer = super().open_exclusive_write(fs, path)
        pipelined = getattr(writer, "set_pipelined", None)
        if callable(pipelined):  # paramiko's SFTP files: writes need not wait for acks
            pipelined(True)
        return writer


def exclusive_mode(fs: Any) -> str:
    """The mode that creates a file exclusively for writing on ``fs``: ``"xb"``, but
    ``"wxb"`` for fsspec's SFTP file system, whose client (paramiko) does not take ``x`` to
    mean writing (it opens ``O_CREAT | O_EXCL`` without ``O_WRONLY``: every write fails)."""
    return "wxb" if "sftp" in getattr(fs, "protocol", ()) else "xb"


def _connected(fs: Any) -> bool:
    """Whether the connection of a thread-bound client (paramiko's, fsspec's ``sftp``) is
    still up; True for clients that do not say."""
    transport = getattr(getattr(fs, "client", None), "get_transport", None)
    if not callable(transport):
        return True
    active = transport()
    return active is not None and bool(active.is_active())
