"""The listing of a root cut into shares that separate processes list (the Spark audit).

:func:`plan_listing` runs where the work is planned: it lists the root's top levels one
directory at a time (on S3 ListObjectsV2 with ``Delimiter=/``: a page per 1000 entries of one
level, whatever lies below them) and names each directory Flink's layout makes a natural share
of work: a job (32 hex characters), a ``chk-<n>``, ``shared``, ``taskowned`` or ``savepoint-*``
directory. Any other directory (``flink/checkpoints/``, a directory of savepoints) is listed
one level deeper, down to :data:`MAX_DEPTH`. Files met on the way are listed there.

:func:`list_unit` runs where a share is listed: every file below one :class:`ListingUnit`, as
:func:`ckptstore.admin.listing.list_files` lists them (the same URLs, sizes and ages). On S3 a
unit may be a key range of its directory (``after`` < key <= ``upto``, S3's own order of keys:
ListObjectsV2 with ``StartAfter``, paging stops past ``upto``), so one job's ``shared/``, where
Flink's incremental checkpoints put most files under random names, is listed by several
processes at once (``shared_ranges``). On directory file systems a directory is the smallest
share (its listing cannot be split), so units are whole directories walked recursively.

The units of a plan partition the files below the root: each file is listed by exactly one
unit or by the plan itself.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ckptstore.admin import model
from ckptstore.admin.listing import PAGE_SIZE, ListedFile, list_files, modified_time
from ckptstore.errors import CheckpointNotFoundError, InvalidArgumentError
from ckptstore.io_errors import io_errors
from ckptstore.paths import StoragePath
from ckptstore.stores.operations import path_is_s3

__all__ = [
    "HEX",
    "MAX_DEPTH",
    "ListingPlan",
    "ListingUnit",
    "list_unit",
    "plan_listing",
    "shared_range_points",
]

#: How many levels below the root the plan looks for Flink's directories.
MAX_DEPTH = 3
#: The first characters of Flink's shared file names (random UUIDs): where key ranges split.
HEX = "0123456789abcdef"
_JOB = re.compile(r"[0-9a-f]{32}")
_SHARES = ("shared", "taskowned")


@dataclass(frozen=True, slots=True)
class ListingUnit:
    """One share of a listing: the files below ``directory`` (relative to the root, never
    ``""``) whose relative path ``p`` has ``after < p <= upto`` (``None``: unbounded)."""

    directory: str
    after: str | None = None
    upto: str | None = None

    def holds(self, relative: str) -> bool:
        """Whether a file at ``relative`` belongs to this unit."""
        if not relative.startswith(self.directory + "/"):
            return False
        if self.after is not None and relative <= self.after:
            return False
        return self.upto is None or relative <= self.upto


@dataclass(frozen=True, slots=True)
class ListingPlan:
    """What :func:`plan_listing` found: files at the levels it listed, the units below."""

    files: tuple[ListedFile, ...]
    units: tuple[ListingUnit, ...]
    #: directory listings (on S3 ListObjectsV2 pages) the plan itself sent
    requests: int


def plan_listing(
    fs: Any, root: StoragePath, *, shared_ranges: int = 1, page_size: int = PAGE_SIZE
) -> ListingPlan:
    """List the root's top levels and cut the rest into units (module docstring).

    ``shared_ranges`` > 1 splits each ``shared/`` directory on S3 into that many key ranges
    (by the first hex character of the names) plus one unit each for the keys before and
    after it. A root that does not exist on a directory file system raises
    ``CheckpointNotFoundError``, as :func:`list_files` does."""
    if shared_ranges < 1 or shared_ranges > len(HEX):
        raise InvalidArgumentError(f"shared_ranges must be 1 to {len(HEX)}, got {shared_ranges}")
    s3 = path_is_s3(root)
    if not s3:
        with io_errors("list", root, fs):
            if not fs.isdir(root.fs_path):
                raise CheckpointNotFoundError(f"{root.shown} is no directory")
    files: list[ListedFile] = []
    units: list[ListingUnit] = []
    requests = 0
    pending = [("", 0)]
    while pending:
        directory, depth = pending.pop()
        if s3:
            found, subdirectories, sent = _s3_level(fs, root, directory, page_size)
        else:
            found, subdirectories, sent = _directory_level(fs, root, directory)
        files.extend(found)
        requests += sent
        for sub in subdirectories:
            name = sub.rpartition("/")[2]
            if _is_share(name) or depth + 1 >= MAX_DEPTH:
                units.extend(_units_of(sub, name, shared_ranges if s3 else 1))
            else:
                pending.append((sub, depth + 1))
    units.sort(key=lambda u: (u.directory, u.after or ""))
    files.sort(key=lambda f: f.url)
    return ListingPlan(tuple(files), tuple(units), requests)


def _is_share(name: str) -> bool:
    return (
        _JOB.fullmatch(name) is not None
        or model.is_checkpoint_name(name)
        or name in _SHARES
        or name.startswith("savepoint-")
    )


def shared_range_points(shared: str, ranges: int) -> list[str]:
    """The bounds that cut the keys below ``shared`` (a relative directory) into ``ranges``
    ranges by the first hex character of the name, and the keys before and after it off."""
    step = len(HEX) / ranges
    inner = [f"{shared}/{HEX[round(i * step)]}" for i in range(1, ranges)]
    # "/" + 1 is "0": every key below "shared/" sorts before "shared0"
    return [f"{shared}/", *inner, f"{shared}0"]


def _units_of(directory: str, name: str, shared_ranges: int) -> list[ListingUnit]:
    if shared_ranges <= 1:
        return [ListingUnit(directory)]
    if name == "shared":
        shared = directory
    elif _JOB.fullmatch(name):
        shared = f"{directory}/shared"
    else:
        return [ListingUnit(directory)]
    points: list[str | None] = [None, *shared_range_points(shared, shared_ranges), None]
    return [ListingUnit(directory, a, b) for a, b in itertools.pairwise(points)]


def _s3_prefix(root: StoragePath) -> tuple[str, str]:
    bucket, _, key = root.path.partition("/")
    return bucket, f"{key.strip('/')}/" if key.strip("/") else ""


def _s3_level(
    fs: Any, root: StoragePath, directory: str, page_size: int
) -> tuple[list[ListedFile], list[str], int]:
    """One level of ``directory`` on S3: its files, its subdirectories, the pages sent."""
    bucket, base = _s3_prefix(root)
    prefix = base + (f"{directory}/" if directory else "")
    request: dict[str, Any] = {
        "Bucket": bucket,
        "Prefix": prefix,
        "Delimiter": "/",
        "MaxKeys": page_size,
    }
    files: list[ListedFile] = []
    subdirectories: list[str] = []
    pages = 0
    while True:
        with io_errors("list", root, fs):
            page = fs.call_s3("list_objects_v2", **request)
        pages += 1
        for item in page.get("Contents") or ():
            name = str(item["Key"])
            if name.startswith(prefix) and not name.endswith("/"):
                files.append(_s3_file(root, base, item))
        for common in page.get("CommonPrefixes") or ():
            sub = str(common["Prefix"])
            if sub.startswith(prefix) and len(sub) > len(prefix) + 1:
                subdirectories.append(sub[len(base) :].rstrip("/"))
        token = page.get("NextContinuationToken")
        if not page.get("IsTruncated") or not token:
            return files, subdirectories, pages
        request["ContinuationToken"] = token


def _s3_file(root: StoragePath, base: str, item: Any) -> ListedFile:
    name = str(item["Key"])
    return ListedFile(
        root.child(name[len(base) :]).url, int(item.get("Size", 0)), modified_time(item)
    )


def _directory_level(
    fs: Any, root: StoragePath, directory: str
) -> tuple[list[ListedFile], list[str], int]:
    """One level of ``directory`` on a directory file system (one ``ls``)."""
    base = root.fs_path.rstrip("/")
    path = f"{base}/{directory}" if directory else root.fs_path
    with io_errors("list", root, fs):
        entries = fs.ls(path, detail=True)
    files: list[ListedFile] = []
    subdirectories: list[str] = []
    for info in entries:
        name = str(info["name"])
        if not name.startswith(base + "/"):
            continue
        relative = name[len(base) + 1 :].rstrip("/")
        if info.get("type") == "directory":
            subdirectories.append(relative)
        else:
            files.append(
                ListedFile(
                    root.child(relative).url, int(info.get("size") or 0), modified_time(info)
                )
            )
    return files, subdirectories, 1


def list_unit(
    fs: Any, root: StoragePath, unit: ListingUnit, *, page_size: int = PAGE_SIZE
) -> Iterator[ListedFile]:
    """Every file of ``unit`` (module docstring), as :func:`list_files` lists them; a unit
    removed since the plan holds nothing (on S3 an absent prefix is an empty one)."""
    if path_is_s3(root):
        yield from _list_s3_range(fs, root, unit, page_size)
        return
    if unit.after is not None or unit.upto is not None:
        raise InvalidArgumentError("key ranges are listed on S3 only")
    try:
        yield from list_files(fs, root.child(unit.directory))
    except CheckpointNotFoundError:
        return  # removed since the plan: as a walk skips a directory removed meanwhile


def _list_s3_range(
    fs: Any, root: StoragePath, unit: ListingUnit, page_size: int
) -> Iterator[ListedFile]:
    bucket, base = _s3_prefix(root)
    request: dict[str, Any] = {
        "Bucket": bucket,
        "Prefix": f"{base}{unit.directory}/",
        "MaxKeys": page_size,
    }
    if unit.after is not None:
        request["StartAfter"] = base + unit.after
    while True:
        with io_errors("list", root, fs):
            page = fs.call_s3("list_objects_v2", **request)
        for item in page.get("Contents") or ():
            name = str(item["Key"])
            relative = name[len(base) :]
            if unit.upto is not None and relative > unit.upto:
                return
            if name.endswith("/") or not unit.holds(relative):
                continue
            yield _s3_file(root, base, item)
        token = page.get("NextContinuationToken")
        if not page.get("IsTruncated") or not token:
            return
        request["ContinuationToken"] = token
