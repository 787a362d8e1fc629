"""A completed checkpoint or savepoint named by a pointer: its directory and its ``_metadata``.

A pointer is what Flink's ``-s`` takes: the checkpoint's directory (any scheme the reference
supports) or its ``_metadata`` file. The directory's ``_metadata`` is looked up first (one
HEAD on S3, never a listing); a pointer to a file of another name is read as the metadata
itself, as Flink reads it. The metadata is read with its size known (one GET on S3) and
parsed (``ckptstore.flink_metadata``): bytes that are not Flink's format raise
``MetadataFormatError`` (a ``ValueError``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ckptstore.api import METADATA_FILE_NAME
from ckptstore.errors import CheckpointNotFoundError, InvalidPointerError
from ckptstore.flink_metadata import CheckpointMetadata, read_metadata
from ckptstore.paths import StoragePath, parse_storage_path
from ckptstore.redaction import redact_text
from ckptstore.stores.adapters import DIRECTORY_SCHEMES
from ckptstore.stores.operations import file_info, open_for_read
from ckptstore.stores.registry import filesystem_for, register_path

__all__ = ["LoadedCheckpoint", "filesystem_of", "load_checkpoint"]


@dataclass(frozen=True, slots=True)
class LoadedCheckpoint:
    """A completed checkpoint's directory, its ``_metadata`` file, bytes and values."""

    directory: StoragePath
    metadata_path: StoragePath
    data: bytes
    metadata: CheckpointMetadata


def filesystem_of(path: StoragePath, storage_options: Mapping[str, Any] | None) -> Any:
    """The file system of ``path``'s store and bucket, with ``storage_options`` registered
    for them (``file`` and ``memory`` take none)."""
    options = None if path.scheme in DIRECTORY_SCHEMES else storage_options
    return filesystem_for(path, register_path(path, options))


def load_checkpoint(
    pointer: str, storage_options: Mapping[str, Any] | None = None
) -> LoadedCheckpoint:
    """The checkpoint ``pointer`` names (module docstring).

    Raises ``InvalidPointerError`` for a pointer that names no location,
    ``CheckpointNotFoundError`` when there is no metadata there, ``MetadataFormatError`` for
    bytes that are not Flink's metadata, the contract's ``OSError`` types for I/O failures.
    """
    try:
        location = parse_storage_path(pointer)
    except (TypeError, ValueError) as exc:
        raise InvalidPointerError(
            f"The checkpoint pointer {redact_text(str(pointer))!r} names no location: {exc}"
        ) from exc
    fs = filesystem_of(location, storage_options)
    candidates = [location.child(METADATA_FILE_NAME), location]
    if location.name == METADATA_FILE_NAME:
        candidates.reverse()
    for candidate in candidates:
        info = file_info(fs, candidate)
        if info is not None and info.get("type") == "file":
            size = int(info["size"])
            with open_for_read(fs, candidate, size) as reader:
                data = reader.read()
            return LoadedCheckpoint(candidate.parent, candidate, data, read_metadata(data))
    raise CheckpointNotFoundError(
        f"No completed checkpoint or savepoint at {location.shown}: neither it nor "
        f"{location.child(METADATA_FILE_NAME).shown} is a metadata file"
    )
