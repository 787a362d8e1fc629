"""One recursive listing of a root: every file below it with its size and modification time.

The first step of an audit (``ckptstore.admin.audit``), and the only one that touches every
object: on S3 it sends ListObjectsV2 pages and nothing else (sizes and ages come from the
listing, never from a HEAD per file); on directory file systems (local, SFTP) and
``memory://`` it walks the tree with fsspec's ``walk(detail=True)``, one directory listing at
a time (fsspec's own local file system: ``os.scandir`` directly, with the answers fsspec would
give, at under half the cost). All are iterators, so a root of millions of files
streams. Directory markers (S3 keys ending in ``/``) and directories are not files and are
left out.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from fsspec.implementations.local import LocalFileSystem

from ckptstore.errors import CheckpointNotFoundError
from ckptstore.io_errors import io_errors
from ckptstore.paths import StoragePath
from ckptstore.stores.operations import path_is_s3

__all__ = ["PAGE_SIZE", "ListedFile", "list_files", "modified_time"]

#: Keys per ListObjectsV2 page (S3's maximum).
PAGE_SIZE = 1000


@dataclass(frozen=True, slots=True)
class ListedFile:
    """One file found below a root."""

    #: the file's canonical URL (``StoragePath.url``)
    url: str
    size: int
    #: last modification, seconds since the epoch; ``None`` where the store does not say
    modified: float | None


def list_files(fs: Any, root: StoragePath, *, page_size: int = PAGE_SIZE) -> Iterator[ListedFile]:
    """Every file below ``root`` (module docstring). A root that does not exist on a
    directory file system raises ``CheckpointNotFoundError``; on an object store an absent
    prefix is an empty one (telling them apart would cost a request)."""
    if path_is_s3(root):
        yield from _list_s3(fs, root, page_size)
    elif type(fs) is LocalFileSystem and os.sep == "/":
        yield from _scan_local(fs, root)
    else:
        yield from _walk(fs, root)


def _url_prefix(root: StoragePath) -> str:
    """What ``root.child(name).url`` puts before ``name``."""
    return root.child("").url


def _list_s3(fs: Any, root: StoragePath, page_size: int) -> Iterator[ListedFile]:
    bucket, _, key = root.path.partition("/")
    prefix = f"{key.strip('/')}/" if key.strip("/") else ""
    request: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix, "MaxKeys": page_size}
    urls = _url_prefix(root)
    while True:
        with io_errors("list", root, fs):
            page = fs.call_s3("list_objects_v2", **request)
        for item in page.get("Contents") or ():
            name = str(item["Key"])
            if not name.startswith(prefix) or name.endswith("/"):
                continue
            yield ListedFile(
                urls + name[len(prefix) :],
                int(item.get("Size", 0)),
                modified_time(item),
            )
        token = page.get("NextContinuationToken")
        if not page.get("IsTruncated") or not token:
            return
        request["ContinuationToken"] = token


def _require_directory(fs: Any, root: StoragePath) -> None:
    with io_errors("list", root, fs):
        if not fs.isdir(root.fs_path):
            raise CheckpointNotFoundError(f"{root.shown} is no directory")


def _scan_local(fs: Any, root: StoragePath) -> Iterator[ListedFile]:
    """``_walk`` on fsspec's local file system without its per-file ``info`` dictionaries:
    the same files, sizes (a symbolic link's target's size, 0 when it dangles) and ages (the
    entry's own ``lstat``); a directory that cannot be listed is left out, as fsspec's
    ``walk`` does."""
    _require_directory(fs, root)
    base = root.fs_path.rstrip("/")
    urls = _url_prefix(root)
    pending = [root.fs_path]
    while pending:
        try:
            files, directories = _scan_directory(pending.pop())
        except OSError:
            continue
        pending += directories
        for path, size, modified in files:
            if path.startswith(base + "/"):
                yield ListedFile(urls + path[len(base) + 1 :], size, modified)


def _scan_directory(directory: str) -> tuple[list[tuple[str, int, float]], list[str]]:
    """One directory's files (path, size, modification time) and subdirectories; an entry
    gone meanwhile is left out, any other failure is the directory's."""
    files = []
    directories = []
    with os.scandir(directory) as entries:
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    directories.append(entry.path)
                    continue
                status = entry.stat(follow_symlinks=False)
                size = status.st_size
                if entry.is_symlink():
                    try:
                        size = entry.stat(follow_symlinks=True).st_size
                    except OSError:
                        size = 0
            except FileNotFoundError:
                continue
            files.append((entry.path, size, status.st_mtime))
    return files, directories


def _walk(fs: Any, root: StoragePath) -> Iterator[ListedFile]:
    base = root.fs_path.rstrip("/")
    _require_directory(fs, root)
    urls = _url_prefix(root)
    walker = fs.walk(root.fs_path, detail=True)
    while True:
        with io_errors("list", root, fs):
            step = next(walker, None)
        if step is None:
            return
        _directory, _subdirectories, files = step
        for info in files.values():
            name = str(info["name"])
            if info.get("type") == "directory" or not name.startswith(base + "/"):
                continue
            yield ListedFile(
                urls + name[len(base) + 1 :],
                int(info.get("size") or 0),
                modified_time(info),
            )


def modified_time(info: Mapping[str, Any]) -> float | None:
    """The modification time an fsspec info or an S3 listing entry names, as epoch seconds:
    ``LastModified`` (S3), ``mtime`` (local: a float; SFTP: a datetime), ``created``
    (``memory://``, which keeps no other)."""
    for key in ("LastModified", "mtime", "last_modified", "created"):
        value = info.get(key)
        if isinstance(value, datetime.datetime):
            if value.tzinfo is None:
                value = value.replace(tzinfo=datetime.UTC)
            return value.timestamp()
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    return None
