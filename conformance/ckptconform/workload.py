"""A distributed checkpoint workload: plans for operator subtasks, and the code that runs them.

The coordinator (a Spark driver, or the caller's own thread) plans a checkpoint as a list of
``SubtaskPlan`` values. Each subtask runs in a task process (a Spark executor's Python worker,
or a thread) where it unpickles the storage it was shipped, resolves its location through the
worker view, writes its streams from several threads and returns the handles, pickled. Restores
ship only handles (``ReadPlan``): the task reads every byte and checks it against the seed the
state was written from. ``Coordinator`` plays the driver's part through ``ckptstore.api`` only.

Everything here is plain data and functions of the contract, so any runner executes it: a runner
is an object with ``run(function, items) -> results`` (``ckptconform.spark.SparkLeg`` on a
cluster, ``ThreadRunner`` in this process) and ``run_together(function, items)``, the burst of a
checkpoint: every subtask prepares (unpickles its storage, resolves its location), then all start
their uploads at one signal, as subtasks do after a checkpoint barrier (``play_together``).
Failures inside a task come back as values (``TaskFailure``: the step, the exception's type and
message), not as exceptions through the runner: a failed Spark job is a JVM stack trace in which
the one line that matters is buried.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from ckptconform.metadata_file import PlacedState, encode_metadata, master_state
from ckptstore.api import (
    CheckpointedStateScope,
    CheckpointStorageLocationReference,
    JobID,
)

__all__ = [
    "EXCLUSIVE_STATE",
    "KINDS",
    "SHARED_STATE",
    "TASK_OWNED_STATE",
    "CheckpointRun",
    "Coordinator",
    "ReadPlan",
    "ReadReport",
    "ReadResult",
    "Runner",
    "StateRecord",
    "StreamSpec",
    "SubtaskPlan",
    "TaskFailure",
    "TaskReport",
    "ThreadRunner",
    "metadata_states",
    "payload",
    "plan_streams",
    "play_together",
    "read_plans",
    "read_subtask",
    "warm_subtask",
    "write_subtask",
]

EXCLUSIVE_STATE = "exclusive"
SHARED_STATE = "shared"
TASK_OWNED_STATE = "task-owned"
KINDS = (EXCLUSIVE_STATE, SHARED_STATE, TASK_OWNED_STATE)

_T = TypeVar("_T")
_R = TypeVar("_R")

#: How long the subtasks of a burst wait for each other at the start signal.
START_TIMEOUT_SECONDS = 300.0


def payload(size: int, seed: int = 0) -> bytes:
    """Deterministic, non-repeating-looking bytes (a different ``seed`` gives other bytes)."""
    if size <= 0:
        return b""
    block = bytes((i * 131 + seed * 17 + (i >> 8) * 7) & 0xFF for i in range(min(size, 4096)))
    tag = f"<{seed}>".encode()
    return (tag + block * (size // len(block) + 2))[:size]


# --------------------------------------------------------------------------- plans and reports


@dataclass(frozen=True, slots=True)
class StreamSpec:
    """One state stream of a subtask: what kind, how many bytes, from which seed, in what writes."""

    kind: str
    size: int
    seed: int
    write_size: int = 4096

    def expected(self) -> bytes:
        return payload(self.size, self.seed)

    def describe(self) -> str:
        return f"{self.kind} state seed {self.seed} ({self.size} bytes)"


@dataclass(frozen=True, slots=True)
class SubtaskPlan:
    """What one operator subtask writes for one checkpoint (or savepoint)."""

    index: int
    storage: bytes
    job_id: JobID
    checkpoint_id: int
    reference: CheckpointStorageLocationReference
    streams: tuple[StreamSpec, ...]
    threads: int = 3


@dataclass(frozen=True, slots=True)
class TaskFailure:
    """An exception inside a task, as a value: the step it happened in and what was raised."""

    step: str
    error_type: str
    message: str
    is_os_error: bool
    seconds: float
    trace: str = ""

    def describe(self) -> str:
        return f"{self.step}: {self.error_type}: {self.message}"


@dataclass(frozen=True, slots=True)
class StateRecord:
    """One written state: its stream, the pickled handle (None: the stream returned None), the
    subtask that wrote it and its place among that subtask's streams (the operator of the
    chain, in ``_metadata``)."""

    spec: StreamSpec
    handle: bytes | None
    task: int = -1
    slot: int = -1


@dataclass(frozen=True, slots=True)
class TaskReport:
    """What a writing subtask returns to the coordinator."""

    index: int
    pid: int
    ppid: int
    states: tuple[StateRecord, ...]
    failure: TaskFailure | None
    seconds: float


@dataclass(frozen=True, slots=True)
class ReadPlan:
    """Handles for one restoring task, and how its process is configured before it reads them.

    ``environ`` is set first (a process-wide configuration, as an executor started with those
    variables has it); ``storage``, when given, is unpickled next (the task's process then has a
    storage configured, as a TaskManager has); then every handle is unpickled and read.
    """

    index: int
    states: tuple[StateRecord, ...]
    storage: bytes | None = None
    environ: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class ReadResult:
    """The outcome of reading one handle: ``ok``, ``mismatch`` (other bytes) or ``error``."""

    spec: StreamSpec
    status: str
    detail: str
    seconds: float
    failure: TaskFailure | None = None


@dataclass(frozen=True, slots=True)
class ReadReport:
    """What a restoring task returns."""

    index: int
    pid: int
    ppid: int
    results: tuple[ReadResult, ...]
    failure: TaskFailure | None
    seconds: float


class _StepFailedError(Exception):
    def __init__(self, failure: TaskFailure) -> None:
        super().__init__(failure.describe())
        self.failure = failure


@contextmanager
def _step(name: str) -> Iterator[None]:
    """Turn any exception of the block into a ``_StepFailedError`` that names the step."""
    started = time.monotonic()
    try:
        yield
    except _StepFailedError:
        raise
    except BaseException as exc:
        raise _StepFailedError(_failure(name, exc, started)) from exc


def _failure(step: str, exc: BaseException, started: float) -> TaskFailure:
    message = str(exc)
    if len(message) > 2000:
        message = message[:1997] + "..."
    return TaskFailure(
        step=step,
        error_type=type(exc).__name__,
        message=message,
        is_os_error=isinstance(exc, OSError),
        seconds=time.monotonic() - started,
        trace="".join(traceback.format_exception(exc, limit=8))[-3000:],
    )


# --------------------------------------------------------------------------- planning


def plan_streams(
    seed: int,
    count: int,
    *,
    threshold: int | None,
    kinds: Sequence[str] = (EXCLUSIVE_STATE, SHARED_STATE),
    write_size: int = 4096,
) -> tuple[StreamSpec, ...]:
    """``count`` streams of seeded sizes around the inline ``threshold``, kinds in rotation.

    Without a threshold (the target has no inline state) the sizes are a spread from a few
    bytes to 48 KiB. Seeds are unique per stream so no two states have the same bytes.
    """
    sizes: tuple[int, ...]
    if threshold is None:
        sizes = (7, 1000, 4096, 20_000, 48_000)
    else:
        sizes = tuple(
            s for s in (threshold - 1, threshold, threshold + 1, 3 * threshold + 5, 48_000) if s > 0
        )
    specs = []
    for i in range(count):
        size = sizes[(seed + i) % len(sizes)]
        specs.append(StreamSpec(kinds[i % len(kinds)], size, seed * 1000 + i, write_size))
    return tuple(specs)


# --------------------------------------------------------------------------- the task side


def _process_ids() -> tuple[int, int]:
    return os.getpid(), os.getppid()


def write_subtask(plan: SubtaskPlan, ready: Callable[[], None] | None = None) -> TaskReport:
    """Run one subtask: unpickle the storage, resolve the location, write every stream.

    ``ready`` (from ``play_together``) is called once the location is resolved and returns at
    the burst's start signal. Streams are written from ``plan.threads`` threads at once; each
    returns its handle pickled.
    """
    started = time.monotonic()
    pid, ppid = _process_ids()
    states: list[StateRecord] = []
    try:
        with _step("unpickle the storage shipped to the task"):
            storage = pickle.loads(plan.storage)
        with _step("create_checkpoint_storage(job_id) in the task"):
            access = storage.create_checkpoint_storage(plan.job_id)
        with _step(
            f"resolve_checkpoint_storage_location({plan.checkpoint_id}, {plan.reference!r})"
        ):
            factory = access.resolve_checkpoint_storage_location(plan.checkpoint_id, plan.reference)
        if ready is not None:
            ready()

        def write_one(slot: int, spec: StreamSpec) -> StateRecord:
            with _step(f"write {spec.describe()}"):
                if spec.kind == TASK_OWNED_STATE:
                    stream = access.create_task_owned_state_stream()
                else:
                    stream = factory.create_checkpoint_state_output_stream(
                        CheckpointedStateScope(spec.kind)
                    )
                try:
                    data = spec.expected()
                    for pos in range(0, len(data), spec.write_size):
                        stream.write(data[pos : pos + spec.write_size])
                    handle = stream.close_and_get_handle()
                except BaseException:
                    stream.close()
                    raise
            with _step(f"pickle the handle of {spec.describe()}"):
                blob = None if handle is None else pickle.dumps(handle)
            return StateRecord(spec, blob, plan.index, slot)

        with ThreadPoolExecutor(max_workers=max(1, plan.threads)) as pool:
            states = list(pool.map(write_one, range(len(plan.streams)), plan.streams))
        failure = None
    except _StepFailedError as exc:
        failure = exc.failure
    return TaskReport(plan.index, pid, ppid, tuple(states), failure, time.monotonic() - started)


def warm_subtask(storage: bytes, ready: Callable[[], None] | None = None) -> int:
    """Unpickle a storage in a task's process, as a TaskManager has before its first checkpoint.

    Sends no request (the storage travels as its configuration); returns the process id.
    """
    if ready is not None:
        ready()
    pickle.loads(storage)
    return os.getpid()


def _configure_process(environ: Sequence[tuple[str, str]]) -> None:
    """Set process-wide configuration as if the process had started with it."""
    for key, value in environ:
        os.environ[key] = value
    fsspec_config = sys.modules.get("fsspec.config")
    if environ and fsspec_config is not None:
        # fsspec reads FSSPEC_* variables when it is imported; it already was in this process.
        fsspec_config.set_conf_env(fsspec_config.conf)


def read_subtask(plan: ReadPlan, ready: Callable[[], None] | None = None) -> ReadReport:
    """Restore side of a task: configure the process, then read and check every handle.

    ``ready`` (from ``play_together``) is called before the first read.
    """
    started = time.monotonic()
    pid, ppid = _process_ids()
    results: list[ReadResult] = []
    try:
        with _step("set the process-wide configuration"):
            _configure_process(plan.environ)
        if plan.storage is not None:
            with _step("unpickle the storage shipped to the task"):
                pickle.loads(plan.storage)
        if ready is not None:
            ready()
        for record in plan.states:
            results.append(_read_one(record))
        failure = None
    except _StepFailedError as exc:
        failure = exc.failure
    return ReadReport(plan.index, pid, ppid, tuple(results), failure, time.monotonic() - started)


def _read_one(record: StateRecord) -> ReadResult:
    spec = record.spec
    began = time.monotonic()
    if record.handle is None:
        return ReadResult(spec, "error", "no handle was written", 0.0)
    try:
        with _step(f"unpickle the handle of {spec.describe()}"):
            handle = pickle.loads(record.handle)
        with _step(f"read {spec.describe()} through {handle!r}"):
            stream = handle.open_input_stream()
            try:
                parts = []
                while True:
                    piece = stream.read()
                    if not piece:
                        break
                    parts.append(bytes(piece))
            finally:
                stream.close()
    except _StepFailedError as exc:
        failure = exc.failure
        return ReadResult(spec, "error", failure.describe(), failure.seconds, failure)
    data = b"".join(parts)
    seconds = time.monotonic() - began
    if data == spec.expected():
        return ReadResult(spec, "ok", "", seconds)
    return ReadResult(
        spec, "mismatch", f"read {len(data)} bytes that differ from what was written", seconds
    )


# --------------------------------------------------------------------------- runners


#: A subtask function of a burst: ``function(item, ready)``, ``ready()`` at its start.
TogetherFunction = Callable[[_T, Callable[[], None]], _R]


class Runner(Protocol):
    """Runs a module-level function over items, one task per item, results in item order."""

    def run(self, function: Callable[[_T], _R], items: Sequence[_T]) -> list[_R]: ...

    def run_together(self, function: TogetherFunction[_T, _R], items: Sequence[_T]) -> list[_R]:
        """Every item's subtask at once, started by one signal (``play_together``)."""
        ...


class _Gate:
    """One subtask's way through the start signal: the first call waits, later ones return."""

    def __init__(self, barrier: threading.Barrier) -> None:
        self._barrier = barrier
        self._passed = False

    def __call__(self) -> None:
        if self._passed:
            return
        self._passed = True
        # a rendezvous that failed or timed out: the subtasks start unsynchronised
        with contextlib.suppress(threading.BrokenBarrierError):
            self._barrier.wait()


def play_together(
    function: TogetherFunction[_T, _R],
    items: Sequence[_T],
    rendezvous: Callable[[], None] | None = None,
    timeout: float = START_TIMEOUT_SECONDS,
) -> list[_R]:
    """Run ``function(item, ready)`` for every item on a thread of its own, all released at once.

    Each subtask prepares, then calls ``ready()``; when every one has, ``rendezvous`` (a cluster's
    barrier across processes, e.g. Spark's ``BarrierTaskContext.barrier``) runs once and all are
    released together: the burst that follows a checkpoint barrier. A subtask that fails before
    it is ready still arrives, so the others are never kept waiting.
    """
    if not items:
        return []
    barrier = threading.Barrier(len(items), action=rendezvous, timeout=timeout)

    def play(item: _T) -> _R:
        gate = _Gate(barrier)
        try:
            return function(item, gate)
        finally:
            gate()

    with ThreadPoolExecutor(max_workers=len(items)) as pool:
        return list(pool.map(play, items))


class ThreadRunner:
    """Runs tasks as threads of this process (no second process: a stand-in for a cluster)."""

    def __init__(self, parallelism: int = 4) -> None:
        self.parallelism = parallelism

    def run(self, function: Callable[[_T], _R], items: Sequence[_T]) -> list[_R]:
        with ThreadPoolExecutor(max_workers=max(1, self.parallelism)) as pool:
            return list(pool.map(function, items))

    def run_together(self, function: TogetherFunction[_T, _R], items: Sequence[_T]) -> list[_R]:
        """Every subtask on a thread of this process, released by one start signal."""
        return play_together(function, items)


# --------------------------------------------------------------------------- the coordinator


@dataclass
class CheckpointRun:
    """One distributed checkpoint: the location, what the tasks reported, what was finalized."""

    checkpoint_id: int
    location: Any
    reports: list[TaskReport]
    completed: Any = None
    pointer: str | None = None

    @property
    def failures(self) -> list[TaskFailure]:
        return [r.failure for r in self.reports if r.failure is not None]

    @property
    def states(self) -> list[StateRecord]:
        return [s for r in self.reports for s in r.states]


@dataclass
class Coordinator:
    """The driver's part of a job: locations, plans, ``_metadata``, finalization, restores.

    ``_metadata`` is Flink's checkpoint metadata (``ckptconform.metadata_file``) of the states
    the checkpoint references: the new state the tasks wrote and, when ``carry_shared``, the
    shared state of earlier checkpoints that is still in use (as an incremental state backend
    keeps its files). Each subtask runs a chain of ``streams_per_task`` operators, each writing
    one of its streams; the ``StateRecord`` values travel pickled as the master state
    ``ckptconform`` (``metadata_states``).
    """

    storage: Any
    runner: Runner
    job_id: JobID = field(default_factory=JobID.generate)
    tasks: int = 4
    streams_per_task: int = 6
    threads: int = 3
    threshold: int | None = None
    kinds: Sequence[str] = (EXCLUSIVE_STATE, SHARED_STATE)

    def __post_init__(self) -> None:
        self.access = self.storage.create_checkpoint_storage(self.job_id)
        self._blob = pickle.dumps(self.storage)

    def warm_up(self) -> None:
        """Start every subtask's process and load the storage there (no request is sent)."""
        self.runner.run_together(warm_subtask, [self._blob] * self.tasks)

    def init_base(self) -> None:
        self.access.initialize_base_locations_for_checkpoint()

    def plans(self, checkpoint_id: int, location: Any, seed: int) -> list[SubtaskPlan]:
        reference = location.location_reference
        return [
            SubtaskPlan(
                index=i,
                storage=self._blob,
                job_id=self.job_id,
                checkpoint_id=checkpoint_id,
                reference=reference,
                streams=plan_streams(
                    seed * 100 + i,
                    self.streams_per_task,
                    threshold=self.threshold,
                    kinds=self.kinds,
                ),
                threads=self.threads,
            )
            for i in range(self.tasks)
        ]

    def write(
        self, checkpoint_id: int, location: Any, seed: int | None = None, *, burst: bool = False
    ) -> CheckpointRun:
        """Run the subtasks of one checkpoint on the runner (no finalization).

        ``burst``: all subtasks start their uploads at one signal (``Runner.run_together``).
        """
        plans = self.plans(checkpoint_id, location, checkpoint_id if seed is None else seed)
        if burst:
            reports = self.runner.run_together(write_subtask, plans)
        else:
            reports = self.runner.run(write_subtask, plans)
        return CheckpointRun(checkpoint_id, location, list(reports))

    def checkpoint_location(self, checkpoint_id: int) -> Any:
        return self.access.initialize_location_for_checkpoint(checkpoint_id)

    def savepoint_location(self, checkpoint_id: int, target: str | None) -> Any:
        return self.access.initialize_location_for_savepoint(checkpoint_id, target)

    def finalize(self, run: CheckpointRun, carried: Sequence[StateRecord] = ()) -> CheckpointRun:
        """Write ``_metadata`` (the run's states plus ``carried`` ones) and finalize it."""
        states = [*run.states, *carried]
        record = pickle.dumps({"checkpoint_id": run.checkpoint_id, "states": states})
        placed = [
            PlacedState(s.slot, s.task, s.spec.kind, pickle.loads(s.handle))
            for s in states
            if s.handle is not None
        ]
        body = encode_metadata(run.checkpoint_id, self.tasks, placed, record)
        stream = run.location.create_metadata_output_stream()
        try:
            stream.write(body)
            run.completed = stream.close_and_finalize_checkpoint()
        except BaseException:
            stream.close()
            raise
        run.pointer = run.completed.external_pointer
        return run


def metadata_states(completed: Any) -> list[StateRecord]:
    """The ``StateRecord`` values a finalized ``_metadata`` of this workload holds (its master
    state ``ckptconform``)."""
    stream = completed.metadata_handle.open_input_stream()
    try:
        body = stream.read()
    finally:
        stream.close()
    content: Mapping[str, Any] = pickle.loads(master_state(body))
    return list(content["states"])


def read_plans(
    states: Sequence[StateRecord],
    tasks: int,
    *,
    storage: bytes | None = None,
    environ: Mapping[str, str] | None = None,
) -> list[ReadPlan]:
    """Spread ``states`` over ``tasks`` restoring tasks, round robin."""
    buckets: list[list[StateRecord]] = [[] for _ in range(max(1, tasks))]
    for i, state in enumerate(states):
        buckets[i % len(buckets)].append(state)
    env = tuple(sorted((environ or {}).items()))
    return [ReadPlan(i, tuple(bucket), storage, env) for i, bucket in enumerate(buckets) if bucket]
