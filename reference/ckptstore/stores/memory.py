"""fsspec's in-memory file system (``memory://``): one store per process, shared by threads.

Its exclusive create, publish, copy and directory removal check and act under one process-wide
lock (:data:`MEMORY_LOCK`): fsspec's memory file system checks nothing atomically itself.
"""

from __future__ import annotations

import errno
import os
import threading
from typing import IO, Any, cast

from ckptstore.paths import StoragePath
from ckptstore.stores.protocol import FsspecStore

__all__ = ["MEMORY_LOCK", "MemoryStore"]

#: Guards every check-then-act on the memory file system (made anew in a forked child).
MEMORY_LOCK = threading.Lock()


class MemoryStore(FsspecStore):
    """``memory``: real directories, no connection options, check-and-act under a lock."""

    local = True

    def client_options(self, options: dict[str, Any]) -> dict[str, Any]:
        return {}

    def open_exclusive_write(self, fs: Any, path: StoragePath) -> IO[bytes]:
        with MEMORY_LOCK:
            return cast(IO[bytes], fs.open(path.fs_path, "xb"))

    def publish(self, fs: Any, path: StoragePath, data: bytes, probe_dir: StoragePath) -> None:
        with MEMORY_LOCK:
            if fs.exists(path.fs_path):
                raise FileExistsError(errno.EEXIST, "exists", path.url)
            fs.pipe_file(path.fs_path, data)  # the whole file in one step

    def remove_empty_directory(self, fs: Any, path: StoragePath) -> bool:
        with MEMORY_LOCK:
            return super().remove_empty_directory(fs, path)

    def copy_exclusive(self, fs: Any, source: StoragePath, target: StoragePath, size: int) -> None:
        with MEMORY_LOCK:
            if fs.exists(target.fs_path):
                raise FileExistsError(errno.EEXIST, "exists", target.url)
            fs.copy(source.fs_path, target.fs_path)


def _rearm_after_fork() -> None:
    """In a forked child: a fresh lock (a parent's thread may have held it at the fork)."""
    global MEMORY_LOCK
    MEMORY_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_rearm_after_fork)
