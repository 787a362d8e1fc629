"""REQ: request budgets and behaviour under throttling and faults (pain points P1, P3, P5).

Counted at the server through the backend's request ledger (moto, s3rver, minio, s3), with the
workload of ``ckptconform.workload`` on threads of this process: the driver is the coordinator,
each thread pool task an operator subtask. Faults and throttling are the ledger's: S3-style
errors with S3's own bodies, connections dropped before or after the server carried a request
out, token buckets per key prefix, hangs, DeleteObjects with an error per key, listings in small
pages. ``ckptconform budget`` runs the same workload at scale.

REQ-12 runs where the server can drop a connection mid-request (the sftp leg): the server
drops the client's connection, once, instead of answering a chosen request on a chosen file
(``SftpBackend.dropping_connection``); backends whose server cannot do that skip with that
reason. The reads run on one thread, so that the read after the drop shows whether the storage
connects anew where it keeps a connection per thread.
"""

from __future__ import annotations

import concurrent.futures
import copy
import pickle
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import pytest

from ckptconform.failures import ClauseFailure
from ckptconform.suite._driver import (
    EXCLUSIVE,
    SHARED,
    JobDriver,
    call_outcome,
    fail_message,
    file_options,
    file_path,
    files_below,
    is_inline,
    join,
    open_uploads_below,
    parent,
    read_handle,
    require,
    tagged,
    unconditional_options,
    unconditional_route,
    within,
    write_state,
)
from ckptconform.workload import (
    CheckpointRun,
    Coordinator,
    StateRecord,
    ThreadRunner,
    metadata_states,
    payload,
    read_plans,
    read_subtask,
)

THRESHOLD = 1024
COORDINATOR_LIMIT = 4
EXISTENCE = ("HeadObject", "HeadBucket", "ListObjectsV2", "ListObjects")

#: Where REQ's requests are counted: an object store behind the request ledger (every test
#: but REQ-12's, which drops an SFTP client's connection).
ON_THE_LEDGER = pytest.mark.backend_traits(object_store=True, ledger=True)


def _options(target: Any) -> dict[str, Any]:
    return {"inline_threshold": THRESHOLD} if "inline-state" in target.capabilities else {}


def _coordinator(sandbox: Any, target: Any, tasks: int, **options: Any) -> Coordinator:
    return Coordinator(
        storage=sandbox.make_storage(**_options(target), **options),
        runner=ThreadRunner(6),
        tasks=tasks,
        streams_per_task=4,
        threads=2,
        threshold=THRESHOLD if "inline-state" in target.capabilities else None,
    )


def _short_budget(target: Any) -> dict[str, Any]:
    """One attempt within 5 s where the target claims retry-budget: refused requests end fast."""
    if "retry-budget" not in target.capabilities:
        return {}
    return {"retry_attempts": 1, "retry_seconds": 5}


def _file_backed(record: StateRecord) -> bool:
    handle = pickle.loads(record.handle) if record.handle is not None else None
    return isinstance(getattr(handle, "file_path", None), str)


def _checkpoint(clause: str, sandbox: Any, coord: Coordinator, n: int) -> CheckpointRun:
    with tagged(clause, f"initialize checkpoint {n}", sandbox):
        location = coord.checkpoint_location(n)
    run = coord.write(n, location)
    if run.failures:
        require(
            False,
            clause,
            fail_message(clause, f"write checkpoint {n} on task threads", sandbox)
            + "\n"
            + run.failures[0].describe(),
        )
    with tagged(clause, f"finalize checkpoint {n}", sandbox):
        coord.finalize(run)
    return run


def _restored(clause: str, sandbox: Any, target: Any, run: CheckpointRun) -> list[StateRecord]:
    """Resolve ``run`` through a fresh storage and read every handle back on task threads."""
    fresh = sandbox.make_storage(**_options(target))
    with tagged(clause, "resolve the checkpoint through a fresh storage", sandbox):
        states = metadata_states(fresh.resolve_checkpoint(run.pointer))
    reports = ThreadRunner(4).run(read_subtask, read_plans(states, 4))
    problems = [r.failure.describe() for r in reports if r.failure]
    problems += [
        f"{x.spec.describe()}: {x.status}: {x.detail}"
        for r in reports
        for x in r.results
        if x.status != "ok"
    ]
    with tagged(clause, "restore", sandbox, pointer=run.pointer):
        assert not problems, f"{len(problems)} problem(s): " + "; ".join(problems[:5])
        assert len(states) == len(run.states), "_metadata holds another number of states"
    return states


@ON_THE_LEDGER
@pytest.mark.clause("REQ-1")
def test_coordinator_requests_do_not_grow_with_the_task_count(sandbox, target, ledger):
    """REQ-1: location + _metadata cost the same for 2 and for 12 tasks, at most 4 requests."""
    _check_coordinator_requests(sandbox, target, ledger)


@ON_THE_LEDGER
@pytest.mark.clause("REQ-1")
@pytest.mark.backend_traits(object_store=True, any_credentials=True)
def test_coordinator_requests_where_conditional_writes_are_ignored(sandbox, target, backend):
    """REQ-1: through a route to a server that ignores conditional writes (its ledger removes
    If-None-Match), location + _metadata still cost the same for 2 and for 12 tasks, at most 4
    requests."""
    with unconditional_route(backend) as route:
        _check_coordinator_requests(
            sandbox, target, route.ledger, **unconditional_options(backend, route), route=route.url
        )


def _check_coordinator_requests(sandbox, target, ledger, route=None, **options) -> None:
    """REQ-1's counts through ``ledger``, for storages made with ``options``."""
    shown = {} if route is None else {"route": route}
    counts = {}
    for n, tasks in enumerate((2, 12), start=1):
        coord = _coordinator(sandbox, target, tasks, **options)
        with tagged("REQ-1", "initialize_base_locations_for_checkpoint", sandbox):
            coord.init_base()
        with ledger.record() as initializing:
            location = coord.checkpoint_location(n)
        run = coord.write(n, location)
        assert not run.failures, fail_message("REQ-1", "write state", sandbox) + str(run.failures)
        with ledger.record() as finalizing:
            coord.finalize(run)
        counts[tasks] = (len(initializing) + len(finalizing), initializing, finalizing)
    (few, _, _), (many, init, final) = counts[2], counts[12]
    summary = f"\n2 tasks: {few} requests; 12 tasks: {many}:\n{init.summary()}\n{final.summary()}"
    if few != many or many > COORDINATOR_LIMIT:  # the message lists the sandbox: I/O
        msg = fail_message("REQ-1", "coordinator requests", sandbox, **shown) + summary
        assert few == many, msg
        assert many <= COORDINATOR_LIMIT, msg


@ON_THE_LEDGER
@pytest.mark.clause("REQ-2")
def test_restores_read_each_file_once(sandbox, target, ledger):
    """REQ-2: restoring tasks send one GetObject per file-backed handle and nothing else."""
    coord = _coordinator(sandbox, target, 6)
    with tagged("REQ-2", "initialize_base_locations_for_checkpoint", sandbox):
        coord.init_base()
    run = _checkpoint("REQ-2", sandbox, coord, 1)
    fresh = sandbox.make_storage(**_options(target))
    with tagged("REQ-2", "resolve the checkpoint", sandbox):
        states = metadata_states(fresh.resolve_checkpoint(run.pointer))
    files = sum(1 for s in states if _file_backed(s))
    with ledger.record() as reading:
        reports = ThreadRunner(4).run(read_subtask, read_plans(states, 4))
    problems = [x for r in reports for x in r.results if x.status != "ok"]
    assert not problems, fail_message("REQ-2", "restore", sandbox) + str(problems[:3])
    msg = fail_message("REQ-2", "restoring tasks", sandbox) + (
        f"\n{files} file-backed handles\n{reading.summary()}"
    )
    assert reading.count(operation=EXISTENCE) == 0, msg
    assert reading.count(operation="GetObject") == files == len(reading), msg


@ON_THE_LEDGER
@pytest.mark.clause("REQ-2")
def test_an_empty_metadata_reads_without_existence_checks(sandbox, target, ledger):
    """REQ-2: an empty _metadata reads back as zero bytes through the completed checkpoint's
    metadata_handle and through the resolved checkpoint's, with at most one GetObject each and
    no HeadObject, no List (the handle knows its size, even when it is 0)."""
    drv = JobDriver(sandbox, **file_options(target))
    with tagged("REQ-2", "finalize and resolve a checkpoint of empty metadata", sandbox):
        drv.init_base()
        completed = drv.finalize(drv.location(1), b"")
        resolved = drv.fresh_storage().resolve_checkpoint(completed.external_pointer)
    for label, handle in (("completed", completed), ("resolved", resolved)):
        reading_step = tagged("REQ-2", f"read the {label} checkpoint's metadata_handle", sandbox)
        with ledger.record() as reading, reading_step:
            data = read_handle(handle.metadata_handle)
        msg = fail_message(
            "REQ-2", f"read the {label} checkpoint's empty metadata_handle", sandbox
        ) + (f"\nread {len(data)} bytes\n{reading.summary()}")
        assert data == b"", msg
        assert reading.count(operation=EXISTENCE) == 0, msg
        assert reading.count(operation="GetObject") == len(reading) <= 1, msg


@ON_THE_LEDGER
@pytest.mark.clause("REQ-3")
def test_throttled_checkpoints_complete(sandbox, target, ledger):
    """REQ-3: S3-style SlowDown per prefix is retried; the checkpoint completes intact, also
    when its _metadata is throttled three times in a row."""
    coord = _coordinator(sandbox, target, 8)
    with tagged("REQ-3", "initialize_base_locations_for_checkpoint", sandbox):
        coord.init_base()
    throttle = ledger.throttle(10, "PutObject", burst=2)
    run = _checkpoint("REQ-3", sandbox, coord, 1)
    ledger.clear_faults()
    if any(_file_backed(s) for s in run.states):  # all-inline storages send no PutObject
        assert throttle.throttled > 0, fail_message("REQ-3", "the throttle", sandbox) + (
            "\nno request was throttled: the test did not test anything"
        )
    _restored("REQ-3", sandbox, target, run)
    # one request throttled again and again: the _metadata of the next checkpoint
    burst = ledger.inject("PutObject", times=3, key_contains="_metadata")
    run = _checkpoint("REQ-3", sandbox, coord, 2)
    ledger.clear_faults()
    assert burst.hits == 3, fail_message("REQ-3", "the throttled _metadata", sandbox) + (
        f"\nthe SlowDown answers hit {burst.hits} of 3 requests"
    )
    _restored("REQ-3", sandbox, target, run)


#: REQ-3's bound on a close while the server throttles without end (default options)
ENDLESS_THROTTLE_SECONDS = 30.0


@ON_THE_LEDGER
@pytest.mark.clause("REQ-3")
def test_endless_throttling_fails_in_bounded_time(sandbox, target, ledger):
    """REQ-3: while every PutObject of a state file is answered SlowDown without end, closing
    the stream fails with an OSError within 30 s (throttling is retried within bounds)."""
    coord = _coordinator(sandbox, target, 1)
    with tagged("REQ-3", "initialize the checkpoint", sandbox):
        coord.init_base()
        location = coord.checkpoint_location(1)
        factory = coord.access.resolve_checkpoint_storage_location(1, location.location_reference)
    ledger.inject("PutObject", times=None)  # S3's 503 SlowDown, for ever
    close = _ClosingRun(factory, payload(THRESHOLD * 8, 3))
    with ledger.record() as rec:
        close.run(ENDLESS_THROTTLE_SECONDS)
        ledger.clear_faults()
    msg = fail_message("REQ-3", "close a stream while every PutObject is throttled", sandbox)
    msg += f"\noutcome after {close.took:.1f} s: {close.outcome}\n{rec.summary()}"
    if close.outcome == "returned" and not rec.count(operation="PutObject"):
        return  # an inline state: nothing was sent, nothing to bound
    assert close.outcome.startswith("OSError"), msg
    assert close.took <= ENDLESS_THROTTLE_SECONDS, msg


@dataclass
class _ClosingRun:
    """A file-backed state stream written and closed for its handle in a thread, for at most
    a bound: what came of it (:func:`call_outcome`, or "still running after ...") and how long."""

    factory: Any
    blob: bytes
    outcome: str = ""
    took: float = 0.0
    handle: Any = None

    def run(self, bound: float) -> None:
        stream = self.factory.create_checkpoint_state_output_stream(EXCLUSIVE)

        def close_a_file_backed_stream() -> None:
            try:
                stream.write(self.blob)
                self.handle = stream.close_and_get_handle()
            finally:
                stream.close()

        box: dict[str, str] = {}
        started = time.monotonic()
        finished = within(
            bound + 1, lambda: box.update(outcome=call_outcome(close_a_file_backed_stream))
        )
        self.took = time.monotonic() - started
        self.outcome = box["outcome"] if finished else f"still running after {self.took:.0f} s"


@ON_THE_LEDGER
@pytest.mark.clause("REQ-4")
@pytest.mark.parametrize("where", ["state", "metadata"])
def test_a_lost_answer_after_commit_never_fails_a_checkpoint(sandbox, target, ledger, where):
    """REQ-4: PutObject carried out, answer lost: the checkpoint completes, its pointer resolves
    and every handle reads its bytes."""
    coord = _coordinator(sandbox, target, 3)
    with tagged("REQ-4", "initialize_base_locations_for_checkpoint", sandbox):
        coord.init_base()
    key = "_metadata" if where == "metadata" else None
    times = 1 if where == "metadata" else 3
    fault = ledger.inject(
        "PutObject", drop_connection=True, after_commit=True, times=times, key_contains=key
    )
    with ledger.record() as rec:
        run = _checkpoint("REQ-4", sandbox, coord, 1)
    ledger.clear_faults()
    assert fault.hits == times, fail_message("REQ-4", "the fault", sandbox) + (
        f"\nthe fault hit {fault.hits} of {times} requests\n{rec.summary()}"
    )
    _restored("REQ-4", sandbox, target, run)


@ON_THE_LEDGER
@pytest.mark.clause("REQ-5")
def test_faults_never_lose_or_expose_data(sandbox, target, ledger):
    """REQ-5: under 10% faults a checkpoint completes intact or fails and is cleaned up."""
    coord = _coordinator(sandbox, target, 4)
    with tagged("REQ-5", "initialize_base_locations_for_checkpoint", sandbox):
        coord.init_base()
    ledger.seed(11)
    for kind in (
        {"status": 500, "code": "InternalError"},
        {"status": 503, "code": "SlowDown"},
        {"drop_connection": True},
        {"drop_connection": True, "after_commit": True},
    ):
        ledger.inject(("PutObject", "GetObject"), times=None, rate=0.025, **kind)
    outcomes: list[tuple[int, CheckpointRun | None, str]] = []
    for n in (1, 2, 3):
        location = None
        try:
            location = coord.checkpoint_location(n)
            run = coord.write(n, location)
            if run.failures:
                raise OSError(run.failures[0].describe())
            coord.finalize(run)
            outcomes.append((n, run, ""))
        except OSError as exc:
            if location is not None:
                with tagged("REQ-5", f"dispose_on_failure of checkpoint {n}", sandbox):
                    location.dispose_on_failure()
            outcomes.append((n, None, f"{type(exc).__name__}: {exc}"))
    ledger.clear_faults()
    for n, run, problem in outcomes:
        if run is not None:
            _restored("REQ-5", sandbox, target, run)
        elif "file-layout" in target.capabilities:
            chk = join(sandbox.checkpoint_dir, str(coord.job_id), f"chk-{n}")
            left = files_below(sandbox, chk)
            assert not left, fail_message("REQ-5", f"failed checkpoint {n}", sandbox) + (
                f"\nit failed ({problem}) and dispose_on_failure left {len(left)} objects"
            )


#: (retry_attempts, retry_seconds, fault) of REQ-6: a stuck server only with the short budget;
#: None: the key is not given (each key of the budget also holds alone)
RETRY_CASES = (
    (3, 9.5, "persistent"),
    (3, 9.5, "transient"),
    (2, 4.0, "persistent"),
    (2, 4.0, "transient"),
    (2, 4.0, "hung"),
    (2, 4.0, "throttled"),
    (2, None, "persistent"),
    (None, 4.0, "hung"),
)
#: REQ-6's bound on a close where only retry_attempts is given
ATTEMPTS_ALONE_SECONDS = 30.0


def _put_fault(ledger: Any, fault: str, times: int | None = None) -> None:
    """Answer PutObject ``times`` times (``None``: until cleared) as REQ-6's ``fault`` says:
    500 InternalError (persistent), S3's 503 SlowDown (throttled), a dropped connection
    (dropped) or no answer for 60 seconds (hung)."""
    if fault == "persistent":
        ledger.inject("PutObject", status=500, code="InternalError", times=times)
    elif fault == "throttled":
        ledger.inject("PutObject", times=times)
    elif fault == "dropped":
        ledger.inject("PutObject", drop_connection=True, times=times)
    else:
        ledger.inject("PutObject", delay=60, times=times)


@ON_THE_LEDGER
@pytest.mark.clause("REQ-6")
@pytest.mark.parametrize(("attempts", "seconds", "fault"), RETRY_CASES)
def test_an_operation_keeps_to_its_retry_budget(sandbox, target, ledger, attempts, seconds, fault):
    """REQ-6: with retry_attempts A and retry_seconds S, a PutObject of a state file answered 500
    (or 503 SlowDown) every time fails the close with an OSError within S + 5 seconds after
    exactly A requests; answered 500 A - 1 times, the close succeeds; a server that hangs fails
    it within S + 5 s; each key alone holds as well."""
    budget = {"retry_attempts": attempts, "retry_seconds": seconds}
    coord = _coordinator(sandbox, target, 1, **{k: v for k, v in budget.items() if v is not None})
    bound = ATTEMPTS_ALONE_SECONDS if seconds is None else seconds + 5
    with tagged("REQ-6", "initialize the checkpoint", sandbox):
        coord.init_base()
        location = coord.checkpoint_location(1)
        factory = coord.access.resolve_checkpoint_storage_location(1, location.location_reference)
    blob = payload(THRESHOLD * 8, attempts or 1)
    if fault == "transient":
        _put_fault(ledger, "persistent", times=attempts - 1)
    else:
        _put_fault(ledger, fault)
    close = _ClosingRun(factory, blob)
    with ledger.record() as rec:
        close.run(bound)
        ledger.clear_faults()  # ends the server's hangs; an abandoned close then finishes
    outcome, took = close.outcome, close.took
    msg = fail_message(
        "REQ-6",
        f"close a stream while PutObject is {fault}",
        sandbox,
        retry_attempts=attempts,
        retry_seconds=seconds,
    ) + (f"\noutcome after {took:.1f} s: {outcome}\n{rec.summary()}")
    puts = rec.filter(operation="PutObject")
    per_file = {r.key: rec.count(operation="PutObject", key_contains=r.key) for r in puts}
    if fault == "transient":
        assert outcome == "returned", msg + f"\n(a fault that clears after {attempts - 1} tries)"
        with tagged("REQ-6", "read the state written after the retries", sandbox):
            assert read_handle(close.handle) == blob, "the state does not read its bytes"
        return
    assert outcome.startswith("OSError"), msg
    assert took <= bound, msg
    if fault in ("persistent", "throttled"):
        assert per_file, msg + "\n(no PutObject reached the server)"
        assert set(per_file.values()) == {attempts}, msg + (
            f"\nPutObject requests per file: {per_file}; the budget is {attempts}"
        )


#: (retry_attempts, retry_seconds) of REQ-6's read whose transfer stops after its first byte
STALLED_READ_CASES = ((2, 4.0), (None, 4.0))
#: tries at writing the state that read is to read, before the fault (no fault: one, mostly)
STALLED_READ_WRITES = 3


@ON_THE_LEDGER
@pytest.mark.clause("REQ-6")
@pytest.mark.parametrize(("attempts", "seconds"), STALLED_READ_CASES)
def test_a_read_whose_transfer_stops_keeps_to_its_retry_budget(
    sandbox, target, ledger, attempts, seconds
):
    """REQ-6: with retry_seconds S (with retry_attempts 2, and alone), reading a file-backed
    handle while every GetObject's answer stops after the first byte of its body (for 60
    seconds) fails with an OSError within S + 5 seconds."""
    budget = {"retry_attempts": attempts, "retry_seconds": seconds}
    coord = _coordinator(sandbox, target, 1, **{k: v for k, v in budget.items() if v is not None})
    bound = seconds + 5
    with tagged("REQ-6", "initialize the checkpoint", sandbox):
        coord.init_base()
        location = coord.checkpoint_location(1)
        factory = coord.access.resolve_checkpoint_storage_location(1, location.location_reference)
    # The state is written under the same budget, before any fault: on a loaded machine a
    # slow server can take longer than S for one write, which says nothing of the read.
    for _ in range(STALLED_READ_WRITES):
        close = _ClosingRun(factory, payload(THRESHOLD * 8, 7))
        close.run(bound)
        if close.outcome == "returned":
            break
    msg = fail_message(
        "REQ-6",
        "read a handle while GetObject's body stops after its first byte",
        sandbox,
        retry_attempts=attempts,
        retry_seconds=seconds,
    )
    assert close.outcome == "returned", msg + f"\nwriting the state: {close.outcome}"
    ledger.inject("GetObject", delay=60, stall_body=True, times=None)
    box: dict[str, str] = {}
    started = time.monotonic()
    finished = within(
        bound + 1, lambda: box.update(outcome=call_outcome(lambda: read_handle(close.handle)))
    )
    took = time.monotonic() - started
    ledger.clear_faults()  # ends the stalls; an abandoned read then finishes
    outcome = box["outcome"] if finished else f"still running after {took:.0f} s"
    msg += f"\noutcome after {took:.1f} s: {outcome}"
    assert outcome.startswith("OSError"), msg
    assert took <= bound, msg


#: REQ-6's retry settings of the client itself: (s3fs's and botocore's storage_options
#: besides the backend's, the budget keys, the environment, the PutObject fault of
#: :func:`_put_fault`, PutObject requests per file)
CLIENT_BUDGET_CASES = (
    ({"config_kwargs": {"retries": {"max_attempts": 0}}}, {}, {}, "persistent", 1),
    ({"config_kwargs": {"retries": {"total_max_attempts": 2}}}, {}, {}, "persistent", 2),
    ({}, {}, {"AWS_MAX_ATTEMPTS": "2"}, "persistent", 2),
    (
        {"config_kwargs": {"retries": {"max_attempts": 0}}},
        {},
        {"AWS_MAX_ATTEMPTS": "2"},
        "persistent",
        1,
    ),
    ({}, {}, {"AWS_RETRY_MODE": "standard"}, "throttled", 3),
    ({"retries": 4}, {"retry_attempts": 2}, {}, "dropped", 2),
)


@ON_THE_LEDGER
@pytest.mark.clause("REQ-6")
@pytest.mark.parametrize(
    ("client", "budget", "environment", "fault", "requests"), CLIENT_BUDGET_CASES
)
def test_the_clients_own_retry_settings_are_kept(
    sandbox, target, backend, ledger, monkeypatch, client, budget, environment, fault, requests
):
    """REQ-6: botocore's own retry settings hold where no budget key is given: config_kwargs
    retries max_attempts 0 (one PutObject per file while every one is answered 500), or
    total_max_attempts 2 (two); AWS_MAX_ATTEMPTS=2 in the environment when the storage is
    made (two), but not over config_kwargs' max_attempts 0 (one); AWS_RETRY_MODE=standard
    alone (three while every PutObject is answered 503 SlowDown). s3fs's own retries 4 (its
    loop repeats a call that failed on its connection) do not multiply retry_attempts 2 (at
    most four while every PutObject's connection is dropped: two attempts, each of which the
    HTTP client may send again once on a new connection). The storage_options given are left
    unmodified."""
    for name in ("AWS_MAX_ATTEMPTS", "AWS_RETRY_MODE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    base = dict(backend.storage_options)
    client_config = {**base.get("config_kwargs", {}), **client.get("config_kwargs", {})}
    storage_options = {**base, **client, "config_kwargs": client_config}
    given = copy.deepcopy(storage_options)
    coord = _coordinator(sandbox, target, 1, storage_options=storage_options, **budget)
    with tagged("REQ-6", "initialize the checkpoint", sandbox):
        coord.init_base()
        location = coord.checkpoint_location(1)
        factory = coord.access.resolve_checkpoint_storage_location(1, location.location_reference)
    _put_fault(ledger, fault)
    close = _ClosingRun(factory, payload(THRESHOLD * 8, 5))
    with ledger.record() as rec:
        close.run(ATTEMPTS_ALONE_SECONDS)
        ledger.clear_faults()
    msg = fail_message(
        "REQ-6",
        f"close a stream while PutObject is {fault}, with the client's own retries",
        sandbox,
        client=client,
        budget=budget,
        environment=environment,
    ) + (f"\noutcome after {close.took:.1f} s: {close.outcome}\n{rec.summary()}")
    puts = rec.filter(operation="PutObject")
    per_file = {r.key: rec.count(operation="PutObject", key_contains=r.key) for r in puts}
    assert close.outcome.startswith("OSError"), msg
    assert per_file, msg + "\n(no PutObject reached the server)"
    if fault == "dropped":  # the HTTP client may resend each attempt once on a new connection
        assert max(per_file.values()) <= 2 * requests, msg + (
            f"\nPutObject requests per file: {per_file}; these settings allow {requests} "
            f"attempts, each sent at most twice"
        )
    else:
        assert set(per_file.values()) == {requests}, msg + (
            f"\nPutObject requests per file: {per_file}; these settings allow {requests}"
        )
    assert storage_options == given, msg + (
        f"\nthe storage_options given were modified:\n{storage_options}\nnot\n{given}"
    )


#: REQ-13's retry_seconds, and its margin (REQ-6's): a call gives up within S + 5 s, and a
#: call that spends S on each of two requests (2 S) misses that bound.
WHOLE_CALL_SECONDS = 6.0
WHOLE_CALL_MARGIN = 5.0
#: tries at preparing REQ-13's call (a new job each) while the storage answers with an OSError
WHOLE_CALL_PREPARATIONS = 3


#: REQ-13's calls on a state file: none where the target keeps the state inline.
_STATE_CALLS = (
    "close_and_get_handle",
    "read a handle",
    "discard_state",
    "duplicate",
    "task-owned duplicate",
)


def _hung_call(call: str, drv: JobDriver) -> Callable[[], object] | None:
    """The public call ``call`` of REQ-13, prepared while the server still answers (a
    checkpoint written and finalized, a stream written but not closed...); ``None`` where it
    sends no request (the target keeps such state inline) or the target cannot make it (no
    fast duplication)."""
    completed, written = drv.checkpoint(1, exclusive=[payload(THRESHOLD * 8, 13)])
    handle = written[0][0]
    if is_inline(handle) and call in _STATE_CALLS:
        return None
    location = drv.location(2)
    factory = drv.worker(2, location.location_reference)
    if call == "close_and_get_handle":
        stream = factory.create_checkpoint_state_output_stream(EXCLUSIVE)
        stream.write(payload(THRESHOLD * 8, 14))
        return stream.close_and_get_handle
    if call == "close_and_finalize_checkpoint":
        metadata = location.create_metadata_output_stream()
        metadata.write(b"metadata of REQ-13")
        return metadata.close_and_finalize_checkpoint
    if call == "dispose_on_failure":
        drv.write(factory, payload(THRESHOLD * 8, 15))
        return location.dispose_on_failure
    calls: dict[str, Callable[[], object]] = {
        "resolve_checkpoint": lambda: drv.storage.resolve_checkpoint(completed.external_pointer),
        "dispose_storage_location": completed.dispose_storage_location,
        "read a handle": lambda: read_handle(handle),
        "discard_state": handle.discard_state,
    }
    if call in calls:
        return calls[call]
    if call == "duplicate":
        if not factory.can_fast_duplicate(handle, SHARED):
            return None
        return lambda: factory.duplicate([handle], SHARED)
    toolset = drv.access.create_task_owned_checkpoint_state_toolset()
    if not toolset.can_fast_duplicate(handle):
        return None
    return lambda: toolset.duplicate([handle])


@ON_THE_LEDGER
@pytest.mark.clause("REQ-13")
@pytest.mark.parametrize(
    "call",
    [
        "close_and_finalize_checkpoint",
        "resolve_checkpoint",
        "dispose_storage_location",
        "dispose_on_failure",
        *_STATE_CALLS,
    ],
)
def test_a_call_keeps_to_its_retry_budget_as_a_whole(sandbox, target, ledger, call):
    """REQ-13: with retry_seconds S, while the server accepts connections and never answers,
    a public call fails with an OSError within S + 5 seconds as a whole, however many requests
    it makes."""
    seconds = WHOLE_CALL_SECONDS
    bound = seconds + WHOLE_CALL_MARGIN
    # The call is prepared under the same budget, before any fault: on a loaded machine a slow
    # server can take longer than S for one write, which says nothing of the hung call.
    for attempt in range(1, WHOLE_CALL_PREPARATIONS + 1):
        drv = JobDriver(sandbox, **_options(target), retry_seconds=seconds)
        try:
            with tagged("REQ-13", f"prepare {call}", sandbox):
                drv.init_base()
                work = _hung_call(call, drv)
            break
        except ClauseFailure as failure:
            if attempt == WHOLE_CALL_PREPARATIONS or not isinstance(failure.__cause__, OSError):
                raise
    if work is None:
        pytest.skip(f"{call}: no request (inline state) or no fast duplication here")
    ledger.inject(None, delay=60, times=None)
    box: dict[str, str] = {}
    with ledger.record() as rec:
        started = time.monotonic()
        finished = within(bound + 1, lambda: box.update(outcome=call_outcome(work)))
        took = time.monotonic() - started
        ledger.clear_faults()  # ends the hangs; an abandoned call then finishes
    outcome = box["outcome"] if finished else f"still running after {took:.0f} s"
    msg = fail_message(
        "REQ-13", f"{call} while the server never answers", None, retry_seconds=seconds
    ) + (f"\noutcome after {took:.1f} s: {outcome}\n{rec.summary()}")
    assert outcome.startswith("OSError"), msg
    assert took <= bound, msg


@ON_THE_LEDGER
@pytest.mark.clause("REQ-7")
def test_disposal_aborts_open_multipart_uploads(sandbox, target, backend):
    """REQ-7: dispose_on_failure aborts a crashed writer's multipart upload below the location,
    and no upload beside it: those below ``chk-<n>0`` and ``chk-<n>-x`` (names that start like
    the location's) stay open."""
    coord = _coordinator(sandbox, target, 1)
    with tagged("REQ-7", "initialize the checkpoint", sandbox):
        coord.init_base()
        location = coord.checkpoint_location(1)
    run = coord.write(1, location)
    assert not run.failures, fail_message("REQ-7", "write state", sandbox)
    files = [
        pickle.loads(s.handle).file_path
        for s in run.states
        if _file_backed(s) and s.spec.kind == "exclusive"
    ]
    if not files:
        return  # no exclusive state file: nothing tells where the location's uploads go
    directory = files[0].rsplit("/", 1)[0]
    crashed = join(directory, "crashed-writer-upload")
    raw = backend.raw
    bucket, key, _ = raw.split_path(sandbox.raw_path(crashed))
    prefix = key.rsplit("/", 1)[0] + "/"
    try:
        raw.call_s3("list_multipart_uploads", Bucket=bucket, Prefix=prefix)
    except OSError as exc:
        pytest.skip(f"backend {backend.name} cannot list multipart uploads ({exc}): not checkable")
    _open_upload(backend, sandbox, crashed)
    beside = {  # directories whose names start like the location's -> an upload open there
        place: join(place, "other-writer-upload") for place in (directory + "0", directory + "-x")
    }
    for upload in beside.values():
        _open_upload(backend, sandbox, upload)
    try:
        with tagged("REQ-7", "dispose_on_failure", sandbox):
            location.dispose_on_failure()
        left = open_uploads_below(sandbox, directory)
    finally:  # the suite aborts what is still open, the storage's leftovers and its own
        kept = {place: open_uploads_below(sandbox, place) for place in beside}
    msg = fail_message("REQ-7", "dispose_on_failure", sandbox)
    assert not left, msg + f"\nmultipart uploads still open below {prefix}: {left}"
    for place, upload in beside.items():
        key = backend.raw.split_path(sandbox.raw_path(upload))[1]
        assert key in kept[place], msg + (
            f"\nthe multipart upload of {key}, beside the location, was aborted too"
        )


@ON_THE_LEDGER
@pytest.mark.clause("REQ-8")
@pytest.mark.parametrize("fault", ["refused", "refused, HeadObject too", "answer lost"])
def test_a_delete_reports_what_happened(sandbox, target, ledger, fault):
    """REQ-8: a refused DeleteObject makes discard_state() raise an OSError and leaves the state
    readable, also while every HeadObject of the file is refused too; a DeleteObject carried
    out whose answers are lost still counts as done."""
    budget = _short_budget(target)
    drv = JobDriver(sandbox, **file_options(target), **budget)
    blob = payload(3000, 8)
    with tagged("REQ-8", "write a state file", sandbox):
        drv.init_base()
        handle = drv.write(drv.location(1), blob)
    path = file_path(handle)
    require(
        path is not None,
        "REQ-8",
        fail_message("REQ-8", "write a state file", sandbox)
        + "\nthe state came back inline although inline_threshold 0 puts state into files",
    )
    name = path.rsplit("/", 1)[-1]
    if fault.startswith("refused"):
        fault_ = ledger.inject(
            "DeleteObject", status=500, code="InternalError", times=None, key_contains=name
        )
        if fault != "refused":  # the storage cannot tell whether the file is gone
            ledger.inject(
                "HeadObject", status=500, code="InternalError", times=None, key_contains=name
            )
    else:
        fault_ = ledger.inject(
            "DeleteObject", drop_connection=True, after_commit=True, times=None, key_contains=name
        )
    started = time.monotonic()
    with ledger.record() as rec:
        outcome = call_outcome(handle.discard_state)
    seconds = time.monotonic() - started
    ledger.clear_faults()
    msg = fail_message(
        "REQ-8", f"discard_state() while every DeleteObject is {fault}", sandbox, file=path
    ) + (
        f"\noutcome after {seconds:.1f} s: {outcome}; the fault hit {fault_.hits} requests"
        f"\n{rec.summary()}"
    )
    assert fault_.hits >= 1, msg + "\n(no DeleteObject of the file reached the server)"
    assert seconds <= 30, msg
    if fault.startswith("refused"):
        assert outcome.startswith("OSError"), msg
        with tagged("REQ-8", "read the state after the refused delete", sandbox, file=path):
            assert read_handle(handle) == blob, "the state no longer reads its bytes"
    else:
        assert outcome == "returned", msg
        assert not sandbox.exists(path), msg + "\nthe file is still there"


def _open_upload(backend: Any, sandbox: Any, url: str) -> None:
    """Start a multipart upload at ``url`` (raw client) and send one part: a crashed writer's."""
    raw = backend.raw
    bucket, key, _ = raw.split_path(sandbox.raw_path(url))
    upload = raw.call_s3("create_multipart_upload", Bucket=bucket, Key=key)
    raw.call_s3(
        "upload_part", Bucket=bucket, Key=key, UploadId=upload["UploadId"], PartNumber=1,
        Body=b"p" * (5 * 2**20),
    )  # fmt: skip


def _exclusive_files(
    clause: str, drv: JobDriver, factory: Any, count: int
) -> list[tuple[Any, bytes]]:
    """``count`` file-backed exclusive states written through ``factory``: (handle, bytes)."""
    blobs = [payload(3000, seed) for seed in range(count)]
    with tagged(clause, f"write {count} exclusive state files", drv.sandbox):
        handles = [(drv.write(factory, blob), blob) for blob in blobs]
    require(
        all(file_path(h) is not None for h, _ in handles),
        clause,
        fail_message(clause, "write state files", drv.sandbox)
        + "\na state came back inline although inline_threshold 0 puts state into files",
    )
    return handles


@dataclass
class _Disposable:
    """A checkpoint location to dispose on failure and a completed checkpoint, each holding
    exclusive state files, as REQ-9 to REQ-11 dispose them."""

    aborted: Any
    completed: Any
    #: (handle, bytes) of the aborted location's files, then of the completed checkpoint's
    written: list[tuple[Any, bytes]]
    #: the directories of those files and of the completed checkpoint's _metadata
    directories: set[str]
    #: the directory of the aborted location's files
    aborted_directory: str

    def dispose_all(self) -> dict[str, tuple[str, float]]:
        """Both disposals, each run even when the other failed: name -> (what it did, seconds)."""
        outcomes = {}
        for name, call in (
            ("dispose_on_failure", self.aborted.dispose_on_failure),
            ("dispose_storage_location", self.completed.dispose_storage_location),
        ):
            started = time.monotonic()
            outcomes[name] = (call_outcome(call), time.monotonic() - started)
        return outcomes

    def left(self, sandbox: Any) -> list[str]:
        """The objects still in the directories."""
        return [f for d in sorted(self.directories) for f in files_below(sandbox, d)]


def _disposable(
    clause: str,
    drv: JobDriver,
    files: int,
    before_completion: Callable[[str], None] = lambda directory: None,
) -> _Disposable:
    """Checkpoint 1 (to dispose on failure) and checkpoint 2 (completed), ``files`` exclusive
    state files each; ``before_completion`` gets the directory of checkpoint 1's files."""
    with tagged(clause, "initialize the checkpoints", drv.sandbox):
        drv.init_base()
        aborted = drv.location(1)
        completed_location = drv.location(2)
    written = _exclusive_files(clause, drv, drv.worker(1, aborted.location_reference), files)
    aborted_directory = parent(str(file_path(written[0][0])))
    before_completion(aborted_directory)
    written += _exclusive_files(
        clause, drv, drv.worker(2, completed_location.location_reference), files
    )
    with tagged(clause, "finalize checkpoint 2", drv.sandbox):
        completed = drv.finalize(completed_location, b"meta:2:" + payload(64))
        metadata_file = file_path(completed.metadata_handle)
    directories = {parent(str(file_path(h))) for h, _ in written}
    directories |= {parent(metadata_file)} if metadata_file else set()
    return _Disposable(aborted, completed, written, directories, aborted_directory)


@ON_THE_LEDGER
@pytest.mark.clause("REQ-9")
def test_disposal_reads_every_page(sandbox, target, ledger, backend):
    """REQ-9: with listings answered two entries at a time, dispose_on_failure of a checkpoint
    location and dispose_storage_location of a completed checkpoint leave no object and no open
    multipart upload in their directories."""
    drv = JobDriver(sandbox, **file_options(target))

    def crashed_writers(directory: str) -> None:
        # writer 1's CreateMultipartUpload was sent again after its answer was lost: two
        # uploads of one key, listed second and third, so the first page of two ends between
        for n in (0, 1, 1, 2):
            _open_upload(backend, sandbox, join(directory, f"crashed-writer-{n}"))

    pair = _disposable("REQ-9", drv, 5, crashed_writers)
    with ledger.small_pages(2), ledger.record() as rec:
        with tagged("REQ-9", "dispose_on_failure of checkpoint 1 (pages of 2)", sandbox):
            pair.aborted.dispose_on_failure()
        with tagged("REQ-9", "dispose_storage_location of checkpoint 2 (pages of 2)", sandbox):
            pair.completed.dispose_storage_location()
    left = pair.left(sandbox)
    uploads = open_uploads_below(sandbox, pair.aborted_directory)  # the suite aborts them
    leftovers = left + uploads
    assert not leftovers, fail_message(
        "REQ-9", "dispose while listings come two entries per page", sandbox
    ) + (
        f"\nobjects left: {left}\nmultipart uploads left open: {uploads}"
        f"\n(S3 pages every listing: at 1000 entries, and it may return fewer)\n{rec.summary()}"
    )


@ON_THE_LEDGER
@pytest.mark.clause("REQ-10")
def test_disposal_reports_what_it_could_not_delete(sandbox, target, ledger):
    """REQ-10: while the server refuses every deletion, dispose_on_failure and
    dispose_storage_location raise an OSError and every state file still reads."""
    budget = _short_budget(target)
    drv = JobDriver(sandbox, **file_options(target), **budget)
    pair = _disposable("REQ-10", drv, 3)
    refused = ledger.inject("DeleteObject", status=403, code="AccessDenied", times=None)
    refused_batch = ledger.inject(per_key=True, code="AccessDenied", times=None)
    outcomes: dict[str, tuple[str, float]] = {}
    try:
        with ledger.record() as rec:
            outcomes = pair.dispose_all()
    finally:
        ledger.clear_faults()
    msg = fail_message("REQ-10", "dispose while the server refuses every deletion", sandbox) + (
        "\n"
        + "\n".join(f"{name}: {what} after {s:.1f} s" for name, (what, s) in outcomes.items())
        + f"\nrefused: {refused.hits} DeleteObject, {refused_batch.hits} DeleteObjects"
        + f"\n{rec.summary()}"
    )
    assert refused.hits + refused_batch.hits >= 1, msg + "\n(no delete reached the server)"
    for what, seconds in outcomes.values():
        assert what.startswith("OSError"), msg
        assert seconds <= 30, msg
    for handle, blob in pair.written:
        with tagged("REQ-10", "read the state after the refused disposal", sandbox):
            assert read_handle(handle) == blob, "the state no longer reads its bytes"
    with tagged("REQ-10", "dispose once the server deletes again", sandbox):
        pair.aborted.dispose_on_failure()
        pair.completed.dispose_storage_location()


@ON_THE_LEDGER
@pytest.mark.clause("REQ-11")
@pytest.mark.parametrize(
    ("status", "code", "body"),
    [(501, "NotImplemented", True), (405, "MethodNotAllowed", True), (501, "", False)],
    ids=["501", "405", "501-without-body"],
)
def test_disposal_without_upload_listings(sandbox, target, ledger, status, code, body):
    """REQ-11: where the server does not implement ListMultipartUploads (answering with an
    S3 error, or with a bare 501 and no body), dispose_on_failure and
    dispose_storage_location still delete every object and raise nothing."""
    drv = JobDriver(sandbox, **file_options(target))
    pair = _disposable("REQ-11", drv, 3)
    unlisted = ledger.inject(
        "ListMultipartUploads", status=status, code=code, times=None, body=body
    )
    try:
        with ledger.record() as rec:
            outcomes = pair.dispose_all()
    finally:
        ledger.clear_faults()
    left = pair.left(sandbox)
    msg = fail_message(
        "REQ-11", f"dispose while ListMultipartUploads is answered {unlisted.label}", sandbox
    )
    msg += "".join(f"\n{name}: {what} after {s:.1f} s" for name, (what, s) in outcomes.items())
    msg += f"\nobjects left: {left}\nListMultipartUploads refused: {unlisted.hits}"
    msg += f"\n{rec.summary()}"
    assert all(what == "returned" for what, _ in outcomes.values()), msg
    assert not left, msg


# --------------------------------------------------------------------------- REQ-12: drops

#: REQ-12's bound on each read through a dropped connection, and on the read after it
DROPPED_READ_SECONDS = 15.0


@pytest.mark.clause("REQ-12")
@pytest.mark.parametrize("operation", ["open", "read", "close"])
def test_a_dropped_connection_is_an_oserror(sandbox, target, backend, operation):
    """REQ-12: a connection dropped at the OPEN, a READ or the CLOSE of a state's file fails
    the read with an OSError naming the server (or, at the CLOSE, lets it return the bytes),
    and the same thread's next read returns the bytes."""
    dropping = getattr(backend, "dropping_connection", None)
    if dropping is None:
        pytest.skip(f"backend {backend.name} cannot drop a client's connection (sftp can)")
    drv = JobDriver(sandbox, **file_options(target))
    drv.init_base()
    blob = payload(3000, 12)
    with tagged("REQ-12", "write a state before the fault", sandbox):
        handle = write_state(drv.worker(1, drv.location(1).location_reference), blob)
    if file_path(handle) is None:
        pytest.skip("the state is inline: no file to read through a connection")
    endpoint = urlsplit(sandbox.root).netloc
    msg = fail_message("REQ-12", f"read a handle, the connection dropped at {operation}", sandbox)
    with concurrent.futures.ThreadPoolExecutor(1, "ckptconform-req12") as thread:
        with dropping(operation, file_path(handle).rsplit("/", 1)[1]) as drop:
            outcome = _outcome_within(thread, lambda: read_handle(handle))
        assert drop.hits == 1, msg + f"\nthe connection was not dropped (outcome: {outcome})"
        if not (operation == "close" and outcome == "returned"):
            assert outcome.startswith("OSError"), msg + f"\noutcome: {outcome}"
            assert endpoint in outcome, msg + f"\nthe error does not name {endpoint}: {outcome}"
        again: list[bytes] = []
        after = _outcome_within(thread, lambda: again.append(read_handle(handle)))
    assert after == "returned", msg + f"\nthe next read in the same thread: {after}"
    assert again == [blob], msg + "\nthe next read returned other bytes"


def _outcome_within(thread: concurrent.futures.Executor, call: Callable[[], object]) -> str:
    """What ``call`` did on ``thread``: "returned", "OSError <text>", the other exception's
    type and text, or "still running" after REQ-12's bound."""
    future = thread.submit(call_outcome, call)
    try:
        return future.result(timeout=DROPPED_READ_SECONDS)
    except concurrent.futures.TimeoutError:
        return f"still running after {DROPPED_READ_SECONDS:g} s"
