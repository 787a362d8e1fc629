"""The files a completed checkpoint or savepoint needs: its ``_metadata`` resolved to stores.

A ``_metadata`` (``ckptstore.flink_metadata``) names state in three ways: inline bytes (held in
the metadata itself), files by absolute path (``FileHandle``; Flink spells a local one
``file:/dir/f``), files relative to the directory the metadata lies in (``RelativeFileHandle``,
savepoints and exclusive checkpoint state) and segments of merged files (file merging). Many
handles may name one physical file (channel state of unaligned checkpoints shares a file per
subtask at offsets; merged segments share a file), so the answer is one :class:`FileReference`
per file with the number of bytes the file must hold for every handle on it to read: at least
the handle's size for a whole file, ``start + size`` for a segment.

A path that no store of the reference can reach (an unknown scheme such as Presto's ``s3p``,
a ``..`` that climbs out of its root) is not guessed at: it is listed in
:attr:`CheckpointReferences.unresolved` as Flink spelled it, so an audit reports it instead of
calling the checkpoint intact.

A root that was written elsewhere (a copy of a bucket, a fixture unpacked in another place) is
read through a :class:`MovedTree`: absolute paths into the place it was written at are read
under the place it is now; relative handles follow the metadata by themselves. No I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ckptstore.errors import CheckpointStorageError
from ckptstore.flink_metadata import (
    ByteStreamHandle,
    CheckpointMetadata,
    FileHandle,
    RelativeFileHandle,
    SegmentFileHandle,
    stream_handles,
)
from ckptstore.paths import StoragePath, parse_storage_path
from ckptstore.stores.registry import is_available_scheme
from ckptstore.validation import MAX_URL_LENGTH

__all__ = [
    "CheckpointReferences",
    "FileReference",
    "MovedTree",
    "checkpoint_references",
    "referenced_urls",
    "resolve_flink_path",
]


@dataclass(frozen=True, slots=True)
class FileReference:
    """One physical file a checkpoint reads, and how many bytes it must hold at least."""

    #: the file's canonical URL (``StoragePath.url``)
    url: str
    #: the largest ``size`` of a whole-file handle or ``start + size`` of a segment on it
    needed_bytes: int
    #: how many handles of the metadata read this file
    handles: int
    #: named relative to the metadata's directory (``RelativeFileHandle``): moves with it
    relative: bool


@dataclass(frozen=True, slots=True)
class CheckpointReferences:
    """What one ``_metadata`` needs from its stores (module docstring)."""

    checkpoint_id: int
    #: the directory the metadata was read from (relative handles resolve against it)
    directory: str
    #: one entry per physical file, sorted by URL
    files: tuple[FileReference, ...]
    #: bytes of state held inline in the metadata (``ByteStreamStateHandle``)
    inline_bytes: int
    #: paths as Flink spelled them that no store of the reference reaches, sorted
    unresolved: tuple[str, ...]

    @property
    def referenced_bytes(self) -> int:
        """Bytes the checkpoint reads from files (the needed bytes of every file)."""
        return sum(f.needed_bytes for f in self.files)


@dataclass(frozen=True, slots=True)
class MovedTree:
    """Paths below ``source`` (where a tree was written) are read below ``target`` (where it
    lies now): ``source``/a/b becomes ``target``/a/b; every other path stays as it is."""

    source: StoragePath
    target: StoragePath

    def apply(self, location: StoragePath) -> StoragePath:
        if location.scheme != self.source.scheme:
            return location
        base = self.source.path.rstrip("/")
        if location.path == self.source.path or location.path == base:
            return self.target
        if not location.path.startswith(base + "/"):
            return location
        rest = location.path[len(base) + 1 :]
        return self.target.child(rest) if rest else self.target


def resolve_flink_path(text: str, moved: MovedTree | None = None) -> StoragePath | None:
    """A path as a Flink handle spells it, as a location of the reference (moved by
    ``moved`` first); ``None`` when no store of the reference reaches it (unknown scheme,
    malformed, climbs out of its root)."""
    try:
        location = parse_storage_path(text)
    except (CheckpointStorageError, ValueError):
        return None
    if moved is not None:
        location = moved.apply(location)
    return location if is_available_scheme(location.scheme) else None


#: A last segment that parses as itself: appended to its parsed directory, it gives what
#: parsing the whole path gives (no dot segment, separator, client syntax or whitespace).
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_\-][A-Za-z0-9._\-]*")


class _Resolver:
    """:func:`resolve_flink_path` for the many handles of one metadata, answering the URL:
    each directory is parsed once and its plain names appended to it (a metadata names
    thousands of files in a few directories); anything else is parsed whole."""

    __slots__ = ("directories", "moved", "schemes")

    def __init__(self, moved: MovedTree | None) -> None:
        self.moved = moved
        #: directory text -> the parsed directory and the URL its children start with
        self.directories: dict[str, tuple[StoragePath, str] | None] = {}
        self.schemes: dict[str, bool] = {}

    def url(self, text: str, moved: bool) -> str | None:
        parent, sep, name = text.rpartition("/")
        if not sep or len(text) >= MAX_URL_LENGTH or _PLAIN_NAME.fullmatch(name) is None:
            return self._whole(text, moved)
        try:
            found = self.directories[parent]
        except KeyError:
            found = self.directories[parent] = self._directory(parent)
        if found is None:
            return self._whole(text, moved)
        directory, prefix = found
        if moved and self.moved is not None:
            return self._available(self.moved.apply(directory.child(name)))
        return prefix + name if self._scheme(directory.scheme) else None

    def _directory(self, text: str) -> tuple[StoragePath, str] | None:
        try:
            directory = parse_storage_path(text)
        except (CheckpointStorageError, ValueError):
            return None
        return directory, directory.child("").url

    def _whole(self, text: str, moved: bool) -> str | None:
        location = resolve_flink_path(text, self.moved if moved else None)
        return None if location is None else location.url

    def _available(self, location: StoragePath) -> str | None:
        return location.url if self._scheme(location.scheme) else None

    def _scheme(self, scheme: str) -> bool:
        available = self.schemes.get(scheme)
        if available is None:
            available = self.schemes[scheme] = is_available_scheme(scheme)
        return available


def checkpoint_references(
    metadata: CheckpointMetadata,
    directory: StoragePath,
    moved: MovedTree | None = None,
) -> CheckpointReferences:
    """Every file ``metadata`` (read from ``directory``/``_metadata``) needs (module docstring);
    absolute paths are moved by ``moved`` when one is given."""
    resolver = _Resolver(moved)
    needed: dict[str, list[int]] = {}
    relative: set[str] = set()
    unresolved: set[str] = set()
    inline = 0
    base = directory.url.rstrip("/")
    for handle in stream_handles(metadata):
        is_relative, spelled = False, ""
        if isinstance(handle, FileHandle):
            text, extent = handle.path, handle.state_size
        elif isinstance(handle, ByteStreamHandle):
            inline += len(handle.data)
            continue
        elif isinstance(handle, RelativeFileHandle):
            text, extent, is_relative = f"{base}/{handle.relative_path}", handle.state_size, True
            spelled = handle.relative_path
        elif isinstance(handle, SegmentFileHandle):
            text, extent = handle.path, handle.start + handle.state_size
        else:  # key-group wrappers (their delegate follows), empty segments: no file of their own
            continue
        url = resolver.url(text, not is_relative)
        if url is None:
            unresolved.add(spelled if is_relative else text)
            continue
        entry = needed.get(url)
        if entry is None:
            needed[url] = [max(0, extent), 1]
        else:
            entry[0] = max(entry[0], extent)
            entry[1] += 1
        if is_relative:
            relative.add(url)
    return CheckpointReferences(
        checkpoint_id=metadata.checkpoint_id,
        directory=directory.url,
        files=tuple(
            FileReference(url, extent, count, url in relative)
            for url, (extent, count) in sorted(needed.items())
        ),
        inline_bytes=inline,
        unresolved=tuple(sorted(unresolved)),
    )


def referenced_urls(references: Iterable[CheckpointReferences]) -> frozenset[str]:
    """The URLs of every file any of ``references`` needs."""
    return frozenset(f.url for r in references for f in r.files)
