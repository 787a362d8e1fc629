"""The retry budget as configuration (issue 9, case 2), counted at the server.

``retry_attempts`` (requests per operation) and ``retry_seconds`` (seconds per public call) are
storage-agnostic ``storage_options`` keys (the conformance target's options of the same
names); on S3 they become botocore's attempts, connect/read timeouts, a backoff that never
passes the deadline and the deadline itself, with s3fs's own retry loop down to one pass so
it never multiplies botocore's attempts. Under a persistent fault a single write used to be
retried 25-50 times over 25-48 s; now it fails within its budget. Throttling (S3's 503
SlowDown) is still retried with backoff within the default budget, so a checkpoint under a
per-prefix throttle completes.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from ckptstore import FileSystemCheckpointStorage
from ckptstore.api import CheckpointedStateScope, JobID
from ckptstore.calls import call_started, public_call
from ckptstore.errors import CheckpointIOError
from ckptstore.filesystem.handles import FileStateHandle
from ckptstore.paths import parse_storage_path
from ckptstore.stores import retry
from ckptstore.stores.registry import filesystem_for, filesystem_options
from ckptstore.stores.retry import retry_budget
from ckptstore.targets import conformance_target
from tests.reference._moto import S3Root, reset_filesystem_caches

pytest.importorskip("s3fs")
pytest.importorskip("moto.server")

EXCLUSIVE = CheckpointedStateScope.EXCLUSIVE
SHARED = CheckpointedStateScope.SHARED
FILE_SIZE = 30000


def _storage(s3: S3Root, **options: Any) -> FileSystemCheckpointStorage:
    """Through the conformance target, as the suite builds it."""
    storage = conformance_target.make_storage(
        checkpoint_dir=s3.sub("checkpoints"),
        savepoint_dir=None,
        options={"storage_options": s3.storage_options, **options},
    )
    assert isinstance(storage, FileSystemCheckpointStorage)
    return storage


def _failing_close(s3: S3Root, **options: Any) -> tuple[float, Any, BaseException]:
    """Every PutObject of a state file answers 500 InternalError: close one file-backed
    stream; return the time it took, the recording and the error."""
    job = JobID.generate()
    access = _storage(s3, **options).create_checkpoint_storage(job)
    location = access.initialize_location_for_checkpoint(1)
    stream = location.create_checkpoint_state_output_stream(EXCLUSIVE)
    stream.write(os.urandom(FILE_SIZE))
    s3.ledger.inject("PutObject", status=500, code="InternalError", times=None, key_contains="-")
    try:
        with s3.record() as rec:
            start = time.monotonic()
            with pytest.raises(OSError) as caught:
                stream.close_and_get_handle()
            elapsed = time.monotonic() - start
    finally:
        s3.ledger.clear_faults()
    return elapsed, rec, caught.value


def test_configured_budget_bounds_a_persistent_fault(s3: S3Root) -> None:
    """The suite's check: retry_attempts=3, retry_seconds=10, every PutObject of a state file
    answered 500: closing the stream fails with an OSError within 15 s after at most 3
    PutObject requests for that file."""
    elapsed, rec, error = _failing_close(s3, retry_attempts=3, retry_seconds=10)
    assert isinstance(error, CheckpointIOError)
    assert "InternalError" in str(error)
    puts = rec.filter(operation="PutObject")
    assert 1 <= len(puts) <= 3, rec.summary()
    assert len({r.key for r in puts}) == 1, rec.summary()
    assert elapsed < 15, elapsed


def test_default_budget_bounds_a_persistent_fault(s3: S3Root) -> None:
    """Without the keys: at most 3 PutObject (s3fs's loop no longer multiplies botocore's
    attempts), failing in a few seconds, well under 15 s."""
    elapsed, rec, _ = _failing_close(s3)
    assert rec.count(operation="PutObject") == 3, rec.summary()
    assert elapsed < 15, elapsed
    assert elapsed <= retry_budget(None).failing_seconds + 2, elapsed


def test_one_attempt_means_one_request(s3: S3Root) -> None:
    """retry_attempts=1: exactly one PutObject, then the failure path's single HEAD."""
    _, rec, _ = _failing_close(s3, retry_attempts=1)
    assert rec.operations() == {"PutObject": 1, "HeadObject": 1}, rec.summary()


def test_persistent_throttling_fails_within_the_throttle_time(
    s3: S3Root, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every PutObject answered 503 SlowDown: the default policy retries throttling beyond
    its 3 attempts, but only within its throttle time since the operation started (10 s; 3 s
    here, to stay fast; the 3 attempts themselves back off at most 1 + 2 s)."""
    policy = retry.RetryPolicy(attempts=3, throttle_attempts=10, throttle_seconds=3.0)
    monkeypatch.setattr(retry, "DEFAULT_POLICY", policy)
    job = JobID.generate()
    location = _storage(s3).create_checkpoint_storage(job).initialize_location_for_checkpoint(1)
    stream = location.create_checkpoint_state_output_stream(EXCLUSIVE)
    stream.write(os.urandom(FILE_SIZE))
    s3.ledger.inject("PutObject", status=503, code="SlowDown", times=None, key_contains="-")
    try:
        with s3.record() as rec:
            start, started_at = time.monotonic(), time.time()
            with pytest.raises(OSError, match=r"reduce your request rate|SlowDown"):
                stream.close_and_get_handle()
            elapsed = time.monotonic() - start
    finally:
        s3.ledger.clear_faults()
    puts = [r for r in rec.requests if r.operation == "PutObject"]
    assert 3 <= len(puts) <= 10, rec.summary()
    # no attempt beyond the policy's 3 starts after the throttle time (the server's clock: a
    # busy machine may delay the answers, the 3 attempts any fault gets and the failure path,
    # never the decision to stop)
    beyond = sorted(r.time - started_at for r in puts)[policy.attempts :]
    assert all(at < 3.0 + 0.5 for at in beyond), (beyond, rec.summary())
    # and the call ends: ten attempts backing off would take far longer
    assert elapsed < 3.0 + 6.0, elapsed


@pytest.fixture
def silent_endpoint() -> Iterator[str]:
    """An endpoint on 127.0.0.1 that accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except OSError:
                continue
            accepted.append(connection)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    reset_filesystem_caches()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=5)
        for connection in accepted:
            connection.close()
        server.close()
        reset_filesystem_caches()


def test_retry_seconds_is_a_deadline(silent_endpoint: str) -> None:
    """An endpoint that never answers: with retry_seconds=2 (and attempts to spare) the
    operation gives up after about 2 s, not after retry_attempts read timeouts."""
    storage = FileSystemCheckpointStorage(
        "s3://silent/ckpt",
        storage_options={
            "endpoint_url": silent_endpoint,
            "key": "k",
            "secret": "s",
            "retry_attempts": 5,
            "retry_seconds": 2,
        },
    )
    budget = retry_budget(storage.storage_options)
    assert (budget.attempts, budget.seconds, budget.read_timeout) == (5, 2.0, 2.0)
    assert budget.unresponsive_seconds == 2.0
    start = time.monotonic()
    with pytest.raises(CheckpointIOError):
        storage.resolve_checkpoint("s3://silent/ckpt/job/chk-1")
    elapsed = time.monotonic() - start
    assert 1.5 <= elapsed < 4.0, elapsed


def _silent_storage(endpoint: str, seconds: float) -> FileSystemCheckpointStorage:
    return FileSystemCheckpointStorage(
        "s3://silent/ckpt",
        file_state_size_threshold=0,
        storage_options={
            "endpoint_url": endpoint,
            "key": "k",
            "secret": "s",
            "retry_seconds": seconds,
        },
    )


def _bounded(call: Any, seconds: float) -> float:
    """Run ``call``, which must fail with an OSError; how long it took."""
    start = time.monotonic()
    with pytest.raises(OSError):
        call()
    return time.monotonic() - start


def test_retry_seconds_bound_a_whole_call(silent_endpoint: str) -> None:
    """retry_seconds=2 and an endpoint that never answers: a close whose upload times out
    does not then wait 2 s more for each request of its cleanup (a HEAD, a delete and an
    existence check: 8 s in all when each request had the whole budget), and a discard does
    not wait again for its existence check: each call gives up after about 2 s."""
    access = _silent_storage(silent_endpoint, 2).create_checkpoint_storage(JobID.generate())
    factory = access.initialize_location_for_checkpoint(1)
    stream = factory.create_checkpoint_state_output_stream(EXCLUSIVE)
    stream.write(os.urandom(FILE_SIZE))
    assert 1.5 <= _bounded(stream.close_and_get_handle, 2) < 3.5
    handle = FileStateHandle("s3://silent/ckpt/job/chk-1/state", 10)
    assert 1.5 <= _bounded(handle.discard_state, 2) < 3.5


def test_a_call_inside_another_counts_against_the_outer_one() -> None:
    """A public call made by another one shares its start: one budget for both."""

    @public_call
    def inner() -> float | None:
        return call_started()

    @public_call
    def outer() -> tuple[float | None, float | None]:
        started = call_started()
        time.sleep(0.01)
        return started, inner()

    assert call_started() is None
    started, seen_inside = outer()
    assert started is not None
    assert seen_inside == started
    assert call_started() is None
    assert retry.call_budget_left(5.0) == 5.0
    assert public_call(lambda: retry.call_budget_left(5.0))() <= 5.0


def test_budget_keys_reach_botocore_and_s3fs() -> None:
    """The keys become the retry policy of the file system's clients, a read timeout within
    the deadline, and one pass of s3fs's loop; other file systems ignore them."""
    options = filesystem_options(
        "s3", {"endpoint_url": "http://127.0.0.1:1", "retry_attempts": 4, "retry_seconds": 6}
    )
    assert options["retries"] == 1
    assert retry.policy_of(options) == retry.RetryPolicy(attempts=4, seconds=6.0)
    assert "retries" not in options["config_kwargs"]
    assert options["config_kwargs"]["connect_timeout"] == 2
    assert options["config_kwargs"]["read_timeout"] == 6.0
    assert filesystem_options("gs", {"retry_attempts": 4, "project": "p"}) == {"project": "p"}
    assert filesystem_options("memory", {"retry_attempts": 4}) == {}
    budget = retry_budget({"retry_attempts": 4, "retry_seconds": 6})
    assert (budget.attempts, budget.unreachable_seconds, budget.unresponsive_seconds) == (
        4,
        6.0,
        6.0,
    )
    storage = FileSystemCheckpointStorage(
        "s3://budget-bucket/ckpt",
        storage_options={"endpoint_url": "http://127.0.0.1:1", "retry_attempts": 4},
    )
    fs = filesystem_for(parse_storage_path("s3://budget-bucket/ckpt"))
    assert fs.retries == 1
    assert fs.ckptstore_policy == retry.RetryPolicy(attempts=4)
    assert storage.storage_options["retry_attempts"] == 4
    default = retry_budget(None)
    assert (default.retries, default.attempts) == (1, 3)
    assert default.failing_seconds < 5
    assert default.unreachable_seconds < 15
    assert (default.throttle_attempts, default.throttle_seconds) == (10, 10.0)
    assert default.throttled_seconds == 10.0


def test_throttled_checkpoint_completes_within_the_default_budget(s3: S3Root) -> None:
    """S3 throttles a prefix with 503 SlowDown: 10 PutObject per second, bursts of 2. Eight
    tasks write their state into chk-1/ and shared/ at once, then the coordinator finalizes:
    everything completes (throttled requests are retried with backoff) and reads back."""
    job = JobID.generate()
    storage = _storage(s3)
    access = storage.create_checkpoint_storage(job)
    access.initialize_base_locations_for_checkpoint()
    location = access.initialize_location_for_checkpoint(1)
    reference = location.location_reference
    data = [os.urandom(FILE_SIZE + i) for i in range(16)]

    def task(index: int) -> list[Any]:
        worker = storage.create_checkpoint_storage(job)
        factory = worker.resolve_checkpoint_storage_location(1, reference)
        handles = []
        for scope, piece in ((EXCLUSIVE, data[2 * index]), (SHARED, data[2 * index + 1])):
            stream = factory.create_checkpoint_state_output_stream(scope)
            stream.write(piece)
            handles.append(stream.close_and_get_handle())
        return handles

    throttle = s3.ledger.throttle(10, "PutObject", burst=2)
    try:
        with s3.record() as rec:
            with ThreadPoolExecutor(8) as pool:
                handles = [h for result in pool.map(task, range(8)) for h in result]
            with location.create_metadata_output_stream() as out:
                out.write(b"throttled checkpoint")
                completed = out.close_and_finalize_checkpoint()
    finally:
        s3.ledger.clear_faults()
    assert throttle.throttled > 0, rec.summary()
    assert rec.retried() == throttle.throttled, rec.summary()
    assert rec.count(operation="PutObject") == 17 + throttle.throttled, rec.summary()
    assert all(isinstance(h, FileStateHandle) for h in handles)
    resolved = storage.resolve_checkpoint(completed.external_pointer)
    for handle, expected in zip(handles, data, strict=True):
        with resolved.resolve_handle(handle).open_input_stream() as stream:
            assert stream.read() == expected
