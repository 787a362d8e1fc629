"""FLK: Flink reads it (Flink H1, H5, PATH): Flink 2.3.0's own loader on what the storage wrote.

A job of three subtasks (``ckptconform.workload``, on threads) writes its states through the
storage and finalizes ``_metadata`` in Flink's format (``ckptconform.metadata_file``: each state
as the Flink handle of the target's handle). Flink's ``Checkpoints.loadCheckpointMetadata``
(``ckptconform.flink``, the Flink leg) loads those bytes with the external pointer; then every
stream handle Flink holds is read: on ``file`` paths by Flink itself (the handle's
``openInputStream``), on other schemes, which Flink's JVM here has no file system for, by the
kit through fsspec with the backend's options at the path Flink names. Flink's JVM checks that
the pointer holds a ``_metadata`` (H5), so off the local file system it loads from a local copy
of the bytes, and relative handles are taken at the pointer instead.
"""

from __future__ import annotations

import os
import re
import tempfile
from typing import Any

import pytest

from ckptconform.metadata_file import in_flink_order, operator_id
from ckptconform.suite._driver import fail_message, join, read_handle, require, tagged
from ckptconform.workload import (
    EXCLUSIVE_STATE,
    SHARED_STATE,
    TASK_OWNED_STATE,
    CheckpointRun,
    Coordinator,
    StateRecord,
    ThreadRunner,
    metadata_states,
)

CLAUSE = "FLK-1"
TASKS = 3
STREAMS = 6
THRESHOLD = 1024
#: ``scheme:/path``: how Flink's ``Path`` prints a URL without an authority
_NO_AUTHORITY = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*):/(?!/)")


def _coordinator(sandbox: Any, target: Any) -> Coordinator:
    inline = "inline-state" in target.capabilities
    kinds = [EXCLUSIVE_STATE, SHARED_STATE]
    if "task-owned-state" in target.capabilities:
        kinds.append(TASK_OWNED_STATE)
    storage = sandbox.make_storage(**({"inline_threshold": THRESHOLD} if inline else {}))
    return Coordinator(
        storage,
        ThreadRunner(TASKS),
        tasks=TASKS,
        streams_per_task=STREAMS,
        threshold=THRESHOLD if inline else None,
        kinds=tuple(kinds),
    )


def _finalized(sandbox: Any, coord: Coordinator, run: CheckpointRun, carried=()) -> CheckpointRun:
    with tagged(CLAUSE, f"checkpoint {run.checkpoint_id} through the storage", sandbox):
        assert run.failures == [], "\n".join(f.describe() for f in run.failures)
        return coord.finalize(run, carried)


def _checkpoint(sandbox: Any, coord: Coordinator) -> CheckpointRun:
    """Checkpoint 2 of a job, which carries checkpoint 1's shared state (incremental)."""
    coord.init_base()
    first = _finalized(sandbox, coord, coord.write(1, coord.checkpoint_location(1)))
    carried = [s for s in first.states if s.spec.kind == SHARED_STATE]
    return _finalized(sandbox, coord, coord.write(2, coord.checkpoint_location(2)), carried)


def _savepoint(sandbox: Any, coord: Coordinator) -> CheckpointRun:
    coord.init_base()
    return _finalized(sandbox, coord, coord.write(7, coord.savepoint_location(7, None)))


def _as_url(path: str) -> str:
    """Flink's spelling of a path (``memory:/dir``) as a URL (``memory:///dir``)."""
    return _NO_AUTHORITY.sub(lambda m: f"{m['scheme']}:///", path, count=1)


def _named(handle: Any, pointer: str, local: bool) -> tuple[str, str]:
    """(the handle's kind, what it names): its name if inline, else the path to read (a
    relative handle's at the pointer, where Flink was given a stand-in)."""
    kind = str(handle.getClass().getSimpleName())
    if kind == "ByteStreamStateHandle":
        return kind, str(handle.getHandleName())
    if kind == "RelativeFileStateHandle" and not local:
        return kind, join(pointer, str(handle.getRelativePath()))
    return kind, str(handle.getFilePath().toString())


def _read(sandbox: Any, flink: Any, handle: Any, kind: str, named: str, local: bool) -> bytes:
    """The bytes a handle names: inline, read by Flink on the local file system, else read
    through the backend's fsspec file system at the path Flink names."""
    if kind == "ByteStreamStateHandle":
        return bytes(handle.asBytesIfInMemory().get())
    if local:
        return bytes(flink.read_state(handle))
    return sandbox.read(_as_url(named))


def _check_with_flink(sandbox: Any, flink: Any, run: CheckpointRun, what: str) -> int:
    """Flink loads the run's ``_metadata``; every handle it holds has the bytes the task
    wrote, and their count. Returns how many handles were read."""
    pointer = str(run.pointer)
    data = read_handle(run.completed.metadata_handle)
    records = metadata_states(run.completed)
    local = sandbox.backend.scheme == "file"
    with tempfile.TemporaryDirectory(prefix="ckptconform-flk-") as standin:
        loaded_at = pointer
        if not local:
            with open(os.path.join(standin, "_metadata"), "wb") as file:
                file.write(data)
            loaded_at = "file://" + standin
        with tagged(CLAUSE, "Checkpoints.loadCheckpointMetadata", sandbox, pointer=pointer):
            by_subtask = flink.subtask_streams(flink.load(data, loaded_at))
    expected: dict[tuple[str, int], list[StateRecord]] = {}
    for record in records:
        if record.handle is not None:
            key = (operator_id(record.slot).hex(), record.task)
            expected.setdefault(key, []).append(record)
    message = fail_message(CLAUSE, f"Flink's loader on the {what}", sandbox, pointer=pointer)
    require(
        set(by_subtask) == set(expected),
        CLAUSE,
        message + f"\nFlink holds the subtasks {sorted(by_subtask)}, written: {sorted(expected)}",
    )
    read = 0
    for key, handles in by_subtask.items():
        written = in_flink_order(expected[key], lambda r: r.spec.kind)
        require(
            len(handles) == len(written),
            CLAUSE,
            message + f"\nsubtask {key}: Flink holds {len(handles)} handles, written "
            f"{len(written)}",
        )
        for handle, record in zip(handles, written, strict=True):
            wanted = record.spec.expected()
            kind, named = _named(handle, pointer, local)
            with tagged(CLAUSE, f"read {record.spec.describe()}", sandbox, flink_names=named):
                found = _read(sandbox, flink, handle, kind, named, local)
            require(
                found == wanted and int(handle.getStateSize()) == len(wanted),
                CLAUSE,
                message + f"\n{record.spec.describe()}: Flink's handle names {named} "
                f"({int(handle.getStateSize())} bytes), which holds {len(found)} bytes"
                + ("" if found == wanted else " that differ from what the task wrote"),
            )
            read += 1
    return read


@pytest.mark.clause("FLK-1")
@pytest.mark.parametrize(
    "kind",
    ["checkpoint", pytest.param("savepoint", marks=pytest.mark.requires("savepoints"))],
)
def test_flink_loads_what_the_storage_wrote(sandbox, target, flink, kind):
    """FLK-1: a checkpoint (carrying the shared state of the one before) and a savepoint
    written through the storage load in Flink 2.3.0's own loader, and every file Flink's
    handles name holds the bytes the task wrote."""
    coord = _coordinator(sandbox, target)
    run = _checkpoint(sandbox, coord) if kind == "checkpoint" else _savepoint(sandbox, coord)
    read = _check_with_flink(sandbox, flink, run, kind)
    assert read >= TASKS * STREAMS, fail_message(CLAUSE, "the states Flink named", sandbox)
