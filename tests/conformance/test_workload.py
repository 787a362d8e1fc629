"""The distributed workload on threads of this process, against the reference on a local dir.

The Spark leg runs the same functions on executors (tests/meta); here the plans, the task
functions, the failure values and the coordinator's ``_metadata`` round trip are checked without
a cluster, and the coordinator's ``_metadata`` is Flink's format (read with ``flinkmeta``).
"""

from __future__ import annotations

import os
import pickle

import pytest

import flinkmeta
from ckptconform.metadata_file import MASTER_STATE, key_group_range, operator_id
from ckptconform.workload import (
    EXCLUSIVE_STATE,
    KINDS,
    SHARED_STATE,
    TASK_OWNED_STATE,
    Coordinator,
    ReadPlan,
    StateRecord,
    StreamSpec,
    SubtaskPlan,
    ThreadRunner,
    metadata_states,
    payload,
    plan_streams,
    read_plans,
    read_subtask,
    write_subtask,
)
from ckptstore import FileSystemCheckpointStorage
from ckptstore.api import CheckpointStorageLocationReference, JobID


@pytest.fixture
def storage(tmp_path):
    return FileSystemCheckpointStorage(
        tmp_path.as_uri() + "/checkpoints", 1024, savepoint_path=tmp_path.as_uri() + "/savepoints"
    )


def test_payload_is_deterministic_and_seeded():
    assert payload(0) == b""
    assert payload(5000, 3) == payload(5000, 3)
    assert payload(5000, 3) != payload(5000, 4)
    assert len(payload(12_345, 9)) == 12_345


def test_plans_spread_sizes_around_the_threshold_with_unique_seeds():
    specs = plan_streams(7, 10, threshold=1024, kinds=KINDS)
    assert {s.size for s in specs} == {1023, 1024, 1025, 3077, 48_000}
    assert [s.kind for s in specs[:3]] == [EXCLUSIVE_STATE, SHARED_STATE, TASK_OWNED_STATE]
    assert len({s.seed for s in specs}) == 10
    without = plan_streams(7, 5, threshold=None)
    assert min(s.size for s in without) > 0


def test_coordinator_writes_finalizes_and_restores_on_threads(storage):
    coord = Coordinator(
        storage, ThreadRunner(4), tasks=3, streams_per_task=5, threshold=1024, kinds=KINDS
    )
    coord.init_base()
    run = coord.write(1, coord.checkpoint_location(1))
    assert run.failures == []
    assert len(run.states) == 15
    assert {s.task for s in run.states} == {0, 1, 2}
    coord.finalize(run)
    states = metadata_states(storage.resolve_checkpoint(run.pointer))
    assert states == run.states
    plans = read_plans(states, 2, storage=pickle.dumps(storage))
    reports = ThreadRunner(2).run(read_subtask, plans)
    results = [r for report in reports for r in report.results]
    assert len(results) == 15
    assert {r.status for r in results} == {"ok"}


def test_the_metadata_is_flinks_format_of_every_state(storage):
    """One operator per stream of the chain (16-byte ids, parallelism = tasks, 128 key groups),
    each state as Flink names it, the records as the master state; carried shared state sits
    in the incremental handles beside the new one."""
    coord = Coordinator(
        storage, ThreadRunner(3), tasks=3, streams_per_task=4, threshold=1024, kinds=KINDS
    )
    coord.init_base()
    first = coord.finalize(coord.write(1, coord.checkpoint_location(1)))
    carried = [s for s in first.states if s.spec.kind == SHARED_STATE]
    second = coord.finalize(coord.write(2, coord.checkpoint_location(2)), carried)
    stream = second.completed.metadata_handle.open_input_stream()
    try:
        metadata = flinkmeta.read_metadata(stream.read())
    finally:
        stream.close()
    assert (metadata.version, metadata.checkpoint_id) == (6, 2)
    assert [m.name for m in metadata.master_states] == [MASTER_STATE]
    assert [op.operator_id for op in metadata.operators] == [operator_id(i) for i in range(4)]
    assert {(op.parallelism, op.max_parallelism) for op in metadata.operators} == {(3, 128)}
    for op in metadata.operators:
        for entry in op.subtasks or ():
            keyed = entry.state.managed_keyed if entry.state else None
            if keyed is not None:
                start = getattr(keyed, "key_group_start", None)
                assert start == key_group_range(entry.index, 3, 128)[0]
    expected = {}
    for record in [*second.states, *carried]:
        handle = pickle.loads(record.handle)
        path = getattr(handle, "relative_path", None) or getattr(handle, "file_path", None)
        expected[path or handle.handle_name] = handle.state_size
    named = {}
    for handle in flinkmeta.stream_handles(metadata):
        if isinstance(handle, flinkmeta.RelativeFileHandle):
            named[handle.relative_path] = handle.state_size
        elif isinstance(handle, flinkmeta.FileHandle):
            named[handle.path] = handle.state_size
        elif isinstance(handle, flinkmeta.ByteStreamHandle):
            named[handle.name] = handle.state_size
    assert named == expected
    assert metadata_states(second.completed) == [*second.states, *carried]


def test_a_failing_step_comes_back_as_a_value():
    plan = SubtaskPlan(
        index=0,
        storage=b"not a pickle",
        job_id=JobID.generate(),
        checkpoint_id=1,
        reference=CheckpointStorageLocationReference.default(),
        streams=(StreamSpec(EXCLUSIVE_STATE, 10, 1),),
    )
    report = write_subtask(plan)
    assert report.states == ()
    assert report.failure is not None
    assert report.failure.step == "unpickle the storage shipped to the task"
    assert report.failure.error_type == "UnpicklingError"
    assert not report.failure.is_os_error


def test_reads_report_mismatches_and_errors_per_handle(storage, tmp_path):
    coord = Coordinator(storage, ThreadRunner(1), tasks=1, streams_per_task=2, threshold=1024)
    coord.init_base()
    run = coord.write(2, coord.checkpoint_location(2))
    good, other = run.states
    lying = StateRecord(StreamSpec(good.spec.kind, good.spec.size, seed=999), good.handle)
    missing = StateRecord(good.spec, None)
    report = read_subtask(ReadPlan(0, (good, lying, missing, other)))
    statuses = [r.status for r in report.results]
    assert statuses == ["ok", "mismatch", "error", "ok"]
    assert "no handle" in report.results[2].detail


def test_process_configuration_is_set_before_reading(monkeypatch):
    monkeypatch.setenv("CKPTCONFORM_TEST_VARIABLE", "before")  # restored after the test
    report = read_subtask(ReadPlan(0, (), environ=(("CKPTCONFORM_TEST_VARIABLE", "set"),)))
    assert report.failure is None
    assert os.environ["CKPTCONFORM_TEST_VARIABLE"] == "set"
