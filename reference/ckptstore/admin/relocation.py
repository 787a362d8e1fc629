"""Where a copy of a checkpoint puts each file, and its ``_metadata`` rewritten to point there.

The layout of a copy at ``DEST`` (deterministic: the same source gives the same places):

* a file in the checkpoint's own directory keeps its place relative to it:
  ``<src>/5a1f...`` -> ``DEST/5a1f...`` (relative handles stay relative and name it
  unchanged; an absolute handle to it is rewritten to its new absolute path);
* every other file (the job's ``shared/`` and ``taskowned/``, another job's files, merged
  files) goes below ``DEST/_external/`` at its whole source URL, scheme and bucket (or host)
  included: ``file:/ckpt/job/shared/sst-1`` -> ``DEST/_external/file/ckpt/job/shared/sst-1``,
  ``s3://b/job/shared/sst-1`` -> ``DEST/_external/s3/b/job/shared/sst-1``. The source URL is
  canonical (``ckptstore.paths``), so two files never get one place, and the directories of
  file merging (``FileMergingDirectories``) move with the files inside them;
* ``DEST/_metadata``, written last.

Flink writes no ``_external`` in a checkpoint directory; a checkpoint that has one there, or
references its own ``_metadata`` as state, is refused rather than copied over itself
(:class:`RelocationError`). So is a relative handle that leaves its directory (Flink never
writes one): its place in the copy would lie outside ``DEST``.

Absolute paths are written as Flink spells them for the destination's scheme (its ``Path``'s
``toString``): ``file:/dest/f`` for local files (``memory:/dest/f`` likewise),
``s3://bucket/key`` for object stores, ``sftp://host:22/dir/f`` for file systems on hosts.
No I/O.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ckptstore.admin.references import CheckpointReferences, MovedTree, resolve_flink_path
from ckptstore.api import METADATA_FILE_NAME
from ckptstore.errors import InvalidHandleError
from ckptstore.flink_metadata import (
    CheckpointMetadata,
    FileHandle,
    FileMergingDirectories,
    SegmentFileHandle,
)
from ckptstore.paths import StoragePath, parse_storage_path

__all__ = [
    "EXTERNAL_DIRECTORY",
    "Placement",
    "RelocationError",
    "flink_spelling",
    "place_files",
    "relocate_metadata",
]

#: The directory of a copy that holds the files from outside the checkpoint's directory.
EXTERNAL_DIRECTORY = "_external"


class RelocationError(InvalidHandleError):
    """The checkpoint cannot be laid out in a copy (module docstring); nothing was copied."""


@dataclass(frozen=True, slots=True)
class Placement:
    """One file of the source and its place in the copy."""

    #: the source file's canonical URL (``FileReference.url``)
    source: str
    #: where the copy puts it
    target: StoragePath
    #: in the checkpoint's own directory (keeps its relative place)
    inside: bool
    #: bytes the file must hold at least (``FileReference.needed_bytes``)
    needed_bytes: int


def flink_spelling(path: StoragePath) -> str:
    """``path`` as Flink's ``Path.toString`` spells it: ``file:/a/b``, ``s3://bucket/key``."""
    if path.has_authority:
        return f"{path.scheme}://{path.path}"
    return f"{path.scheme}:{path.path}"


def _relative_to(url: str, directory: StoragePath) -> str | None:
    """The part of ``url`` below ``directory`` (``None`` when it is not below it)."""
    prefix = directory.url.rstrip("/") + "/"
    return url[len(prefix) :] if url.startswith(prefix) else None


def _target_of(location: StoragePath, source_dir: StoragePath, dest: StoragePath) -> StoragePath:
    relative = _relative_to(location.url, source_dir)
    if relative is not None:
        return dest.child(relative)
    return dest.child(f"{EXTERNAL_DIRECTORY}/{location.scheme}/{location.path.lstrip('/')}")


def place_files(references: CheckpointReferences, dest: StoragePath) -> tuple[Placement, ...]:
    """Every file ``references`` names with its place below ``dest`` (module docstring).

    Raises :class:`RelocationError` for a reference no store reaches, a relative handle that
    leaves its directory, and a file of the checkpoint's own directory that would land on
    ``_external`` or ``_metadata`` of the copy.
    """
    if references.unresolved:
        raise RelocationError(
            f"The checkpoint {references.directory} references paths no store of the reference "
            f"reaches, so it cannot be copied whole: {', '.join(references.unresolved)}"
        )
    source_dir = parse_storage_path(references.directory)
    placements = []
    for reference in references.files:
        location = parse_storage_path(reference.url)
        inside = _relative_to(reference.url, source_dir)
        if reference.relative and inside is None:
            raise RelocationError(
                f"A relative handle of {references.directory} names {reference.url}, outside "
                "its directory: its place in a copy would lie outside the copy"
            )
        if inside is not None and (
            inside in (METADATA_FILE_NAME, EXTERNAL_DIRECTORY)
            or inside.startswith(EXTERNAL_DIRECTORY + "/")
        ):
            raise RelocationError(
                f"The checkpoint's own file {reference.url} would land on the copy's "
                f"{inside.split('/')[0]!r}, which the copy writes itself; refusing to copy"
            )
        placements.append(
            Placement(
                reference.url,
                _target_of(location, source_dir, dest),
                inside is not None,
                reference.needed_bytes,
            )
        )
    return tuple(placements)


def relocate_metadata(
    metadata: CheckpointMetadata,
    source_dir: StoragePath,
    dest: StoragePath,
    moved: MovedTree | None = None,
) -> CheckpointMetadata:
    """``metadata`` with every absolute path moved into the copy at ``dest``; the paths of a
    tree written elsewhere are first read through ``moved`` (as ``checkpoint_references``
    reads them, so the places agree with ``place_files``).

    ``FileHandle`` and ``SegmentFileHandle`` paths wherever they are nested (key-group,
    incremental, changelog, operator and channel state handles) and the directories of
    file-merging handles; relative handles, inline bytes, master states and the checkpoint
    properties are kept as they are. A path no store reaches is kept as Flink spelled it
    (``place_files`` refuses a checkpoint whose files include one).
    """
    return _rewrite(metadata, _Mover(source_dir, dest, moved))  # type: ignore[no-any-return]


@dataclass(frozen=True, slots=True)
class _Mover:
    source_dir: StoragePath
    dest: StoragePath
    moved: MovedTree | None = None

    def __call__(self, text: str) -> str:
        location = resolve_flink_path(text, self.moved)
        if location is None:
            return text
        return flink_spelling(_target_of(location, self.source_dir, self.dest))


def _rewrite(value: Any, move: _Mover) -> Any:
    """``value`` with the paths of its handles moved; unchanged parts are the same objects."""
    if isinstance(value, FileHandle):
        return dataclasses.replace(value, path=move(value.path))
    if isinstance(value, SegmentFileHandle):
        return dataclasses.replace(value, path=move(value.path))
    if isinstance(value, FileMergingDirectories):
        return dataclasses.replace(
            value,
            task_owned_dir=move(value.task_owned_dir),
            shared_dir=move(value.shared_dir),
        )
    if isinstance(value, tuple):
        items = tuple(_rewrite(item, move) for item in value)
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes: Mapping[str, Any] = {
            field.name: _rewrite(getattr(value, field.name), move)
            for field in dataclasses.fields(value)
        }
        if all(changes[name] is getattr(value, name) for name in changes):
            return value
        return dataclasses.replace(value, **changes)
    return value
