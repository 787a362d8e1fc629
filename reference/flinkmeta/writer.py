"""Writing ``values`` as ``_metadata`` bytes, byte for byte as Flink 2.3.0's serializers write them.

The encoding of each handle follows its value (see ``values``: old or new tag, as recorded);
only what the format version cannot hold is refused, with a ``MetadataFormatError`` (offset
-1): properties missing from version 4 on or present before it, a name or uid before version 5
or an empty one, merged channel state before version 6, a key-group handle with an id where a
stream handle is expected, a string over 65535 encoded bytes, a number outside its Java type.
"""

from __future__ import annotations

from flinkmeta import reader as tags
from flinkmeta import values as v
from flinkmeta._wire import Output
from flinkmeta.errors import MetadataFormatError

__all__ = ["write_metadata"]


def write_metadata(metadata: v.CheckpointMetadata) -> bytes:
    """The bytes of ``metadata`` in its format version."""
    if not isinstance(metadata, v.CheckpointMetadata):
        raise MetadataFormatError(-1, "a CheckpointMetadata", type(metadata).__name__)
    writer = _Writer(metadata.version)
    writer.metadata(metadata)
    return writer.out.getvalue()


def _refuse(expected: str, found: object = "") -> MetadataFormatError:
    return MetadataFormatError(-1, expected, repr(found) if found != "" else "")


class _Writer:
    def __init__(self, version: int) -> None:
        if version not in v.READABLE_VERSIONS:
            raise _refuse(f"a format version in {v.READABLE_VERSIONS}", version)
        self.version = version
        self.out = Output()

    def metadata(self, metadata: v.CheckpointMetadata) -> None:
        out = self.out
        out.i32(tags.METADATA_MAGIC, "the magic number")
        out.i32(self.version, "the version")
        if metadata.checkpoint_id < 0:
            raise _refuse("a non-negative checkpoint id", metadata.checkpoint_id)
        out.i64(metadata.checkpoint_id, "the checkpoint id")
        out.i32(len(metadata.master_states), "the number of master states")
        for master in metadata.master_states:
            self.master_state(master)
        out.i32(len(metadata.operators), "the number of operators")
        for operator in metadata.operators:
            self.operator(operator)
        if (metadata.properties is None) != (self.version < 4):
            raise _refuse("checkpoint properties exactly from version 4 on", metadata.properties)
        if metadata.properties is not None:
            out.raw(metadata.properties)

    def master_state(self, master: v.MasterState) -> None:
        body = Output()
        body.i32(master.version, "a master state's version")
        body.utf(master.name, "a master state's name")
        body.sized_bytes(master.data, "a master state")
        encoded = body.getvalue()
        self.out.i32(tags._MASTER_STATE_MAGIC, "the master state magic number")
        self.out.sized_bytes(encoded, "a master state")

    def operator(self, operator: v.OperatorState) -> None:
        out = self.out
        if self.version >= 5:
            for label, text in (("name", operator.name), ("uid", operator.uid)):
                if text == "":
                    raise _refuse(f"an operator {label} that is None or not empty", text)
                out.utf(text or "", f"an operator's {label}")
        elif operator.name is not None or operator.uid is not None:
            raise _refuse("no operator name or uid before version 5", operator.name or operator.uid)
        if len(operator.operator_id) != 16:
            raise _refuse("an operator id of 16 bytes", operator.operator_id)
        out.raw(operator.operator_id)
        out.i32(operator.parallelism, "the parallelism")
        out.i32(operator.max_parallelism, "the maximum parallelism")
        if operator.coordinator_state is not None and not isinstance(
            operator.coordinator_state, v.ByteStreamHandle
        ):
            raise _refuse("an inline coordinator state", operator.coordinator_state)
        self.stream_handle(operator.coordinator_state)
        if operator.subtasks is None:
            if operator.coordinator_state is not None:
                raise _refuse("no coordinator state for a fully finished operator")
            out.i32(-1, "the number of subtasks")
            return
        out.i32(len(operator.subtasks), "the number of subtasks")
        for entry in operator.subtasks:
            if entry.index < 0:
                raise _refuse("a non-negative subtask index", entry.index)
            if entry.state is None:
                out.i32(-(entry.index + 1), "a finished subtask's index")
            else:
                out.i32(entry.index, "a subtask index")
                self.subtask_state(entry.state)

    def subtask_state(self, state: v.SubtaskState) -> None:
        out = self.out
        for handle in (state.managed_operator, state.raw_operator):
            out.i32(0 if handle is None else 1, "an operator state flag")
            if handle is not None:
                self.operator_handle(handle)
        self.keyed_handle(state.managed_keyed)
        self.keyed_handle(state.raw_keyed)
        for group in (state.input_channels, state.result_subpartitions):
            out.i32(len(group), "the number of channel state handles")
            for channel in group:
                self.channel_handle(channel)

    # -- handles -------------------------------------------------------------------------------

    def stream_handle(self, handle: v.StreamHandle | None) -> None:
        out = self.out
        if handle is None:
            out.u8(tags.NULL)
        elif isinstance(handle, v.RelativeFileHandle):
            out.u8(tags.RELATIVE)
            out.utf(handle.relative_path, "a relative path")
            out.i64(handle.state_size, "a state size")
        elif isinstance(handle, v.SegmentFileHandle):
            out.u8(tags.SEGMENT)
            out.i64(handle.start, "a segment's start")
            out.i64(handle.state_size, "a segment's size")
            out.i32(int(handle.scope), "a segment's scope")
            out.utf(handle.path, "a segment's path")
            out.utf(handle.logical_file_id, "a logical file id")
        elif isinstance(handle, v.EmptySegmentFileHandle):
            out.u8(tags.EMPTY_SEGMENT)
        elif isinstance(handle, v.FileHandle):
            out.u8(tags.FILE)
            out.i64(handle.state_size, "a state size")
            out.utf(handle.path, "a file path")
        elif isinstance(handle, v.ByteStreamHandle):
            out.u8(tags.BYTES)
            out.utf(handle.name, "an inline handle's name")
            out.sized_bytes(handle.data, "an inline handle")
        elif isinstance(handle, v.KeyGroupsHandle):
            if handle.handle_id is not None or handle.savepoint:
                raise _refuse("a plain key-group handle where a stream handle is expected", handle)
            out.u8(tags.KEY_GROUPS)
            self.key_groups_body(handle)
        else:
            raise _refuse("a stream state handle", handle)

    def key_groups_body(self, handle: v.KeyGroupsHandle) -> None:
        out = self.out
        out.i32(handle.key_group_start, "the first key group")
        out.i32(len(handle.offsets), "the number of key groups")
        for offset in handle.offsets:
            out.i64(offset, "a key group offset")
        self.stream_handle(handle.delegate)

    def keyed_handle(self, handle: v.KeyedHandle | None) -> None:
        out = self.out
        if handle is None:
            out.u8(tags.NULL)
        elif isinstance(handle, v.KeyGroupsHandle):
            if handle.savepoint and handle.handle_id is not None:
                raise _refuse(
                    "no state handle id on a savepoint key-group handle", handle.handle_id
                )
            tag = (
                tags.SAVEPOINT_KEY_GROUPS
                if handle.savepoint
                else tags.KEY_GROUPS
                if handle.handle_id is None
                else tags.KEY_GROUPS_V2
            )
            out.u8(tag)
            self.key_groups_body(handle)
            if handle.handle_id is not None:
                out.utf(handle.handle_id, "a state handle id")
        elif isinstance(handle, v.IncrementalHandle):
            self.incremental(handle)
        elif isinstance(handle, v.ChangelogBackendHandle):
            self.changelog(handle)
        elif isinstance(handle, v.InMemoryChangelogHandle):
            out.u8(tags.CHANGELOG_BYTES)
            self.key_group_range(handle.key_group_start, handle.key_group_count)
            out.i64(handle.sequence_from, "the first sequence number")
            out.i64(handle.sequence_to, "the last sequence number")
            out.i32(len(handle.changes), "the number of changes")
            for change in handle.changes:
                out.i32(change.key_group, "a change's key group")
                out.sized_bytes(change.data, "a change")
            out.utf(handle.handle_id, "a state handle id")
        elif isinstance(handle, v.ChangelogStreamHandle):
            v2 = handle.storage_identifier is not None
            out.u8(tags.CHANGELOG_FILES_V2 if v2 else tags.CHANGELOG_FILES)
            self.key_group_range(handle.key_group_start, handle.key_group_count)
            out.i32(len(handle.handles_and_offsets), "the number of changelog files")
            for stream, offset in handle.handles_and_offsets:
                out.i64(offset, "a changelog file offset")
                self.stream_handle(stream)
            out.i64(handle.state_size, "the state size")
            out.i64(handle.checkpointed_size, "the checkpointed size")
            out.utf(handle.handle_id, "a state handle id")
            if handle.storage_identifier is not None:
                out.utf(handle.storage_identifier, "a storage identifier")
        else:
            raise _refuse("a keyed state handle", handle)

    def key_group_range(self, start: int, count: int) -> None:
        self.out.i32(start, "the first key group")
        self.out.i32(count, "the number of key groups")

    def incremental(self, handle: v.IncrementalHandle) -> None:
        out = self.out
        v2 = handle.checkpointed_size is not None
        if v2 != (handle.handle_id is not None):
            raise _refuse("an incremental handle with both or neither of checkpointed size and id")
        out.u8(tags.INCREMENTAL_V2 if v2 else tags.INCREMENTAL)
        out.i64(handle.checkpoint_id, "an incremental handle's checkpoint id")
        out.utf(handle.backend_id, "a backend id")
        self.key_group_range(handle.key_group_start, handle.key_group_count)
        if handle.checkpointed_size is not None:
            out.i64(handle.checkpointed_size, "the checkpointed size")
        self.stream_handle(handle.metadata)
        for group in (handle.shared, handle.private):
            out.i32(len(group), "the number of files")
            for item in group:
                out.utf(item.local_path, "a local path")
                self.stream_handle(item.handle)
        if handle.handle_id is not None:
            out.utf(handle.handle_id, "a state handle id")

    def changelog(self, handle: v.ChangelogBackendHandle) -> None:
        out = self.out
        out.u8(tags.CHANGELOG if handle.checkpoint_id is None else tags.CHANGELOG_V2)
        self.key_group_range(handle.key_group_start, handle.key_group_count)
        out.i64(handle.checkpointed_size, "the checkpointed size")
        for group in (handle.materialized, handle.non_materialized):
            out.i32(len(group), "the number of nested handles")
            for nested in group:
                self.keyed_handle(nested)
        out.i64(handle.materialization_id, "the materialization id")
        if handle.checkpoint_id is not None:
            out.i64(handle.checkpoint_id, "the checkpoint id")
        out.utf(handle.handle_id, "a state handle id")

    def operator_handle(self, handle: v.OperatorStateHandle) -> None:
        out = self.out
        merging = handle.file_merging
        out.u8(tags.OPERATOR if merging is None else tags.FILE_MERGING_OPERATOR)
        out.i32(len(handle.partitions), "the number of partitions")
        for partition in handle.partitions:
            out.utf(partition.name, "an operator state's name")
            out.u8(int(partition.mode))
            out.i32(len(partition.offsets), "the number of offsets")
            for offset in partition.offsets:
                out.i64(offset, "a partition offset")
        if merging is not None:
            if not isinstance(handle.delegate, (v.SegmentFileHandle, v.EmptySegmentFileHandle)):
                raise _refuse("a segment file handle in a file-merging operator handle", handle)
            out.utf(merging.task_owned_dir, "the task-owned directory")
            out.utf(merging.shared_dir, "the shared directory")
            out.boolean(merging.empty)
        self.stream_handle(handle.delegate)

    def channel_handle(self, handle: v.ChannelStateHandle) -> None:
        out = self.out
        merged = isinstance(handle, (v.MergedInputChannelHandle, v.MergedResultSubpartitionHandle))
        if self.version >= 6:
            inputs = isinstance(handle, (v.InputChannelHandle, v.MergedInputChannelHandle))
            out.u8(
                (tags.MERGED_INPUT_CHANNEL if merged else tags.INPUT_CHANNEL)
                if inputs
                else (tags.MERGED_RESULT_SUBPARTITION if merged else tags.RESULT_SUBPARTITION)
            )
        elif merged:
            raise _refuse("merged channel state only from version 6 on", handle)
        if isinstance(handle, (v.MergedInputChannelHandle, v.MergedResultSubpartitionHandle)):
            out.i32(handle.subtask_index, "a subtask index")
            out.i64(handle.state_size, "a state size")
            self.stream_handle(handle.delegate)
            out.sized_bytes(handle.serialized_offsets, "serialized channel offsets")
            return
        out.i32(handle.subtask_index, "a subtask index")
        if isinstance(handle, v.InputChannelHandle):
            out.i32(handle.gate_index, "a gate index")
            out.i32(handle.channel_index, "a channel index")
        else:
            out.i32(handle.partition_index, "a partition index")
            out.i32(handle.subpartition_index, "a subpartition index")
        out.i32(len(handle.offsets), "the number of offsets")
        for offset in handle.offsets:
            out.i64(offset, "an offset")
        out.i64(handle.state_size, "a state size")
        self.stream_handle(handle.delegate)
