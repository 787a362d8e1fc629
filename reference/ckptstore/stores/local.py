"""The local file system (``file://``): ``os`` calls where they give more than fsspec's.

Exclusive creates are ``open(..., 'xb')`` (atomic ``O_EXCL``, ``fileno`` for fsync); a
committed state file is fsynced (FLINK-36421); ``_metadata`` is published by a staging file
linked to its name (``os.link`` never overwrites); copies are hard links, or exclusive copies
across devices.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import uuid
from typing import IO, Any, BinaryIO

from ckptstore.io_errors import io_errors
from ckptstore.paths import StoragePath
from ckptstore.stores.protocol import FsspecStore

__all__ = ["STAGING_SUFFIX", "LocalStore"]

#: The staging files of a local publish: ``.<name>.<hex>.inprogress``.
STAGING_SUFFIX = ".inprogress"


class LocalStore(FsspecStore):
    """``file``: real directories, no connection options, fsync on commit."""

    local = True

    def client_options(self, options: dict[str, Any]) -> dict[str, Any]:
        return {}  # the user's connection options are meant for the remote store

    def open_exclusive_write(self, fs: Any, path: StoragePath) -> IO[bytes]:
        return open(path.fs_path, "xb")

    def sync_and_close(self, writer: IO[bytes], path: StoragePath) -> None:
        writer.flush()
        with io_errors("sync", path):
            os.fsync(writer.fileno())
        writer.close()

    def publish(self, fs: Any, path: StoragePath, data: bytes, probe_dir: StoragePath) -> None:
        _publish_local(path, data)

    def remove_empty_directory(self, fs: Any, path: StoragePath) -> bool:
        os.rmdir(path.fs_path)
        return True

    def open_for_read(self, fs: Any, path: StoragePath, size: int) -> BinaryIO:
        return open(path.fs_path, "rb")

    def copy_exclusive(self, fs: Any, source: StoragePath, target: StoragePath, size: int) -> None:
        _copy_local_exclusive(source, target)


def _publish_local(path: StoragePath, data: bytes) -> None:
    """Write ``data`` to a staging file, fsync it and link it to ``path`` (never overwrites).

    Whatever fails (the write on a full disk or over the file size limit, the fsync, the
    link), the staging file is removed before the failure is raised.
    """
    directory = path.parent.path
    temp = f"{directory}/.{path.name}.{uuid.uuid4().hex}{STAGING_SUFFIX}"
    out = open(temp, "xb")  # noqa: SIM115 (closed below, before the staging file is removed)
    try:
        with out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.link(temp, path.fs_path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temp)
    with contextlib.suppress(OSError):
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def _copy_local_exclusive(source: StoragePath, target: StoragePath) -> None:
    """A hard link (``os.link`` never overwrites), else an exclusive ``open('xb')`` copy."""
    try:
        os.link(source.fs_path, target.fs_path)
        return
    except FileExistsError:
        raise
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            raise
    # no hard links here (another device, a file system without them): an exclusive copy
    with open(source.fs_path, "rb") as src:
        try:
            with open(target.fs_path, "xb") as dst:
                shutil.copyfileobj(src, dst)
        except FileExistsError:
            raise
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(target.fs_path)
            raise
