"""flinkmeta: Flink's checkpoint metadata format (``_metadata``), read and written in Python.

``read_metadata(bytes) -> CheckpointMetadata`` reads format versions 3 to 6 (what Flink 1.15 to
2.3 write) into the immutable values of ``values``; ``write_metadata(CheckpointMetadata) ->
bytes`` writes them back, byte for byte as Flink does, so ``read_metadata(write_metadata(x)) ==
x``. Anything that is not well-formed metadata (empty, truncated, a wrong magic number, an
unknown tag, random bytes) raises ``MetadataFormatError`` (a ``ValueError``) naming the byte
offset and what the format expects there, in time linear in the input's size.
``stream_handles`` lists every stream state handle a checkpoint references (for audits and
copies).

Learnt from Flink 2.3.0's ``MetadataV2V3SerializerBase``, ``MetadataV3Serializer`` to
``MetadataV6Serializer`` and ``ChannelStateHandleSerializerV1``/``V2``; checked against
Flink's own loader in ``tests/flink/test_flink_metadata.py``. A codec of Flink's file format,
not a checkpoint storage: it imports nothing but the standard library, so the reference
(``ckptstore``) and the conformance kit (``ckptconform``) may both use it.
"""

from __future__ import annotations

from flinkmeta.errors import MetadataFormatError
from flinkmeta.reader import METADATA_MAGIC, read_metadata
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
from flinkmeta.writer import write_metadata

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
    "write_metadata",
]
