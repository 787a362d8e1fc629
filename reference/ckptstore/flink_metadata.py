"""Flink's ``_metadata`` format for the reference: ``flinkmeta`` under the reference's errors.

The format itself is the standalone package ``flinkmeta`` (a codec of Flink's file format that
the kit may use too); this module gives the reference's callers the same names, with one
difference: ``read_metadata`` and ``write_metadata`` raise this module's
``MetadataFormatError``, which is both ``flinkmeta.MetadataFormatError`` (a ``ValueError``)
and a ``CheckpointStorageError``, like every error the reference raises on purpose.
"""

from __future__ import annotations

import flinkmeta
from ckptstore.errors import CheckpointStorageError
from flinkmeta import METADATA_MAGIC, values
from flinkmeta.values import (
    CURRENT_VERSION,
    READABLE_VERSIONS,
    ByteStreamHandle,
    ChangelogBackendHandle,
    ChangelogStreamHandle,
    CheckpointMetadata,
    DistributionMode,
    EmptySegmentFileHandle,
    FileHandle,
    FileMergingDirectories,
    HandleAndLocalPath,
    IncrementalHandle,
    InMemoryChangelogHandle,
    InputChannelHandle,
    KeyGroupsHandle,
    MasterState,
    MergedInputChannelHandle,
    MergedResultSubpartitionHandle,
    OperatorState,
    OperatorStateHandle,
    PartitionOffsets,
    RelativeFileHandle,
    ResultSubpartitionHandle,
    SegmentFileHandle,
    StateChange,
    StateScope,
    SubtaskEntry,
    SubtaskState,
    stream_handles,
)

__all__ = [
    "CURRENT_VERSION",
    "METADATA_MAGIC",
    "READABLE_VERSIONS",
    "ByteStreamHandle",
    "ChangelogBackendHandle",
    "ChangelogStreamHandle",
    "CheckpointMetadata",
    "DistributionMode",
    "EmptySegmentFileHandle",
    "FileHandle",
    "FileMergingDirectories",
    "HandleAndLocalPath",
    "InMemoryChangelogHandle",
    "IncrementalHandle",
    "InputChannelHandle",
    "KeyGroupsHandle",
    "MasterState",
    "MergedInputChannelHandle",
    "MergedResultSubpartitionHandle",
    "MetadataFormatError",
    "OperatorState",
    "OperatorStateHandle",
    "PartitionOffsets",
    "RelativeFileHandle",
    "ResultSubpartitionHandle",
    "SegmentFileHandle",
    "StateChange",
    "StateScope",
    "SubtaskEntry",
    "SubtaskState",
    "read_metadata",
    "stream_handles",
    "values",
    "write_metadata",
]


class MetadataFormatError(flinkmeta.MetadataFormatError, CheckpointStorageError):
    """``flinkmeta.MetadataFormatError`` as one of the reference's errors (same attributes)."""


def read_metadata(data: bytes) -> CheckpointMetadata:
    """``flinkmeta.read_metadata``, raising this module's ``MetadataFormatError``."""
    try:
        return flinkmeta.read_metadata(data)
    except flinkmeta.MetadataFormatError as exc:
        raise MetadataFormatError(exc.offset, exc.expected, exc.found) from None


def write_metadata(metadata: CheckpointMetadata) -> bytes:
    """``flinkmeta.write_metadata``, raising this module's ``MetadataFormatError``."""
    try:
        return flinkmeta.write_metadata(metadata)
    except flinkmeta.MetadataFormatError as exc:
        raise MetadataFormatError(exc.offset, exc.expected, exc.found) from None
