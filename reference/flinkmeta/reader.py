"""Reading ``_metadata`` bytes into ``values``, as Flink 2.3.0's
``Checkpoints.loadCheckpointMetadata`` reads them (``MetadataV3Serializer`` to
``MetadataV6Serializer`` over ``MetadataV2V3SerializerBase``), but into plain values and with
a ``MetadataFormatError`` for anything that is not well formed.

Where this reader is stricter than Flink's loader: bytes after the last operator of a version 3
file (Flink ignores them; version 4 on, they belong to the properties, which must be one whole
Java object); an operator state handle's distribution mode or a segment's scope outside its
enum (Flink fails with an ``ArrayIndexOutOfBoundsException``); a coordinator state that is not
inline (Flink: ``IOException``); and nesting deeper than 32 handles (Flink recurses until its
stack overflows). Null handles inside a changelog handle are kept (Flink drops the materialized
ones with a warning).
"""

from __future__ import annotations

from typing import cast

from flinkmeta import values as v
from flinkmeta._wire import Input
from flinkmeta.errors import MetadataFormatError
from flinkmeta.javaser import read_object

__all__ = ["METADATA_MAGIC", "read_metadata"]

#: ``Checkpoints.HEADER_MAGIC_NUMBER``
METADATA_MAGIC = 0x4960672D
_MASTER_STATE_MAGIC = 0xC96B1696 - 2**32
_MAX_NESTING = 32

# stream state handle tags (MetadataV2V3SerializerBase)
NULL, BYTES, FILE, KEY_GROUPS, OPERATOR, INCREMENTAL, RELATIVE = 0, 1, 2, 3, 4, 5, 6
SAVEPOINT_KEY_GROUPS, CHANGELOG, CHANGELOG_BYTES, CHANGELOG_FILES = 7, 8, 9, 10
INCREMENTAL_V2, KEY_GROUPS_V2, CHANGELOG_FILES_V2, CHANGELOG_V2 = 11, 12, 13, 14
SEGMENT, EMPTY_SEGMENT, FILE_MERGING_OPERATOR = 15, 16, 17
# channel state handle tags (ChannelStateHandleSerializerV2, version 6)
INPUT_CHANNEL, RESULT_SUBPARTITION, MERGED_INPUT_CHANNEL, MERGED_RESULT_SUBPARTITION = 1, 2, 3, 4

_Inputs = tuple[v.InputChannelHandle | v.MergedInputChannelHandle, ...]
_Outputs = tuple[v.ResultSubpartitionHandle | v.MergedResultSubpartitionHandle, ...]
_STREAM_TAGS = "a stream state handle tag (0, 1, 2, 3, 6, 15 or 16)"
_KEYED_TAGS = "a keyed state handle tag (0, 3, 5, 7 to 14)"
_OPERATOR_TAGS = "an operator state handle tag (0, 4 or 17)"


def read_metadata(data: bytes) -> v.CheckpointMetadata:
    """The checkpoint metadata ``data`` holds; ``MetadataFormatError`` if it is not whole and
    well formed. Time and memory are linear in ``len(data)``."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise MetadataFormatError(0, "metadata as bytes", type(data).__name__)
    return _Reader(Input(bytes(data))).metadata()


class _Reader:
    def __init__(self, source: Input) -> None:
        self.src = source
        self.version = 0
        self.depth = 0

    # -- the frame -------------------------------------------------------------------------

    def metadata(self) -> v.CheckpointMetadata:
        src = self.src
        magic = src.i32("the magic number 0x4960672D")
        if magic != METADATA_MAGIC:
            raise src.fail("the magic number 0x4960672D", f"0x{magic & 0xFFFFFFFF:08x}", 0)
        self.version = src.i32("the format version")
        if self.version not in v.READABLE_VERSIONS:
            raise src.fail(
                f"a format version in {v.READABLE_VERSIONS} (Flink 1.15 to 2.3)",
                str(self.version),
                4,
            )
        at = src.pos
        checkpoint_id = src.i64("the checkpoint id")
        if checkpoint_id < 0:
            raise src.fail("a non-negative checkpoint id", str(checkpoint_id), at)
        masters = tuple(self.master_state() for _ in range(src.count("master states", 8)))
        operators = tuple(self.operator() for _ in range(src.count("operator states", 21)))
        properties = self.properties()
        return v.CheckpointMetadata(self.version, checkpoint_id, masters, operators, properties)

    def properties(self) -> bytes | None:
        src = self.src
        if self.version < 4:
            if src.remaining:
                raise src.fail("the end of the metadata", f"{src.remaining} more bytes")
            return None
        start = src.pos
        read_object(src)
        if src.remaining:
            raise src.fail(
                "the end of the metadata after the properties", f"{src.remaining} more bytes"
            )
        return src.data[start : src.end]

    def master_state(self) -> v.MasterState:
        src = self.src
        at = src.pos
        if src.i32("the master state magic number 0xc96b1696") != _MASTER_STATE_MAGIC:
            raise src.fail("the master state magic number 0xc96b1696", at=at)
        at = src.pos
        length = src.i32("the length of a master state")
        if length <= 0:
            raise src.fail("a positive master state length", str(length), at)
        src.take(length, "a master state")
        body = Input(src.data, src.pos - length, src.pos)
        version = body.i32("the master state's version")
        name = body.utf("the master state's name")
        payload = body.sized_bytes("the master state")
        if body.remaining:
            raise body.fail("the end of the master state", f"{body.remaining} more bytes")
        return v.MasterState(name, version, payload)

    # -- operators and subtasks --------------------------------------------------------------

    def operator(self) -> v.OperatorState:
        src = self.src
        name = uid = None
        if self.version >= 5:
            name = src.utf("the operator's name") or None
            uid = src.utf("the operator's uid") or None
        operator_id = src.take(16, "the operator id (16 bytes)")
        parallelism = src.i32("the operator's parallelism")
        max_parallelism = src.i32("the operator's maximum parallelism")
        at = src.pos
        coordinator = self.stream_handle()
        if coordinator is not None and not isinstance(coordinator, v.ByteStreamHandle):
            raise src.fail(
                "an inline (byte stream) coordinator state", type(coordinator).__name__, at
            )
        at = src.pos
        count = src.i32("the number of subtask states")
        if count < 0:
            if coordinator is not None:
                raise src.fail("no coordinator state for a fully finished operator", at=at)
            subtasks = None
        else:
            if count * 4 > src.remaining:
                raise src.fail("a number of subtask states the bytes left can hold", str(count), at)
            subtasks = tuple(self.subtask_entry() for _ in range(count))
        return v.OperatorState(
            operator_id, parallelism, max_parallelism, coordinator, subtasks, name, uid
        )

    def subtask_entry(self) -> v.SubtaskEntry:
        stored = self.src.i32("a subtask index")
        if stored < 0:
            return v.SubtaskEntry(-stored - 1, None)
        return v.SubtaskEntry(stored, self.subtask_state())

    def subtask_state(self) -> v.SubtaskState:
        src = self.src
        managed_op = self.operator_handle() if src.i32("a managed operator state flag") else None
        raw_op = self.operator_handle() if src.i32("a raw operator state flag") else None
        managed_keyed = self.keyed_handle()
        raw_keyed = self.keyed_handle()
        inputs = tuple(
            self.channel_handle(True) for _ in range(src.count("input channel states", 1))
        )
        outputs = tuple(
            self.channel_handle(False) for _ in range(src.count("result subpartition states", 1))
        )
        return v.SubtaskState(
            managed_op,
            raw_op,
            managed_keyed,
            raw_keyed,
            cast(_Inputs, inputs),
            cast(_Outputs, outputs),
        )

    # -- handles -------------------------------------------------------------------------------

    def nested(self) -> None:
        self.depth += 1
        if self.depth > _MAX_NESTING:
            raise self.src.fail(f"state handles nested at most {_MAX_NESTING} deep")

    def stream_handle(self) -> v.StreamHandle | None:
        src = self.src
        at = src.pos
        tag = src.u8(_STREAM_TAGS)
        if tag == NULL:
            return None
        if tag == FILE:
            size = src.i64("a file's state size")
            return v.FileHandle(src.utf("a file path"), size)
        if tag == BYTES:
            name = src.utf("an inline handle's name")
            return v.ByteStreamHandle(name, src.sized_bytes("an inline handle"))
        if tag == RELATIVE:
            path = src.utf("a relative file path")
            return v.RelativeFileHandle(path, src.i64("a file's state size"))
        if tag == KEY_GROUPS:
            return self.key_groups(None, False)
        if tag == SEGMENT:
            return self.segment()
        if tag == EMPTY_SEGMENT:
            return v.EmptySegmentFileHandle()
        raise src.fail(_STREAM_TAGS, str(tag), at)

    def segment(self) -> v.SegmentFileHandle:
        src = self.src
        start = src.i64("a segment's start")
        size = src.i64("a segment's size")
        at = src.pos
        scope = src.i32("a segment's scope")
        if scope not in (0, 1):
            raise src.fail("a state scope (0 exclusive, 1 shared)", str(scope), at)
        path = src.utf("a segment's file path")
        return v.SegmentFileHandle(
            path, start, size, v.StateScope(scope), src.utf("a logical file id")
        )

    def key_groups(self, tag: int | None, savepoint: bool) -> v.KeyGroupsHandle:
        src = self.src
        start = src.i32("the first key group")
        offsets = tuple(src.i64("a key group offset") for _ in range(src.count("key groups", 8)))
        self.nested()
        delegate = self.stream_handle()
        self.depth -= 1
        handle_id = src.utf("a state handle id") if tag == KEY_GROUPS_V2 else None
        return v.KeyGroupsHandle(start, offsets, delegate, handle_id, savepoint)

    def keyed_handle(self) -> v.KeyedHandle | None:
        src = self.src
        at = src.pos
        tag = src.i8(_KEYED_TAGS)
        if tag == NULL:
            return None
        if tag in (KEY_GROUPS, KEY_GROUPS_V2, SAVEPOINT_KEY_GROUPS):
            return self.key_groups(tag, tag == SAVEPOINT_KEY_GROUPS)
        if tag in (INCREMENTAL, INCREMENTAL_V2):
            return self.incremental(tag == INCREMENTAL_V2)
        if tag in (CHANGELOG, CHANGELOG_V2):
            return self.changelog(tag == CHANGELOG_V2)
        if tag == CHANGELOG_BYTES:
            return self.in_memory_changelog()
        if tag in (CHANGELOG_FILES, CHANGELOG_FILES_V2):
            return self.changelog_files(tag == CHANGELOG_FILES_V2)
        raise src.fail(_KEYED_TAGS, str(tag), at)

    def incremental(self, v2: bool) -> v.IncrementalHandle:
        src = self.src
        checkpoint_id = src.i64("an incremental handle's checkpoint id")
        backend_id = src.utf("a backend id")
        start = src.i32("the first key group")
        count = src.i32("the number of key groups")
        checkpointed_size = src.i64("the checkpointed size") if v2 else None
        meta = self.stream_handle()
        shared = self.local_paths("shared files")
        private = self.local_paths("private files")
        handle_id = src.utf("a state handle id") if v2 else None
        return v.IncrementalHandle(
            checkpoint_id,
            backend_id,
            start,
            count,
            meta,
            shared,
            private,
            checkpointed_size,
            handle_id,
        )

    def local_paths(self, what: str) -> tuple[v.HandleAndLocalPath, ...]:
        src = self.src
        items = []
        for _ in range(src.count(what, 3)):
            local = src.utf("a local path")
            items.append(v.HandleAndLocalPath(local, self.stream_handle()))
        return tuple(items)

    def changelog(self, v2: bool) -> v.ChangelogBackendHandle:
        src = self.src
        start = src.i32("the first key group")
        count = src.i32("the number of key groups")
        checkpointed_size = src.i64("the checkpointed size")
        self.nested()
        materialized = tuple(
            self.keyed_handle() for _ in range(src.count("materialized handles", 1))
        )
        non_materialized = tuple(
            self.keyed_handle() for _ in range(src.count("non-materialized handles", 1))
        )
        self.depth -= 1
        materialization_id = src.i64("the materialization id")
        checkpoint_id = src.i64("the checkpoint id") if v2 else None
        handle_id = src.utf("a state handle id")
        return v.ChangelogBackendHandle(
            start, count, checkpointed_size, materialized, non_materialized,
            materialization_id, handle_id, checkpoint_id,
        )  # fmt: skip

    def in_memory_changelog(self) -> v.InMemoryChangelogHandle:
        src = self.src
        start = src.i32("the first key group")
        count = src.i32("the number of key groups")
        seq_from = src.i64("the first sequence number")
        seq_to = src.i64("the last sequence number")
        changes = []
        for _ in range(src.count("state changes", 8)):
            key_group = src.i32("a change's key group")
            changes.append(v.StateChange(key_group, src.sized_bytes("a state change")))
        handle_id = src.utf("a state handle id")
        return v.InMemoryChangelogHandle(start, count, seq_from, seq_to, tuple(changes), handle_id)

    def changelog_files(self, v2: bool) -> v.ChangelogStreamHandle:
        src = self.src
        start = src.i32("the first key group")
        count = src.i32("the number of key groups")
        pairs = []
        for _ in range(src.count("changelog files", 9)):
            offset = src.i64("a changelog file offset")
            pairs.append((self.stream_handle(), offset))
        size = src.i64("the state size")
        checkpointed_size = src.i64("the checkpointed size")
        handle_id = src.utf("a state handle id")
        storage = src.utf("a storage identifier") if v2 else None
        return v.ChangelogStreamHandle(
            start, count, tuple(pairs), size, checkpointed_size, handle_id, storage
        )

    def operator_handle(self) -> v.OperatorStateHandle | None:
        src = self.src
        at = src.pos
        tag = src.i8(_OPERATOR_TAGS)
        if tag == NULL:
            return None
        if tag not in (OPERATOR, FILE_MERGING_OPERATOR):
            raise src.fail(_OPERATOR_TAGS, str(tag), at)
        partitions = []
        for _ in range(src.count("operator state partitions", 7)):
            name = src.utf("an operator state's name")
            at = src.pos
            mode = src.i8("a distribution mode")
            if mode not in (0, 1, 2):
                raise src.fail("a distribution mode (0, 1 or 2)", str(mode), at)
            offsets = tuple(src.i64("a partition offset") for _ in range(src.count("offsets", 8)))
            partitions.append(v.PartitionOffsets(name, v.DistributionMode(mode), offsets))
        merging = None
        if tag == FILE_MERGING_OPERATOR:
            task_owned = src.utf("the task-owned directory")
            shared = src.utf("the shared directory")
            merging = v.FileMergingDirectories(task_owned, shared, src.boolean("the empty flag"))
        at = src.pos
        delegate = self.stream_handle()
        if merging is not None and not isinstance(
            delegate, (v.SegmentFileHandle, v.EmptySegmentFileHandle)
        ):
            raise src.fail("a segment file handle in a file-merging operator handle", at=at)
        return v.OperatorStateHandle(tuple(partitions), delegate, merging)

    def channel_handle(self, inputs: bool) -> v.ChannelStateHandle:
        src = self.src
        if self.version < 6:
            return self.channel_plain(inputs)
        at = src.pos
        tag = src.u8("a channel state handle tag")
        plain, merged = (
            (INPUT_CHANNEL, MERGED_INPUT_CHANNEL)
            if inputs
            else (RESULT_SUBPARTITION, MERGED_RESULT_SUBPARTITION)
        )
        if tag == plain:
            return self.channel_plain(inputs)
        if tag == merged:
            subtask = src.i32("a subtask index")
            size = src.i64("a state size")
            delegate = self.stream_handle()
            offsets = src.sized_bytes("serialized channel offsets")
            kind = v.MergedInputChannelHandle if inputs else v.MergedResultSubpartitionHandle
            return kind(subtask, size, delegate, offsets)
        raise src.fail(f"a channel state handle tag ({plain} or {merged})", str(tag), at)

    def channel_plain(self, inputs: bool) -> v.ChannelStateHandle:
        src = self.src
        subtask = src.i32("a subtask index")
        first = src.i32("a gate or partition index")
        second = src.i32("a channel or subpartition index")
        offsets = tuple(src.i64("an offset") for _ in range(src.count("channel offsets", 8)))
        size = src.i64("a state size")
        delegate = self.stream_handle()
        kind = v.InputChannelHandle if inputs else v.ResultSubpartitionHandle
        return kind(subtask, first, second, offsets, size, delegate)
