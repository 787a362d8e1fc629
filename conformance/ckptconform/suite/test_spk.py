"""SPK: distributed execution on Spark (seed 000: storages are distributed across processes).

The Spark driver plays Flink's coordinator and every Spark task an operator subtask
(``ckptconform.workload``): the driver initializes locations and ships the pickled storage, the
job id, the checkpoint id and the location reference; each task, in a fresh Python worker of an
executor, unpickles the storage, resolves its location through the worker view and writes
exclusive, shared and task-owned state of seeded sizes around the inline threshold from several
threads, and returns the handles; the driver writes ``_metadata`` (the pickled handles) and
finalizes. Restores resolve the pointer through a fresh storage on the driver; executors read
every handle taken out of ``_metadata`` and check every byte.

How a restoring task's process is configured is part of each test: SPK-3 unpickles a storage of
the same configuration (as a TaskManager has its storage), SPK-4 one with another route and
other credentials, SPK-5 none at all (only process-wide variables), SPK-6 one whose endpoint
refuses connections. Routes are counting proxies in front of the backend's endpoint, started
and stopped by the test, so the ledger shows which way every request took.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Iterable, Sequence
from typing import Any

import pytest

from ckptconform.backends.base import random_name
from ckptconform.suite._driver import (
    S3_ENDPOINT_VARIABLE,
    JobDriver,
    check_reads_took_route,
    closed_port,
    endpointless_options,
    fail_message,
    file_path,
    files_below,
    join,
    move_tree,
    payload,
    process_wide_configuration,
    read_handle,
    require,
    second_route,
    tagged,
)
from ckptconform.workload import (
    EXCLUSIVE_STATE,
    SHARED_STATE,
    TASK_OWNED_STATE,
    CheckpointRun,
    Coordinator,
    ReadReport,
    StateRecord,
    metadata_states,
    read_plans,
    read_subtask,
)

#: The inline threshold the Spark tests configure where the target claims inline-state.
THRESHOLD = 1024
#: SPK-6's bound on a read that cannot reach its endpoint.
UNREACHABLE_BOUND_SECONDS = 15.0
EXISTENCE_CHECKS = ("HeadObject", "HeadBucket", "ListObjectsV2", "ListObjects")

pytestmark = pytest.mark.backend_traits(cross_process=True)


# --------------------------------------------------------------------------- helpers


def _options(target: Any) -> dict[str, Any]:
    return {"inline_threshold": THRESHOLD} if "inline-state" in target.capabilities else {}


def _threshold(target: Any) -> int | None:
    return THRESHOLD if "inline-state" in target.capabilities else None


def _kinds(target: Any) -> tuple[str, ...]:
    if "task-owned-state" in target.capabilities:
        return (EXCLUSIVE_STATE, SHARED_STATE, TASK_OWNED_STATE)
    return (EXCLUSIVE_STATE, SHARED_STATE)


def _coordinator(
    sandbox: Any, target: Any, spark: Any, *, kinds: Sequence[str] | None = None, **sizes: int
) -> Coordinator:
    """A coordinator on a new storage; every task runs in one wave on two executors (tasks=2)."""
    return Coordinator(
        storage=sandbox.make_storage(**_options(target)),
        runner=spark,
        threshold=_threshold(target),
        kinds=_kinds(target) if kinds is None else tuple(kinds),
        **{"tasks": 2, **sizes},
    )


def _require_tasks(clause: str, run: CheckpointRun, sandbox: Any, operation: str) -> None:
    """Every writing task finished; otherwise fail ``clause`` with the first task's failure."""
    failures = run.failures
    if failures:
        first = failures[0]
        require(
            False,
            clause,
            fail_message(clause, operation, sandbox, checkpoint_id=run.checkpoint_id)
            + f"\n{len(failures)} of {len(run.reports)} task(s) failed; the first: "
            + first.describe()
            + f"\n{first.trace}",
        )


def _handle(record: StateRecord) -> Any:
    assert record.handle is not None
    return pickle.loads(record.handle)


def _file_states(states: Iterable[StateRecord]) -> list[tuple[StateRecord, str]]:
    """The states whose handles are file-backed, with their file URLs."""
    found = []
    for record in states:
        if record.handle is None:
            continue
        path = file_path(_handle(record))
        if path is not None:
            found.append((record, path))
    return found


def _check_distinct_files(sandbox: Any, states: Sequence[StateRecord], **inputs: Any) -> None:
    """SPK-2: no two handles name the same file."""
    seen: dict[str, StateRecord] = {}
    with tagged("SPK-2", "file-backed handles of concurrent tasks", sandbox, **inputs):
        for record, path in _file_states(states):
            other = seen.get(path)
            assert other is None, (
                f"{path} is the file of task {other.task}'s {other.spec.describe()} and of "
                f"task {record.task}'s {record.spec.describe()}"
            )
            seen[path] = record


def _check_on_coordinator(
    clause: str, sandbox: Any, states: Sequence[StateRecord], **inputs: Any
) -> None:
    """Every returned handle reads, in this process, exactly the bytes its task wrote."""
    for record in states:
        operation = f"read task {record.task}'s {record.spec.describe()} on the coordinator"
        with tagged(clause, operation, sandbox, **inputs):
            assert record.handle is not None, "the task's stream returned None for non-empty state"
            data = read_handle(_handle(record))
            assert data == record.spec.expected(), (
                f"read {len(data)} bytes that differ from the {record.spec.size} written"
            )


def _check_restored(
    clause: str, sandbox: Any, reports: Sequence[ReadReport], expected: int, **inputs: Any
) -> None:
    """Every restoring task read every one of its handles as written."""
    problems = [f"task {r.index}: {r.failure.describe()}" for r in reports if r.failure]
    results = [result for report in reports for result in report.results]
    problems += [
        f"{r.spec.describe()}: {r.status}: {r.detail}" for r in results if r.status != "ok"
    ]
    if len(results) != expected and not problems:
        problems.append(f"{len(results)} handles were read, {expected} were shipped")
    with tagged(clause, "read handles on executors", sandbox, **inputs):
        assert not problems, f"{len(problems)} problem(s):\n  " + "\n  ".join(problems[:12])


def _restore(
    spark: Any, states: Sequence[StateRecord], *, storage: Any = None, environ: Any = None
) -> list[ReadReport]:
    blob = None if storage is None else pickle.dumps(storage)
    return spark.run(read_subtask, read_plans(states, 2, storage=blob, environ=environ))


def _completed_checkpoint(
    sandbox: Any, target: Any, spark: Any, checkpoint_id: int, clause: str
) -> tuple[Coordinator, CheckpointRun]:
    """One checkpoint written by tasks on executors and finalized on the driver."""
    coord = _coordinator(sandbox, target, spark, streams_per_task=5)
    with tagged(clause, "initialize the checkpoint", sandbox):
        coord.init_base()
        location = coord.checkpoint_location(checkpoint_id)
    run = coord.write(checkpoint_id, location)
    _require_tasks(clause, run, sandbox, "write a checkpoint on executors")
    with tagged(clause, "finalize the checkpoint", sandbox):
        coord.finalize(run)
    return coord, run


# --------------------------------------------------------------------------- SPK-1, 2, 3


@pytest.mark.clause("SPK-1", "SPK-2", "SPK-3")
def test_checkpoints_in_a_row_on_executors(sandbox, target, spark):
    """SPK-1: tasks on executors write state from several threads, the coordinator reads every
    handle; SPK-2: their handles name distinct files; SPK-3: checkpoints in a row complete, later
    ones referencing shared state of earlier ones, which are disposed, and the latest restores.

    Each checkpoint: 4 tasks x 6 streams from 3 threads per task. Later checkpoints keep
    referencing the shared state of earlier ones; the earlier locations are disposed (subsumed)
    before the latest is restored through a fresh storage, on executors.
    """
    coord = _coordinator(sandbox, target, spark, tasks=4, streams_per_task=6, threads=3)
    with tagged("SPK-1", "initialize_base_locations_for_checkpoint", sandbox):
        coord.init_base()
    runs: list[CheckpointRun] = []
    carried: list[StateRecord] = []
    for checkpoint_id in (1, 2, 3):
        with tagged("SPK-1", "initialize_location_for_checkpoint", sandbox, id=checkpoint_id):
            location = coord.checkpoint_location(checkpoint_id)
        run = coord.write(checkpoint_id, location)
        _require_tasks("SPK-1", run, sandbox, "write state on executors")
        inputs = {"checkpoint_id": checkpoint_id}
        with tagged("SPK-1", "where tasks ran", sandbox, **inputs):
            assert os.getpid() not in {r.pid for r in run.reports}, (
                "the tasks ran in the coordinator's process: nothing was shipped"
            )
        _check_distinct_files(sandbox, [s for r in runs for s in r.states] + run.states, **inputs)
        _check_on_coordinator("SPK-1", sandbox, run.states, **inputs)
        with tagged("SPK-3", "write and finalize _metadata", sandbox, **inputs):
            coord.finalize(run, carried)
        carried += [s for s in run.states if s.spec.kind == SHARED_STATE]
        runs.append(run)

    latest = runs[-1]
    for run in runs[:-1]:
        with tagged("SPK-3", "dispose a subsumed checkpoint", sandbox, pointer=run.pointer):
            run.completed.dispose_storage_location()
    fresh = sandbox.make_storage(**_options(target))
    with tagged("SPK-3", "resolve the latest pointer through a fresh storage", sandbox):
        states = metadata_states(fresh.resolve_checkpoint(latest.pointer))
    expected = (
        len(latest.states)
        + len(carried)
        - len([s for s in latest.states if s.spec.kind == SHARED_STATE])
    )
    with tagged("SPK-3", "_metadata of the latest checkpoint", sandbox, pointer=latest.pointer):
        assert len(states) == expected, (
            f"it holds {len(states)} states, {expected} were written into it"
        )
    reports = _restore(spark, states, storage=fresh)
    _check_restored("SPK-3", sandbox, reports, len(states), pointer=latest.pointer)


# --------------------------------------------------------------------------- SPK-4, 5, 6


def _restore_through_a_route(
    clause: str, sandbox: Any, target: Any, spark: Any, backend: Any, ledger: Any, configure: Any
) -> None:
    """Restore on executors configured by ``configure(route_url)``; every read takes the route.

    ``configure`` returns ``(storage or None, environment variables, expected access key or
    None)`` for the restoring tasks. The route is a counting proxy in front of the backend's
    own endpoint, so each read it carries reaches the backend's ledger too: all reads took the
    route exactly when both ledgers count the same GetObject requests.
    """
    _, run = _completed_checkpoint(sandbox, target, spark, 1, clause)
    # Inline handles reach no store; a storage that writes no files passes trivially.
    files = [record for record, _ in _file_states(run.states)]
    with second_route(backend) as route:
        storage, environ, key = configure(route.url)
        inputs = {"route": route.url, "variables": sorted(environ), "key": key}
        with route.ledger.record() as via_route, ledger.record() as at_server:
            reports = _restore(spark, run.states, storage=storage, environ=environ)
    _check_restored(clause, sandbox, reports, len(run.states), **inputs)
    check_reads_took_route(clause, sandbox, via_route, at_server, len(files), key, **inputs)


@pytest.mark.clause("SPK-4")
@pytest.mark.backend_traits(object_store=True)
def test_handles_use_the_readers_configuration(sandbox, target, spark, backend, ledger):
    """SPK-4: a handle read in a process where a storage was unpickled uses its endpoint and key."""

    def configure(route: str) -> tuple[Any, dict[str, str], str | None]:
        options = {**backend.storage_options, "endpoint_url": route}
        key = None
        if backend.accepts_any_credentials:
            key = f"ckptconform-rotated-{random_name(8)}"
            options.update(key=key, secret=random_name(24))
        return sandbox.make_storage(storage_options=options, **_options(target)), {}, key

    _restore_through_a_route("SPK-4", sandbox, target, spark, backend, ledger, configure)


@pytest.mark.clause("SPK-5")
@pytest.mark.backend_traits(object_store=True)
def test_handles_use_the_process_wide_configuration(sandbox, target, spark, backend, ledger):
    """SPK-5: a handle read in a process without a storage uses the FSSPEC/AWS variables."""

    def configure(route: str) -> tuple[Any, dict[str, str], str | None]:
        environ, expected = process_wide_configuration(backend, route)
        return None, environ, expected

    _restore_through_a_route("SPK-5", sandbox, target, spark, backend, ledger, configure)


@pytest.mark.clause("SPK-5")
@pytest.mark.backend_traits(object_store=True)
def test_a_storage_without_endpoint_takes_botocores_route(
    sandbox, target, backend, ledger, monkeypatch
):
    """SPK-5: a storage whose storage_options name no endpoint (keys only) reaches S3 through
    AWS_ENDPOINT_URL_S3 in the coordinator's process: it writes 3000 bytes of state and
    finalizes a checkpoint, a second such storage resolves the pointer and the state handle
    taken out of _metadata reads the bytes back, every request through that route."""
    if backend.scheme != "s3":
        pytest.skip(f"{S3_ENDPOINT_VARIABLE} routes S3 clients only, not {backend.scheme}")
    data = payload(3000, 5)
    options = {
        "storage_options": endpointless_options(backend, own_key=backend.accepts_any_credentials),
        **_options(target),
    }
    with second_route(backend) as route:
        monkeypatch.setenv(S3_ENDPOINT_VARIABLE, route.url)
        inputs = {
            S3_ENDPOINT_VARIABLE: route.url,
            "option_names": sorted(options["storage_options"]),
        }
        with route.ledger.record() as via_route, ledger.record() as at_server:
            _round_trip_without_endpoint(sandbox, options, data, **inputs)
        monkeypatch.delenv(S3_ENDPOINT_VARIABLE)
    where = f"\nthrough the route:\n{via_route.summary()}\nat the server:\n{at_server.summary()}"
    with tagged("SPK-5", "which endpoint the requests took", sandbox, **inputs):
        assert via_route.count(operation="GetObject") >= 1, "no GetObject took the route" + where
        assert len(at_server.requests) == len(via_route.requests), (
            "requests reached the server another way" + where
        )


def _round_trip_without_endpoint(
    sandbox: Any, options: dict[str, Any], data: bytes, **inputs: Any
) -> None:
    """SPK-5's steps on storages made with ``options``: a state written, a checkpoint whose
    _metadata holds its pickled handle finalized, the pointer resolved by a second storage and
    the handle out of _metadata read back."""
    with tagged(
        "SPK-5", "write a checkpoint through a storage without endpoint", sandbox, **inputs
    ):
        drv = JobDriver(sandbox, **options)
        drv.init_base()
        location = drv.location(1)
        handle = drv.write(drv.worker(1, location.location_reference), data)
        completed = drv.finalize(location, pickle.dumps([handle]))
    pointer = completed.external_pointer
    with tagged(
        "SPK-5", "resolve and read back without endpoint", sandbox, pointer=pointer, **inputs
    ):
        resolved = sandbox.make_storage(**options).resolve_checkpoint(pointer)
        (restored,) = pickle.loads(read_handle(resolved.metadata_handle))
        assert read_handle(restored) == data, "the state read back other bytes"


@pytest.mark.clause("SPK-6")
@pytest.mark.backend_traits(object_store=True)
def test_unreachable_endpoints_fail_fast_and_typed(sandbox, target, spark, backend):
    """SPK-6: reads through an endpoint that refuses connections fail in time, typed, no secret."""
    _, run = _completed_checkpoint(sandbox, target, spark, 1, "SPK-6")
    # Inline handles reach no store; a storage that writes no files passes trivially.
    files = _file_states(run.states)[:2]
    endpoint = f"127.0.0.1:{closed_port()}"
    secret = f"ckptconform-secret-{random_name(20)}"
    options = {
        **backend.storage_options,
        "endpoint_url": f"http://{endpoint}",
        "key": f"ckptconform-key-{random_name(8)}",
        "secret": secret,
    }
    reader = sandbox.make_storage(storage_options=options, **_options(target))
    reports = _restore(spark, [record for record, _ in files], storage=reader)
    inputs = {"endpoint": f"http://{endpoint}"}
    for report in reports:
        assert report.failure is None, (
            fail_message("SPK-6", "prepare the restoring task", sandbox, **inputs)
            + f"\n{report.failure.describe()}"
        )
        for result in report.results:
            operation = f"read {result.spec.describe()} through an unreachable endpoint"
            msg = fail_message("SPK-6", operation, sandbox, **inputs)
            failure = result.failure
            assert failure is not None, msg + f"\nthe read did not fail: {result.status}"
            assert failure.is_os_error, msg + f"\nnot an OSError: {failure.describe()}"
            assert failure.seconds <= UNREACHABLE_BOUND_SECONDS, msg + (
                f"\nit failed after {failure.seconds:.1f} s (bound: "
                f"{UNREACHABLE_BOUND_SECONDS:.0f} s): {failure.describe()}"
            )
            assert endpoint in failure.message, msg + (
                f"\nthe message does not name the endpoint {endpoint}: {failure.describe()}"
            )
            assert secret not in failure.message, msg + "\nthe message shows the secret"


# --------------------------------------------------------------------------- SPK-7


@pytest.mark.clause("SPK-7")
def test_aborted_checkpoints_leave_nothing(sandbox, target, spark):
    """SPK-7: dispose_on_failure removes what executors wrote; discarded handles remove the rest."""
    coord = _coordinator(sandbox, target, spark, streams_per_task=6)
    with tagged("SPK-7", "initialize the checkpoint", sandbox):
        coord.init_base()
        location = coord.checkpoint_location(5)
    run = coord.write(5, location)
    _require_tasks("SPK-7", run, sandbox, "write state on executors")
    files = _file_states(run.states)
    exclusive = [path for record, path in files if record.spec.kind == EXCLUSIVE_STATE]
    with tagged("SPK-7", "dispose_on_failure", sandbox):
        location.dispose_on_failure()
    left = [path for path in exclusive if sandbox.exists(path)]
    assert not left, fail_message("SPK-7", "dispose_on_failure", sandbox) + (
        f"\n{len(left)} of {len(exclusive)} exclusive state files written on executors remain: "
        + ", ".join(left[:5])
    )
    for record, _ in files:
        if record.spec.kind != EXCLUSIVE_STATE:
            with tagged("SPK-7", f"discard_state of {record.spec.describe()}", sandbox):
                _handle(record).discard_state()
    left = [path for _, path in files if sandbox.exists(path)]
    assert not left, fail_message("SPK-7", "discard the returned handles", sandbox) + (
        "\nfiles of the aborted checkpoint remain: " + ", ".join(left[:5])
    )
    if "file-layout" in target.capabilities:
        chk = join(sandbox.checkpoint_dir, str(coord.job_id), "chk-5")
        assert not files_below(sandbox, chk), fail_message(
            "SPK-7", "the aborted checkpoint's directory", sandbox
        )


# --------------------------------------------------------------------------- SPK-8


def _savepoint_on_executors(sandbox, target, spark, moved: bool) -> None:
    # Savepoints hold exclusive state (canonical savepoints); only that is relocatable (SAV-7).
    kinds = (EXCLUSIVE_STATE,) if moved else (EXCLUSIVE_STATE, SHARED_STATE)
    coord = _coordinator(sandbox, target, spark, kinds=kinds, tasks=2, streams_per_task=5)
    savepoints = join(sandbox.root, "savepoint-target")
    with tagged("SPK-8", "initialize_location_for_savepoint", sandbox, target_dir=savepoints):
        location = coord.savepoint_location(9, savepoints)
    run = coord.write(9, location)
    _require_tasks("SPK-8", run, sandbox, "write savepoint state on executors")
    with tagged("SPK-8", "finalize the savepoint", sandbox):
        coord.finalize(run)
    pointer = run.pointer
    assert pointer is not None
    if moved:
        new = join(sandbox.root, "moved", pointer.rstrip("/").rsplit("/", 1)[1])
        move_tree(sandbox, pointer, new)
        pointer = new
    fresh = sandbox.make_storage(**_options(target))
    with tagged("SPK-8", "resolve the savepoint through a fresh storage", sandbox, pointer=pointer):
        completed = fresh.resolve_checkpoint(pointer)
        states = metadata_states(completed)
        if moved:
            states = [
                StateRecord(s.spec, pickle.dumps(completed.resolve_handle(_handle(s))), s.task)
                for s in states
            ]
    assert len(states) == len(run.states), fail_message(
        "SPK-8", "_metadata of the savepoint", sandbox, pointer=pointer
    )
    reports = _restore(spark, states, storage=fresh)
    _check_restored("SPK-8", sandbox, reports, len(states), pointer=pointer, moved=moved)


@pytest.mark.clause("SPK-8")
def test_savepoints_written_on_executors_restore(sandbox, target, spark):
    """SPK-8: a savepoint written by tasks on executors restores on executors."""
    _savepoint_on_executors(sandbox, target, spark, moved=False)


@pytest.mark.clause("SPK-8")
@pytest.mark.requires("relocatable-savepoints")
def test_moved_savepoints_written_on_executors_restore(sandbox, target, spark):
    """SPK-8: ... also after the savepoint directory was moved (relocatable-savepoints)."""
    _savepoint_on_executors(sandbox, target, spark, moved=True)


# --------------------------------------------------------------------------- SPK-9


@pytest.mark.clause("SPK-9")
def test_request_counts_hold_on_executors(sandbox, target, spark, ledger):
    """SPK-9: executors' worker path and restores send no existence checks; one PUT per file."""
    coord = _coordinator(sandbox, target, spark, streams_per_task=6)
    with tagged("SPK-9", "initialize the checkpoint", sandbox):
        coord.init_base()
        location = coord.checkpoint_location(1)
    with ledger.record() as writing:
        run = coord.write(1, location)
    _require_tasks("SPK-9", run, sandbox, "write state on executors")
    summary = f"\nrequests while the tasks wrote:\n{writing.summary()}"
    probes = writing.count(operation=EXISTENCE_CHECKS)
    assert probes == 0, fail_message("SPK-9", "worker path on executors", sandbox) + summary
    if "inline-state" in target.capabilities:
        uploads = len(_file_states(run.states))
        assert writing.count(operation="PutObject") == uploads == len(writing), (
            fail_message("SPK-9", "uploads of the worker path", sandbox)
            + f"\n{uploads} file-backed states (threshold {THRESHOLD}){summary}"
        )
    with tagged("SPK-9", "finalize and resolve", sandbox):
        coord.finalize(run)
        fresh = sandbox.make_storage(**_options(target))
        states = metadata_states(fresh.resolve_checkpoint(run.pointer))
    with ledger.record() as reading:
        reports = _restore(spark, states, storage=fresh)
    _check_restored("SPK-9", sandbox, reports, len(states))
    probes = reading.count(operation=EXISTENCE_CHECKS)
    assert probes == 0, fail_message("SPK-9", "restoring tasks", sandbox) + (
        f"\nrequests while the tasks read:\n{reading.summary()}"
    )
