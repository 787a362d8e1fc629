"""Flink's checkpoint metadata as immutable values: what ``_metadata`` holds, handle by handle.

The names follow Flink's classes (``FileStateHandle`` -> ``FileHandle``...); sequences are
tuples, so every value is hashable and compares by content. A value records what the bytes
say, including the choices Flink's serializer made between old and new encodings of the same
handle (a key-group handle with or without its state handle id, an incremental handle with or
without its checkpointed size): reading, then writing, gives the same bytes back for anything
Flink 2.3 writes. Semantic checks (a key-group range inside the maximum parallelism...) are not
made here: these values describe files, good or bad, for tools that inspect them.

Format versions: 3 (Flink 1.11 to 1.15), 4 (adds the checkpoint properties, Java-serialized,
at the end), 5 (adds the operator's name and uid), 6 (Flink 2.x: channel state handles carry a
type tag, and merged channel state handles exist).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from enum import IntEnum

__all__ = [
    "CURRENT_VERSION",
    "READABLE_VERSIONS",
    "ByteStreamHandle",
    "ChangelogBackendHandle",
    "ChangelogStreamHandle",
    "ChannelStateHandle",
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
    "KeyedHandle",
    "MasterState",
    "MergedInputChannelHandle",
    "MergedResultSubpartitionHandle",
    "OperatorState",
    "OperatorStateHandle",
    "PartitionOffsets",
    "RelativeFileHandle",
    "ResultSubpartitionHandle",
    "SegmentFileHandle",
    "StateChange",
    "StateScope",
    "StreamHandle",
    "SubtaskEntry",
    "SubtaskState",
    "stream_handles",
]

#: The format versions this module reads and writes (Flink 1.15 wrote 3, Flink 2.3 writes 6).
READABLE_VERSIONS = (3, 4, 5, 6)
#: The version Flink 2.3.0 writes.
CURRENT_VERSION = 6


class StateScope(IntEnum):
    """``CheckpointedStateScope``, by ordinal: where a file-merging segment's file lives."""

    EXCLUSIVE = 0
    SHARED = 1


class DistributionMode(IntEnum):
    """``OperatorStateHandle.Mode``, by ordinal: how operator state is redistributed."""

    SPLIT_DISTRIBUTE = 0
    UNION = 1
    BROADCAST = 2


# ---------------------------------------------------------------------------------------------
# stream state handles: the bytes themselves, inline or in a file


@dataclass(frozen=True, slots=True)
class ByteStreamHandle:
    """``ByteStreamStateHandle``: state inline in the metadata (tag 1)."""

    name: str
    data: bytes

    @property
    def state_size(self) -> int:
        return len(self.data)


@dataclass(frozen=True, slots=True)
class FileHandle:
    """``FileStateHandle``: a file by its absolute path as Flink spells it (tag 2)."""

    path: str
    state_size: int


@dataclass(frozen=True, slots=True)
class RelativeFileHandle:
    """``RelativeFileStateHandle``: a file in the checkpoint's exclusive directory (tag 6).

    Only the relative path is stored; the reader of the metadata resolves it against the
    directory the metadata was loaded from (Flink does so with the external pointer).
    """

    relative_path: str
    state_size: int


@dataclass(frozen=True, slots=True)
class SegmentFileHandle:
    """``SegmentFileStateHandle``: a segment of a merged file (file merging; tag 15)."""

    path: str
    start: int
    state_size: int
    scope: StateScope
    logical_file_id: str


@dataclass(frozen=True, slots=True)
class EmptySegmentFileHandle:
    """``EmptySegmentFileStateHandle``: file merging's empty segment (tag 16); no file."""

    @property
    def state_size(self) -> int:
        return 0


@dataclass(frozen=True, slots=True)
class KeyGroupsHandle:
    """``KeyGroupsStateHandle``: one offset per key group into a delegate stream.

    The key groups are ``key_group_start`` .. ``key_group_start + len(offsets) - 1``. Tags:
    3 (no state handle id: the old encoding, and the only one allowed where a stream handle is
    expected), 12 (with ``handle_id``), 7 (``savepoint``: ``KeyGroupsSavepointStateHandle``,
    never an id).
    """

    key_group_start: int
    offsets: tuple[int, ...]
    delegate: StreamHandle | None
    handle_id: str | None = None
    savepoint: bool = False

    @property
    def key_group_count(self) -> int:
        return len(self.offsets)


StreamHandle = (
    ByteStreamHandle
    | FileHandle
    | RelativeFileHandle
    | SegmentFileHandle
    | EmptySegmentFileHandle
    | KeyGroupsHandle
)


# ---------------------------------------------------------------------------------------------
# keyed state handles


@dataclass(frozen=True, slots=True)
class HandleAndLocalPath:
    """One file of an incremental snapshot: its handle and its name in the backend's directory."""

    local_path: str
    handle: StreamHandle | None


@dataclass(frozen=True, slots=True)
class IncrementalHandle:
    """``IncrementalRemoteKeyedStateHandle``: RocksDB's (ForSt's) incremental snapshot.

    ``shared`` files may be referenced by later checkpoints; ``private`` ones belong to this
    one. Tag 11 carries ``checkpointed_size`` and ``handle_id``; the old tag 5 neither (both
    ``None``).
    """

    checkpoint_id: int
    backend_id: str
    key_group_start: int
    key_group_count: int
    metadata: StreamHandle | None
    shared: tuple[HandleAndLocalPath, ...]
    private: tuple[HandleAndLocalPath, ...]
    checkpointed_size: int | None = None
    handle_id: str | None = None


@dataclass(frozen=True, slots=True)
class StateChange:
    """One change of an in-memory changelog; key group -1 is a metadata change."""

    key_group: int
    data: bytes


@dataclass(frozen=True, slots=True)
class InMemoryChangelogHandle:
    """``InMemoryChangelogStateHandle``: changelog changes inline (tag 9)."""

    key_group_start: int
    key_group_count: int
    sequence_from: int
    sequence_to: int
    changes: tuple[StateChange, ...]
    handle_id: str


@dataclass(frozen=True, slots=True)
class ChangelogStreamHandle:
    """``ChangelogStateHandleStreamImpl``: changelog in files, each from an offset.

    Tag 13 carries ``storage_identifier``; the old tag 10 does not (Flink assumes
    ``"filesystem"``).
    """

    key_group_start: int
    key_group_count: int
    handles_and_offsets: tuple[tuple[StreamHandle | None, int], ...]
    state_size: int
    checkpointed_size: int
    handle_id: str
    storage_identifier: str | None = None


@dataclass(frozen=True, slots=True)
class ChangelogBackendHandle:
    """``ChangelogStateBackendHandle``: materialized keyed state plus the changelog since.

    Tag 14 carries ``checkpoint_id``; the old tag 8 does not (Flink takes the materialization
    id). ``materialized`` may hold ``None`` where the bytes hold a null handle (Flink skips it
    with a warning).
    """

    key_group_start: int
    key_group_count: int
    checkpointed_size: int
    materialized: tuple[KeyedHandle | None, ...]
    non_materialized: tuple[KeyedHandle | None, ...]
    materialization_id: int
    handle_id: str
    checkpoint_id: int | None = None


KeyedHandle = (
    KeyGroupsHandle
    | IncrementalHandle
    | ChangelogBackendHandle
    | InMemoryChangelogHandle
    | ChangelogStreamHandle
)


# ---------------------------------------------------------------------------------------------
# operator state handles


@dataclass(frozen=True, slots=True)
class PartitionOffsets:
    """One named operator state: its distribution mode and the offsets of its partitions."""

    name: str
    mode: DistributionMode
    offsets: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class FileMergingDirectories:
    """What a file-merging operator state handle adds (tag 17): its directories."""

    task_owned_dir: str
    shared_dir: str
    empty: bool


@dataclass(frozen=True, slots=True)
class OperatorStateHandle:
    """``OperatorStreamStateHandle`` (tag 4) or, with ``file_merging``,
    ``FileMergingOperatorStreamStateHandle`` (tag 17). Flink keeps the partitions in a
    ``HashMap``: their order carries no meaning."""

    partitions: tuple[PartitionOffsets, ...]
    delegate: StreamHandle | None
    file_merging: FileMergingDirectories | None = None


# ---------------------------------------------------------------------------------------------
# channel state of unaligned checkpoints


@dataclass(frozen=True, slots=True)
class InputChannelHandle:
    """``InputChannelStateHandle``: in-flight data of one input channel."""

    subtask_index: int
    gate_index: int
    channel_index: int
    offsets: tuple[int, ...]
    state_size: int
    delegate: StreamHandle | None


@dataclass(frozen=True, slots=True)
class ResultSubpartitionHandle:
    """``ResultSubpartitionStateHandle``: in-flight data of one result subpartition."""

    subtask_index: int
    partition_index: int
    subpartition_index: int
    offsets: tuple[int, ...]
    state_size: int
    delegate: StreamHandle | None


@dataclass(frozen=True, slots=True)
class MergedInputChannelHandle:
    """``MergedInputChannelStateHandle`` (version 6): several channels' state in one stream;
    ``serialized_offsets`` is Flink's own encoding of the per-channel offsets, kept as is."""

    subtask_index: int
    state_size: int
    delegate: StreamHandle | None
    serialized_offsets: bytes


@dataclass(frozen=True, slots=True)
class MergedResultSubpartitionHandle:
    """``MergedResultSubpartitionStateHandle`` (version 6), like the merged input handle."""

    subtask_index: int
    state_size: int
    delegate: StreamHandle | None
    serialized_offsets: bytes


ChannelStateHandle = (
    InputChannelHandle
    | ResultSubpartitionHandle
    | MergedInputChannelHandle
    | MergedResultSubpartitionHandle
)


# ---------------------------------------------------------------------------------------------
# subtasks, operators, the checkpoint


@dataclass(frozen=True, slots=True)
class SubtaskState:
    """``OperatorSubtaskState``: the state of one parallel instance of an operator."""

    managed_operator: OperatorStateHandle | None = None
    raw_operator: OperatorStateHandle | None = None
    managed_keyed: KeyedHandle | None = None
    raw_keyed: KeyedHandle | None = None
    input_channels: tuple[InputChannelHandle | MergedInputChannelHandle, ...] = ()
    result_subpartitions: tuple[ResultSubpartitionHandle | MergedResultSubpartitionHandle, ...] = ()


@dataclass(frozen=True, slots=True)
class SubtaskEntry:
    """One subtask of an operator: its index and its state, or ``None`` when it had finished."""

    index: int
    state: SubtaskState | None


@dataclass(frozen=True, slots=True)
class OperatorState:
    """``OperatorState``: an operator's id (16 bytes; its hex is Flink's ``OperatorID``),
    parallelism, maximum parallelism, coordinator state and subtasks. ``subtasks`` ``None``
    means fully finished (``FullyFinishedOperatorState``). ``name`` and ``uid`` exist from
    version 5 on (``None`` when absent: Flink writes an empty string)."""

    operator_id: bytes
    parallelism: int
    max_parallelism: int
    coordinator_state: ByteStreamHandle | None = None
    subtasks: tuple[SubtaskEntry, ...] | None = ()
    name: str | None = None
    uid: str | None = None

    @property
    def operator_id_hex(self) -> str:
        return self.operator_id.hex()


@dataclass(frozen=True, slots=True)
class MasterState:
    """``MasterState``: state of a master hook (name, version, opaque bytes)."""

    name: str
    version: int
    data: bytes


@dataclass(frozen=True, slots=True)
class CheckpointMetadata:
    """A whole ``_metadata``: format version, checkpoint id, master states, operators and, from
    version 4 on, the checkpoint properties as the Java serialization bytes Flink wrote (a
    ``CheckpointProperties`` object; ``None`` before version 4)."""

    version: int
    checkpoint_id: int
    master_states: tuple[MasterState, ...]
    operators: tuple[OperatorState, ...]
    properties: bytes | None = None


# ---------------------------------------------------------------------------------------------
# walking


def stream_handles(metadata: CheckpointMetadata) -> Iterator[StreamHandle]:
    """Every stream state handle the metadata holds, nested ones too (a key-group handle, then
    its delegate), in the order of the bytes; what audits and copies need to find files."""
    for operator in metadata.operators:
        if operator.coordinator_state is not None:
            yield operator.coordinator_state
        for entry in operator.subtasks or ():
            if entry.state is not None:
                yield from _subtask_streams(entry.state)


def _subtask_streams(state: SubtaskState) -> Iterator[StreamHandle]:
    for operator_handle in (state.managed_operator, state.raw_operator):
        if operator_handle is not None:
            yield from _stream_tree(operator_handle.delegate)
    for keyed in (state.managed_keyed, state.raw_keyed):
        yield from _keyed_streams(keyed)
    for channel in (*state.input_channels, *state.result_subpartitions):
        yield from _stream_tree(channel.delegate)


def _keyed_streams(handle: KeyedHandle | None) -> Iterator[StreamHandle]:
    if handle is None:
        return
    if isinstance(handle, KeyGroupsHandle):
        yield from _stream_tree(handle)
    elif isinstance(handle, IncrementalHandle):
        yield from _stream_tree(handle.metadata)
        for item in (*handle.shared, *handle.private):
            yield from _stream_tree(item.handle)
    elif isinstance(handle, ChangelogBackendHandle):
        for nested in (*handle.materialized, *handle.non_materialized):
            yield from _keyed_streams(nested)
    elif isinstance(handle, ChangelogStreamHandle):
        for stream, _offset in handle.handles_and_offsets:
            yield from _stream_tree(stream)


def _stream_tree(handle: StreamHandle | None) -> Iterator[StreamHandle]:
    while handle is not None:
        yield handle
        handle = handle.delegate if isinstance(handle, KeyGroupsHandle) else None
