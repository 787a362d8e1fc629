"""Flink 2.3.0's own loader and writer of checkpoint metadata, for tests that hold Python to it.

``load(data, external_pointer)`` runs ``Checkpoints.loadCheckpointMetadata`` on the bytes and
returns Flink's ``CheckpointMetadata`` (a py4j object); ``summary(metadata)`` turns it into
plain Python values: the checkpoint id, each operator (id, parallelism, maximum parallelism,
name, uid, fully finished or not, coordinator state size, its subtasks) and every stream state
handle Flink holds, nested ones too, as tuples (kind, path or name, size, offsets...) — what a
Python reader of the same bytes must agree on. ``subtask_streams(metadata)`` gives the Java
stream state handles of each operator's subtask, in the order the subtask state holds them
(operator state, then keyed state: a key-group handle's delegate, an incremental snapshot's
shared, then private files), and ``read_state(handle)`` reads one with Flink itself (its
``openInputStream``, on Flink's own file systems). ``handle_classes(metadata)`` counts the
state handles of each Flink class it holds, nested ones too (what kinds a real tree shows).
``store(metadata)`` writes it back with Flink's current serializer (version 6). Java exceptions
come back as the contract's built-in types (``gateway.java_errors``): Flink's ``IOException``
as ``OSError``, its ``checkState`` as ``ValueError``, anything else as ``RuntimeError``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ckptconform.flink.gateway import gateway, java_errors, jvm

__all__ = [
    "StreamEntry",
    "handle_classes",
    "load",
    "read_state",
    "store",
    "subtask_streams",
    "summary",
]

#: (kind, ...): ("file", path, size), ("relative", relative path, size, resolved path),
#: ("bytes", name, size), ("segment", path, start, size, scope, logical file id),
#: ("empty-segment",), ("key-groups", first key group, offsets)
StreamEntry = tuple[Any, ...]

_STATE = "org.apache.flink.runtime.state."


def load(data: bytes, external_pointer: str | None) -> Any:
    """Flink's ``CheckpointMetadata`` of ``data`` (relative handles resolved against the
    checkpoint directory ``external_pointer`` names, which must hold a ``_metadata``)."""
    j = jvm()
    with java_errors("Checkpoints.loadCheckpointMetadata"):
        stream = j.java.io.DataInputStream(j.java.io.ByteArrayInputStream(bytearray(data)))
        loader = j.java.lang.Thread.currentThread().getContextClassLoader()
        return j.org.apache.flink.runtime.checkpoint.Checkpoints.loadCheckpointMetadata(
            stream, loader, external_pointer
        )


def store(metadata: Any) -> bytes:
    """``metadata`` written by Flink's ``Checkpoints.storeCheckpointMetadata``."""
    j = jvm()
    with java_errors("Checkpoints.storeCheckpointMetadata"):
        buffer = j.java.io.ByteArrayOutputStream()
        out = j.java.io.DataOutputStream(buffer)
        j.org.apache.flink.runtime.checkpoint.Checkpoints.storeCheckpointMetadata(metadata, out)
        out.flush()
        return bytes(buffer.toByteArray())


def summary(metadata: Any) -> dict[str, Any]:
    """Plain values of Flink's ``CheckpointMetadata`` (see the module docstring)."""
    gateway()
    with java_errors("summarising Flink's CheckpointMetadata"):
        streams: list[StreamEntry] = []
        operators = [_operator(op, streams) for op in _items(metadata.getOperatorStates())]
        masters = [
            (str(m.name()), int(m.version()), len(m.bytes()))
            for m in _items(metadata.getMasterStates())
        ]
        return {
            "checkpoint_id": int(metadata.getCheckpointId()),
            "masters": masters,
            "operators": operators,
            "streams": streams,
        }


def subtask_streams(metadata: Any) -> dict[tuple[str, int], list[Any]]:
    """(operator id in hex, subtask index) -> the Java stream state handles of that subtask's
    state (see the module docstring); an incremental snapshot's metadata handle is left out."""
    gateway()
    with java_errors("listing the handles of Flink's CheckpointMetadata"):
        found: dict[tuple[str, int], list[Any]] = {}
        for op in _items(metadata.getOperatorStates()):
            states = op.getSubtaskStates()
            for index in sorted(int(i) for i in states.keySet().toArray()):
                state = states.get(index)
                handles: list[Any] = []
                for handle in _items(state.getManagedOperatorState()) + _items(
                    state.getRawOperatorState()
                ):
                    handles.append(handle.getDelegateStateHandle())
                for handle in _items(state.getManagedKeyedState()) + _items(
                    state.getRawKeyedState()
                ):
                    name = str(handle.getClass().getName())
                    if name == _STATE + "IncrementalRemoteKeyedStateHandle":
                        for item in _items(handle.getSharedState()) + _items(
                            handle.getPrivateState()
                        ):
                            handles.append(item.getHandle())
                    else:
                        handles.append(handle.getDelegateStateHandle())
                found[(str(op.getOperatorID().toString()), index)] = handles
        return found


def handle_classes(metadata: Any) -> Counter[str]:
    """How many state handles of each class (simple name) ``metadata`` holds, nested ones too."""
    gateway()
    counts: Counter[str] = Counter()
    with java_errors("counting the handles of Flink's CheckpointMetadata"):
        for op in _items(metadata.getOperatorStates()):
            _count(op.getCoordinatorState(), counts)
            states = op.getSubtaskStates()
            for index in states.keySet().toArray():
                state = states.get(index)
                for handle in (
                    _items(state.getManagedOperatorState())
                    + _items(state.getRawOperatorState())
                    + _items(state.getManagedKeyedState())
                    + _items(state.getRawKeyedState())
                    + _items(state.getInputChannelState())
                    + _items(state.getResultSubpartitionState())
                ):
                    _count(handle, counts)
    return counts


def _count(handle: Any, counts: Counter[str]) -> None:
    if handle is None:
        return
    name = str(handle.getClass().getName())
    simple = name.rsplit(".", 1)[-1]
    counts[simple] += 1
    if simple.startswith("KeyGroups") or simple.endswith("OperatorStreamStateHandle"):
        _count(handle.getDelegateStateHandle(), counts)
    elif name == _STATE + "IncrementalRemoteKeyedStateHandle":
        _count(handle.getMetaDataStateHandle(), counts)
        for item in _items(handle.getSharedState()) + _items(handle.getPrivateState()):
            _count(item.getHandle(), counts)
    elif "ChannelStateHandle" in simple or "SubpartitionStateHandle" in simple:
        _count(handle.getDelegate(), counts)
    elif simple.endswith("ChangelogStateBackendHandleImpl"):
        for nested in _items(handle.getMaterializedStateHandles()) + _items(
            handle.getNonMaterializedStateHandles()
        ):
            _count(nested, counts)
    elif simple.endswith("ChangelogStateHandleStreamImpl"):
        for pair in _items(handle.getHandlesAndOffsets()):
            _count(pair.getField(0), counts)


def read_state(handle: Any) -> bytes:
    """Every byte of a Java stream state handle, read by Flink (``openInputStream``)."""
    gateway()
    with java_errors(f"reading {handle.toString()} with Flink"):
        stream = handle.openInputStream()
        try:
            return bytes(stream.readAllBytes())
        finally:
            stream.close()


def _items(collection: Any) -> list[Any]:
    """A Java collection's elements, through an array: py4j's iterator ends on a Java
    exception, which PySpark's error handler (installed in a process that ran Spark) turns into
    an AssertionError."""
    return [] if collection is None else list(collection.toArray())


def _operator(op: Any, streams: list[StreamEntry]) -> dict[str, Any]:
    coordinator = op.getCoordinatorState()
    if coordinator is not None:
        _stream(coordinator, streams)
    subtasks: dict[int, bool] = {}
    states = op.getSubtaskStates()
    for index in sorted(int(i) for i in states.keySet().toArray()):
        state = states.get(index)
        subtasks[index] = bool(state.isFinished())
        if not state.isFinished():
            _subtask(state, streams)
    return {
        "id": str(op.getOperatorID().toString()),
        "parallelism": int(op.getParallelism()),
        "max_parallelism": int(op.getMaxParallelism()),
        "name": op.getOperatorName().orElse(None),
        "uid": op.getOperatorUid().orElse(None),
        "fully_finished": bool(op.isFullyFinished()),
        "coordinator_size": None if coordinator is None else int(coordinator.getStateSize()),
        "subtasks": subtasks,
    }


def _subtask(state: Any, streams: list[StreamEntry]) -> None:
    for handle in _items(state.getManagedOperatorState()) + _items(state.getRawOperatorState()):
        _stream(handle.getDelegateStateHandle(), streams)
    for handle in _items(state.getManagedKeyedState()) + _items(state.getRawKeyedState()):
        _keyed(handle, streams)
    for handle in _items(state.getInputChannelState()) + _items(state.getResultSubpartitionState()):
        _stream(handle.getDelegate(), streams)


def _keyed(handle: Any, streams: list[StreamEntry]) -> None:
    name = str(handle.getClass().getName())
    if name.startswith(_STATE + "KeyGroups"):
        _stream(handle, streams)
    elif name == _STATE + "IncrementalRemoteKeyedStateHandle":
        _stream(handle.getMetaDataStateHandle(), streams)
        for item in _items(handle.getSharedState()) + _items(handle.getPrivateState()):
            _stream(item.getHandle(), streams)
    elif name.endswith("ChangelogStateBackendHandleImpl"):
        for nested in _items(handle.getMaterializedStateHandles()) + _items(
            handle.getNonMaterializedStateHandles()
        ):
            _keyed(nested, streams)
    elif name.endswith("ChangelogStateHandleStreamImpl"):
        for pair in _items(handle.getHandlesAndOffsets()):
            _stream(pair.getField(0), streams)


def _stream(handle: Any, streams: list[StreamEntry]) -> None:
    while handle is not None:
        name = str(handle.getClass().getName()).rsplit(".", 1)[-1]
        size = int(handle.getStateSize())
        if name == "RelativeFileStateHandle":
            path = str(handle.getFilePath().toString())
            streams.append(("relative", str(handle.getRelativePath()), size, path))
        elif name == "FileStateHandle":
            streams.append(("file", str(handle.getFilePath().toString()), size))
        elif name == "ByteStreamStateHandle":
            streams.append(("bytes", str(handle.getHandleName()), size))
        elif name == "EmptySegmentFileStateHandle":
            streams.append(("empty-segment",))
        elif name == "SegmentFileStateHandle":
            streams.append(
                (
                    "segment",
                    str(handle.getFilePath().toString()),
                    int(handle.getStartPos()),
                    size,
                    int(handle.getScope().ordinal()),
                    str(handle.getLogicalFileId().getKeyString()),
                )
            )
        elif name.startswith("KeyGroups"):
            key_groups = handle.getKeyGroupRange()
            start = int(key_groups.getStartKeyGroup())
            count = int(key_groups.getNumberOfKeyGroups())
            offsets = tuple(int(handle.getOffsetForKeyGroup(start + i)) for i in range(count))
            streams.append(("key-groups", start, offsets))
            handle = handle.getDelegateStateHandle()
            continue
        else:
            streams.append((name, size))
        return
