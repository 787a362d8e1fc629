"""The request-budget workload: a job's checkpoints, restores and savepoint, phase by phase.

``BudgetRun`` drives ``ckptconform.workload`` (on Spark executors or threads) against one
storage on an S3 backend with a request ledger and records every request of every phase:

- ``setup``: ``initialize_base_locations_for_checkpoint``, once per job;
- per checkpoint ``n``: ``worker`` (the tasks: unpickle, resolve, then, all at one start signal
  as after a checkpoint barrier, write every stream: the checkpoint's burst) and
  ``coordinator`` (initialize the location, write and finalize ``_metadata``); checkpoints keep
  referencing the shared state of earlier ones, as incremental state backends do, and a
  checkpoint older than the retained ones is disposed in a ``dispose`` phase, as Flink discards
  a subsumed checkpoint: every state of it but the shared state later ones use (exclusive
  files lie outside its directory under entropy injection), then its location; and its
  task-owned state, which no later checkpoint uses, as its tasks would;
- ``restore``: ``restore_coordinator`` (a fresh storage resolves the latest pointer and reads
  ``_metadata``) and ``restore_worker`` (tasks, started together, read every handle and check
  every byte);
- a savepoint, written by the tasks into a savepoint location and restored the same way.

``retained`` holds the checkpoints and the savepoint kept at the end: an audit of the root
(``ckptconform.budget.root_audit``) then finds no file they do not reference.

Each phase's figures (``Phase.figures``) are plain JSON: requests by operation, the busiest
second per operation and per key prefix (split into writes and reads, AWS's two limits), first
attempts by operation and key prefix (``ckptconform.budget.projection`` projects them to other
parallelisms), the burst's window (first to last request), bytes moved, failed and retried
requests, how long recovery from throttling took, whether the phase completed.
``ckptconform.budget.limits`` holds them against limits and a baseline.
"""

from __future__ import annotations

import pickle
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ckptconform.budget.limits import READ_OPERATIONS, WRITE_OPERATIONS
from ckptconform.servers.ledger import Recording, Request, RequestLedger, request_prefix
from ckptconform.workload import (
    EXCLUSIVE_STATE,
    KINDS,
    SHARED_STATE,
    CheckpointRun,
    Coordinator,
    Runner,
    StateRecord,
    metadata_states,
    read_plans,
    read_subtask,
)

__all__ = ["BudgetRun", "Phase", "Shape", "file_backed"]

_T = TypeVar("_T")


@dataclass(frozen=True)
class Shape:
    """The workload: tasks x streams x checkpoints, and what else runs."""

    tasks: int = 64
    streams: int = 4
    checkpoints: int = 5
    threads: int = 4
    inline_threshold: int | None = 1024
    retained: int = 1
    restore: bool = True
    savepoint: bool = True

    def phase_count(self) -> int:
        """How many phases a run of this shape has when every phase completes (the progress
        bar's total): set-up; location, tasks and metadata per checkpoint; a disposal per
        subsumed checkpoint; resolve and read per restore; the savepoint's three and its
        restore."""
        restore = 2 if self.restore else 0
        disposals = max(0, self.checkpoints - self.retained)
        savepoint = 3 + restore if self.savepoint else 0
        return (
            1 + 3 * self.checkpoints + disposals + (restore if self.checkpoints else 0) + savepoint
        )


def file_backed(record: StateRecord) -> bool:
    """Whether a written state lives in a file (its handle has a file path)."""
    if record.handle is None:
        return False
    path = getattr(pickle.loads(record.handle), "file_path", None)
    return isinstance(path, str) and bool(path)


@dataclass
class Phase:
    """One phase of the run and the requests that reached the server while it ran."""

    name: str
    kind: str
    checkpoint_id: int | None
    started: float
    finished: float = 0.0
    requests: list[Request] = field(default_factory=list)
    file_streams: int = 0
    file_handles: int = 0
    completed: bool = True
    problem: str = ""

    def figures(self, origin: float) -> dict[str, Any]:
        """The phase's figures as JSON-ready values; series offsets count from ``origin``."""
        recording = Recording(all_requests=list(self.requests))
        sent, received = recording.bytes_moved()
        prefix_peaks: dict[str, int] = {}
        for label, operations in (("write", WRITE_OPERATIONS), ("read", READ_OPERATIONS)):
            chosen = Recording(all_requests=[r for r in self.requests if r.operation in operations])
            peaks = chosen.peak_per_second(by=request_prefix)
            prefix_peaks[label] = max(peaks.values(), default=0)
        top = Recording(all_requests=list(self.requests)).peak_per_second(by=request_prefix)
        series = recording.per_second(start=origin)
        retried = {id(r) for r in recording.retries()}
        first = Recording(all_requests=[r for r in recording.requests if id(r) not in retried])
        times = sorted(r.time for r in recording.requests)
        throttled = [r.time for r in recording.requests if r.fault and "SlowDown" in r.fault]
        return {
            "name": self.name,
            "kind": self.kind,
            "checkpoint_id": self.checkpoint_id,
            "seconds": round(self.finished - self.started, 3),
            "requests": len(recording),
            "operations": dict(sorted(recording.operations().items())),
            "file_streams": self.file_streams,
            "file_handles": self.file_handles,
            "peak_per_second": recording.peak_per_second(),
            "peak_per_second_per_prefix": prefix_peaks,
            "busiest_prefixes": dict(sorted(top.items(), key=lambda kv: -kv[1])[:5]),
            "bytes_sent": sent,
            "bytes_received": received,
            "failed": len(recording.faulted()),
            "throttled": sum(1 for r in recording.requests if r.fault and "SlowDown" in r.fault),
            "retried": recording.retried(),
            "retries_by_operation": dict(
                sorted(Counter(r.operation for r in recording.retries()).items())
            ),
            "completed": self.completed,
            "problem": self.problem,
            "started": round(self.started - origin, 3),
            "finished": round(self.finished - origin, 3),
            "first_request": round(times[0] - origin, 3) if times else None,
            "window_seconds": round(times[-1] - times[0], 3) if times else None,
            "recovery_seconds": round(times[-1] - min(throttled), 3) if throttled else None,
            "by_prefix": _by_prefix(first),
            "peak_per_second_by_prefix": _prefix_peaks(first),
            "series": {op: dict(sorted(c.items())) for op, c in sorted(series.items())},
            "timeline": [[round(r.time - origin, 3), r.operation] for r in recording.requests],
        }


def _by_prefix(recording: Recording) -> dict[str, dict[str, int]]:
    """First attempts by operation and key prefix: ``{operation: {prefix: count}}``."""
    counts: dict[str, Counter[str]] = {}
    for request in recording.requests:
        counts.setdefault(request.operation, Counter())[request_prefix(request)] += 1
    return {op: dict(c.most_common()) for op, c in sorted(counts.items())}


def _prefix_peaks(recording: Recording) -> dict[str, int]:
    """The busiest second of one key prefix, per operation (first attempts)."""
    peaks: dict[str, int] = {}
    for group, count in recording.peak_per_second(
        by=lambda r: f"{r.operation} {request_prefix(r)}"
    ).items():
        operation = group.split(" ", 1)[0]
        peaks[operation] = max(peaks.get(operation, 0), count)
    return dict(sorted(peaks.items()))


class BudgetRun:
    """Runs the workload once and keeps every phase (``phases``) in order."""

    def __init__(
        self,
        make_storage: Callable[..., Any],
        ledger: RequestLedger,
        runner: Runner,
        shape: Shape,
        *,
        savepoint_dir: str | None = None,
        task_owned: bool = True,
        on_phase: Callable[[Phase], None] | None = None,
    ) -> None:
        self.make_storage = make_storage
        self.ledger = ledger
        self.runner = runner
        self.shape = shape
        self.savepoint_dir = savepoint_dir
        self.kinds = KINDS if task_owned else (EXCLUSIVE_STATE, SHARED_STATE)
        self.on_phase = on_phase
        self.phases: list[Phase] = []
        #: the checkpoints and the savepoint kept when the run ended (finalized)
        self.retained: list[CheckpointRun] = []
        self.started = time.time()

    # ------------------------------------------------------------------ phases

    def _phase(
        self, name: str, kind: str, checkpoint_id: int | None, step: Callable[[Phase], _T]
    ) -> _T | None:
        """Run one phase, recording its requests; a failure ends it and returns ``None``."""
        phase = Phase(name, kind, checkpoint_id, time.time())
        result: _T | None = None
        with self.ledger.record() as recording:
            try:
                result = step(phase)
            except Exception as exc:
                phase.completed = False
                phase.problem = f"{type(exc).__name__}: {exc}"[:2000]
        phase.finished = time.time()
        phase.requests = recording.requests
        self.phases.append(phase)
        if self.on_phase is not None:
            self.on_phase(phase)
        return result

    @property
    def completed(self) -> bool:
        return all(phase.completed for phase in self.phases)

    def run(self) -> list[Phase]:
        shape = self.shape
        coord = Coordinator(
            storage=self.make_storage(),
            runner=self.runner,
            tasks=shape.tasks,
            streams_per_task=shape.streams,
            threads=shape.threads,
            threshold=shape.inline_threshold,
            kinds=self.kinds,
        )
        # the tasks' processes start before the run's clock, as a job's do before its first
        # checkpoint; warming sends no request
        coord.warm_up()
        self.started = time.time()
        self._phase("setup", "setup", None, lambda _: coord.init_base())
        finished: list[CheckpointRun] = []
        carried: list[StateRecord] = []
        for n in range(1, shape.checkpoints + 1):
            run = self._checkpoint(coord, n, carried)
            if run is None:
                break
            carried += [s for s in run.states if s.spec.kind == SHARED_STATE]
            finished.append(run)
            if len(finished) > shape.retained:
                self._dispose(finished.pop(0))
        self.retained = list(finished)
        if shape.restore and finished:
            self._restore(f"restore {finished[-1].checkpoint_id}", finished[-1])
        if shape.savepoint:
            savepoint_id = shape.checkpoints + 1
            location = self._phase(
                f"savepoint {savepoint_id}: location",
                "coordinator",
                savepoint_id,
                lambda _: coord.savepoint_location(savepoint_id, self.savepoint_dir),
            )
            if location is not None:
                run = self._tasks(coord, f"savepoint {savepoint_id}: tasks", savepoint_id, location)
                if run is not None:
                    done = self._phase(
                        f"savepoint {savepoint_id}: metadata",
                        "coordinator",
                        savepoint_id,
                        lambda _: coord.finalize(run),
                    )
                    if done is not None:
                        self.retained.append(done)
                        self._restore(f"restore savepoint {savepoint_id}", done)
        return self.phases

    def _dispose(self, run: CheckpointRun) -> None:
        def dispose(_: Phase) -> None:
            # as Flink's CompletedCheckpoint.discard: every state of the checkpoint but the
            # shared state later ones still use (with entropy injection its exclusive files
            # lie outside its directory), then the location; and the tasks' part, the
            # task-owned state no checkpoint uses any more
            for state in run.states:
                if state.spec.kind != SHARED_STATE and state.handle is not None:
                    pickle.loads(state.handle).discard_state()
            run.completed.dispose_storage_location()

        self._phase(f"dispose {run.checkpoint_id}", "dispose", run.checkpoint_id, dispose)

    def _checkpoint(
        self, coord: Coordinator, n: int, carried: list[StateRecord]
    ) -> CheckpointRun | None:
        location = self._phase(
            f"checkpoint {n}: location", "coordinator", n, lambda _: coord.checkpoint_location(n)
        )
        if location is None:
            return None
        run = self._tasks(coord, f"checkpoint {n}: tasks", n, location)
        if run is None:
            return None
        return self._phase(
            f"checkpoint {n}: metadata",
            "coordinator",
            n,
            lambda _: coord.finalize(run, carried),
        )

    def _tasks(self, coord: Coordinator, name: str, n: int, location: Any) -> CheckpointRun | None:
        def step(phase: Phase) -> CheckpointRun:
            run = coord.write(n, location, burst=True)
            phase.file_streams = sum(1 for s in run.states if file_backed(s))
            if run.failures:
                first = run.failures[0]
                raise RuntimeError(
                    f"{len(run.failures)} of {len(run.reports)} tasks failed; the first: "
                    + first.describe()
                )
            return run

        return self._phase(name, "worker", n, step)

    def _restore(self, name: str, run: CheckpointRun) -> None:
        def resolve(_: Phase) -> tuple[Any, list[StateRecord]]:
            fresh = self.make_storage()
            return fresh, metadata_states(fresh.resolve_checkpoint(run.pointer))

        resolved = self._phase(
            f"{name}: resolve", "restore_coordinator", run.checkpoint_id, resolve
        )
        if resolved is None:
            return
        fresh, states = resolved

        def read(phase: Phase) -> None:
            phase.file_handles = sum(1 for s in states if file_backed(s))
            plans = read_plans(states, self.shape.tasks, storage=pickle.dumps(fresh))
            reports = self.runner.run_together(read_subtask, plans)
            problems = [r.failure.describe() for r in reports if r.failure]
            problems += [
                f"{x.spec.describe()}: {x.status}: {x.detail}"
                for r in reports
                for x in r.results
                if x.status != "ok"
            ]
            if problems:
                raise RuntimeError(f"{len(problems)} read problem(s); the first: {problems[0]}")

        self._phase(f"{name}: read", "restore_worker", run.checkpoint_id, read)

    # ------------------------------------------------------------------ results

    def figures(self) -> list[dict[str, Any]]:
        return [phase.figures(self.started) for phase in self.phases]

    def totals(self) -> dict[str, Any]:
        operations: Counter[str] = Counter()
        for phase in self.phases:
            operations.update(Counter(r.operation for r in phase.requests if not r.raw))
        return {
            "requests": sum(operations.values()),
            "operations": dict(sorted(operations.items())),
            "completed": self.completed,
            "seconds": round(
                (self.phases[-1].finished if self.phases else self.started) - self.started, 3
            ),
        }
