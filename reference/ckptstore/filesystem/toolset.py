"""Fast duplication of file state into a directory (TO4, TO5, S17).

Used for NO_CLAIM restores (TO6): files of a restored snapshot are copied server-side into
the new job's locations instead of being re-uploaded. The destination is
``<toolset dir>/<new random UUID>`` (with entropy injected when active, E4), as state files
are named (S11) and as Flink's first toolset named them (TO4 version note): never the
source's name, which would let two sources of the same name (from two directories)
overwrite each other in one target directory. Every copy is exclusive as well (a hard link
or ``open('xb')`` locally, check-and-copy under a lock on memory; on S3 the fresh name is
the guarantee); a name that exists already gets a new one, up to 10 times. A relative handle
comes back relative (its ``relative_path`` is the new name), an absolute one absolute, sizes
are kept.

Copies: S3 CopyObject (no HEAD: the size is in the handle), a hard link on local disks,
``fs.copy`` on memory. Inline handles cannot be fast-duplicated. A failed batch removes the
copies it made, so nothing is left behind.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Sequence
from typing import Any

from ckptstore.api import StreamStateHandle
from ckptstore.calls import public_call
from ckptstore.errors import (
    DuplicationNotSupportedError,
    InvalidHandleError,
)
from ckptstore.filesystem.entropy import EntropyInjector
from ckptstore.filesystem.handles import FileStateHandle, RelativeFileStateHandle
from ckptstore.paths import StoragePath, parse_storage_path
from ckptstore.stores.adapters import traits_for
from ckptstore.stores.operations import copy_exclusive, delete_file
from ckptstore.stores.registry import filesystem_for
from ckptstore.validation import require_handle, require_handles

__all__ = ["FsCheckpointStateToolset", "NotDuplicatingCheckpointStateToolset"]


def _file_path_of(handle: StreamStateHandle) -> StoragePath | None:
    path = getattr(handle, "file_path", None)
    if not isinstance(path, str):
        return None
    try:
        if handle.as_bytes_if_in_memory() is not None:
            return None
        return parse_storage_path(path)
    except ValueError:
        return None


class FsCheckpointStateToolset:
    """Duplicates file handles into ``base_dir`` with server-side copies (TO4)."""

    def __init__(
        self,
        base_dir: StoragePath,
        *,
        fs_token: str | None = None,
        entropy: EntropyInjector | None = None,
    ) -> None:
        self._base_dir = parse_storage_path(base_dir)
        base_dir = self._base_dir
        self._fs_token = fs_token
        self._entropy = entropy if entropy is not None and entropy.is_active(base_dir) else None

    @property
    def base_dir(self) -> str:
        return self._base_dir.url

    def _destination(self) -> StoragePath:
        target = self._base_dir.child(str(uuid.uuid4()))
        return self._entropy.inject(target) if self._entropy is not None else target

    def can_fast_duplicate(self, handle: StreamStateHandle) -> bool:
        """True for a file on this toolset's file system that is not already in its directory."""
        handle = require_handle(handle)
        source = _file_path_of(handle)
        if source is None or source.scheme != self._base_dir.scheme:
            return False
        if not traits_for(source.scheme).server_side_copy:
            return False
        return source.parent != self._base_dir

    @public_call
    def duplicate(self, handles: Sequence[StreamStateHandle]) -> list[StreamStateHandle]:
        """Copy every handle's file into the directory under a new name; same order.

        Never overwrites: each copy goes to a fresh random name, created exclusively. If a
        copy fails, the copies already made by this call are removed and the error (an
        ``OSError``) is raised.
        """
        handles = require_handles(handles)
        sources: list[tuple[StreamStateHandle, StoragePath]] = []
        for handle in handles:
            source = _file_path_of(handle)
            if source is None:
                raise InvalidHandleError("We can duplicate only FileStateHandles.")
            if source.scheme != self._base_dir.scheme:
                raise InvalidHandleError(
                    f"Cannot duplicate {source.url} into {self._base_dir.url}: "
                    "different file systems"
                )
            sources.append((handle, source))
        fs = filesystem_for(self._base_dir, self._fs_token)
        results: list[StreamStateHandle] = []
        made: list[StoragePath] = []
        try:
            for handle, source in sources:
                target = self._copy(fs, source, handle.state_size)
                made.append(target)
                if getattr(handle, "relative_path", None) is not None:
                    results.append(
                        RelativeFileStateHandle(
                            target.url,
                            handle.state_size,
                            relative_path=target.name,
                            fs_token=self._fs_token,
                        )
                    )
                else:
                    results.append(
                        FileStateHandle(target.url, handle.state_size, fs_token=self._fs_token)
                    )
        except BaseException:
            for target in made:
                with contextlib.suppress(Exception):
                    delete_file(fs, target)
            raise
        return results

    def _copy(self, fs: Any, source: StoragePath, size: int) -> StoragePath:
        """One exclusive copy to a fresh uuid4 name: a name that exists already (a collision
        of random UUIDs) fails with ``CheckpointFileExistsError`` rather than overwriting."""
        target = self._destination()
        copy_exclusive(fs, source, target, size)
        return target

    def __repr__(self) -> str:
        return f"FsCheckpointStateToolset({self._base_dir.shown!r})"


class NotDuplicatingCheckpointStateToolset:
    """The toolset for file systems without a cheap copy (TO5)."""

    def can_fast_duplicate(self, handle: StreamStateHandle) -> bool:
        require_handle(handle)
        return False

    def duplicate(self, handles: Sequence[StreamStateHandle]) -> list[StreamStateHandle]:
        require_handles(handles)
        raise DuplicationNotSupportedError("The toolset does not support duplication")
