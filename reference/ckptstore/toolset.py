"""Fast duplication of file state into a directory (TO4, TO5, S17).

Used for NO_CLAIM restores (TO6): files of a restored snapshot are copied server-side into
the new job's locations instead of being re-uploaded. The destination is
``<toolset dir>/<same file name>`` (with entropy injected when active, E4); a relative handle
comes back relative, an absolute one absolute, sizes are kept.

Copies: S3 CopyObject (no HEAD: the size is in the handle), a hard link on local disks,
``fs.copy`` on memory. Inline handles cannot be fast-duplicated.
"""

from __future__ import annotations

from collections.abc import Sequence

from ckptstore.api import StreamStateHandle
from ckptstore.entropy import EntropyInjector
from ckptstore.errors import (
    CheckpointIOError,
    DuplicationNotSupportedError,
    InvalidHandleError,
    MissingArgumentError,
)
from ckptstore.filesystems import filesystem_for, server_side_copy, traits_for
from ckptstore.handles import FileStateHandle, RelativeFileStateHandle
from ckptstore.paths import StoragePath, parse_storage_path

__all__ = ["FsCheckpointStateToolset", "NotDuplicatingCheckpointStateToolset"]


def _file_path_of(handle: StreamStateHandle) -> StoragePath | None:
    path = getattr(handle, "file_path", None)
    if not isinstance(path, str) or handle.as_bytes_if_in_memory() is not None:
        return None
    try:
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
        self._base_dir = base_dir
        self._fs_token = fs_token
        self._entropy = entropy if entropy is not None and entropy.is_active(base_dir) else None

    @property
    def base_dir(self) -> str:
        return self._base_dir.url

    def _destination(self, source: StoragePath) -> StoragePath:
        target = self._base_dir.child(source.name)
        return self._entropy.inject(target) if self._entropy is not None else target

    def can_fast_duplicate(self, handle: StreamStateHandle) -> bool:
        """True for a file on this toolset's file system that is not already in its directory."""
        if handle is None:
            raise MissingArgumentError("handle must not be None")
        source = _file_path_of(handle)
        if source is None or source.scheme != self._base_dir.scheme:
            return False
        if not traits_for(source.scheme).server_side_copy:
            return False
        return source.parent != self._base_dir

    def duplicate(self, handles: Sequence[StreamStateHandle]) -> list[StreamStateHandle]:
        """Copy every handle's file into the directory; results in the same order."""
        if handles is None:
            raise MissingArgumentError("handles must not be None")
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
        for handle, source in sources:
            target = self._destination(source)
            try:
                server_side_copy(fs, source, target, handle.state_size)
            except Exception as exc:
                raise CheckpointIOError(
                    f"Could not duplicate {source.url} to {target.url}: {exc}"
                ) from exc
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
        return results

    def __repr__(self) -> str:
        return f"FsCheckpointStateToolset({self._base_dir.url!r})"


class NotDuplicatingCheckpointStateToolset:
    """The toolset for file systems without a cheap copy (TO5)."""

    def can_fast_duplicate(self, handle: StreamStateHandle) -> bool:
        return False

    def duplicate(self, handles: Sequence[StreamStateHandle]) -> list[StreamStateHandle]:
        raise DuplicationNotSupportedError("The toolset does not support duplication")
