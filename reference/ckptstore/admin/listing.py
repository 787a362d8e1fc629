"""One recursive listing of a root: every file below it with its size and modification time.

The first step of an audit (``ckptstore.admin.audit``), and the only one that touches every
object: on S3 it sends ListObjectsV2 pages and nothing else (sizes and ages come from the
listing, never from a HEAD per file); on directory file systems (local, SFTP) and
``memory://`` it walks the tree with fsspec's ``walk(detail=True)``, one directory listing at
a time. Both are iterators, so a root of millions of files streams. Directory markers (S3 keys
ending in ``/``) and directories are not files and are left out.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

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
    else:
        yield from _walk(fs, root)


def _list_s3(fs: Any, root: StoragePath, page_size: int) -> Iterator[ListedFile]:
    bucket, _, key = root.path.partition("/")
    prefix = f"{key.strip('/')}/" if key.strip("/") else ""
    request: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix, "MaxKeys": page_size}
    while True:
        with io_errors("list", root, fs):
            page = fs.call_s3("list_objects_v2", **request)
        for item in page.get("Contents") or ():
            name = str(item["Key"])
            if not name.startswith(prefix) or name.endswith("/"):
                continue
            yield ListedFile(
                root.child(name[len(prefix) :]).url,
                int(item.get("Size", 0)),
                modified_time(item),
            )
        token = page.get("NextContinuationToken")
        if not page.get("IsTruncated") or not token:
            return
        request["ContinuationToken"] = token


def _walk(fs: Any, root: StoragePath) -> Iterator[ListedFile]:
    base = root.fs_path.rstrip("/")
    with io_errors("list", root, fs):
        if not fs.isdir(root.fs_path):
            raise CheckpointNotFoundError(f"{root.shown} is no directory")
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
                root.child(name[len(base) + 1 :]).url,
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
