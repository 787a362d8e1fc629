"""What the suite's jobs write as ``_metadata``: a real Flink checkpoint metadata (version 6).

A job of the suite (``workload.Coordinator``, ``suite._driver.JobDriver``) runs a chain of
operators, each subtask of which writes its states through the target. Its ``_metadata`` is
what Flink's ``Checkpoints.storeCheckpointMetadata`` would write for them (``flinkmeta``):
one operator per operator of the chain (16-byte ids, parallelism = subtasks, maximum
parallelism 128), each subtask's states as Flink's handles name them: a file-backed handle
(``ckptstore.api.FileStateHandle``) as ``FileHandle`` with the target's ``file_path`` and
``state_size``, a relative one (``RelativeFileStateHandle``) as ``RelativeFileHandle``, an
inline one as ``ByteStreamHandle``; exclusive state wrapped as Flink's keyed state
(``KeyGroupsHandle`` over the subtask's key groups), shared state (and exclusive state beside
it) as an incremental snapshot (``IncrementalHandle``: shared and private files), task-owned
state as operator state (``OperatorStateHandle``). File paths are written as the target spells
them: Flink's ``Path`` must read them as they are.

The suite restores through the target's own handles (it cannot make one from a path), so the
job's own record (its pickled handles) travels in the same file as a master state named
``ckptconform`` (``MASTER_STATE``); ``master_state`` reads it back.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import flinkmeta
from ckptstore.api import CheckpointedStateScope, FileStateHandle, RelativeFileStateHandle
from flinkmeta import values as fm

__all__ = [
    "MASTER_STATE",
    "MAX_PARALLELISM",
    "NULL_PROPERTIES",
    "PlacedState",
    "encode_metadata",
    "flink_handle",
    "in_flink_order",
    "key_group_range",
    "master_state",
    "operator_id",
]

#: the name of the master state that holds the job's own record
MASTER_STATE = "ckptconform"
MASTER_STATE_VERSION = 1
#: Flink's default maximum parallelism for small jobs (key groups per operator)
MAX_PARALLELISM = 128
#: the checkpoint properties: Java serialization of ``null`` (Flink's loader accepts it)
NULL_PROPERTIES = b"\xac\xed\x00\x05p"
#: names the ids of operators, handles and backends (uuid5): the same job gives the same bytes
_NAMESPACE = uuid.UUID("6f1d3c2e-8a47-4f0e-9d51-2b7c0e4a9f13")
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class PlacedState:
    """One state a subtask wrote: operator (index in the chain), subtask, kind, the handle.

    ``kind`` is ``"exclusive"`` or ``"shared"`` (``CheckpointedStateScope``) or any other
    name for task-owned state; ``handle`` is the target's handle.
    """

    operator: int
    subtask: int
    kind: str
    handle: Any


def operator_id(index: int) -> bytes:
    """The 16-byte id of the chain's operator ``index`` (Flink's ``OperatorID``)."""
    return _uuid(f"operator/{index}").bytes


def key_group_range(subtask: int, parallelism: int, max_parallelism: int) -> tuple[int, int]:
    """(first key group, count) of ``subtask``, as Flink's ``KeyGroupRangeAssignment``."""
    start = (subtask * max_parallelism + parallelism - 1) // parallelism
    end = ((subtask + 1) * max_parallelism - 1) // parallelism
    return start, end - start + 1


def in_flink_order(items: Iterable[_T], kind_of: Callable[[_T], str]) -> list[_T]:
    """One subtask's states in the order its Flink subtask state holds them: task-owned state
    (operator state) first, then shared, then exclusive state (keyed state), each in the
    order given."""
    rank = {CheckpointedStateScope.SHARED.value: 1, CheckpointedStateScope.EXCLUSIVE.value: 2}
    return sorted(items, key=lambda item: rank.get(kind_of(item), 0))


def flink_handle(handle: Any) -> fm.StreamHandle:
    """The Flink stream handle of a target's handle: relative, file-backed or inline.

    Raises ``ValueError`` for a handle that is none of these (the format has no other kind
    that holds bytes a task wrote through a storage).
    """
    if isinstance(handle, RelativeFileStateHandle):
        return fm.RelativeFileHandle(str(handle.relative_path), int(handle.state_size))
    if isinstance(handle, FileStateHandle):
        return fm.FileHandle(str(handle.file_path), int(handle.state_size))
    data = handle.as_bytes_if_in_memory()
    if data is None:
        raise ValueError(f"{handle!r} is neither file-backed nor inline: Flink has no such handle")
    name = getattr(handle, "handle_name", None)
    return fm.ByteStreamHandle(name if isinstance(name, str) else _uuid(repr(handle)).hex, data)


def encode_metadata(
    checkpoint_id: int,
    parallelism: int,
    states: Iterable[PlacedState],
    master: bytes,
) -> bytes:
    """Flink's ``_metadata`` (version 6) of the ``states``, with ``master`` as the master state
    ``ckptconform``. Operators are numbered from 0; one without states is still listed."""
    max_parallelism = max(MAX_PARALLELISM, parallelism)
    by_place: dict[tuple[int, int], list[PlacedState]] = defaultdict(list)
    operators = 0
    for state in states:
        if not 0 <= state.subtask < parallelism or state.operator < 0:
            raise ValueError(f"{state!r} lies outside {parallelism} subtasks")
        by_place[(state.operator, state.subtask)].append(state)
        operators = max(operators, state.operator + 1)
    entries: list[fm.OperatorState] = []
    for op in range(operators):
        subtasks = tuple(
            fm.SubtaskEntry(
                index,
                _subtask_state(
                    checkpoint_id,
                    (op, index),
                    by_place[(op, index)],
                    key_group_range(index, parallelism, max_parallelism),
                ),
            )
            for index in range(parallelism)
            if by_place.get((op, index))
        )
        entries.append(
            fm.OperatorState(
                operator_id(op),
                parallelism,
                max_parallelism,
                None,
                subtasks,
                name=f"ckptconform operator {op}",
                uid=None,
            )
        )
    metadata = fm.CheckpointMetadata(
        fm.CURRENT_VERSION,
        checkpoint_id,
        (fm.MasterState(MASTER_STATE, MASTER_STATE_VERSION, master),),
        tuple(entries),
        NULL_PROPERTIES,
    )
    return flinkmeta.write_metadata(metadata)


def master_state(metadata: bytes) -> bytes:
    """The bytes of the master state ``ckptconform`` in a ``_metadata``.

    Raises ``flinkmeta.MetadataFormatError`` (a ``ValueError``) for bytes that are not Flink's
    format, ``LookupError`` when the metadata has no such master state.
    """
    for state in flinkmeta.read_metadata(metadata).master_states:
        if state.name == MASTER_STATE:
            return state.data
    raise LookupError(f"the _metadata holds no master state named {MASTER_STATE!r}")


def _uuid(name: str) -> uuid.UUID:
    return uuid.uuid5(_NAMESPACE, name)


def _subtask_state(
    checkpoint_id: int,
    place: tuple[int, int],
    states: Sequence[PlacedState],
    key_groups: tuple[int, int],
) -> fm.SubtaskState:
    """One subtask's states as Flink wraps them (see the module's docstring)."""
    shared = [s for s in states if s.kind == CheckpointedStateScope.SHARED.value]
    exclusive = [s for s in states if s.kind == CheckpointedStateScope.EXCLUSIVE.value]
    owned = [s for s in states if s.kind not in CheckpointedStateScope.__members__.values()]
    if len(owned) > 2:
        raise ValueError(f"{len(owned)} task-owned states of one subtask: Flink holds two")
    start, count = key_groups
    keyed: fm.KeyedHandle | None = None
    handle_id = str(_uuid(f"{checkpoint_id}/{place}"))
    if shared or len(exclusive) > 1:
        keyed = fm.IncrementalHandle(
            checkpoint_id=checkpoint_id,
            backend_id=str(_uuid(f"backend/{place}")),
            key_group_start=start,
            key_group_count=count,
            metadata=None,
            shared=tuple(_file(f"{i:06d}.sst", s) for i, s in enumerate(shared)),
            private=tuple(_file(f"private-{i}", s) for i, s in enumerate(exclusive)),
            checkpointed_size=sum(max(0, int(s.handle.state_size)) for s in states),
            handle_id=handle_id,
        )
    elif exclusive:
        keyed = fm.KeyGroupsHandle(
            start, (0,) * count, flink_handle(exclusive[0].handle), handle_id=handle_id
        )
    operator = [_operator_state(s) for s in owned]
    return fm.SubtaskState(
        managed_operator=operator[0] if operator else None,
        raw_operator=operator[1] if len(operator) > 1 else None,
        managed_keyed=keyed,
    )


def _file(local_path: str, state: PlacedState) -> fm.HandleAndLocalPath:
    return fm.HandleAndLocalPath(local_path, flink_handle(state.handle))


def _operator_state(state: PlacedState) -> fm.OperatorStateHandle:
    partition = fm.PartitionOffsets("ckptconform", fm.DistributionMode.SPLIT_DISTRIBUTE, (0,))
    return fm.OperatorStateHandle((partition,), flink_handle(state.handle))
